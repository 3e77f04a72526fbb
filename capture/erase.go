package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/erasure"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/internal/worker"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
)

// Errors Erase returns (test with errors.Is).
var (
	// ErrNoLineage: nothing was ever recorded for the subject in this scope
	// (`amnesia forget` exits 3). It never means "nothing to delete".
	ErrNoLineage = lineage.ErrNoLineage
	// ErrAlreadyErased: every recorded artifact of the subject is erased
	// (exit 4).
	ErrAlreadyErased = lineage.ErrAlreadyErased
	// ErrStaleTrace: the ledger changed while the erasure was being planned
	// (exit 5); call Erase again.
	ErrStaleTrace = saga.ErrStaleTrace
	// ErrPending: the erasure paused because a store whose records are
	// deleted is held by another process or unreachable (`amnesia forget`
	// exits 9). Nothing is lost: call Erase again later to finish it
	// (errors.As with *saga.PendingError says which store and why).
	ErrPending = saga.ErrPending
	// ErrOtherHost: the subject's records are in stores in files that
	// another host holds (owner: in amnesia.yaml), or stores have owners
	// and EraseOptions.Host is empty (`amnesia forget` exits 2). Nothing
	// was erased: call Erase on the owner host with its name in
	// EraseOptions.Host, or queue the erasure for that host's worker.
	ErrOtherHost = worker.ErrOtherHost
)

// Erasure is a finished erasure.
type Erasure struct {
	ID string // er-…, derived from the trace: erasing the same trace again resumes it
	// Certificate is the path of the published certificate (a DSSE
	// envelope in a bundle with its transparency-log inclusion proof).
	Certificate string
	// Complete is true when every artifact was verified; when false the
	// certificate's UNVERIFIED, RESIDUAL, OUT_OF_SCOPE and NEEDS_HUMAN
	// entries say what was not (`amnesia forget` exits 7).
	Complete bool
	Resumed  bool // an interrupted erasure of this subject was finished
	// Follows is the earlier, incomplete erasure of the same trace that
	// this one continued (empty for a first erasure).
	Follows   string
	Statement *certificate.Statement
}

// EraseOptions tunes Erase.
type EraseOptions struct {
	// Progress receives the human progress lines `amnesia forget` prints;
	// nil discards them.
	Progress io.Writer
	// Host is this host's name, as in the stores' owner: keys of
	// amnesia.yaml (`amnesia forget --host`). When stores in files have
	// owners, Erase runs only on the host that holds the trace's stores in
	// files: with another host's name, or none, it returns ErrOtherHost
	// before anything is opened or erased.
	Host string
}

