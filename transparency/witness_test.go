package transparency_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/transparency"
)

// A cosignature/v1 test vector computed from the C2SP tlog-cosignature
// text alone (crypto/ed25519, no amnesia or formats code): key id
// SHA-256(name || "\n" || 0x04 || pub)[:4], signature over
// "cosignature/v1\ntime <t>\n" || body, encoded as key id || u64 t || sig.
const (
	vecName = "witness.example/w1"
	vecKey  = "witness.example/w1+f65f8fd1+BNBKsjJ0K7SrOhNovUYV5ObQIkq3GgFrr4UgozLJd4c3"
	vecBody = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
	vecTime = 1679315147
	vecLine = "— witness.example/w1 9l+P0QAAAABkGFDLzuX9TsYiZpxj+zNowkX/+9daSXTL3TPayzPaud3NNbKrTFNhiImoOcMEtN1GvBu0ZTr2FUU5saFGtDnaKP9sBg==\n"
)

var vecPriv = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x11}, ed25519.SeedSize))

// specCosign signs body as the spec says, independently of the code under test.
func specCosign(priv ed25519.PrivateKey, name, body string, ts uint64) string {
	pub := priv.Public().(ed25519.PublicKey)
	h := sha256.Sum256(append([]byte(name+"\n\x04"), pub...))
	sig := ed25519.Sign(priv, fmt.Appendf(nil, "cosignature/v1\ntime %d\n%s", ts, body))
	b := append(h[:4:4], binary.BigEndian.AppendUint64(nil, ts)...)
	return "— " + name + " " + base64.StdEncoding.EncodeToString(append(b, sig...)) + "\n"
}

func TestCosignatureVector(t *testing.T) {
	pub := vecPriv.Public().(ed25519.PublicKey)
	if got := specCosign(vecPriv, vecName, vecBody, vecTime); got != vecLine {
		t.Fatalf("spec signature line %q, vector %q", got, vecLine)
	}
	k, err := transparency.CosignatureVerifierKey(vecName, pub)
	if err != nil || k != vecKey {
		t.Fatalf("verifier key %q, %v; want %q", k, err, vecKey)
	}
	v, err := transparency.NewWitnessVerifier(vecKey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open([]byte(vecBody+"\n"+vecLine), note.VerifierList(v))
	if err != nil || len(n.Sigs) != 1 {
		t.Fatalf("the vector does not verify: %v", err)
	}
	if at, err := transparency.CosignatureTime(n.Sigs[0]); err != nil || at.Unix() != vecTime {
		t.Errorf("cosignature time %v, %v", at, err)
	}
	// Any other timestamp, body or key fails.
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimSuffix(vecLine[len("— "+vecName+" "):], "\n"))
	raw[11]++ // the timestamp's last byte
	for i, bad := range []string{
		vecBody + "\n— " + vecName + " " + base64.StdEncoding.EncodeToString(raw) + "\n",
		strings.Replace(vecBody, "20852163", "20852164", 1) + "\n" + vecLine,
		vecBody + "\n" + specCosign(ed25519.NewKeyFromSeed(make([]byte, 32)), vecName, vecBody, vecTime),
	} {
		if _, err := note.Open([]byte(bad), note.VerifierList(v)); err == nil {
			t.Errorf("bad %d verifies", i)
		}
	}
	// The same key as a plain Ed25519 note key has another key id: the
	// cosignature is not its signature.
	plainKey, _ := note.NewEd25519VerifierKey(vecName, pub)
	pv, err := transparency.NewWitnessVerifier(plainKey)
	if err != nil {
		t.Fatal(err)
	}
	if pv.KeyHash() == v.KeyHash() {
		t.Fatal("plain and cosignature key ids are equal")
	}
	if _, err := note.Open([]byte(vecBody+"\n"+vecLine), note.VerifierList(pv)); err == nil {
		t.Error("a plain Ed25519 key accepted a cosignature")
	}

	// The signer (formats' NewSignerForCosignatureV1) signs what the spec says.
	s, err := transparency.NewCosigner(vecName, vecPriv)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Unix()
	signed, err := note.Sign(&note.Note{Text: vecBody}, s)
	if err != nil {
		t.Fatal(err)
	}
	_, line, _ := strings.Cut(string(signed), "\n\n")
	name, b64, _ := strings.Cut(strings.TrimPrefix(strings.TrimSuffix(line, "\n"), "— "), " ")
	raw, err = base64.StdEncoding.DecodeString(b64)
	if name != vecName || err != nil || len(raw) != 76 {
		t.Fatalf("signature line %q", line)
	}
	ts := binary.BigEndian.Uint64(raw[4:12])
	if int64(ts) < before || int64(ts) > time.Now().Unix() {
		t.Errorf("timestamp %d is not now", ts)
	}
	if got := specCosign(vecPriv, vecName, vecBody, ts); got != line {
		t.Errorf("signer wrote %q, the spec gives %q", line, got)
	}
}

