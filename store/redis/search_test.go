package redis_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
	redisstore "github.com/amnesia-dev/amnesia/store/redis"
)

// The logical probe of many keys answers, for each key, what the
// application's own reads answer (EXISTS, the index set, the subject scan,
// Search with the record's vector), while reading each index vector once for
// all the keys: the searches are one pass, not one per key. Ties matter:
// fifteen entries share one vector, so a k=10 search with it returns only
// the ten lowest keys, and the other five are not found by similarity.
func TestRedisProbeLogicalBatchedAnswersAsSearch(t *testing.T) {
	ctx := context.Background()
	srv := private(t)
	s := openStore(t, redisstore.Options{Name: "semantic", Addr: srv.addr(), Layout: redisstore.LayoutSemantic})
	vecs := map[string][]float32{}
	var keys []string
	for i := range 30 {
		group := 1
		switch {
		case i >= 25:
			group = 3
		case i >= 15:
			group = 2
		}
		tag := "hmac:" + strconv.Itoa(i%2)
		key, err := s.PutSemantic(ctx, redisstore.SemanticEntry{ID: fmt.Sprintf("e%02d", i), Prompt: "q" + strconv.Itoa(i), Answer: text("x", i), Vector: vector(group), SubjectTag: tag})
		if err != nil {
			t.Fatal(err)
		}
		keys, vecs[key] = append(keys, key), vector(group)
	}
	left, err := s.PutSemantic(ctx, redisstore.SemanticEntry{ID: "left", Prompt: "q", Answer: text("x", 99), Vector: vector(1), SubjectTag: "hmac:0"})
	if err != nil {
		t.Fatal(err)
	}
	keys = append(keys, left)
	ev, err := s.ReadEvidence(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	// One entry is deleted; another loses its index entry but keeps its hash.
	gone := keys[3]
	if err := s.Delete(ctx, []string{gone}); err != nil {
		t.Fatal(err)
	}
	if err := s.Client().SRem(ctx, s.IndexKey(), left).Err(); err != nil {
		t.Fatal(err)
	}
	indexed := map[string]bool{}
	for _, k := range keys {
		indexed[k] = k != gone && k != left
	}

	if err := s.Client().ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := s.ProbeLogical(ctx, keys, ev)
	if err != nil {
		t.Fatal(err)
	}
	hgets := commandCalls(t, s, "hget")

	if len(res) != len(keys) {
		t.Fatalf("%d results for %d keys", len(res), len(keys))
	}
	for i, k := range keys {
		r := res[i]
		if r.Key != k {
			t.Fatalf("result %d is for %s, want %s (results out of order)", i, r.Key, k)
		}
		want := store.LogicalResult{Key: k, ByID: k != gone, ByFilter: k != gone, BySimilarity: indexed[k] && inTop(k, vecs[k], vecs, indexed, redisstore.SimilarityK)}
		if r.ByID != want.ByID || r.ByFilter != want.ByFilter || r.BySimilarity != want.BySimilarity {
			t.Errorf("%s: probe %+v, want by-id %v, by-filter %v, by-similarity %v", k, r, want.ByID, want.ByFilter, want.BySimilarity)
		}
		ns, err := s.Search(ctx, vecs[k], redisstore.SimilarityK)
		if err != nil {
			t.Fatal(err)
		}
		bySearch := slices.ContainsFunc(ns, func(n redisstore.Neighbor) bool { return n.Key == k })
		if r.BySimilarity != bySearch {
			t.Errorf("%s: the probe says by-similarity %v, the application's Search says %v", k, r.BySimilarity, bySearch)
		}
		if m := strings.Join(r.Methods, " "); !strings.Contains(m, "by-similarity:index-set,k=10") || !strings.Contains(m, "by-filter:scan-") {
			t.Errorf("%s: methods %q lack the similarity search or the subject scan", k, m)
		}
	}
	// The five highest of the fifteen entries sharing a vector are not in
	// its ten nearest: the test can tell a search that ignores the tie order.
	for _, k := range keys[11:15] {
		if res[slices.Index(keys, k)].BySimilarity {
			t.Errorf("%s is found by similarity, but ten lower keys share its vector", k)
		}
	}
	// Each hash is read once for the searches and once for the subject
	// scan: not once per probed key.
	if max := 2 * len(keys); hgets > max {
		t.Errorf("the probe of %d keys ran HGET %d times, want at most %d (each index vector read once, not once per key)", len(keys), hgets, max)
	}
}

// inTop reports whether key is among the k entries of the index nearest to
// q, ties broken by the lower key (the order Search documents).
func inTop(key string, q []float32, vecs map[string][]float32, indexed map[string]bool, k int) bool {
	type nb struct {
		key string
		sim float64
	}
	var all []nb
	for kk, v := range vecs {
		if indexed[kk] {
			all = append(all, nb{kk, refCosine(q, v)})
		}
	}
	slices.SortFunc(all, func(a, b nb) int {
		if a.sim != b.sim {
			if a.sim > b.sim {
				return -1
			}
			return 1
		}
		return strings.Compare(a.key, b.key)
	})
	for _, n := range all[:min(k, len(all))] {
		if n.key == key {
			return true
		}
	}
	return false
}

func refCosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

// commandCalls is the server's call count of cmd since CONFIG RESETSTAT.
func commandCalls(t *testing.T, s *redisstore.Store, cmd string) int {
	t.Helper()
	info, err := s.Client().Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls="); ok {
			n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	return 0
}