// Erase erases everything recorded for the raw subject id in the App's
// scope, on the same code path as `amnesia forget <subject> --reason
// <reason> --yes`: trace (saved under traces/), then the journaled saga
// (suppress, evidence, delete, reclaim, probe, decide, certificate,
// publish) over every configured store. An unfinished erasure of the same
// subject is resumed instead. Configured stores the App has not opened are
// opened without creating anything; one that cannot be opened is reported
// in the certificate, not returned as an error. reason is the request or
// ticket reference: it goes into the certificate, so no personal data.
//
// Before anything it makes the checks the command line makes when it opens
// the ledger, and returns their errors (state.ErrConfigMismatch: another
// host ran `amnesia config publish`; state.ErrSecretsMismatch;
// state.ErrLedgerLost) without erasing. When stores in files have owners
// (owner: in amnesia.yaml), it runs only on the host that holds the trace's
// stores in files, named in EraseOptions.Host as `amnesia forget --host`
// names it, and otherwise returns ErrOtherHost before any store is opened.
//
// Erase does not wait for other writers: do not ingest data of the same
// subject while its erasure runs.
func (a *App) Erase(ctx context.Context, rawSubject, reason string, opts ...EraseOptions) (*Erasure, error) {
	var o EraseOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if strings.TrimSpace(reason) == "" {
		return nil, errors.New("capture erase: reason is required (the request or ticket this erasure answers; no personal data)")
	}
	if o.Host != "" && !state.ValidHostName(o.Host) {
		return nil, fmt.Errorf("capture erase: EraseOptions.Host %q: want a host name (letters, digits, '.', '-', '_'), as in the stores' owner: keys", o.Host)
	}
	k, err := a.rec.SubjectKey(rawSubject)
	if err != nil {
		return nil, fmt.Errorf("capture erase: %w", err)
	}
	// The checks `amnesia forget` makes when it opens the ledger (Open
	// opened it without them, so that capture starts on a fresh
	// installation): this host's pepper and signing key are the ones the
	// ledger expects, its amnesia.yaml is the installation's configuration
	// version (PostgreSQL ledger), and the ledger is the one this state
	// directory last saw, not an empty or replaced one.
	if err := a.dir.CheckSecrets(ctx, a.ledger); err != nil {
		return nil, fmt.Errorf("capture erase: %w", err)
	}
	if err := a.dir.CheckConfig(ctx, a.ledger); err != nil {
		return nil, fmt.Errorf("capture erase: %w", err)
	}
	if err := a.dir.CheckLedger(ctx, a.ledger); err != nil {
		return nil, fmt.Errorf("capture erase: %w", err)
	}
	a.busy.RLock()
	defer a.busy.RUnlock()
	if a.isClosed() {
		return nil, errClosed
	}
	logf, err := os.OpenFile(a.dir.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("capture erase: open log: %w", err)
	}
	defer logf.Close()
	env := &erasure.Env{Dir: a.dir, Ledger: a.ledger, Log: slog.New(slog.NewJSONHandler(logf, nil)), Via: "capture"}
	t, _, err := env.Begin(ctx, k, a.rec.scope)
	if err != nil {
		return nil, fmt.Errorf("capture erase: %w", err)
	}
	// Stores in files with owners: only their owner host erases them, as
	// `amnesia forget --host` does; checked before any store is opened.
	if err := checkHost(a.dir.Config, t, o.Host); err != nil {
		return nil, err
	}
	stores, failed, err := a.openAll(ctx)
	if err != nil {
		return nil, err
	}
	res, err := env.Run(ctx, t, reason, erasure.Options{Progress: o.Progress, Stores: stores, OpenErr: failed})
	if err != nil {
		return nil, fmt.Errorf("capture erase: %w", err)
	}
	return &Erasure{
		ID: res.ID, Certificate: res.CertificatePath, Complete: res.Complete(),
		Resumed: res.Resumed, Follows: res.Follows, Statement: res.Statement,
	}, nil
}

// checkHost refuses the erasure of t on host when the trace's stores in
// files are held by another host, or have an owner and host is ""
// (worker.CheckHost). The error names the store and the hosts, not the
// subject.
func checkHost(cfg *state.Config, t *lineage.Trace, host string) error {
	err := worker.CheckHost(cfg, t, host)
	var he *worker.HostError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &he):
		return fmt.Errorf("capture erase: %w: nothing was erased", err)
	}
	queue := fmt.Sprintf("call Erase on that host with EraseOptions.Host %q, or queue the erasure for its worker (amnesia trace, then amnesia erase --trace ID --queue): nothing was erased", he.Owner)
	if he.Host == "" {
		return fmt.Errorf("capture erase: %w: store %q is held by host %s (owner: in amnesia.yaml) and EraseOptions.Host does not say which host this is: %s", ErrOtherHost, he.Store, he.Owner, queue)
	}
	return fmt.Errorf("capture erase: %w: store %q is held by host %s (owner: in amnesia.yaml), not by %s: %s", ErrOtherHost, he.Store, he.Owner, he.Host, queue)
}

// isClosed reports whether Close was called.
func (a *App) isClosed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closed
}

// openAll returns every configured store: those already open, and the
// others opened now without creating anything (kept open for later use).
// Stores that fail to open are returned in failed, as `amnesia forget` does.
func (a *App) openAll(ctx context.Context) (map[string]store.Store, map[string]error, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, nil, errClosed
	}
	open, failed := map[string]store.Store{}, map[string]error{}
	for _, sc := range a.dir.Config.Stores {
		s, ok := a.stores[sc.Name]
		if !ok {
			var err error
			if s, err = a.dir.Config.OpenStore(ctx, sc, false); err != nil {
				failed[sc.Name] = err
				continue
			}
			a.stores[sc.Name] = s
		}
		open[sc.Name] = s
	}
	return open, failed, nil
}
