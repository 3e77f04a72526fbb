package certificate

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// reverifyStatement is the golden statement as a re-verification: linked to
// a first certificate, every erased artifact VERIFIED(logical) by id.
func reverifyStatement(pub []byte) *Statement {
	st := goldenStatementWithKey(pub)
	p := &st.Predicate
	p.CertificateID = "rv-0123456789abcdef01234567"
	st.Subject[0].Name = SubjectPrefix + p.CertificateID
	p.Reverifies = &ReverifyLink{CertificateID: "01JNB5Q6X2R7Y8Z9A0B1C2D3E4", PayloadSHA256: hexSum("first payload"), LogIndex: 7}
	for i := range p.Artifacts {
		a := &p.Artifacts[i]
		if a.Outcome == Verified {
			a.Level, a.Method = LevelLogical, "reverify: by id"
			a.Measurement = &Measurement{Logical: &Logical{Methods: []string{"by-id"}}}
		}
	}
	p.Counts = CountArtifacts(p.Artifacts)
	return st
}

// A re-verification certificate signs and verifies; its link survives the
// round trip; and an erasure certificate (no link) encodes exactly as
// before: the field is optional and the golden vectors do not change.
func TestReverifyLinkRoundTrip(t *testing.T) {
	ctx := context.Background()
	pub, priv := goldenKey()
	st := reverifyStatement(pub)
	env, err := Sign(ctx, st, priv)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Verify(ctx, env, pub)
	if err != nil {
		t.Fatal(err)
	}
	if got.Predicate.Reverifies == nil || *got.Predicate.Reverifies != *st.Predicate.Reverifies {
		t.Errorf("reverifies = %+v, want %+v", got.Predicate.Reverifies, st.Predicate.Reverifies)
	}
	payload, err := Encode(st)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(payload, []byte(`"reverifies":{"certificate_id":"01JNB5Q6X2R7Y8Z9A0B1C2D3E4","payload_sha256":"`)) {
		t.Errorf("payload does not carry the link in its documented form: %s", payload)
	}
	plain, err := Encode(goldenStatementWithKey(pub))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(plain, []byte("reverifies")) {
		t.Errorf("an erasure certificate encodes a reverifies member")
	}
}

// Step 11: a malformed link, or a re-verification that claims the physical
// level, is a schema error; Sign refuses to issue it.
func TestReverifySchemaChecks(t *testing.T) {
	ctx := context.Background()
	pub, priv := goldenKey()
	cases := []struct {
		name   string
		mutate func(p *Predicate)
		want   string
	}{
		{"id empty", func(p *Predicate) { p.Reverifies.CertificateID = "" }, "reverifies.certificate_id is empty"},
		{"id self", func(p *Predicate) { p.Reverifies.CertificateID = p.CertificateID }, "reverifies.certificate_id is the certificate's own id"},
		{"digest short", func(p *Predicate) { p.Reverifies.PayloadSHA256 = p.Reverifies.PayloadSHA256[:63] }, "reverifies.payload_sha256"},
		{"digest upper", func(p *Predicate) { p.Reverifies.PayloadSHA256 = strings.ToUpper(p.Reverifies.PayloadSHA256) }, "reverifies.payload_sha256"},
		{"log index", func(p *Predicate) { p.Reverifies.LogIndex = -1 }, "reverifies.log_index"},
		{"physical level", func(p *Predicate) {
			p.Artifacts[0].Level = LevelPhysical
			p.Counts = CountArtifacts(p.Artifacts)
		}, "artifacts[0].level is physical"},
		{"physical measurement", func(p *Predicate) {
			p.Artifacts[1].Measurement.Physical = &Physical{Needles: 3, FoundBefore: 3}
		}, "artifacts[1].measurement.physical"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := reverifyStatement(pub)
			c.mutate(&st.Predicate)
			payload, err := Encode(st)
			if err != nil {
				t.Fatal(err)
			}
			env, err := signPayload(ctx, payload, priv)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Verify(ctx, env, pub)
			if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Verify = %v, want ErrSchema naming %q", err, c.want)
			}
			if _, err := Sign(ctx, st, priv); !errors.Is(err, ErrSchema) {
				t.Errorf("Sign = %v, want ErrSchema", err)
			}
		})
	}
}
