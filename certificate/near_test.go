package certificate

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// nearArtifact is a valid near-duplicate candidate.
func nearArtifact() Artifact {
	return Artifact{ID: "art:" + strings.Repeat("0", 20), Kind: KindNearDuplicate, Store: "docs", Outcome: NeedsHuman,
		Reason: "a person must decide", Method: "not deleted: near-duplicate candidate (quote search)",
		Measurement: &Measurement{Near: &Near{Method: NearQuote, Of: "art:" + strings.Repeat("1", 20), Similarity: 0.42, Windows: 42, OfWindows: 100}}}
}

func semanticSection() *Semantic {
	return &Semantic{Level: LevelSemantic, Note: "a measurement", Searches: []NearSearch{{Store: "docs", Methods: []string{NearQuote}, Candidates: 1}},
		Drift: []Drift{{Store: "vectors", Queries: 4, K: 10, OverlapAtK: 0.9, MinOverlapAtK: 0.8, ErasedNeighbours: 2, Method: "m"}}}
}

func TestNearSchemaChecks(t *testing.T) {
	ctx := context.Background()
	pub, priv := goldenKey()
	withNear := func(f func(a *Artifact)) func(st *Statement) {
		return func(st *Statement) {
			a := nearArtifact()
			f(&a)
			st.Predicate.Artifacts = append(st.Predicate.Artifacts, a)
			st.Predicate.Counts = CountArtifacts(st.Predicate.Artifacts)
		}
	}
	withSemantic := func(f func(s *Semantic)) func(st *Statement) {
		return func(st *Statement) {
			s := semanticSection()
			f(s)
			st.Predicate.Semantic = s
		}
	}
	valid := []struct {
		name   string
		mutate func(st *Statement)
	}{
		{"quote candidate", withNear(func(a *Artifact) {})},
		{"paraphrase candidate", withNear(func(a *Artifact) { a.Measurement.Near.Method, a.Measurement.Near.Similarity = NearParaphrase, 1 })},
		{"semantic section", withSemantic(func(s *Semantic) {})},
		{"semantic without drift", withSemantic(func(s *Semantic) { s.Drift = nil })},
	}
	for _, c := range valid {
		t.Run(c.name, func(t *testing.T) {
			st := goldenStatement()
			c.mutate(st)
			env, err := Sign(ctx, st, priv)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Verify(ctx, env, pub)
			if err != nil {
				t.Fatal(err)
			}
			if c.name == "quote candidate" && got.Predicate.Artifacts[len(got.Predicate.Artifacts)-1].Measurement.Near.Similarity != 0.42 {
				t.Errorf("near measurement did not round-trip: %+v", got.Predicate.Artifacts)
			}
		})
	}
	bad := []struct {
		name   string
		mutate func(st *Statement)
		want   string
	}{
		{"candidate verified", withNear(func(a *Artifact) { a.Outcome, a.Level = Verified, LevelLogical }), "outcome is not NEEDS_HUMAN"},
		{"candidate residual", withNear(func(a *Artifact) { a.Outcome = Residual }), "outcome is not NEEDS_HUMAN"},
		{"candidate deleted", withNear(func(a *Artifact) { a.Measurement.Deleted = true }), "measurement.deleted is true"},
		{"candidate without near", withNear(func(a *Artifact) { a.Measurement.Near = nil }), "without measurement.near"},
		{"near on another kind", withNear(func(a *Artifact) { a.Kind = "document" }), "kind is not near-duplicate"},
		{"near method", withNear(func(a *Artifact) { a.Measurement.Near.Method = "guess" }), "near.method"},
		{"near of empty", withNear(func(a *Artifact) { a.Measurement.Near.Of = "" }), "near.of is empty"},
		{"near similarity 0", withNear(func(a *Artifact) { a.Measurement.Near.Similarity = 0 }), "near.similarity"},
		{"near similarity over 1", withNear(func(a *Artifact) { a.Measurement.Near.Similarity = 1.01 }), "near.similarity"},
		{"semantic level", withSemantic(func(s *Semantic) { s.Level = LevelPhysical }), "semantic.level"},
		{"drift k 0", withSemantic(func(s *Semantic) { s.Drift[0].K = 0 }), "drift[0] needs k"},
		{"drift overlap over 1", withSemantic(func(s *Semantic) { s.Drift[0].OverlapAtK = 1.5 }), "drift[0].overlap_at_k"},
		{"drift least over mean", withSemantic(func(s *Semantic) { s.Drift[0].MinOverlapAtK = 0.95 }), "drift[0].overlap_at_k"},
		{"drift negative", withSemantic(func(s *Semantic) { s.Drift[0].MinOverlapAtK = -0.1 }), "drift[0].overlap_at_k"},
		{"drift unerased over 1", withSemantic(func(s *Semantic) { s.Drift[0].OverlapUnerasedAtK = 1.1 }), "drift[0].overlap_unerased_at_k"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			err := verifyMutated(ctx, t, c.mutate)
			if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Verify = %v, want a schema error naming %q", err, c.want)
			}
			st := goldenStatement()
			c.mutate(st)
			if _, err := Sign(ctx, st, priv); !errors.Is(err, ErrSchema) {
				t.Errorf("Sign = %v, want ErrSchema", err)
			}
		})
	}
}
