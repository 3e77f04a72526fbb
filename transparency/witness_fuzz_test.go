package transparency_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/transparency"
)

// Seeds for the witness fuzz tests are committed under testdata/fuzz/<name>.

func FuzzParseWitnessState(f *testing.F) {
	f.Add([]byte("{\n  \"origin\": \"o\",\n  \"size\": 0,\n  \"root_hash\": \"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\",\n  \"checkpoint\": \"o\\n0\\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\\n\\n— o AAAA\\n\",\n  \"cosigned_at\": \"2026-01-02T03:04:05Z\"\n}\n"))
	f.Add([]byte(`{"origin":"o"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, c, err := transparency.ParseWitnessState(b)
		if err != nil {
			return
		}
		// What parses is canonical and self-consistent.
		enc, err := transparency.EncodeWitnessState(s)
		if err != nil || !bytes.Equal(enc, b) {
			t.Fatalf("re-encoding differs: %v\n%s\n%s", err, enc, b)
		}
		if c.Origin != s.Origin || c.Size != s.Size || base64.StdEncoding.EncodeToString(c.Hash[:]) != s.RootHash {
			t.Fatalf("state %+v, checkpoint %+v", s, c)
		}
		if !strings.HasPrefix(s.Checkpoint, string(c.Body())+"\n") {
			t.Fatalf("checkpoint note %q does not start with its body", s.Checkpoint)
		}
	})
}

// FuzzWitnessCosign feeds a witness that cosigned the log at 3 leaves an
// arbitrary checkpoint note, proof start and proof (hashes, one a line).
// Whatever it cosigns must be signed by the log, carry a valid
// cosignature, and extend the tree of 3 (checked again here, outside the
// witness); a refusal leaves the state as it was.
func FuzzWitnessCosign(f *testing.F) {
	lg := fuzzLog(f)
	ctx := context.Background()
	logKey, logKeyText := lg.Verifier(), lg.VerifierKey()
	origin := lg.Origin()
	grow := func(to int) *transparency.Signed {
		n, _ := lg.Size(ctx)
		for i := n; i < int64(to); i++ {
			leaf, _ := transparency.EventLeaf("erasure-started", fmt.Sprintf("er-%04d", i), fmt.Sprintf("%064x", i))
			if _, err := lg.Append(ctx, leaf); err != nil {
				f.Fatal(err)
			}
		}
		cp, err := lg.Checkpoint(ctx)
		if err != nil {
			f.Fatal(err)
		}
		return cp
	}
	cp3 := grow(3)
	cp9 := grow(9)
	p39, _ := lg.ConsistencyProof(ctx, 3, 9)
	f.Add(cp9.Raw, int64(3), strings.Join(transparency.EncodeProof(p39), "\n"))
	f.Add(cp3.Raw, int64(3), "")
	f.Add(cp9.Raw, int64(0), "")
	f.Fuzz(func(t *testing.T, cp []byte, from int64, proof string) {
		w, err := transparency.InitWitness(t.TempDir(), "witness.test/fuzz")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Cosign(logKeyText, cp3.Raw, 0, nil); err != nil {
			t.Fatal(err)
		}
		var p []string
		if proof != "" {
			p = strings.Split(proof, "\n")
		}
		r, err := w.CosignReport(logKeyText, cp, from, p, transparency.CosignOptions{})
		st, serr := w.State(origin)
		if serr != nil || st == nil {
			t.Fatalf("state: %+v, %v", st, serr)
		}
		if err != nil {
			if st.Size != 3 || st.RootHash != base64.StdEncoding.EncodeToString(cp3.Hash[:]) {
				t.Fatalf("a refusal (%v) changed the state: %+v", err, st)
			}
			return
		}
		n, err := note.Open(r.Note, note.VerifierList(logKey, w.Verifier()))
		if err != nil || len(n.Sigs) != 2 {
			t.Fatalf("cosigned note does not verify: %v\n%q", err, r.Note)
		}
		if o, err := transparency.OpenCheckpoint(cp, logKey); err != nil || o.Note.Text != n.Text {
			t.Fatalf("cosigned another text than given: %v", err)
		}
		c, err := transparency.ParseCheckpoint([]byte(n.Text))
		if err != nil {
			t.Fatal(err)
		}
		hashes, err := transparency.DecodeProof(p)
		if err != nil {
			t.Fatalf("cosigned with a malformed proof: %v", err)
		}
		if from != 3 {
			t.Fatalf("cosigned with a proof from %d", from)
		}
		if err := transparency.VerifyConsistency(cp3.Checkpoint, c, hashes); err != nil {
			t.Fatalf("cosigned a tree that does not extend 3: %v", err)
		}
		if st.Size != c.Size || st.Checkpoint != string(r.Note) {
			t.Fatalf("state after cosigning: %+v", st)
		}
	})
}

// fuzzLog is openLog for a fuzz target's setup.
func fuzzLog(f *testing.F) *transparency.Log {
	path := filepath.Join(f.TempDir(), "ledger.db")
	l, err := sqliteledger.Open(context.Background(), path)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { l.Close() })
	lg, err := transparency.Open(context.Background(), l, ed25519.NewKeyFromSeed(seed), "")
	if err != nil {
		f.Fatal(err)
	}
	return lg
}

func FuzzWitnessVerifier(f *testing.F) {
	f.Add(vecKey, []byte(vecBody+"\n"+vecLine))
	f.Fuzz(func(t *testing.T, vkey string, msg []byte) {
		v, err := transparency.NewWitnessVerifier(vkey)
		if err != nil {
			return
		}
		if v.Name() != strings.SplitN(vkey, "+", 2)[0] {
			t.Fatalf("name %q from %q", v.Name(), vkey)
		}
		n, err := note.Open(msg, note.VerifierList(v))
		if err != nil {
			return
		}
		for _, s := range n.Sigs {
			if s.Name != v.Name() || s.Hash != v.KeyHash() {
				t.Fatalf("verified a signature by %s %08x", s.Name, s.Hash)
			}
		}
	})
}
