package pinecone

import (
	"context"

	"github.com/amnesia-dev/amnesia/store"
)

// list enumerates the namespace's vectors (store.List): the ids from list
// (serverless indexes; a pod-based index cannot list and says so), then
// fetch in pages of 100. Metadata scalars are fields; the text and the
// vector's float32 bytes are the content. Read-only.
func list(ctx context.Context, c store.Config, fn func(store.Listed) error) error {
	o, err := configOptions(c)
	if err != nil {
		return err
	}
	s, err := Open(ctx, o)
	if err != nil {
		return err
	}
	defer s.Close()
	ids, err := s.List(ctx, "")
	if err != nil {
		return err
	}
	for start := 0; start < len(ids); start += 100 {
		recs, err := s.fetch(ctx, ids[start:min(start+100, len(ids))])
		if err != nil {
			return err
		}
		for _, id := range ids[start:min(start+100, len(ids))] {
			r := recs[id]
			if r == nil {
				continue // deleted meanwhile (eventually consistent)
			}
			l := store.Listed{Key: id, Fields: map[string]string{}}
			for k, v := range r.Metadata {
				if sv, ok := store.Scalar(v); ok {
					l.Fields[k] = sv
				}
			}
			if r.Subject != "" {
				l.Fields[SubjectKey] = r.Subject
			}
			l.Content = append([]byte(r.Content), store.Float32LE(r.Embedding)...)
			if err := fn(l); err != nil {
				return err
			}
		}
	}
	return nil
}

func proof(store.Config) (string, string) {
	return "logical", "a managed service: its files cannot be read (residue UNVERIFIED-managed, citing the vendor's deletion commitment); only its query paths are probed, re-queried within consistency_wait"
}