func TestWitnessKeyParsing(t *testing.T) {
	for _, bad := range []string{
		"", "w", "w+f65f8fd1", "w+f65f8fd1+", "with space+f65f8fd1+BNBKsjJ0K7SrOhNovUYV5ObQIkq3GgFrr4UgozLJd4c3",
		strings.Replace(vecKey, "f65f8fd1", "f65f8fd2", 1),                        // hash not the key's
		"witness.example/w1+f65f8fd+BNBKsjJ0K7SrOhNovUYV5ObQIkq3GgFrr4UgozLJd4c3", // 7 hex digits
		strings.Replace(vecKey, "+BNB", "+BdB", 1),                                // algorithm 0x05…
		vecKey + "AA", // key too long
		strings.Replace(vecKey, "witness.example/w1", "other", 1), // name not the hash's
	} {
		if _, err := transparency.NewWitnessVerifier(bad); err == nil {
			t.Errorf("NewWitnessVerifier(%q) accepted", bad)
		}
	}
}

// witnessFixture: a log with its key, a witness in a temp dir.
func witnessFixture(t *testing.T) (*transparency.Log, *transparency.Witness, string) {
	t.Helper()
	lg, _ := openLog(t)
	dir := filepath.Join(t.TempDir(), "witness")
	w, err := transparency.InitWitness(dir, "witness.test/w1")
	if err != nil {
		t.Fatal(err)
	}
	return lg, w, dir
}

