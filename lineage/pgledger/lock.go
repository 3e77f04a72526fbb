package lineage

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
)

// SubjectLocker is implemented by ledgers shared between processes
// ([Postgres]): it serialises erasures of one subject across every process
// that uses the ledger, on whatever host.
type SubjectLocker interface {
	// TryLockSubject takes the erasure lock named key (a digest of the scope
	// and subject, never a raw id) without waiting. It returns release and
	// ok true when taken; the lock is held until release is called or the
	// process ends. When another process holds it, ok is false and holder
	// says who, if known ("pid=… host=…").
	TryLockSubject(ctx context.Context, key string) (release func(), holder string, ok bool, err error)
}

var _ SubjectLocker = (*Postgres)(nil)

// pgSubjectKey is the 64-bit advisory lock key of an erasure lock, per
// schema (one ledger): the first 16 hex digits of an MD5, as a bigint. The
// single-bigint key space does not overlap pgLock's two-int one.
const pgSubjectKey = `('x' || substr(md5('amnesia.erasure:' || current_schema() || ':' || $1), 1, 16))::bit(64)::bigint`

// TryLockSubject implements SubjectLocker with a session advisory lock
// (pg_try_advisory_lock) on a connection of its own, kept open while the
// lock is held: the server releases it when that session ends, so a holder
// that crashed or was killed never leaves it behind.
func (l *Postgres) TryLockSubject(ctx context.Context, key string) (func(), string, bool, error) {
	cfg := l.pool.cfg.Copy()
	host, _ := os.Hostname()
	cfg.RuntimeParams["application_name"] = fmt.Sprintf("amnesia erasure pid=%d host=%s", os.Getpid(), host)
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, "", false, fmt.Errorf("erasure lock: %w", err)
	}
	var ok bool
	if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+pgSubjectKey+`)`, key).Scan(&ok); err != nil {
		closeConn(c)
		return nil, "", false, fmt.Errorf("erasure lock: %w", err)
	}
	if ok {
		return func() { closeConn(c) }, "", true, nil
	}
	// Who holds it: the application_name its lock session set.
	var holder string
	_ = c.QueryRow(ctx, `WITH k AS (SELECT `+pgSubjectKey+` AS v)
		SELECT coalesce(max(a.application_name), '') FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid, k
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
		  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND ((l.classid::bigint << 32) | l.objid::bigint) = k.v`, key).Scan(&holder)
	closeConn(c)
	holder, _ = strings.CutPrefix(holder, "amnesia erasure ")
	return nil, holder, false, nil
}
