package certificate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/amnesia-dev/amnesia/transparency"
)

// One witness key counts as one witness: the same Ed25519 key given in both
// of its verifier-key forms (plain Ed25519 and C2SP cosignature/v1), or
// under two names, with a checkpoint carrying a line of each, does not
// satisfy a policy that asks for two witnesses.
func TestOneKeyIsOneWitness(t *testing.T) {
	ctx := context.Background()
	pub, _ := goldenKey()
	other, otherPriv := otherKey()
	b, env := goldenParts(t)
	text, name, b64 := logLine(t, b.LogEntry.Checkpoint)
	logSig := "— " + name + " " + b64 + "\n"
	c0, err := transparency.ParseCheckpoint([]byte(strings.TrimSuffix(text, "\n")))
	if err != nil {
		t.Fatal(err)
	}

	// The one key, as a plain Ed25519 note key and as two cosignature/v1
	// keys under two names; one signature line by each.
	edKey, err := note.NewEd25519VerifierKey("witness.test/w", other)
	if err != nil {
		t.Fatal(err)
	}
	coKey, err := transparency.CosignatureVerifierKey("witness.test/w", other)
	if err != nil {
		t.Fatal(err)
	}
	coKey2, err := transparency.CosignatureVerifierKey("witness.test/alias", other)
	if err != nil {
		t.Fatal(err)
	}
	edSigner, err := transparency.NewSigner("witness.test/w", otherPriv)
	if err != nil {
		t.Fatal(err)
	}
	coSigner, err := transparency.NewCosigner("witness.test/w", otherPriv)
	if err != nil {
		t.Fatal(err)
	}
	coSigner2, err := transparency.NewCosigner("witness.test/alias", otherPriv)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := note.Sign(&note.Note{Text: string(c0.Body())}, edSigner, coSigner, coSigner2)
	if err != nil {
		t.Fatal(err)
	}
	_, sigs, _ := strings.Cut(string(signed), "\n\n")
	if strings.Count(sigs, "\n") != 3 {
		t.Fatalf("want three signature lines, got %q", sigs)
	}
	bundle := rebundle(t, b, env, text+logSig+sigs)

	p := &Policy{}
	p.AddKey(TrustedKey{Public: pub})
	for _, k := range []string{edKey, coKey, coKey2} {
		if err := p.AddWitnessKey(k); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	o, err := p.Options()
	if err != nil {
		t.Fatal(err)
	}
	if o.MinWitnesses != 1 {
		t.Errorf("default MinWitnesses %d for three forms of one key, want 1", o.MinWitnesses)
	}
	res, err := VerifyBundle(ctx, bundle, o)
	if err != nil {
		t.Fatalf("one witness required: %v", err)
	}
	if len(res.Witnesses) != 1 {
		t.Errorf("counted witnesses %v, want one", res.Witnesses)
	}

	p.MinWitnesses = 2
	if _, err := p.Options(); !errors.Is(err, ErrPolicy) {
		t.Errorf("two witnesses required of one key's forms: %v, want ErrPolicy", err)
	}
	// Asked of VerifyBundle directly, two witnesses are not there either.
	o.MinWitnesses = 2
	if _, err := VerifyBundle(ctx, bundle, o); !errors.Is(err, ErrWitnesses) {
		t.Errorf("two witnesses required, one key signed in three forms: %v, want ErrWitnesses", err)
	}
}
