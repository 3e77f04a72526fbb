package certificate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/transparency"
)

const goldenBundleFile = "testdata/golden-v1.bundle.json"

// goldenBundle logs the golden envelope in a fresh log of the golden key
// (after five event leaves, so the proof has several hashes) and returns
// the bundle. Signing is deterministic, so the bytes are too.
func goldenBundle(t testing.TB) []byte {
	t.Helper()
	ctx := context.Background()
	_, priv := goldenKey()
	env, err := Sign(ctx, goldenStatement(), priv)
	if err != nil {
		t.Fatal(err)
	}
	l, err := sqliteledger.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lg, err := transparency.Open(ctx, l, priv, "amnesia.test/golden")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		leaf, _ := transparency.EventLeaf("erasure-started", fmt.Sprintf("er-%d", i), fmt.Sprintf("%064x", i))
		if _, err := lg.Append(ctx, leaf); err != nil {
			t.Fatal(err)
		}
	}
	payload, _ := Payload(env)
	st, _ := Parse(env)
	leaf, _ := transparency.CertificateLeaf(st.Predicate.CertificateID, payload)
	idx, err := lg.Append(ctx, leaf)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := lg.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	proof, err := lg.InclusionProof(ctx, idx, cp.Size)
	if err != nil {
		t.Fatal(err)
	}
	b, err := EncodeBundle(&Bundle{MediaType: BundleMediaType, DSSEEnvelope: env,
		LogEntry: &LogEntry{LogIndex: idx, InclusionProof: transparency.EncodeProof(proof), Checkpoint: string(cp.Raw)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGoldenBundle(t *testing.T) {
	b := goldenBundle(t)
	if *update {
		writeFile(t, goldenBundleFile, b)
		corpus := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(b)))
		writeFile(t, filepath.Join("testdata", "fuzz", "FuzzVerifyBundle", "golden"), []byte(corpus))
	}
	got, err := os.ReadFile(goldenBundleFile)
	if err != nil {
		t.Fatalf("%v (run go test ./certificate -update)", err)
	}
	if !bytes.Equal(got, b) {
		t.Fatalf("%s differs from what logging the golden envelope produces at byte %d", goldenBundleFile, firstDiff(got, b))
	}
	pub, _ := goldenKey()
	res, err := VerifyBundle(context.Background(), got, VerifyOptions{Keys: []TrustedKey{{Public: pub}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.LogIndex != 5 || res.Checkpoint.Size != 6 || res.Checkpoint.Origin != "amnesia.test/golden" {
		t.Errorf("verified %+v", res)
	}
}

// Every single-byte change of a published certificate is rejected, with
// one of the verification errors (never a panic, never "valid").
func TestBundleEveryByte(t *testing.T) {
	ctx := context.Background()
	good, err := os.ReadFile(goldenBundleFile)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := goldenKey()
	opts := VerifyOptions{Keys: []TrustedKey{{Public: pub}}}
	kinds := []error{ErrMalformed, ErrNotLogged, ErrWrongKey, ErrSignature, ErrSchema, ErrCheckpoint, ErrInclusion}
	for i := range good {
		for _, x := range []byte{0x01, 0x20, 0x80} {
			b := bytes.Clone(good)
			b[i] ^= x
			_, err := VerifyBundle(ctx, b, opts)
			if err == nil {
				t.Fatalf("byte %d ^%#x (%q→%q) accepted", i, x, good[i], b[i])
			}
			n := 0
			for _, k := range kinds {
				if errors.Is(err, k) {
					n++
				}
			}
			if n == 0 {
				t.Fatalf("byte %d ^%#x: error %q wraps no verification error", i, x, err)
			}
		}
	}
}

func FuzzVerifyBundle(f *testing.F) {
	// Seeds come from testdata/fuzz/FuzzVerifyBundle (the golden bundle).
	ctx := context.Background()
	pub, _ := goldenKey()
	opts := VerifyOptions{Keys: []TrustedKey{{Public: pub}}}
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := VerifyBundle(ctx, b, opts)
		if err != nil {
			if res != nil {
				t.Fatal("a result with an error")
			}
			return
		}
		// Whatever verifies is a canonical bundle whose leaf is in its tree.
		d, err := DecodeBundle(b)
		if err != nil {
			t.Fatalf("verified, but does not decode: %v", err)
		}
		if out, _ := EncodeBundle(d); !bytes.Equal(out, b) {
			t.Fatal("verified a non-canonical bundle")
		}
		// … with one envelope signature and one form of checkpoint.
		if _, _, err := decodeEnvelope(d.DSSEEnvelope); err != nil {
			t.Fatalf("verified an envelope that does not decode: %v", err)
		}
		if err := transparency.CheckSignatureLines([]byte(d.LogEntry.Checkpoint)); err != nil {
			t.Fatalf("verified a checkpoint of another form: %v", err)
		}
		if res.LogIndex >= res.Checkpoint.Size {
			t.Fatalf("index %d outside the tree of %d", res.LogIndex, res.Checkpoint.Size)
		}
	})
}