func grow(t *testing.T, lg *transparency.Log, to int) *transparency.Signed {
	t.Helper()
	n, _ := lg.Size(context.Background())
	appendN(t, lg, int(n), to)
	cp, err := lg.Checkpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func consistency(t *testing.T, lg *transparency.Log, from, to int64) []string {
	t.Helper()
	p, err := lg.ConsistencyProof(context.Background(), from, to)
	if err != nil {
		t.Fatal(err)
	}
	return transparency.EncodeProof(p)
}

func TestWitnessCosigns(t *testing.T) {
	ctx := context.Background()
	lg, w, dir := witnessFixture(t)
	both := note.VerifierList(lg.Verifier(), w.Verifier())

	cp3 := grow(t, lg, 3)
	r, err := w.CosignReport(lg.VerifierKey(), cp3.Raw, 0, nil, transparency.CosignOptions{})
	if err != nil || !r.FirstSeen() || r.Checkpoint.Size != 3 {
		t.Fatalf("first cosign: %+v, %v", r, err)
	}
	n, err := note.Open(r.Note, both)
	if err != nil || len(n.Sigs) != 2 || n.Text != cp3.Note.Text {
		t.Fatalf("cosigned note: %v %q", err, r.Note)
	}
	if !bytes.HasPrefix(r.Note, cp3.Raw) {
		t.Errorf("the cosignature is not appended after the log's lines:\n%s", r.Note)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("witness dir mode %v, %v", fi.Mode(), err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "logs", "*.json"))
	if len(files) != 1 {
		t.Fatalf("state files %v", files)
	}
	if fi, _ := os.Stat(files[0]); fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode %v", fi.Mode())
	}
	if fi, _ := os.Stat(filepath.Join(dir, "witness.key")); fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v", fi.Mode())
	}

	// The log grows: cosigned with a proof from 3.
	cp7 := grow(t, lg, 7)
	r, err = w.CosignReport(lg.VerifierKey(), cp7.Raw, 3, consistency(t, lg, 3, 7), transparency.CosignOptions{})
	if err != nil || r.FirstSeen() || r.Previous.Size != 3 {
		t.Fatalf("cosign 3→7: %+v, %v", r, err)
	}
	// Storing the cosignature in the log, and cosigning the same tree again.
	stored, err := lg.AddSignatures(ctx, r.Note)
	if err != nil || len(stored.Note.UnverifiedSigs) != 1 {
		t.Fatalf("add signatures: %v", err)
	}
	again, err := w.Cosign(lg.VerifierKey(), stored.Raw, 7, nil)
	if err != nil {
		t.Fatalf("cosign the same tree again: %v", err)
	}
	if c := strings.Count(string(again), "— "+w.Name()+" "); c != 1 {
		t.Errorf("re-cosigned note has %d lines by the witness:\n%s", c, again)
	}
	// A reopened witness has the same key and state.
	w2, err := transparency.OpenWitness(dir)
	if err != nil || w2.VerifierKey() != w.VerifierKey() {
		t.Fatalf("reopen: %v", err)
	}
	if st, err := w2.State(lg.Origin()); err != nil || st.Size != 7 {
		t.Fatalf("state after reopen: %+v %v", st, err)
	}
	if _, err := transparency.InitWitness(dir, "again"); err == nil {
		t.Error("init over an existing witness succeeded")
	}

	// Refusals, each with its error; none changes the state.
	cp9 := grow(t, lg, 9)
	badProof := consistency(t, lg, 7, 9)
	badProof[0] = base64.StdEncoding.EncodeToString(make([]byte, 32))
	fork7, fork11, forkProof := forkedLog(t, lg)
	otherKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
	wrongSigner, _ := transparency.NewSigner(lg.Origin(), otherKey)
	wrongSigned, _ := transparency.Sign(cp9.Checkpoint, wrongSigner)
	for _, c := range []struct {
		name  string
		cp    []byte
		from  int64
		proof []string
		want  error
	}{
		{"smaller tree (a replay of 3)", cp3.Raw, 0, nil, transparency.ErrWitnessRollback},
		{"smaller tree, proof from 7", cp3.Raw, 7, nil, transparency.ErrWitnessRollback},
		{"proof from the wrong size", cp9.Raw, 3, consistency(t, lg, 3, 9), transparency.ErrWitnessStale},
		{"bad proof", cp9.Raw, 7, badProof, transparency.ErrWitnessInconsistent},
		{"no proof", cp9.Raw, 7, nil, transparency.ErrWitnessInconsistent},
		{"rewritten tree, same size", fork7.Raw, 7, nil, transparency.ErrWitnessFork},
		{"rewritten tree, larger", fork11.Raw, 7, forkProof, transparency.ErrWitnessInconsistent},
		{"not signed by the log key", wrongSigned, 7, consistency(t, lg, 7, 9), transparency.ErrCheckpointSignature},
		{"garbage", []byte("garbage"), 7, nil, transparency.ErrMalformed},
	} {
		_, err := w.Cosign(lg.VerifierKey(), c.cp, c.from, c.proof)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if c.want != transparency.ErrWitnessStale && c.want != transparency.ErrMalformed && !errors.Is(err, transparency.ErrProof) && !errors.Is(err, transparency.ErrCheckpointSignature) {
			t.Errorf("%s: %v does not say the log misbehaved", c.name, err)
		}
	}
	if st, _ := w.State(lg.Origin()); st.Size != 7 {
		t.Fatalf("a refusal changed the state: size %d", st.Size)
	}
	// The proof from 7 is accepted after all that.
	if _, err := w.Cosign(lg.VerifierKey(), cp9.Raw, 7, consistency(t, lg, 7, 9)); err != nil {
		t.Fatalf("cosign 7→9: %v", err)
	}

	// A second witness cosigns what the first returned; both lines stay.
	wb, err := transparency.InitWitness(t.TempDir(), "witness.test/w2")
	if err != nil {
		t.Fatal(err)
	}
	first, _ := w.Cosign(lg.VerifierKey(), cp9.Raw, 9, nil)
	twice, err := wb.Cosign(lg.VerifierKey(), first, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := note.Open(twice, note.VerifierList(lg.Verifier(), w.Verifier(), wb.Verifier())); err != nil || len(n.Sigs) != 3 {
		t.Fatalf("two witnesses: %v\n%s", err, twice)
	}

	// A state file edited behind the witness's back is refused.
	files, _ = filepath.Glob(filepath.Join(dir, "logs", "*.json"))
	data, _ := os.ReadFile(files[0])
	os.WriteFile(files[0], bytes.Replace(data, []byte(`"size": 9`), []byte(`"size": 8`), 1), 0o600)
	if _, err := w.Cosign(lg.VerifierKey(), cp9.Raw, 9, nil); !errors.Is(err, transparency.ErrMalformed) {
		t.Errorf("edited state: %v", err)
	}
}

