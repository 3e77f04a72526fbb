package redis

import (
	"context"
	"errors"
	"fmt"
	"math"

	goredis "github.com/redis/go-redis/v9"

	"github.com/amnesia-dev/amnesia/store"
)

// pipeBatch is how many commands one pipelined round trip sends: the
// index's vectors, the probe's EXISTS and SISMEMBER, the subject tags of a
// SCAN page.
const pipeBatch = 1000

// Search is the application's semantic-cache read without RediSearch: the
// k entries of the index set most similar (cosine) to q, most similar first
// (ties: lower key first).
func (s *Store) Search(ctx context.Context, q []float32, k int) ([]Neighbor, error) {
	ns, err := s.searchMany(ctx, [][]float32{q}, k)
	if err != nil || ns == nil {
		return nil, err
	}
	return ns[0], nil
}

// searchMany answers Search for every query of qs in one read of the
// index: each entry's vector is read once (pipelined, pipeBatch per round
// trip) and compared with every query. ns[i] is what Search(qs[i], k)
// returns. nil without a vector field.
func (s *Store) searchMany(ctx context.Context, qs [][]float32, k int) ([][]Neighbor, error) {
	if s.lay.vector == "" {
		return nil, nil
	}
	tops := make([]topK, len(qs))
	norms := make([]float64, len(qs))
	for i, q := range qs {
		tops[i] = topK{k: k}
		norms[i] = sqNorm(q)
	}
	err := s.indexVectors(ctx, func(key string, vec []float32) {
		nv := sqNorm(vec)
		for i, q := range qs {
			if len(vec) == len(q) {
				tops[i].add(Neighbor{Key: key, Similarity: cosineNorms(q, vec, norms[i], nv)})
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("search index: %w", err)
	}
	out := make([][]Neighbor, len(qs))
	for i := range tops {
		out[i] = tops[i].ns
	}
	return out, nil
}

// indexVectors calls fn with the key and vector of each entry of the index
// set whose hash has the vector field, reading pipeBatch hashes per round
// trip. An entry whose hash is gone is skipped.
func (s *Store) indexVectors(ctx context.Context, fn func(key string, vec []float32)) error {
	keys, err := s.rdb.SMembers(ctx, s.IndexKey()).Result()
	if err != nil {
		return err
	}
	for len(keys) > 0 {
		part := keys[:min(pipeBatch, len(keys))]
		keys = keys[len(part):]
		err := s.hgetEach(ctx, part, s.lay.vector, false, func(key, v string) { fn(key, decodeFloat32([]byte(v))) })
		if err != nil {
			return err
		}
	}
	return nil
}

// hgetEach reads field of each of keys in one pipelined round trip and
// calls fn with the keys that have it, in order. A key that is gone or
// lacks the field is skipped; so is one that is not a hash when
// skipWrongType is set (otherwise its WRONGTYPE error is returned).
func (s *Store) hgetEach(ctx context.Context, keys []string, field string, skipWrongType bool, fn func(key, v string)) error {
	pipe := s.rdb.Pipeline()
	cmds := make([]*goredis.StringCmd, len(keys))
	for i, key := range keys {
		cmds[i] = pipe.HGet(ctx, key, field)
	}
	_, _ = pipe.Exec(ctx) // each command's error is read below
	for i, c := range cmds {
		v, err := c.Result()
		if errors.Is(err, goredis.Nil) || skipWrongType && isWrongType(err) {
			continue
		}
		if err != nil {
			return err
		}
		fn(keys[i], v)
	}
	return nil
}

// topK keeps the k best neighbours seen, most similar first, ties broken by
// the lower key: the order Search returns.
type topK struct {
	k  int
	ns []Neighbor
}

func (t *topK) add(n Neighbor) {
	if t.k <= 0 {
		return
	}
	if len(t.ns) == t.k && !better(n, t.ns[len(t.ns)-1]) {
		return
	}
	i := len(t.ns)
	for i > 0 && better(n, t.ns[i-1]) {
		i--
	}
	if len(t.ns) < t.k {
		t.ns = append(t.ns, Neighbor{})
	}
	copy(t.ns[i+1:], t.ns[i:len(t.ns)-1])
	t.ns[i] = n
}

func better(a, b Neighbor) bool {
	if a.Similarity != b.Similarity {
		return a.Similarity > b.Similarity
	}
	return a.Key < b.Key
}

func sqNorm(v []float32) float64 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	return n
}

// cosineNorms is the cosine similarity of a and b given their squared
// norms: 0 when either is zero.
func cosineNorms(a, b []float32, na, nb float64) float64 {
	if na == 0 || nb == 0 {
		return 0
	}
	var dot float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

// ProbeLogical implements store.Store. For each key: EXISTS (by id); for a
// layout with an index, SISMEMBER of the index set and a k=10 search of the
// index with the record's own vector; for a layout with a subject field, a
// SCAN of the prefix for hashes holding the record's subject tag (which
// finds a hash left behind a deleted index entry, or one an index rebuilt
// over the prefix would bring back).
//
// The work is batched, not repeated per key: EXISTS and SISMEMBER go
// pipelined, pipeBatch per round trip; the prefix is scanned once for
// every tag of the keys (each SCAN page's tags read in one pipeline); and
// the index's vectors are read once for the searches of all the keys'
// vectors (searchMany), each search answering exactly as Search would.
func (s *Store) ProbeLogical(ctx context.Context, keys []string, ev map[string]*store.Evidence) ([]store.LogicalResult, error) {
	out := make([]store.LogicalResult, len(keys))
	for lo := 0; lo < len(keys); lo += pipeBatch {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
		part := keys[lo:min(lo+pipeBatch, len(keys))]
		pipe := s.rdb.Pipeline()
		exists := make([]*goredis.IntCmd, len(part))
		member := make([]*goredis.BoolCmd, len(part))
		for i, k := range part {
			exists[i] = pipe.Exists(ctx, k)
			if s.lay.vector != "" {
				member[i] = pipe.SIsMember(ctx, s.IndexKey(), k)
			}
		}
		_, _ = pipe.Exec(ctx) // each command's error is read below
		for i, k := range part {
			res := store.LogicalResult{Key: k, Methods: []string{"by-id:EXISTS"}}
			n, err := exists[i].Result()
			if err != nil {
				return nil, fmt.Errorf("probe at %s: %w", s.loc, err)
			}
			res.ByID = n > 0
			if member[i] != nil {
				res.Methods = append(res.Methods, "by-filter:index-set")
				in, err := member[i].Result()
				if err != nil {
					return nil, fmt.Errorf("probe at %s: %w", s.loc, err)
				}
				res.ByFilter = in
			}
			out[lo+i] = res
		}
	}

	// The subject tags to look for, and the vectors to search with.
	want := map[string]bool{}
	var qs [][]float32
	var qi []int // qs[j] is the vector of keys[qi[j]]
	for i, k := range keys {
		e := ev[k]
		if e == nil {
			continue
		}
		if s.lay.subject != "" && e.Filter[s.lay.subject] != "" {
			want[e.Filter[s.lay.subject]] = true
		}
		if len(e.Vector) > 0 && s.lay.vector != "" {
			qs, qi = append(qs, e.Vector), append(qi, i)
		}
	}
	tagged, err := s.tagged(ctx, want)
	if err != nil {
		return nil, fmt.Errorf("probe at %s: %w", s.loc, err)
	}
	for i, k := range keys {
		if e := ev[k]; e != nil && s.lay.subject != "" && e.Filter[s.lay.subject] != "" {
			out[i].Methods = append(out[i].Methods, "by-filter:scan-"+s.lay.subject)
			out[i].ByFilter = out[i].ByFilter || tagged[e.Filter[s.lay.subject]][k]
		}
	}
	if len(qs) > 0 {
		ns, err := s.searchMany(ctx, qs, SimilarityK)
		if err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
		for j, i := range qi {
			out[i].Methods = append(out[i].Methods, fmt.Sprintf("by-similarity:index-set,k=%d", SimilarityK))
			for _, nb := range ns[j] {
				out[i].BySimilarity = out[i].BySimilarity || nb.Key == keys[i]
			}
		}
	}
	return out, nil
}

// tagged scans the prefix once and returns, for each tag of want, the keys
// whose hash holds it in the subject field. Keys that are not hashes, or
// have no subject field, hold no tag.
func (s *Store) tagged(ctx context.Context, want map[string]bool) (map[string]map[string]bool, error) {
	out := map[string]map[string]bool{}
	if len(want) == 0 {
		return out, nil
	}
	for t := range want {
		out[t] = map[string]bool{}
	}
	match := globEscape(s.lay.prefix) + "*"
	var cursor uint64
	for {
		page, next, err := s.rdb.Scan(ctx, cursor, match, pipeBatch).Result()
		if err != nil {
			return nil, err
		}
		err = s.hgetEach(ctx, page, s.lay.subject, true, func(key, t string) {
			if want[t] {
				out[t][key] = true
			}
		})
		if err != nil {
			return nil, err
		}
		if next == 0 {
			return out, nil
		}
		cursor = next
	}
}
