package pg

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Residue states this package reports in store.ReclaimReport.State.
const (
	StateLockTimeout      = "PENDING-lock-timeout"
	StateStatementTimeout = "PENDING-statement-timeout"
	StateDeferred         = "PENDING-reclaim-deferred"
	StateManaged          = "UNVERIFIED-managed"
	StateIndexNotRebuilt  = "UNVERIFIED-index-not-rebuilt"
	StateDeadTuples       = "UNVERIFIED-dead-tuples-remain"
)

// Finding is one reason a store is not known clean after reclaim.
type Finding struct {
	State    string
	Evidence string
}

// stateRank orders findings: the first one becomes the report's State, the
// evidence of all of them is joined. What pins rows comes first (nothing
// else helps until it ends), then an INVALID index nobody rebuilt (it stays
// until someone drops it), then timeouts (a later reclaim completes them),
// then what only a measurement says.
func stateRank(s string) int {
	switch {
	case s == StateDeferred:
		return 0
	case strings.HasPrefix(s, "PENDING-") && s != StateLockTimeout && s != StateStatementTimeout:
		return 1 // PENDING-<pin>
	case s == StateIndexNotRebuilt:
		return 2
	case s == StateLockTimeout:
		return 3
	case s == StateStatementTimeout:
		return 4
	case s == StateDeadTuples:
		return 5
	case s == StateManaged:
		return 6
	}
	return 7
}

// Verdict picks the state and joins the evidence of findings. It returns
// empty strings when there is no finding: the byte scan then decides.
func Verdict(fs []Finding) (state, evidence string) {
	if len(fs) == 0 {
		return "", ""
	}
	sorted := append([]Finding(nil), fs...)
	sort.SliceStable(sorted, func(i, j int) bool { return stateRank(sorted[i].State) < stateRank(sorted[j].State) })
	parts := make([]string, 0, len(sorted))
	for _, f := range sorted {
		parts = append(parts, f.State+": "+f.Evidence)
	}
	return sorted[0].State, strings.Join(parts, " | ")
}

// timeoutKind classifies err: StateLockTimeout, StateStatementTimeout or "".
// SQLSTATE 57014 (query_canceled) is a statement timeout or a cancel request
// from another session (pg_cancel_backend); callers rule out amnesia's own
// cancellation (their context) first. Only the message tells the two apart,
// and it is in the server's lc_messages language: an English "user request"
// is not a timeout; any other 57014 is taken for one, so a timeout on a
// server with another language is retried and, if it persists, reported as
// pending, not as a plain failure.
func timeoutKind(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return ""
	}
	switch {
	case pe.Code == "55P03": // lock_not_available: lock_timeout
		return StateLockTimeout
	case pe.Code == "57014" && !strings.Contains(pe.Message, "user request"):
		return StateStatementTimeout
	}
	return ""
}

// sqlCause is a short, value-free description of a server error.
func sqlCause(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code + " " + pe.Message
	}
	return err.Error()
}

// Pin kinds: what keeps VACUUM from removing a deleted row's dead tuple.
// The residue state is "PENDING-" + kind.
const (
	PinLongTransaction     = "long-transaction"     // a backend's snapshot (backend_xmin) or xid older than the delete
	PinReplicationSlot     = "replication-slot"     // pg_replication_slots.xmin older than the delete
	PinPreparedTransaction = "prepared-transaction" // pg_prepared_xacts older than the delete
)

// Pin is one holder of the xmin horizon.
type Pin struct {
	Kind string
	Age  int64  // age() of its xmin/xid, in transactions
	Desc string // what it is: pid, slot or gid; never query text
}

// pinRank orders kinds in a report: the one an operator must act on first.
var pinRank = map[string]int{PinPreparedTransaction: 0, PinReplicationSlot: 1, PinLongTransaction: 2}

