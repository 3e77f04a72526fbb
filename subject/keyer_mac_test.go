package subject

import (
	"crypto/hmac"
	"crypto/sha256"
	"sync"
	"testing"
)

// TestKeyIsTheDocumentedHMAC: a key is HMAC-SHA256(pepper, "amnesia.subject/v1"
// 0x00 scope 0x00 normalised id), computed here with crypto/hmac, for every
// call of a Keyer whose HMAC states are reused, from several goroutines.
func TestKeyIsTheDocumentedHMAC(t *testing.T) {
	pepper := make([]byte, PepperSize)
	for i := range pepper {
		pepper[i] = byte(7 * i)
	}
	k, err := NewKeyer(pepper)
	if err != nil {
		t.Fatal(err)
	}
	want := func(scope, id string) Key {
		m := hmac.New(sha256.New, pepper)
		m.Write([]byte("amnesia.subject/v1\x00" + scope + "\x00" + Normalize(id)))
		var out Key
		copy(out[:], m.Sum(nil))
		return out
	}
	ids := []string{"ada@example.net", "Bela.Bianchi@Example.NET", "+31 6 1234 5678", "Ünïcode Näme"}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				id := ids[(i+g)%len(ids)]
				scope := []string{"tenant/a", "tenant/b"}[i%2]
				got, err := k.Key(scope, id)
				if err != nil {
					t.Error(err)
					return
				}
				if got != want(scope, id) {
					t.Errorf("Key(%q, %q) is not the documented HMAC", scope, id)
					return
				}
			}
		}()
	}
	wg.Wait()
}
