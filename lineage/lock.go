package lineage

import "context"

// SubjectLocker is implemented by ledgers shared between processes
// (lineage/pgledger): it serialises erasures of one subject across every
// process that uses the ledger, on whatever host.
type SubjectLocker interface {
	// TryLockSubject takes the erasure lock named key (a digest of the scope
	// and subject, never a raw id) without waiting. It returns release and
	// ok true when taken; the lock is held until release is called or the
	// process ends. When another process holds it, ok is false and holder
	// says who, if known ("pid=… host=…").
	TryLockSubject(ctx context.Context, key string) (release func(), holder string, ok bool, err error)
}