// forkedLog is a log with the same key and origin as orig, rewritten from
// its first leaf (the operator's rewrite of history): its checkpoints of 7
// and 11 leaves and the consistency proof between them.
func forkedLog(t *testing.T, orig *transparency.Log) (cp7, cp11 *transparency.Signed, proof []string) {
	t.Helper()
	ctx := context.Background()
	l, err := sqliteledger.Open(ctx, filepath.Join(t.TempDir(), "fork.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	lg, err := transparency.Open(ctx, l, ed25519.NewKeyFromSeed(seed), orig.Origin())
	if err != nil || lg.Origin() != orig.Origin() {
		t.Fatalf("fork: %v", err)
	}
	leaf, _ := transparency.EventLeaf("erasure-started", "er-rewritten", strings.Repeat("ab", 32))
	if _, err := lg.Append(ctx, leaf); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 11; i++ {
		leaf, _ := transparency.EventLeaf("erasure-started", fmt.Sprintf("er-%04d", i), fmt.Sprintf("%064x", i))
		if _, err := lg.Append(ctx, leaf); err != nil {
			t.Fatal(err)
		}
		if i == 6 {
			if cp7, err = lg.Checkpoint(ctx); err != nil || cp7.Size != 7 {
				t.Fatal(err)
			}
		}
	}
	if cp11, err = lg.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	return cp7, cp11, consistency(t, lg, 7, 11)
}

// A witness reopens whatever its key's base64 holds ('+' and '/' included).
func TestWitnessReopens(t *testing.T) {
	for i := range 24 {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
		w, err := transparency.InitWitness(dir, "witness.test/w")
		if err != nil {
			t.Fatal(err)
		}
		w2, err := transparency.OpenWitness(dir)
		if err != nil || w2.VerifierKey() != w.VerifierKey() {
			t.Fatalf("reopen %s: %v", w.VerifierKey(), err)
		}
		if _, err := transparency.NewWitnessVerifier(w.VerifierKey()); err != nil {
			t.Fatalf("own verifier key %s: %v", w.VerifierKey(), err)
		}
	}
	if _, err := transparency.InitWitness(t.TempDir(), "bad name"); err == nil {
		t.Error("a name with a space was accepted")
	}
}
