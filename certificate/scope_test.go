package certificate

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// unreachableStore is a configured store that could not be opened, as
// amnesia declares it (internal/saga/decide.go, storeState).
func unreachableStore() StoreState {
	return StoreState{Name: "archive", Type: "sqlite-doc", Capabilities: []string{}, Residue: residueUnreachable,
		Evidence: "the trace holds no artifact of this subject in this store, but the store could not be opened or reached when the erasure ran, so nothing about it was checked"}
}

// unreachableExclusion is the out_of_scope entry amnesia writes for that
// store (internal/saga/decide.go, installationExclusions).
func unreachableExclusion() Exclusion {
	return Exclusion{What: "store archive (unreachable)",
		Reason: "configured, but it could not be opened or reached when the erasure ran; nothing in it was erased or checked (declared out of scope: out_of_scope: true)"}
}

// A complete certificate is refused when a store of its declared scope was
// not erased or not checked (RESIDUAL, UNVERIFIED-store-failed, or
// UNREACHABLE without an out_of_scope entry naming it); the store states
// amnesia writes next to complete: true are accepted.
func TestCompleteAgreesWithDeclaredScope(t *testing.T) {
	ctx := context.Background()
	pub, priv := goldenKey()
	complete := func(f func(p *Predicate)) func(st *Statement) {
		return func(st *Statement) {
			st.Predicate.Complete = true
			f(&st.Predicate)
		}
	}
	addUnreachable := func(p *Predicate) {
		p.DeclaredScope = append(p.DeclaredScope, unreachableStore())
	}
	valid := []struct {
		name   string
		mutate func(st *Statement)
	}{
		{"complete, every store reached", complete(func(p *Predicate) {})},
		// What amnesia issues for a store configured out_of_scope: true
		// that it could not reach (saga TestUnreachableUntouchedStore).
		{"complete, an unreachable store declared out of scope", complete(func(p *Predicate) {
			addUnreachable(p)
			p.DeclaredScope[2].Evidence += "; the store is declared out of scope (out_of_scope: true)"
			p.OutOfScope = append(p.OutOfScope, unreachableExclusion())
		})},
		{"complete, an unreachable store excluded as a store", complete(func(p *Predicate) {
			addUnreachable(p)
			p.OutOfScope = append(p.OutOfScope, Exclusion{What: "store archive", Reason: "not covered"})
		})},
		{"incomplete, an unreachable store not excluded", func(st *Statement) { addUnreachable(&st.Predicate) }},
		{"incomplete, a failed store", func(st *Statement) { st.Predicate.DeclaredScope[1].Residue = residueStoreFailed }},
		{"incomplete, a residual store", func(st *Statement) { st.Predicate.DeclaredScope[0].Residue = residueResidual }},
		// States that say why the physical level was not reached, which
		// complete does not claim: amnesia writes them next to it.
		{"complete, reclaim deferred", complete(func(p *Predicate) { p.DeclaredScope[0].Residue = "PENDING-reclaim-deferred" })},
		{"complete, physical level not measured", complete(func(p *Predicate) { p.DeclaredScope[1].Residue = "UNVERIFIED-physical-not-measured" })},
		{"complete, a managed store", complete(func(p *Predicate) { p.DeclaredScope[1].Residue = "UNVERIFIED-managed" })},
		{"complete, a pin measured by a re-verification", complete(func(p *Predicate) { p.DeclaredScope[0].Residue = "PENDING-long-transaction" })},
		{"complete, a store not touched", complete(func(p *Predicate) { p.DeclaredScope[1].Residue = "NOT-TOUCHED" })},
	}
	for _, c := range valid {
		t.Run(c.name, func(t *testing.T) {
			st := goldenStatement()
			c.mutate(st)
			env, err := Sign(ctx, st, priv)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Verify(ctx, env, pub); err != nil {
				t.Fatal(err)
			}
		})
	}
	bad := []struct {
		name   string
		mutate func(st *Statement)
		want   string
	}{
		{"complete, an unreachable store not excluded", complete(addUnreachable), "declared_scope[2].residue is UNREACHABLE and no predicate.out_of_scope entry"},
		{"complete, only the unreachable store's files excluded", complete(func(p *Predicate) {
			addUnreachable(p)
			p.OutOfScope = append(p.OutOfScope, Exclusion{What: "files of store archive", Reason: "no physical probe"})
		}), "declared_scope[2].residue is UNREACHABLE"},
		{"complete, another store excluded", complete(func(p *Predicate) {
			addUnreachable(p)
			p.OutOfScope = append(p.OutOfScope, Exclusion{What: "store archive-old (unreachable)", Reason: "not covered"})
		}), "declared_scope[2].residue is UNREACHABLE"},
		{"complete, the exclusion names the store only in its reason", complete(func(p *Predicate) {
			addUnreachable(p)
			p.OutOfScope = append(p.OutOfScope, Exclusion{What: "a store", Reason: "store archive (unreachable)"})
		}), "declared_scope[2].residue is UNREACHABLE"},
		{"complete, a failed store", complete(func(p *Predicate) { p.DeclaredScope[1].Residue = residueStoreFailed }), "declared_scope[1].residue is UNVERIFIED-store-failed"},
		{"complete, a residual store", complete(func(p *Predicate) { p.DeclaredScope[0].Residue = residueResidual }), "declared_scope[0].residue is RESIDUAL"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			err := verifyMutated(ctx, t, c.mutate)
			if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Verify = %v, want a schema error naming %q", err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "archive") {
				t.Errorf("Verify = %v: the error names the store", err)
			}
			st := goldenStatement()
			c.mutate(st)
			if _, err := Sign(ctx, st, priv); !errors.Is(err, ErrSchema) {
				t.Errorf("Sign = %v, want ErrSchema", err)
			}
		})
	}
}
