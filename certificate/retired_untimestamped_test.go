package certificate

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// With a trusted TSA, a certificate of a retired key must carry a timestamp
// dated before the retirement: issued_at alone is the key holder's word, so
// a stolen retired key must not pass by leaving the timestamp out.
func TestRetiredKeyWithoutTimestampUnderTrustedTSA(t *testing.T) {
	good, err := os.ReadFile(goldenBundleFile)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := goldenKey()
	// The golden certificate is issued 2025-03-01T12:00:00Z and carries no
	// timestamp; the key is retired after that.
	retired := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	accept := func(token, message []byte) (time.Time, error) { return retired.Add(-time.Hour), nil }
	keys := []TrustedKey{{Public: pub, Retired: retired}}

	// No trusted TSA: issued_at before the retirement is all there is.
	if _, err := VerifyBundle(context.Background(), good, VerifyOptions{Keys: keys}); err != nil {
		t.Fatalf("retired after issued_at, no TSA: %v", err)
	}
	// A trusted TSA: no timestamp, so nothing but issued_at dates it.
	_, err = VerifyBundle(context.Background(), good, VerifyOptions{Keys: keys, Timestamp: accept, TimestampTrusted: true})
	if !errors.Is(err, ErrKeyRetired) {
		t.Fatalf("retired key, trusted TSA, no timestamp: err %v, want ErrKeyRetired", err)
	}
	// A key that is not retired needs no timestamp unless required.
	if _, err := VerifyBundle(context.Background(), good, VerifyOptions{Keys: []TrustedKey{{Public: pub}}, Timestamp: accept, TimestampTrusted: true}); err != nil {
		t.Fatalf("current key, trusted TSA, no timestamp: %v", err)
	}
}
