package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/amnesia-dev/amnesia/capture/backend"
	"github.com/amnesia-dev/amnesia/store"
)

// What package capture needs of a Redis store (backend.DocStore). A record
// is one Redis key (Record.ID, the whole key):
//   - chat: Record.Text is one message (Metadata "type": human, ai or
//     system; default human) pushed onto the list ID, as
//     RedisChatMessageHistory does; the ledger's artifact is the session's
//     list, and erasing it deletes the whole session;
//   - cache: Record.Text is the answer, written as LangChain's RedisCache
//     writes it (field "0", a serialized Generation) under ID (use
//     CacheKey for LangChain's key); Record.Parent links it to the answer
//     or document it was derived from;
//   - semantic caches: Metadata "vector" ([]float32) and "prompt" (string)
//     are required; Text is the answer; ID must start with the prefix.
// A cache entry is lineage kind "cache" when it is recorded with
// capture.Recorder.RecordArtifact (then write it with PutCache or
// PutSemantic); through capture.Docs its kind is the Doc's.

func init() {
	backend.RegisterDocStore(Type, func(s store.Store) (backend.DocStore, error) {
		if r, ok := s.(*Store); ok {
			return r, nil
		}
		return nil, backend.NotStoreOf(Type, s)
	})
}

var _ backend.DocStore = (*Store)(nil)

// CaptureCheck refuses what the layout cannot keep.
func (s *Store) CaptureCheck(r backend.Record) error {
	if !strings.HasPrefix(r.ID, s.lay.prefix) {
		return fmt.Errorf("capture: store %q keeps keys under %q: the key must start with it", s.o.Name, s.lay.prefix)
	}
	switch s.lay.name {
	case LayoutChat:
		if t, ok := r.Metadata["type"]; ok {
			if _, ok := t.(string); !ok || len(r.Metadata) > 1 {
				return fmt.Errorf("capture: store %q (chat) keeps only metadata type (human, ai, system)", s.o.Name)
			}
		} else if len(r.Metadata) > 0 {
			return fmt.Errorf("capture: store %q (chat) keeps only metadata type (human, ai, system)", s.o.Name)
		}
	case LayoutCache:
		if len(r.Metadata) > 0 {
			return fmt.Errorf("capture: store %q (exact cache) keeps no metadata: leave it empty", s.o.Name)
		}
	default:
		if _, ok := r.Metadata["vector"].([]float32); !ok {
			return fmt.Errorf("capture: store %q (%s) needs Metadata[\"vector\"] as []float32: amnesia does not embed text", s.o.Name, s.lay.name)
		}
		if _, ok := r.Metadata["prompt"].(string); !ok {
			return fmt.Errorf("capture: store %q (%s) needs Metadata[\"prompt\"] as a string", s.o.Name, s.lay.name)
		}
	}
	return nil
}

// CapturePut writes a record captured by package capture.
func (s *Store) CapturePut(ctx context.Context, r backend.Record) error {
	if err := s.CaptureCheck(r); err != nil {
		return err
	}
	switch s.lay.name {
	case LayoutChat:
		typ, _ := r.Metadata["type"].(string)
		if typ == "" {
			typ = "human"
		}
		return s.rdb.LPush(ctx, r.ID, Message(typ, r.Text)).Err()
	case LayoutCache:
		return s.rdb.HSet(ctx, r.ID, "0", Generation(r.Text)).Err()
	default:
		_, err := s.PutSemantic(ctx, SemanticEntry{
			ID: strings.TrimPrefix(r.ID, s.lay.prefix), Prompt: r.Metadata["prompt"].(string), Answer: r.Text,
			Vector: r.Metadata["vector"].([]float32), SubjectTag: r.Subject,
		})
		return err
	}
}

// CaptureGet returns the record under id: its values joined by newlines
// (a chat list: its messages' contents, oldest first), or nil.
func (s *Store) CaptureGet(ctx context.Context, id string) (*backend.Record, error) {
	v, err := s.read(ctx, id)
	if err != nil || v == nil {
		return nil, err
	}
	rec := &backend.Record{ID: id}
	switch {
	case s.lay.name == LayoutChat:
		ms, err := s.Messages(ctx, strings.TrimPrefix(id, s.lay.prefix))
		if err != nil {
			return nil, err
		}
		rec.Text = strings.Join(ms, "\n")
	case s.lay.name == LayoutCache:
		rec.Text = v.fields["0"]
	default:
		rec.Subject = v.fields[s.lay.subject]
		rec.Text = v.fields["response"]
		if rec.Text == "" {
			rec.Text = v.fields["return_val"]
		}
	}
	return rec, nil
}

// CaptureBySubject returns the hashes under the prefix whose subject field
// holds tag (semantic caches only: the other layouts keep no tag).
func (s *Store) CaptureBySubject(ctx context.Context, tag string) ([]backend.Record, error) {
	if s.lay.subject == "" {
		return nil, fmt.Errorf("store %q (%s) keeps no subject tag: find its keys through the ledger", s.o.Name, s.lay.name)
	}
	var out []backend.Record
	err := s.scanPrefix(ctx, func(key string) error {
		t, err := s.rdb.HGet(ctx, key, s.lay.subject).Result()
		if errors.Is(err, goredis.Nil) || isWrongType(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if t == tag {
			r, err := s.CaptureGet(ctx, key)
			if err != nil {
				return err
			}
			if r != nil {
				out = append(out, *r)
			}
		}
		return nil
	})
	return out, err
}

// CaptureAll returns every key under the prefix.
func (s *Store) CaptureAll(ctx context.Context) ([]backend.Record, error) {
	var out []backend.Record
	err := s.scanPrefix(ctx, func(key string) error {
		if key == s.IndexKey() {
			return nil
		}
		r, err := s.CaptureGet(ctx, key)
		if err != nil || r == nil {
			return err
		}
		out = append(out, *r)
		return nil
	})
	return out, err
}
