package saga

import (
	"testing"

	"github.com/amnesia-dev/amnesia/store"
)

// A batch's needle set is reused only for exactly the evidence it was
// built from: another key, another Evidence, a needle more or less, or a
// needle replaced by an equal copy each build a new one.
func TestBatchNeedleSetReusedOnlyForTheSameNeedles(t *testing.T) {
	ev := func(texts ...string) *store.Evidence {
		e := &store.Evidence{}
		for _, s := range texts {
			e.AddWindows([]byte(s))
		}
		return e
	}
	a := ev("the first record of the first person, long enough for two windows of bytes")
	c := ev("another record, of another person, with windows of its own to search for")
	b := &batchShare{}
	first := b.needleSet("docs", map[string]*store.Evidence{"a": a, "c": c})
	if first.Len() == 0 {
		t.Fatal("no needles")
	}
	if got := b.needleSet("docs", map[string]*store.Evidence{"c": c, "a": a}); got != first {
		t.Error("the same evidence in a new map built a new set")
	}
	if got := b.needleSet("other", map[string]*store.Evidence{"c": c, "a": a}); got == first {
		t.Error("another store got the first store's set")
	}
	cases := map[string]func() map[string]*store.Evidence{
		"a key fewer": func() map[string]*store.Evidence { return map[string]*store.Evidence{"a": a} },
		"another key": func() map[string]*store.Evidence { return map[string]*store.Evidence{"a": a, "d": c} },
		"another Evidence": func() map[string]*store.Evidence {
			cc := *c
			return map[string]*store.Evidence{"a": a, "c": &cc}
		},
		"a needle fewer": func() map[string]*store.Evidence {
			c.Needles = c.Needles[:len(c.Needles)-1]
			return map[string]*store.Evidence{"a": a, "c": c}
		},
		"a needle replaced by a copy": func() map[string]*store.Evidence {
			a.Needles[0] = append([]byte(nil), a.Needles[0]...)
			return map[string]*store.Evidence{"a": a, "c": c}
		},
	}
	for _, name := range []string{"a key fewer", "another key", "another Evidence", "a needle fewer", "a needle replaced by a copy"} {
		before := b.sets["docs"].set
		if got := b.needleSet("docs", cases[name]()); got == before {
			t.Errorf("%s: the earlier set was reused", name)
		}
	}
}
