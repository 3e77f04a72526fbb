package pgledger

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/lineage"
)

var _ lineage.SubjectLocker = (*Ledger)(nil)

// pgSubjectKey is the 64-bit advisory lock key of an erasure lock, per
// schema (one ledger): the first 16 hex digits of an MD5, as a bigint. The
// single-bigint key space does not overlap pgLock's two-int one.
const pgSubjectKey = `('x' || substr(md5('amnesia.erasure:' || current_schema() || ':' || $1), 1, 16))::bit(64)::bigint`

// TryLockSubject implements lineage.SubjectLocker with a session advisory lock
// (pg_try_advisory_lock) on a connection of its own, kept open while the
// lock is held: the server releases it when that session ends, so a holder
// that crashed or was killed never leaves it behind.
func (l *Ledger) TryLockSubject(ctx context.Context, key string) (func(), string, bool, error) {
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
		// Released by the server before the release returns: closing
		// the connection alone lets the server drop the lock only when
		// its backend has exited, after the close returned, so a retry
		// of the same subject at once (a window's erasure run again
		// alone) could find it still held.
		return func() {
			uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, _ = c.Exec(uctx, `SELECT pg_advisory_unlock(`+pgSubjectKey+`)`, key)
			closeConn(c)
		}, "", true, nil
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
