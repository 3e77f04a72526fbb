package certificate_test

import (
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/transparency"
)

// LoadPolicy (what `amnesia verify` runs on its flags) and a Policy built
// in Go from the same bytes give the same VerifyOptions: a key given twice
// is retired from the earlier time, a witness key given inline and as a
// file counts once, MinWitnesses 0 means all.
func TestPolicyFilesAndBytesAgree(t *testing.T) {
	dir := t.TempDir()
	pub := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey)
	pemBytes, err := certificate.EncodePublicKeyPEM(pub)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "key.pem")
	wpub := ed25519.NewKeyFromSeed(append(make([]byte, ed25519.SeedSize-1), 1)).Public().(ed25519.PublicKey)
	vkey, err := transparency.CosignatureVerifierKey("witness.example/w1", wpub)
	if err != nil {
		t.Fatal(err)
	}
	wFile := filepath.Join(dir, "witness.vkey")
	if err := os.WriteFile(keyFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wFile, []byte(vkey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	early, late := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	loaded, err := certificate.LoadPolicy(certificate.PolicyFiles{
		PublicKeys:  []string{keyFile + "@" + late.Format(time.RFC3339), keyFile + "@" + early.Format(time.RFC3339), keyFile},
		WitnessKeys: []string{vkey, wFile},
		Origin:      "log.example",
	})
	if err != nil {
		t.Fatal(err)
	}
	var built certificate.Policy
	built.Origin = "log.example"
	for _, r := range []time.Time{late, early, {}} {
		if err := built.AddPublicKeyPEM(pemBytes, r); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		if err := built.AddWitnessKey(vkey); err != nil {
			t.Fatal(err)
		}
	}
	for name, p := range map[string]*certificate.Policy{"LoadPolicy": loaded, "built": &built} {
		o, err := p.Options()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(o.Keys) != 1 || !o.Keys[0].Retired.Equal(early) {
			t.Errorf("%s: keys %+v, want one key retired %s", name, o.Keys, early)
		}
		if len(o.Witnesses) != 1 || o.MinWitnesses != 1 {
			t.Errorf("%s: %d witnesses, min %d; want 1 and 1", name, len(o.Witnesses), o.MinWitnesses)
		}
		if o.Origin != "log.example" || o.TimestampTrusted || o.Timestamp == nil {
			t.Errorf("%s: origin %q, timestamp trusted %v, checker %v", name, o.Origin, o.TimestampTrusted, o.Timestamp != nil)
		}
	}
}

// The verifier's own bad input is ErrPolicy; an unreadable or bad trust
// file is not (it is the trust file's error).
func TestPolicyErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "root.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]certificate.PolicyFiles{
		"negative min":     {MinWitnesses: -1},
		"min above keys":   {MinWitnesses: 1},
		"bad witness key":  {WitnessKeys: []string{"a+b+c"}},
		"TSA root not PEM": {TSARoots: []string{notPEM}},
	} {
		if _, err := certificate.LoadPolicy(f); !errors.Is(err, certificate.ErrPolicy) {
			t.Errorf("%s: err %v, want ErrPolicy", name, err)
		}
	}
	if _, err := certificate.LoadPolicy(certificate.PolicyFiles{TrustFiles: []string{notPEM}}); !errors.Is(err, certificate.ErrTrustFile) || errors.Is(err, certificate.ErrPolicy) {
		t.Errorf("bad trust file: err %v, want ErrTrustFile only", err)
	}
	if p, s := certificate.SplitRetired("k.pem@yesterday"); p != "k.pem@yesterday" || !s.IsZero() {
		t.Errorf("SplitRetired without a time: %q %v", p, s)
	}
}
