package state

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/atomicfile"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/transparency"
)

// ErrLedgerLost: the state directory shows that a ledger existed (a
// recorded log state, certificates, erasure journals) and the configured
// ledger is missing, empty, smaller than the last signed checkpoint, or not
// the same log. amnesia refuses to go on: a new ledger would forget every
// recorded subject and could not prove the certificates already issued.
var ErrLedgerLost = errors.New("the ledger was lost or replaced")

// LedgerStateVersion is the version of ledger-state.json.
const LedgerStateVersion = "amnesia.ledger-state/v1"

// LedgerState is ledger-state.json: the last known state of the ledger's
// transparency log, written each time a checkpoint is signed. It holds no
// personal data: the ledger's kind, the log's origin, size and root hash.
type LedgerState struct {
	Version  string    `json:"version"`
	Ledger   string    `json:"ledger"` // "sqlite" or "postgres" (lineage.BackendName)
	Origin   string    `json:"origin,omitempty"`
	Size     int64     `json:"size"`
	RootHash string    `json:"root_hash,omitempty"` // base64, as in a checkpoint
	Updated  time.Time `json:"updated"`
}

// LedgerStatePath is the path of ledger-state.json.
func (d *Dir) LedgerStatePath() string { return filepath.Join(d.Path, "ledger-state.json") }

// LedgerState reads ledger-state.json; nil, nil when there is none.
func (d *Dir) LedgerState() (*LedgerState, error) {
	b, err := os.ReadFile(d.LedgerStatePath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger state: %w", err)
	}
	var s LedgerState
	if err := json.Unmarshal(b, &s); err != nil || s.Version != LedgerStateVersion || s.Size < 0 {
		return nil, fmt.Errorf("ledger state %s does not parse as %s: restore it from a backup of the state directory", d.LedgerStatePath(), LedgerStateVersion)
	}
	return &s, nil
}

// RecordCheckpoint records cp as the ledger's last known state, atomically,
// unless ledger-state.json already records a larger tree (another process
// signed a newer checkpoint first): the recorded size never decreases.
func (d *Dir) RecordCheckpoint(cp *transparency.Signed) error {
	s := LedgerState{Ledger: lineage.BackendName(d.LedgerSpec()), Size: 0}
	if cp != nil {
		s.Origin, s.Size, s.RootHash = cp.Origin, cp.Size, base64.StdEncoding.EncodeToString(cp.Hash[:])
	}
	return d.recordLedgerState(s)
}

