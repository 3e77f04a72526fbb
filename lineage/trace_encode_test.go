package lineage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
)

// encodeJSON is the canonical encoding as encoding/json writes it: the
// definition appendTrace must match.
func encodeJSON(t *Trace) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(t); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// Strings that encoding/json escapes, or does not: quotes, backslashes,
// control characters, HTML characters (not escaped here), U+2028,
// invalid UTF-8, non-ASCII, empty.
var oddStrings = []string{"", "art:0123456789abcdef0123", `a"b`, `c:\d`, "tab\there", "nl\n", "\x00\x01\x1f", "<a href='x'>&amp;</a>", "\u2028\u2029", "\xff\xfe", "ümlaut ✓", "\x7f", "plain key/with spaces"}

func randomString(rng *rand.Rand) string {
	if rng.IntN(3) == 0 {
		return oddStrings[rng.IntN(len(oddStrings))]
	}
	return fmt.Sprintf("art:%020x", rng.Uint64())
}

func randomStrings(rng *rand.Rand) []string {
	switch rng.IntN(4) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	out := make([]string, 1+rng.IntN(4))
	for i := range out {
		out[i] = randomString(rng)
	}
	return out
}

func randomArtifacts(rng *rand.Rand) []TraceArtifact {
	switch rng.IntN(5) {
	case 0:
		return nil
	case 1:
		return []TraceArtifact{}
	}
	out := make([]TraceArtifact, 1+rng.IntN(6))
	for i := range out {
		out[i] = TraceArtifact{ID: randomString(rng), Kind: Kind(randomString(rng)), Store: randomString(rng), Key: randomString(rng), Digest: randomString(rng), DerivedFrom: randomStrings(rng)}
		if rng.IntN(2) == 0 {
			out[i].Owner = randomString(rng)
		}
	}
	return out
}

func TestEncodeMatchesJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 5))
	for i := 0; i < 2000; i++ {
		tr := &Trace{Version: randomString(rng), ID: randomString(rng), Scope: randomString(rng), Subject: randomString(rng), SubjectRef: randomString(rng),
			Artifacts: randomArtifacts(rng), Mentions: randomArtifacts(rng), Erased: rng.IntN(3) - 1}
		switch rng.IntN(4) {
		case 0:
		case 1:
			tr.Plan = []StorePlan{}
		default:
			for n := 1 + rng.IntN(3); n > 0; n-- {
				tr.Plan = append(tr.Plan, StorePlan{Store: randomString(rng), Delete: randomStrings(rng), Kinds: randomStrings(rng)})
			}
		}
		got, err := tr.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if want := encodeJSON(tr); !bytes.Equal(got, want) {
			t.Fatalf("trace %d: Encode =\n%s\nencoding/json =\n%s", i, got, want)
		}
	}
}

func FuzzEncodeMatchesJSON(f *testing.F) {
	for _, s := range oddStrings {
		f.Add(s, s, 1)
	}
	f.Fuzz(func(t *testing.T, a, b string, n int) {
		tr := &Trace{Version: TraceVersion, ID: a, Scope: b, Subject: a, SubjectRef: b, Erased: n,
			Artifacts: []TraceArtifact{{ID: a, Kind: Kind(b), Store: a, Key: b, Digest: a, DerivedFrom: []string{a, b}, Owner: b}},
			Mentions:  []TraceArtifact{}, Plan: []StorePlan{{Store: a, Delete: []string{b}, Kinds: nil}}}
		got, _ := tr.Encode()
		if want := encodeJSON(tr); !bytes.Equal(got, want) {
			t.Fatalf("Encode =\n%s\nencoding/json =\n%s", got, want)
		}
	})
}

// sortArtifacts orders by store, then key, then id, whatever the order it
// is given (two scopes' descendants may share a store and key).
func TestSortArtifactsOrder(t *testing.T) {
	want := []TraceArtifact{{ID: "art:2", Store: "a", Key: "z"}, {ID: "art:1", Store: "b", Key: "k"}, {ID: "art:3", Store: "b", Key: "k"}, {ID: "art:0", Store: "b", Key: "l"}}
	for _, perm := range [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 0, 3, 1}, {1, 3, 0, 2}} {
		var got []TraceArtifact
		for _, i := range perm {
			got = append(got, want[i])
		}
		sortArtifacts(got)
		for i := range want {
			if got[i].ID != want[i].ID {
				t.Fatalf("order %v: got %v, want %v", perm, got, want)
			}
		}
	}
}
