// Command amnesia erases a person's data from an AI application's memory and
// proves it with a signed, offline-verifiable certificate.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/erasure"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
	"github.com/amnesia-dev/amnesia/transparency"
)

// Exit codes. They are part of the CLI's contract; see `amnesia --help`.
const (
	exitOK           = 0
	exitError        = 1
	exitUsage        = 2
	exitNoLineage    = 3
	exitErased       = 4
	exitStaleTrace   = 5
	exitAborted      = 6
	exitIncomplete   = 7
	exitNotReady     = 8
	exitPending      = 9
	exitCertInvalid  = 10
	exitCertTampered = 11
	exitWrongKey     = 12
	exitNotLogged    = 13
	exitCheckpoint   = 14
	exitTimestamp    = 15
	exitWitnesses    = 16
	exitKeyRetired   = 17
	exitLogTampered  = 18
	// exitNotReverifiable: reverify of a certificate that says it is not
	// re-verifiable.
	exitNotReverifiable = 19
	// exitLedgerLost: the ledger is missing, empty, smaller than the last
	// signed checkpoint, or another log (state.ErrLedgerLost).
	exitLedgerLost = 20
	// exitBusy: another erasure of the same subject is running (saga.ErrBusy).
	exitBusy = 21
	// exitSubjectErased: a capture of an erased subject without new consent
	// (lineage.ErrSubjectErased).
	exitSubjectErased = 22
	// exitSecretsMismatch: this host's pepper or signing key is not the one
	// the ledger expects (state.ErrSecretsMismatch).
	exitSecretsMismatch = 23
	// exitConfigMismatch: the installation-wide part of this host's
	// amnesia.yaml is not the configuration version the ledger records
	// (state.ErrConfigMismatch; PostgreSQL ledger).
	exitConfigMismatch = 24
	// exitQueueAttention: status found an overdue erasure, or a failed one
	// that no job of its subject followed (queued after it, or done after
	// it was queued).
	exitQueueAttention = 25
)

const exitCodesHelp = `Exit codes:
  0   success (forget/erase: the certificate is complete; verify: certificate valid)
  1   error (state missing, store or ledger failure, bad input)
  2   usage error (also: --reason or --scope holding personal data, refused before anything is written;
      forget/erase on a host that does not hold the trace's stores in files, see --host)
  3   no lineage recorded for this subject in this scope
  4   every recorded artifact of this subject is already erased
  5   the trace no longer matches the ledger: trace again
  6   aborted at the confirmation prompt
  7   erasure (or reverify) finished but incomplete (complete: false): the certificate names UNVERIFIED, RESIDUAL or
      OUT_OF_SCOPE artifacts, an artifact of the subject's own left NEEDS_HUMAN as a possible copy, a model not
      VERIFIED, or a configured store was unreachable; fix the cause and run the same command again: a new erasure
      erases and verifies what was left, and its certificate links to this one
  8   a store of the trace is not ready (see 'amnesia check'); nothing was changed
  9   erasure paused (PENDING): a store whose records are deleted is held by another process or unreachable;
      nothing is lost (evidence stays sealed): run the same command again to finish reclaim and verification
  10  verify: not a valid certificate (malformed, or not schema v1)
  11  verify: signature does not match the content (tampered)
  12  verify: not signed by the given public key
  13  verify: no transparency log proof, or the inclusion proof does not verify
  14  verify: the checkpoint is malformed or not signed by a trusted key
  15  verify: the timestamp does not verify, or is required and missing
  16  verify: fewer witness cosignatures than required; audit cosign --witness-key: a signature line verifies
      under no witness key given (nothing stored)
  17  verify: the certificate was issued after its key was retired
  18  audit, witness: the log does not recompute, or is not consistent with a saved or cosigned checkpoint
  19  reverify: the certificate says it is not re-verifiable (reverifiable: false)
  20  the ledger was lost or replaced (missing, empty, smaller than the last signed checkpoint, or
      another log): restore it from a backup (docs/ledger.md); nothing was created or changed
  21  forget/erase: another erasure of the same subject is running; nothing was done: wait for it
      or run the same command again later
  22  capture refused: the subject's data was erased and the write is not marked as new consent
      ('amnesia consent', capture.WithNewConsent, "new_consent" in the lineage API)
  23  this host's pepper or signing key is not the installation's (the ledger holds their check values,
      recorded at init): give the host the installation's secrets (docs/scale.md); nothing was changed
  24  this host's amnesia.yaml differs, in its installation-wide part, from the configuration version the
      PostgreSQL ledger records (the message names the sections): give the host the installation's
      configuration, or publish this one deliberately ('amnesia config publish', docs/scale.md); nothing was changed
  25  status: an erasure is overdue (not done past its due date), or failed with no job of its subject queued or done since
`

// exitError carries an exit code through cobra.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

func withCode(code int, err error) error { return &codedError{code, err} }

func exitCode(err error) int {
	var ce *codedError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ce):
		return ce.code
	case errors.Is(err, lineage.ErrNoLineage):
		return exitNoLineage
	case errors.Is(err, lineage.ErrAlreadyErased):
		return exitErased
	case errors.Is(err, saga.ErrIncomplete):
		return exitIncomplete
	case errors.Is(err, erasure.ErrNotReady):
		return exitNotReady
	case errors.Is(err, saga.ErrPending):
		return exitPending
	case errors.Is(err, saga.ErrBusy):
		return exitBusy
	case errors.Is(err, lineage.ErrSubjectErased):
		return exitSubjectErased
	case errors.Is(err, state.ErrSecretsMismatch):
		return exitSecretsMismatch
	case errors.Is(err, state.ErrConfigMismatch):
		return exitConfigMismatch
	case errors.Is(err, saga.ErrStaleTrace):
		return exitStaleTrace
	case errors.Is(err, saga.ErrNotReverifiable):
		return exitNotReverifiable
	case errors.Is(err, certificate.ErrNotLogged), errors.Is(err, certificate.ErrInclusion):
		return exitNotLogged
	case errors.Is(err, certificate.ErrCheckpoint):
		return exitCheckpoint
	case errors.Is(err, certificate.ErrTimestamp):
		return exitTimestamp
	case errors.Is(err, certificate.ErrWitnesses):
		return exitWitnesses
	case errors.Is(err, certificate.ErrKeyRetired):
		return exitKeyRetired
	case errors.Is(err, transparency.ErrProof), errors.Is(err, transparency.ErrCheckpointSignature):
		return exitLogTampered
	case errors.Is(err, certificate.ErrWrongKey):
		return exitWrongKey
	case errors.Is(err, certificate.ErrSignature):
		return exitCertTampered
	case errors.Is(err, certificate.ErrMalformed), errors.Is(err, certificate.ErrSchema):
		return exitCertInvalid
	case errors.Is(err, errUsage), errors.Is(err, subject.ErrPersonalData), errors.Is(err, certificate.ErrPolicy):
		return exitUsage
	case errors.Is(err, state.ErrLedgerLost), errors.Is(err, transparency.ErrShrunk):
		return exitLedgerLost
	case errors.Is(err, state.ErrNotInitialized):
		return exitError
	}
	return exitError
}

var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := newRootCommand()
	err := cmd.ExecuteContext(ctx)
	code := exitCode(err)
	if err != nil {
		var ce *codedError
		if !(errors.As(err, &ce) && ce.err == errSilent) {
			fmt.Fprintln(os.Stderr, "amnesia:", err)
		}
	}
	os.Exit(code)
}

// errSilent is for exits whose message was already printed.
var errSilent = errors.New("")