// FindPins returns what holds the xmin horizon of this database at or before
// ref, the 32-bit xid of the newest delete this process made (0 = unknown:
// then every holder counts). A lazy VACUUM's snapshot holds back no other
// vacuum (PostgreSQL marks its backend PROC_IN_VACUUM, which every horizon
// skips): autovacuum's, and a client's plain VACUUM (another host's reclaim,
// say) when its statement text says so, are skipped. The text is read only
// to tell that (never reported); a VACUUM whose text the role may not read,
// or that names FULL or ANALYZE (which do hold snapshots), still counts.
func FindPins(ctx context.Context, c *pgx.Conn, ref uint32) ([]Pin, error) {
	refAge := "NULL::int"
	var args []any
	if ref != 0 {
		refAge, args = "age($1::text::xid)", []any{fmt.Sprint(ref)}
	}
	q := `SELECT 'long-transaction', GREATEST(COALESCE(age(a.backend_xid), -1), COALESCE(age(a.backend_xmin), -1)),
		format('pid %s (%s, user %s, state %s, transaction open %ss)', a.pid, a.backend_type, COALESCE(a.usename::text, '-'),
			COALESCE(a.state, '-'), COALESCE(floor(extract(epoch FROM clock_timestamp() - a.xact_start))::bigint::text, '?'))
	FROM pg_stat_activity a
	WHERE a.pid <> pg_backend_pid() AND (a.datname = current_database() OR a.backend_type = 'walsender')
	  AND (a.backend_xid IS NOT NULL OR a.backend_xmin IS NOT NULL)
	  AND NOT (a.backend_type = 'autovacuum worker' AND COALESCE(a.query, '') LIKE 'autovacuum: VACUUM%')
	  AND NOT (a.backend_type = 'client backend' AND a.state = 'active' AND COALESCE(a.query, '') ~* '^\s*VACUUM\M'
	       AND a.query !~* '\m(FULL|ANALYZE|ANALYSE)\M' AND a.query !~ ';\s*\S')
	UNION ALL
	SELECT 'replication-slot', age(s.xmin), format('slot %s (%s, active %s)', s.slot_name, s.slot_type, s.active)
	FROM pg_replication_slots s WHERE s.xmin IS NOT NULL AND (s.database IS NULL OR s.database = current_database())
	UNION ALL
	SELECT 'prepared-transaction', age(p.transaction), format('prepared transaction %s (owner %s, prepared %ss ago)',
		quote_literal(p.gid), p.owner, floor(extract(epoch FROM clock_timestamp() - p.prepared))::bigint)
	FROM pg_prepared_xacts p WHERE p.database = current_database()`
	rows, err := c.Query(ctx, `WITH r AS (SELECT `+refAge+` AS a) SELECT k, age, d FROM (`+q+`) x(k, age, d), r WHERE r.a IS NULL OR x.age >= r.a`, args...)
	if err != nil {
		return nil, fmt.Errorf("find pins: %w", err)
	}
	pins, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Pin, error) {
		var p Pin
		err := row.Scan(&p.Kind, &p.Age, &p.Desc)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("find pins: %w", err)
	}
	SortPins(pins)
	return pins, nil
}

// SortPins orders pins by kind rank, then oldest first.
func SortPins(pins []Pin) {
	sort.SliceStable(pins, func(i, j int) bool {
		if pinRank[pins[i].Kind] != pinRank[pins[j].Kind] {
			return pinRank[pins[i].Kind] < pinRank[pins[j].Kind]
		}
		return pins[i].Age > pins[j].Age
	})
}

// PinFinding turns pins into a residue finding (nil when there are none).
func PinFinding(pins []Pin) *Finding {
	if len(pins) == 0 {
		return nil
	}
	return &Finding{State: "PENDING-" + pins[0].Kind, Evidence: "the xmin horizon is held at or before the delete by " +
		pinList(pins) + "; VACUUM cannot remove the deleted rows' dead tuples (and VACUUM FULL would copy them) until it ends"}
}

// pinList describes pins for evidence.
func pinList(pins []Pin) string {
	descs := make([]string, 0, len(pins))
	for _, p := range pins {
		descs = append(descs, fmt.Sprintf("%s: %s, xmin age %d", p.Kind, p.Desc, p.Age))
	}
	return strings.Join(descs, "; ")
}

// DeadTuples returns pgstattuple's dead tuple count for t (summed over its
// partitions when it is partitioned), or ok false when the extension is
// missing or not permitted.
func DeadTuples(ctx context.Context, c *pgx.Conn, p Privileges, t Table) (n int64, ok bool, err error) {
	if !p.Pgstattuple {
		return 0, false, nil
	}
	if err := c.QueryRow(ctx, `SELECT COALESCE(sum(s.dead_tuple_count), 0)::int8 FROM `+leavesSQL+` l(oid), LATERAL pgstattuple(l.oid::regclass) s`, t.Ident()).Scan(&n); err != nil {
		return 0, false, fmt.Errorf("count dead tuples: %w", err)
	}
	return n, true, nil
}