func (d *Dir) recordLedgerState(s LedgerState) error {
	f, err := os.OpenFile(filepath.Join(d.Path, "ledger-state.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("ledger state lock: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("ledger state lock: %w", err)
	}
	old, err := d.LedgerState()
	if err != nil {
		return err
	}
	if old != nil && old.Ledger == s.Ledger && (old.Size > s.Size || old.Size == s.Size && old.RootHash == s.RootHash && (s.Origin == "" || old.Origin == s.Origin)) {
		return nil
	}
	s.Version, s.Updated = LedgerStateVersion, time.Now().UTC().Truncate(time.Second)
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	// Written whole (fsynced before the rename), but the rename is not
	// fsynced: a crash may leave the previous record, which stays true (the
	// ledger's log only grows; its commit came first), only less recent.
	return atomicfile.Replace(d.LedgerStatePath(), append(b, '\n'), 0o600)
}

// ledgerName names the configured ledger in messages; a PostgreSQL URL is
// never printed (it may hold a password).
func (d *Dir) ledgerName() string {
	spec := d.LedgerSpec()
	if lineage.IsPostgresDSN(spec) {
		return "the PostgreSQL ledger (ledger: in amnesia.yaml)"
	}
	return spec
}

// ledgerEvidence says what in the state directory shows that a ledger
// existed, or "" when nothing does.
func (d *Dir) ledgerEvidence(s *LedgerState) string {
	var ev []string
	if s != nil {
		ev = append(ev, fmt.Sprintf("ledger-state.json records a %s ledger whose log was signed at %d leaves", s.Ledger, s.Size))
	}
	certs, _ := filepath.Glob(filepath.Join(d.Path, "certificates", "*.dsse.json"))
	if len(certs) > 0 {
		ev = append(ev, fmt.Sprintf("certificates/ holds %d certificate(s)", len(certs)))
	}
	journals, _ := filepath.Glob(filepath.Join(d.Path, "erasures", "*", "journal.jsonl"))
	if len(journals) > 0 {
		ev = append(ev, fmt.Sprintf("erasures/ holds %d erasure journal(s)", len(journals)))
	}
	return strings.Join(ev, ", ")
}

func (d *Dir) lost(found, evidence string) error {
	return fmt.Errorf(`%w: %s, but %s. amnesia will not go on with another ledger (it would forget every recorded subject and could not prove the certificates already issued). Restore the ledger from its backup (docs/ledger.md, "Backing up and restoring the ledger") and check it with `+"`amnesia audit verify --since <saved checkpoint>`",
		ErrLedgerLost, found, evidence)
}

// OpenLedger opens the configured ledger and checks it against what the
// state directory knows of it.
//
// With LedgerCreate (only `amnesia init`), a missing ledger is created.
// Otherwise nothing is ever created: a missing or empty ledger is ErrLedgerLost when
// the state directory shows a ledger existed (ledger-state.json,
// certificates, erasure journals), lineage.ErrNoLedger otherwise. An opened
// ledger whose log is smaller than the last signed checkpoint (or a
// certificate's), or does not hash to the same root at that size, is
// ErrLedgerLost too. A state directory without ledger-state.json gets one.
// Every mode checks this host's pepper and signing key against the ledger
// (CheckSecrets): ErrSecretsMismatch; with a PostgreSQL ledger, the
// installation-wide part of its configuration too (CheckConfig, except in
// mode LedgerConfigPublish): ErrConfigMismatch.
func (d *Dir) OpenLedger(ctx context.Context, mode LedgerMode) (lineage.Ledger, error) {
	spec := d.LedgerSpec()
	s, err := d.LedgerState()
	if err != nil {
		return nil, err
	}
	var l lineage.Ledger
	if mode == LedgerCreate {
		l, err = lineage.Open(ctx, spec)
	} else {
		l, err = lineage.OpenExisting(ctx, spec)
	}
	if errors.Is(err, lineage.ErrNoLedger) {
		if ev := d.ledgerEvidence(s); ev != "" {
			return nil, d.lost(strings.TrimPrefix(err.Error(), "open ledger: "), ev)
		}
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	if err := d.CheckSecrets(ctx, l); err != nil {
		l.Close()
		return nil, err
	}
	if err := d.SyncKeyring(ctx, l); err != nil { // keyringsync.go
		l.Close()
		return nil, err
	}
	if mode != LedgerConfigPublish {
		if err := d.CheckConfig(ctx, l); err != nil { // configversion.go
			l.Close()
			return nil, err
		}
	}
	if mode == LedgerUnchecked {
		return l, nil
	}
	if err := d.checkLedger(ctx, l, s); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// LedgerMode says how OpenLedger opens the ledger.
type LedgerMode int

const (
	// LedgerChecked opens an existing ledger and checks it against
	// ledger-state.json (or the certificates): every command but init.
	LedgerChecked LedgerMode = iota
	// LedgerCreate creates the ledger when it is missing: `amnesia init`.
	LedgerCreate
	// LedgerUnchecked opens an existing ledger without comparing it with
	// ledger-state.json, for `amnesia audit verify`, which reports what it
	// finds and then calls CheckLedger. A missing or empty ledger is still
	// refused.
	LedgerUnchecked
	// LedgerConfigPublish is LedgerChecked without the configuration
	// check (CheckConfig): `amnesia config publish`, which replaces the
	// configuration version the ledger records.
	LedgerConfigPublish
)

// CheckLedger compares an opened ledger with ledger-state.json (or, when
// there is none, with the certificates' checkpoints): ErrLedgerLost when its
// log is smaller or is another log.
func (d *Dir) CheckLedger(ctx context.Context, l lineage.Ledger) error {
	s, err := d.LedgerState()
	if err != nil {
		return err
	}
	return d.checkLedger(ctx, l, s)
}

// checkLedger compares the opened ledger with ledger-state.json (or, when
// there is none, with the certificates), then records its state.
func (d *Dir) checkLedger(ctx context.Context, l lineage.Ledger, s *LedgerState) error {
	st, ok := l.(transparency.Store)
	if !ok {
		return nil
	}
	kind := lineage.BackendName(d.LedgerSpec())
	if s != nil && s.Ledger != kind {
		return d.lost(fmt.Sprintf("the configured ledger is a %s ledger", kind), d.ledgerEvidence(s))
	}
	n, err := st.LogSize(ctx)
	if err != nil {
		return fmt.Errorf("open ledger: %w", err)
	}
	// What must be in the log: the last signed size and root, recorded or
	// (older state directories) those of the certificates' checkpoints.
	type mark struct {
		size int64
		root string
		what string
	}
	var marks []mark
	if s != nil {
		marks = append(marks, mark{s.Size, s.RootHash, fmt.Sprintf("the last checkpoint signed (ledger-state.json) covers %d", s.Size)})
	} else {
		cm, err := d.certificateMark()
		if err != nil {
			return err
		}
		if cm != nil {
			marks = append(marks, mark{cm.Size, base64.StdEncoding.EncodeToString(cm.Hash[:]), fmt.Sprintf("a certificate in certificates/ was logged in a tree of %d", cm.Size)})
		}
	}
	for _, m := range marks {
		if n < m.size {
			return d.lost(fmt.Sprintf("the log of %s holds %d leaves", d.ledgerName(), n), m.what+" leaves")
		}
		if m.size == 0 || m.root == "" {
			continue
		}
		h, err := tlog.TreeHash(m.size, tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) { return st.ReadHashes(ctx, ids) }))
		if err != nil {
			return d.lost(fmt.Sprintf("the log of %s cannot recompute its first %d leaves (%v)", d.ledgerName(), m.size, err), m.what+" leaves")
		}
		if base64.StdEncoding.EncodeToString(h[:]) != m.root {
			return d.lost(fmt.Sprintf("the first %d leaves of the log of %s hash to another root: it is not the same log", m.size, d.ledgerName()), m.what+" leaves")
		}
	}
	if s != nil {
		return nil
	}
	// First open with this check: record the ledger's newest checkpoint.
	raw, err := st.Checkpoint(ctx, -1)
	if errors.Is(err, transparency.ErrNoCheckpoint) {
		return d.RecordCheckpoint(nil)
	}
	if err != nil {
		return fmt.Errorf("open ledger: %w", err)
	}
	cp, err := signedBody(raw)
	if err != nil {
		return fmt.Errorf("open ledger: newest checkpoint: %w", err)
	}
	return d.RecordCheckpoint(&transparency.Signed{Checkpoint: cp})
}

// certificateMark returns the largest checkpoint a certificate in
// certificates/ carries, or nil.
func (d *Dir) certificateMark() (*transparency.Checkpoint, error) {
	certs, _ := filepath.Glob(filepath.Join(d.Path, "certificates", "*.dsse.json"))
	var best *transparency.Checkpoint
	for _, p := range certs {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("open ledger: %w", err)
		}
		if !certificate.IsBundle(b) {
			continue
		}
		bu, err := certificate.DecodeBundle(b)
		if err != nil || bu.LogEntry == nil {
			continue
		}
		c, err := signedBody([]byte(bu.LogEntry.Checkpoint))
		if err != nil {
			continue
		}
		if best == nil || c.Size > best.Size {
			best = &c
		}
	}
	return best, nil
}

// signedBody parses the body of a signed checkpoint without checking its
// signatures (they are the log's own, stored by amnesia).
func signedBody(signed []byte) (transparency.Checkpoint, error) {
	i := strings.Index(string(signed), "\n\n")
	if i < 0 {
		return transparency.Checkpoint{}, fmt.Errorf("%w: no signature block", transparency.ErrMalformed)
	}
	return transparency.ParseCheckpoint(signed[:i+1])
}
