package lineage

import (
	"context"
	"errors"
	"fmt"
)

// Adoption methods: how lineage learned of an artifact it did not see
// written.
const (
	// ViaReconcile: `amnesia reconcile` found the record in its store
	// through a configured field holding the subject's identifier, showed it
	// to an operator, and the operator adopted it.
	ViaReconcile = "reconcile"
)

// AdoptEvent is the body of an "adopt" event: the artifacts adopted in one
// step and how. Ids and the method only.
type AdoptEvent struct {
	Artifacts []string `json:"artifacts"`
	Via       string   `json:"via"`
}

// Adopter is implemented by ledgers that can adopt records written before
// lineage was captured (both backends do).
type Adopter interface {
	// Adopt records the artifacts (as RecordBatch does) and marks each as
	// adopted by via, in one transaction: all of them or none. An artifact
	// already recorded is refused (ErrAdopted): adoption is for what
	// lineage never saw.
	Adopt(ctx context.Context, artifacts []Artifact, via string) error
	// AdoptedVia returns, for those of ids that were adopted, how.
	AdoptedVia(ctx context.Context, ids []string) (map[string]string, error)
}

// ErrAdopted: an artifact to adopt is already in the ledger.
var ErrAdopted = errors.New("the ledger already holds this artifact")

// CheckAdoption checks an adoption's input: a known method, at least one
// artifact, each valid, no location twice.
func CheckAdoption(artifacts []Artifact, via string) error {
	if via != ViaReconcile {
		return fmt.Errorf("adopt: unknown method %q (want %q)", via, ViaReconcile)
	}
	if len(artifacts) == 0 {
		return errors.New("adopt: no artifacts")
	}
	seen := map[string]bool{}
	for _, a := range artifacts {
		if err := CheckArtifact(a); err != nil {
			return err
		}
		if seen[a.ID] {
			return fmt.Errorf("adopt: artifact %s twice", a.ID)
		}
		seen[a.ID] = true
	}
	return nil
}

// IDs returns the artifacts' ids.
func IDs(artifacts []Artifact) []string {
	out := make([]string, len(artifacts))
	for i, a := range artifacts {
		out[i] = a.ID
	}
	return out
}
