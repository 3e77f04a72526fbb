package saga

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/timestamp"
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
	lg, err := transparency.Open(ctx, st, e.Dir.Key, e.Dir.Config.LogOrigin, keys...)
	if err != nil {
		return nil, err
	}
	// Every checkpoint signed is recorded in ledger-state.json, so that a
	// ledger lost or replaced later is noticed (state.Dir.OpenLedger).
	lg.OnCheckpoint(func(_ context.Context, cp *transparency.Signed) error { return e.Dir.RecordCheckpoint(cp) })
	return lg, nil
}

// logCertificate appends the leaf of env, the signed certificate whose id
// is certID, signs a checkpoint (with the append, one write to the ledger:
// transparency.Log.AppendCheckpoint) and returns the bundle: env with its
// index, inclusion proof and checkpoint. env was signed from a statement
// the certificate package checked (certificate.SignStatement): it is not parsed and
// checked again here.
func (r *runner) logCertificate(ctx context.Context, certID string, env *certificate.Signed) ([]byte, error) {
	leaf, err := transparency.CertificateLeaf(certID, env.Payload)
	if err != nil {
		return nil, err
	}
	lg, err := r.transparencyLog(ctx)
	if err != nil {
		return nil, err
	}
	idx, cp, err := lg.AppendCheckpoint(ctx, leaf)
	if err != nil {
		return nil, err
	}
	proof, err := lg.InclusionProof(ctx, idx, cp.Size)
	if err != nil {
		return nil, err
	}
	entry := &certificate.LogEntry{LogIndex: idx, InclusionProof: transparency.EncodeProof(proof), Checkpoint: string(cp.Raw)}
	if tsa := r.Dir.Config.TSA; tsa != "" {
		// Best effort: a TSA that is down or slow never blocks the erasure.
		tok, err := lg.Timestamp(ctx, cp.Size)
		if err == nil && tok == nil {
			var t *timestamp.Token
			if t, err = Anchor(ctx, lg, cp, tsa, r.Dir.Config.TSATimeoutDuration()); err == nil {
				tok = t.DER
			}
		}
		if err != nil {
			r.log().Warn("certificate issued without a timestamp", "error", err.Error())
			r.progress("timestamp: %v; the certificate is issued without one (run `amnesia anchor` later)", err)
		} else {
			entry.Timestamp = base64.StdEncoding.EncodeToString(tok)
		}
	}
	return env.EncodeBundle(entry)
}

// Anchor obtains an RFC 3161 token over the signed body of cp from the TSA
// at tsaURL and records it in the log (the token with the checkpoint, its
// digest as an anchor leaf).
func Anchor(ctx context.Context, lg *transparency.Log, cp *transparency.Signed, tsaURL string, timeout time.Duration) (*timestamp.Token, error) {
	tok, err := timestamp.Request(ctx, tsaURL, cp.Body(), &timestamp.RequestOptions{Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("timestamp from the TSA: %w", err)
	}
	if _, err := lg.Anchor(ctx, cp.Size, tok.DER); err != nil {
		return nil, err
	}
	return tok, nil
}
