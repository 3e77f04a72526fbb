package certificate_test

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
)

func pubKey(t *testing.T, b byte) ed25519.PublicKey {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = b
	return ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
}

// The keyring's rules, without a state directory: a new keyring, its file
// form round trip, rotation, retirement, lookup by id prefix, and a
// current key the file does not list.
func TestKeyring(t *testing.T) {
	a, b, c := pubKey(t, 1), pubKey(t, 2), pubKey(t, 3)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	ks := certificate.NewKeyring(a, t0)
	if len(ks) != 1 || !ks[0].Current || !ks[0].Created.Equal(t0.Truncate(time.Second)) || ks[0].ID != certificate.KeyID(a) {
		t.Fatalf("new keyring %+v", ks)
	}
	t1 := t0.Add(time.Hour)
	ks, nk, ok := ks.Rotated(b, t1)
	if len(ks) != 2 || ks[0].Current || !ks[1].Current || nk.ID != certificate.KeyID(b) || ok.ID != certificate.KeyID(a) || ok.Current {
		t.Fatalf("rotated %+v, new %+v, old %+v", ks, nk, ok)
	}
	if pubs := ks.PublicKeys(); len(pubs) != 2 || !pubs[0].Equal(b) || !pubs[1].Equal(a) {
		t.Errorf("PublicKeys is not current first")
	}
	file, err := ks.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(file), "current") {
		t.Errorf("the file says which key is current: %s", file)
	}
	back, err := certificate.ParseKeyring(file, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 || back[0].ID != ks[0].ID || back[0].Current || !back[1].Current || !back[1].Created.Equal(t1.Truncate(time.Second)) {
		t.Errorf("round trip %+v", back)
	}
	if _, _, _, err := back.Retired(nk.ID, t1); !errors.Is(err, certificate.ErrCurrentKey) {
		t.Errorf("retiring the current key: %v", err)
	}
	if _, _, _, err := back.Retired("sha256:ffffffffff", t1); !errors.Is(err, certificate.ErrKeyNotFound) {
		t.Errorf("retiring an unknown key: %v", err)
	}
	if _, err := back.Find("abc"); err == nil {
		t.Error("a 3-digit key id prefix was accepted")
	}
	next, now, was, err := back.Retired(strings.ToUpper(ok.ID[7:19]), t1)
	if err != nil {
		t.Fatal(err)
	}
	if !now.Retired.Equal(t1) || !was.Retired.IsZero() || !next[0].Retired.Equal(t1) || !back[0].Retired.IsZero() {
		t.Errorf("retire: now %+v was %+v next %+v (the keyring retired from must be left as it was)", now, was, next)
	}
	// A current key the file does not list is listed all the same.
	withC, err := certificate.ParseKeyring(file, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(withC) != 3 || withC[0].Current || withC[1].Current || !withC[2].Current || !withC[2].Created.IsZero() {
		t.Errorf("keyring with an unlisted current key %+v", withC)
	}
	if none, err := certificate.ParseKeyring(nil, a); err != nil || len(none) != 1 || !none[0].Current {
		t.Errorf("no keyring file: %+v, %v", none, err)
	}
	if _, err := certificate.ParseKeyring([]byte(`{"format":"amnesia.trust/v1","keys":[]}`), a); !errors.Is(err, certificate.ErrTrustFile) {
		t.Errorf("corrupt keyring file: %v", err)
	}
}
