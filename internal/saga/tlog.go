package saga

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/transparency"
)

// transparencyLog opens the log kept in the ledger, signed with the
// installation's key.
func (r *runner) transparencyLog(ctx context.Context) (*transparency.Log, error) {
	if r.tlog != nil {
		return r.tlog, nil
	}
	lg, err := OpenLog(ctx, r.Erasure)
	if err != nil {
		return nil, err
	}
	r.tlog = lg
	return lg, nil
}

// OpenLog opens the transparency log of e's ledger with e's signing key;
// checkpoints signed by the keyring's earlier keys still verify.
func OpenLog(ctx context.Context, e *Erasure) (*transparency.Log, error) {
	st, ok := e.Ledger.(transparency.Store)
	if !ok {
		return nil, fmt.Errorf("the ledger %T keeps no transparency log", e.Ledger)
	}
	keys, err := e.Dir.PublicKeys()
	if err != nil {
		return nil, err
	}
	return transparency.Open(ctx, st, e.Dir.Key, e.Dir.Config.LogOrigin, keys...)
}

// logCertificate appends env's leaf, signs a checkpoint and returns the
// bundle: env with its index, inclusion proof and checkpoint.
func (r *runner) logCertificate(ctx context.Context, env []byte) ([]byte, error) {
	st, err := certificate.Parse(env)
	if err != nil {
		return nil, err
	}
	payload, err := certificate.Payload(env)
	if err != nil {
		return nil, err
	}
	leaf, err := transparency.CertificateLeaf(st.Predicate.CertificateID, payload)
	if err != nil {
		return nil, err
	}
	lg, err := r.transparencyLog(ctx)
	if err != nil {
		return nil, err
	}
	idx, err := lg.Append(ctx, leaf)
	if err != nil {
		return nil, err
	}
	cp, err := lg.Checkpoint(ctx)
	if err != nil {
		return nil, err
	}
	proof, err := lg.InclusionProof(ctx, idx, cp.Size)
	if err != nil {
		return nil, err
	}
	return certificate.EncodeBundle(&certificate.Bundle{
		MediaType:    certificate.BundleMediaType,
		DSSEEnvelope: env,
		LogEntry:     &certificate.LogEntry{LogIndex: idx, InclusionProof: transparency.EncodeProof(proof), Checkpoint: string(cp.Raw)},
	})
}
