package subject

import "testing"

// BenchmarkKeyerKey keys one id.
func BenchmarkKeyerKey(b *testing.B) {
	k, _ := NewKeyer(make([]byte, PepperSize))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		k.Key("tenant", "ada.achterberg.0001@example.net")
	}
}

// BenchmarkCheckNotSubject checks one store key of several tokens against a
// subject, as capture checks the key of every record it writes for an owner
// known only by its key.
func BenchmarkCheckNotSubject(b *testing.B) {
	k, _ := NewKeyer(make([]byte, PepperSize))
	s, _ := k.Key("", "ada.achterberg.0001@example.net")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if k.CheckNotSubject("key", "s0001-d03#12/chunk-a8f3.v2", "", s) != nil {
			b.Fatal("an opaque key was refused")
		}
	}
}
