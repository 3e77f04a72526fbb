package subject

import (
	"bytes"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"  Alice@Example.ORG ", "alice@example.org"},
		{"ＡＬＩＣＥ", "alice"}, // full-width folds under NFKC
		{"Jean\t\tDupont\n", "jean dupont"},
		{"Straße", "strasse"},
		{"+44 20 7946 0000", "+44 20 7946 0000"},
	} {
		if got := Normalize(tc.in); got != tc.want {
			t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestKeys(t *testing.T) {
	k1, _ := NewKeyer(bytes.Repeat([]byte{1}, PepperSize))
	k2, _ := NewKeyer(bytes.Repeat([]byte{2}, PepperSize))
	a, err := k1.Key("default", "Alice@example.org")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := k1.Key("", " alice@EXAMPLE.org"); a != b {
		t.Errorf("normalised spellings give different keys")
	}
	if b, _ := k1.Key("tenant-b", "alice@example.org"); a == b {
		t.Errorf("scopes do not isolate subjects")
	}
	if b, _ := k2.Key("default", "alice@example.org"); a == b {
		t.Errorf("the pepper does not change the key")
	}
	if !strings.HasPrefix(a.Ref(), "hmac:") || len(a.Ref()) != len("hmac:")+8+len("…") {
		t.Errorf("Ref() = %q", a.Ref())
	}
	p, err := ParseKey(a.String())
	if err != nil || p != a {
		t.Errorf("ParseKey(String()) = %v, %v", p, err)
	}
	if _, err := k1.Key("default", "   "); err != ErrEmpty {
		t.Errorf("empty id: %v, want ErrEmpty", err)
	}
	if _, err := NewKeyer([]byte("short")); err == nil {
		t.Errorf("short pepper accepted")
	}
}
