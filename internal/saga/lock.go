package saga

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/amnesia-dev/amnesia/lineage"
)

// ErrBusy: another erasure of the same subject (same scope) is running,
// in this process or another one.
var ErrBusy = errors.New("another erasure of this subject is running")

// BusyError is ErrBusy with the subject's reference and, when known, who
// holds the lock.
type BusyError struct {
	SubjectRef string // "hmac:…", never the raw id
	Holder     string // "pid=… host=…", or ""
}

func (e *BusyError) Error() string {
	who := ""
	if e.Holder != "" {
		who = " (" + e.Holder + ")"
	}
	return fmt.Sprintf("another erasure of %s is running%s; wait for it or run the same command again later", e.SubjectRef, who)
}

// Is makes errors.Is(err, ErrBusy) true.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// lockSubject takes the erasure lock of e's subject in e's scope, without
// waiting: one erasure at a time per subject, so that two runs never write
// one journal or log two certificates for one erasure. With a ledger shared
// between processes (lineage.SubjectLocker: PostgreSQL) the lock is the
// ledger's; otherwise it is an flock on locks/erasure-<digest>.lock in the
// state directory. Both die with the process that holds them.
func lockSubject(ctx context.Context, e *Erasure) (release func(), err error) {
	sum := sha256.Sum256([]byte("amnesia.erasure-lock/v1\x00" + e.Trace.Scope + "\x00" + e.Trace.Subject))
	name := hex.EncodeToString(sum[:])
	if sl, ok := e.Ledger.(lineage.SubjectLocker); ok {
		release, holder, ok, err := sl.TryLockSubject(ctx, name)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &BusyError{SubjectRef: e.Trace.SubjectRef, Holder: holder}
		}
		return release, nil
	}
	dir := filepath.Join(e.Dir.Path, "locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("erasure lock: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "erasure-"+name+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("erasure lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			b, _ := io.ReadAll(io.LimitReader(f, 200))
			return nil, &BusyError{SubjectRef: e.Trace.SubjectRef, Holder: strings.TrimSpace(string(b))}
		}
		return nil, fmt.Errorf("erasure lock: %w", err)
	}
	// Who holds it, for the message a second run prints.
	host, _ := os.Hostname()
	if err := f.Truncate(0); err == nil {
		f.WriteAt(fmt.Appendf(nil, "pid=%d host=%s since=%s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339)), 0)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
