package lineage

import (
	"testing"
)

func FuzzDecodeTrace(f *testing.F) {
	f.Add([]byte(`{"version":"amnesia.trace/v1","id":"00"}`))
	f.Add([]byte(`not json`))
	f.Add([]byte(`{"version":"amnesia.trace/v1","id":"","artifacts":[{"id":"art:1","derived_from":null}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := DecodeTrace(b)
		if err == nil {
			// An accepted trace re-encodes to a trace with the same id.
			enc, err := tr.Encode()
			if err != nil {
				t.Fatal(err)
			}
			again, err := DecodeTrace(enc)
			if err != nil || again.ID != tr.ID {
				t.Fatalf("accepted trace does not round-trip: %v", err)
			}
		}
	})
}
