package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/transparency"
)

// MaxBundle is the largest certificate bundle Verify reads.
const MaxBundle = 4 << 20

func (s *Service) openLog(ctx context.Context) (*transparency.Log, error) {
	s.tlogMu.Lock()
	defer s.tlogMu.Unlock()
	// Opened per call: other processes (erasures, other serve processes)
	// append to the same log.
	return saga.OpenLog(ctx, &saga.Erasure{Dir: s.dir, Ledger: s.ledger})
}

func (s *Service) auditor(p *Principal) error {
	if p == nil {
		return ErrUnauthorized
	}
	if !p.can(RoleOperator, RoleAuditor) {
		return fmt.Errorf("%w: a %s token may not do this", ErrForbidden, p.Role)
	}
	return nil
}

// Certificate returns a certificate bundle's bytes (the file amnesia
// published, byte for byte). A certificate of a scope the token may not touch
// is refused like a request of that scope.
func (s *Service) Certificate(ctx context.Context, p *Principal, id string) ([]byte, error) {
	if err := s.auditor(p); err != nil {
		return nil, err
	}
	if !validID(id, "") || len(id) < 8 {
		return nil, fmt.Errorf("%w: no such certificate", ErrNotFound)
	}
	b, err := s.env.Durable().Certificate(ctx, id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no such certificate", ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	st, err := bundleStatement(b)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(p.Scopes, st.Predicate.Scope) {
		return nil, fmt.Errorf("%w: the token may not touch this scope", ErrForbidden)
	}
	return b, nil
}

func bundleStatement(b []byte) (*certificate.Statement, error) {
	env := b
	if certificate.IsBundle(b) {
		bd, err := certificate.DecodeBundle(b)
		if err != nil {
			return nil, err
		}
		env = bd.DSSEEnvelope
	}
	return certificate.Parse(env)
}

// Verify verifies an uploaded bundle against the installation's keyring and
// its log's origin. An invalid bundle is a result (Valid false, ErrorKind),
// not an error.
func (s *Service) Verify(ctx context.Context, p *Principal, bundle []byte) (*Verification, error) {
	if err := s.auditor(p); err != nil {
		return nil, err
	}
	if len(bundle) == 0 || len(bundle) > MaxBundle {
		return nil, Invalid("bundle", "send the certificate file (at most 4 MiB)")
	}
	ring, err := s.dir.Keyring()
	if err != nil {
		return nil, err
	}
	pol := &certificate.Policy{}
	for _, k := range ring {
		pol.AddKey(certificate.TrustedKey{Public: k.Public, Retired: k.Retired})
	}
	lg, err := s.openLog(ctx)
	if err != nil {
		return nil, err
	}
	pol.Origin = lg.Origin()
	o, err := pol.Options()
	if err != nil {
		return nil, err
	}
	res, err := certificate.VerifyBundle(ctx, bundle, o)
	if err != nil {
		kind, msg := verifyErrorKind(err)
		return &Verification{Valid: false, ErrorKind: kind, Error: msg}, nil
	}
	pr := res.Statement.Predicate
	return &Verification{Valid: true, KeyID: res.KeyID, CertificateID: pr.CertificateID, LogIndex: res.LogIndex, Complete: pr.Complete}, nil
}

func verifyErrorKind(err error) (kind, msg string) {
	for _, k := range []struct {
		err        error
		kind, what string
	}{
		{certificate.ErrNotLogged, "not_logged", "a bare envelope without the transparency log proof"},
		{certificate.ErrMalformed, "malformed", "not a certificate bundle in its canonical form"},
		{certificate.ErrWrongKey, "wrong_key", "not signed by a key of this installation"},
		{certificate.ErrSignature, "tampered", "the signature does not verify: the certificate was changed"},
		{certificate.ErrSchema, "schema", "signed, but not a valid v1 certificate"},
		{certificate.ErrKeyRetired, "key_retired", "issued after its signing key was retired"},
		{certificate.ErrCheckpoint, "checkpoint", "the log checkpoint does not verify (or names another log)"},
		{certificate.ErrInclusion, "inclusion", "the inclusion proof does not place the certificate in the log"},
		{certificate.ErrWitnesses, "witnesses", "not enough witness cosignatures"},
		{certificate.ErrTimestamp, "timestamp", "the timestamp does not verify"},
	} {
		if errors.Is(err, k.err) {
			return k.kind, k.what
		}
	}
	return "invalid", "the certificate does not verify"
}

// Checkpoint returns the transparency log's signed checkpoint (text).
func (s *Service) Checkpoint(ctx context.Context, p *Principal) (string, error) {
	if err := s.auditor(p); err != nil {
		return "", err
	}
	lg, err := s.openLog(ctx)
	if err != nil {
		return "", err
	}
	cp, err := lg.Checkpoint(ctx)
	if err != nil {
		return "", err
	}
	return string(cp.Raw), nil
}

// ConsistencyProof proves the log of size newSize extends the one of size
// oldSize (each hash 32 bytes).
func (s *Service) ConsistencyProof(ctx context.Context, p *Principal, oldSize, newSize uint64) ([][]byte, error) {
	if err := s.auditor(p); err != nil {
		return nil, err
	}
	lg, err := s.openLog(ctx)
	if err != nil {
		return nil, err
	}
	size, err := lg.Size(ctx)
	if err != nil {
		return nil, err
	}
	if oldSize < 1 || oldSize > newSize || newSize > uint64(size) {
		return nil, Invalid("old", fmt.Sprintf("want 1 <= old <= new <= %d (the log's size)", size))
	}
	pr, err := lg.ConsistencyProof(ctx, int64(oldSize), int64(newSize))
	if err != nil {
		return nil, err
	}
	return hashes(pr), nil
}

// InclusionProof proves leaf index is in the log of size size.
func (s *Service) InclusionProof(ctx context.Context, p *Principal, index, size uint64) (proof [][]byte, leafHash []byte, err error) {
	if err := s.auditor(p); err != nil {
		return nil, nil, err
	}
	lg, err := s.openLog(ctx)
	if err != nil {
		return nil, nil, err
	}
	n, err := lg.Size(ctx)
	if err != nil {
		return nil, nil, err
	}
	if index >= size || size > uint64(n) {
		return nil, nil, Invalid("index", fmt.Sprintf("want index < size <= %d (the log's size)", n))
	}
	pr, err := lg.InclusionProof(ctx, int64(index), int64(size))
	if err != nil {
		return nil, nil, err
	}
	leaves, err := lg.Leaves(ctx, int64(index), int64(index)+1)
	if err != nil || len(leaves) != 1 {
		return nil, nil, fmt.Errorf("read leaf %d: %v", index, err)
	}
	h := tlog.RecordHash(leaves[0])
	return hashes(pr), h[:], nil
}

func hashes(hs []tlog.Hash) [][]byte {
	out := make([][]byte, len(hs))
	for i, h := range hs {
		out[i] = append([]byte(nil), h[:]...)
	}
	return out
}

// PublicKeys returns the installation's public keys (PEM) and key ids.
func (s *Service) PublicKeys(ctx context.Context, p *Principal) ([]PublicKey, error) {
	if p == nil {
		return nil, ErrUnauthorized
	}
	ring, err := s.dir.Keyring()
	if err != nil {
		return nil, err
	}
	out := []PublicKey{}
	for _, k := range ring {
		pem, err := certificate.EncodePublicKeyPEM(k.Public)
		if err != nil {
			return nil, err
		}
		out = append(out, PublicKey{KeyID: k.ID, PEM: string(pem)})
	}
	return out, nil
}
