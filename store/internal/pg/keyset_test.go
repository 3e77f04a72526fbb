package pg

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// KeySet answers what Matches answers key by key: for keys and ids in
// every form a key can take (text, a uuid hyphenated or not, in either
// case, as PostgreSQL prints it), repeated keys, an empty key, and rows
// answering to several ids.
func TestKeySetMatchesMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 8))
	uuid := func() string {
		return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff)
	}
	forms := func(u string) []string {
		bare := strings.ReplaceAll(u, "-", "")
		return []string{u, strings.ToUpper(u), bare, strings.ToUpper(bare)}
	}
	var pool []string
	for i := 0; i < 12; i++ {
		pool = append(pool, forms(uuid())...)
		pool = append(pool, fmt.Sprintf("doc-%d", i), fmt.Sprintf("s%04d-d%02d#%d", i, i%15, i%3))
	}
	pool = append(pool, "", "x", "X")
	pick := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = pool[rng.IntN(len(pool))]
		}
		return out
	}
	for round := 0; round < 2000; round++ {
		keys := pick(rng.IntN(6))
		if rng.IntN(4) == 0 && len(keys) > 0 {
			keys = append(keys, keys[0]) // a key given twice
		}
		ids := pick(1 + rng.IntN(3))
		if rng.IntN(3) == 0 {
			// A uuid column prints the canonical form of some key.
			if u, ok := CanonicalUUID(pool[rng.IntN(len(pool))]); ok {
				ids[0] = u
			}
		}
		set := NewKeySet(keys)
		var want []string
		for _, k := range keys {
			if Matches(ids, k) && !slices.Contains(want, k) {
				want = append(want, k)
			}
		}
		if got := set.Holds(ids); got != (len(want) > 0) {
			t.Fatalf("keys %q, ids %q: Holds = %v, Matches of some key = %v", keys, ids, got, len(want) > 0)
		}
		var got []string
		set.Of(ids, func(k string) {
			if !slices.Contains(got, k) {
				got = append(got, k)
			}
		})
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("keys %q, ids %q: Of gives %q, Matches %q", keys, ids, got, want)
		}
	}
	if NewKeySet(nil).Holds([]string{"a"}) {
		t.Fatal("an empty set holds a row")
	}
}
