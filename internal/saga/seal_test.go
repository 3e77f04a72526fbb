package saga

import (
	"encoding/json"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
)

// Sealed evidence opens with the result sealed with it, and sealed evidence
// without one (orphans' evidence, or sealed by an earlier version) opens as
// before, with none.
func TestSealedEvidenceCarriesItsResult(t *testing.T) {
	key := make([]byte, 32)
	ev := map[string]*store.Evidence{"k1": {Key: "k1", Needles: [][]byte{[]byte("a window of text")}}}
	res := json.RawMessage(`{"records":{"k1":{"needles":1,"shared":0,"found_before":1}},"physical":true}`)
	for _, c := range []struct {
		result json.RawMessage
	}{{res}, {nil}} {
		b, err := sealEvidence("evidence-s.sealed", key, ev, c.result)
		if err != nil {
			t.Fatal(err)
		}
		got, gotRes, err := unsealEvidenceResult("evidence-s.sealed", "", b, key)
		if err != nil || string(got["k1"].Needles[0]) != "a window of text" || string(gotRes) != string(c.result) {
			t.Fatalf("sealed with result %s: got %v, result %s, %v", c.result, got, gotRes, err)
		}
		if got, err := unsealEvidence("evidence-s.sealed", "", b, key); err != nil || len(got) != 1 {
			t.Fatalf("unsealEvidence: %v, %v", got, err)
		}
	}
}
