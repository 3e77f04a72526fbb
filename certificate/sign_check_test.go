package certificate

import (
	"context"
	"fmt"
	"reflect"
	"testing"
)

// bigStatement is goldenStatement with n artifacts (the first golden
// artifact repeated under distinct ids): a subject of 15 documents with
// their chunks holds about 75.
func bigStatement(n int) *Statement {
	p := goldenPredicate()
	one := p.Artifacts[0]
	p.Artifacts = p.Artifacts[:0]
	for i := 0; i < n; i++ {
		a := one
		a.ID = "art:" + hexSum(fmt.Sprint("doc/", i))[:32]
		p.Artifacts = append(p.Artifacts, a)
	}
	p.Counts = CountArtifacts(p.Artifacts)
	p.Trace.Artifacts = n
	return NewStatement(p, p.Trace.ID)
}

// BenchmarkSign signs a statement of 75 artifacts: Sign's schema check
// runs once per certificate on the erasure's path.
func BenchmarkSign(b *testing.B) {
	_, priv := goldenKey()
	ctx := context.Background()
	st := bigStatement(75)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Sign(ctx, st, priv); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCheckEncodedAgreesWithCheckPayload: on every payload Encode makes,
// Sign's check (checkEncoded, no protobuf parse) accepts and refuses
// exactly what Verify's (checkPayload) does, with the same message:
// statements broken in each in-toto field and in the certificate's own.
func TestCheckEncodedAgreesWithCheckPayload(t *testing.T) {
	pub, _ := goldenKey()
	keyID := KeyID(pub)
	sha := hexSum("x")
	mutations := map[string]func(st *Statement){
		"valid":                  func(st *Statement) {},
		"75 artifacts":           func(st *Statement) { *st = *bigStatement(75); st.Predicate.KeyID = keyID },
		"empty type":             func(st *Statement) { st.Type = "" },
		"legacy in-toto type":    func(st *Statement) { st.Type = "https://in-toto.io/Statement/v0.1" },
		"other type":             func(st *Statement) { st.Type = "https://example.org/Statement" },
		"no subject":             func(st *Statement) { st.Subject = nil },
		"empty subject list":     func(st *Statement) { st.Subject = []ResourceDescriptor{} },
		"subject without digest": func(st *Statement) { st.Subject[0].Digest = nil },
		"subject empty digest":   func(st *Statement) { st.Subject[0].Digest = map[string]string{} },
		"subject without name":   func(st *Statement) { st.Subject[0].Name = "" },
		"digest not hex":         func(st *Statement) { st.Subject[0].Digest["sha256"] = "zz" + sha[2:] },
		"digest short":           func(st *Statement) { st.Subject[0].Digest["sha256"] = sha[:40] },
		"digest upper hex":       func(st *Statement) { st.Subject[0].Digest["sha256"] = "AB" + sha[2:] },
		"sha1 digest":            func(st *Statement) { st.Subject[0].Digest = map[string]string{"sha1": sha[:40]} },
		"unknown digest":         func(st *Statement) { st.Subject[0].Digest = map[string]string{"mine": "not hex at all"} },
		"second subject": func(st *Statement) {
			st.Subject = append(st.Subject, ResourceDescriptor{Name: "x", Digest: map[string]string{"sha256": sha}})
		},
		"second subject no name": func(st *Statement) {
			st.Subject = append(st.Subject, ResourceDescriptor{Digest: map[string]string{"sha256": sha}})
		},
		"second subject bad hex": func(st *Statement) {
			st.Subject = append(st.Subject, ResourceDescriptor{Name: "x", Digest: map[string]string{"sha256": "x"}})
		},
		"empty predicate type":    func(st *Statement) { st.PredicateType = "" },
		"other predicate type":    func(st *Statement) { st.PredicateType = "https://example.org/p" },
		"wrong key id":            func(st *Statement) { st.Predicate.KeyID = "other" },
		"no certificate id":       func(st *Statement) { st.Predicate.CertificateID = "" },
		"bad issued_at":           func(st *Statement) { st.Predicate.IssuedAt = "yesterday" },
		"invalid utf-8 in reason": func(st *Statement) { st.Predicate.Reason = "GDPR \xff\xfe" },
		"invalid utf-8 in name":   func(st *Statement) { st.Subject[0].Name = "\xff" },
	}
	for name, mutate := range mutations {
		t.Run(name, func(t *testing.T) {
			st := goldenStatement()
			st.Predicate.KeyID = keyID
			mutate(st)
			payload, err := Encode(st)
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := checkPayload(payload, keyID)
			got, gotErr := checkEncoded(payload, keyID)
			if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
				t.Fatalf("checkEncoded = %v, checkPayload = %v", gotErr, wantErr)
			}
			if wantErr == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("checkEncoded decoded %+v, checkPayload %+v", got, want)
			}
			if name == "valid" && gotErr != nil {
				t.Fatalf("the golden statement is refused: %v", gotErr)
			}
		})
	}
}
