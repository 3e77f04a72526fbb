package weaviate

import (
	"context"

	"github.com/amnesia-dev/amnesia/store"
)

// list enumerates the class's objects (store.List) through the REST list
// with its cursor: read-only. The key is the amnesia_key property when the
// class has it, else the object id; the text properties other than the
// subject and the key, and the vector's float32 bytes, are the content;
// every scalar property is a field.
func list(ctx context.Context, c store.Config, fn func(store.Listed) error) error {
	s, err := Open(ctx, options(c), false)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.each(ctx, func(o *object) error {
		l := store.Listed{Key: o.ID, Fields: map[string]string{}}
		if k, _ := o.Properties[KeyProperty].(string); k != "" {
			l.Key = k
		}
		for name, v := range o.Properties {
			if name == KeyProperty {
				continue
			}
			if sv, ok := store.Scalar(v); ok {
				l.Fields[name] = sv
			}
		}
		content := s.content
		if len(content) == 0 {
			for name, v := range o.Properties {
				if _, isText := v.(string); isText && name != s.subject && name != KeyProperty {
					content = append(content, name)
				}
			}
		}
		for _, p := range content {
			if t, ok := o.Properties[p].(string); ok {
				l.Content = append(l.Content, t...)
			}
		}
		l.Content = append(l.Content, store.Float32LE(o.Vector)...)
		return fn(l)
	})
}

// proof is store.Adapter.Proof: physical with data_dir, logical without.
func proof(c store.Config) (string, string) {
	if c.DataDir != "" {
		return "physical", "the class's files under data_dir (LSM segments, WALs, HNSW commit logs) are read byte by byte; Weaviate compacts on its own schedule, so reclaim can end PENDING; see docs/weaviate.md for the settings it needs"
	}
	return "logical", "no data_dir is configured: the server's files are not read, so only its query paths are probed (by id, subject filter, nearVector)"
}
