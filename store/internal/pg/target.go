package pg

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/store"
)

// Target is one store's table on one connection: what Delete, Reclaim and
// the physical probe work on.
type Target struct {
	DB    *DB
	Table Table
	Opts  Options
	Priv  Privileges
	// Reindex selects the indexes that REINDEX INDEX CONCURRENTLY rebuilds
	// when VACUUM FULL timed out (pgvector: its vector indexes). Nil: none.
	// When VACUUM FULL runs it rebuilds every index, once.
	Reindex func(Index) bool
	// Partitioned is set when Table is a partitioned table: Delete then
	// records which partitions held the deleted rows, and Reclaim rewrites
	// only those (see partitions.go).
	Partitioned bool

	mu           sync.Mutex
	deleteXid    uint64          // newest xid (xid8) that deleted rows through this Target; 0 = none yet
	parts        map[uint32]bool // partitions (oid) that held rows deleted since the last reclaim
	partsUnknown bool            // a key deleted since the last reclaim matched no row
	partsGen     uint64          // deletes recorded in parts, ever
}

// NewTarget reads the role's privileges on table and returns its Target.
func NewTarget(ctx context.Context, db *DB, table Table, o Options) (*Target, error) {
	t := &Target{DB: db, Table: table, Opts: o}
	err := db.With(ctx, func(c *pgx.Conn) error {
		var kind string
		if err := c.QueryRow(ctx, `SELECT relkind::text FROM pg_class WHERE oid = $1::text::regclass`, table.Ident()).Scan(&kind); err != nil {
			return fmt.Errorf("look up table: %w", err)
		}
		switch kind {
		case "r":
		case "p":
			t.Partitioned = true
			leaves, err := Leaves(ctx, c, table)
			if err != nil {
				return err
			}
			for _, l := range leaves {
				if l.Kind != "r" {
					return fmt.Errorf("table %s: partition %s has relkind %q: only ordinary tables are supported as partitions (a foreign table is not)", table, l.Table, l.Kind)
				}
			}
		default:
			return fmt.Errorf("table %s: relkind %q is not supported (only an ordinary or a partitioned table: a view or foreign table is not)", table, kind)
		}
		var err error
		t.Priv, err = ReadPrivileges(ctx, c, table, o.DataDir)
		return err
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Capabilities returns what the adapter may declare beyond delete and its
// logical probes: reclaim (full mode only) and the physical probe (when the
// role may read the files and CHECKPOINT).
func (t *Target) Capabilities() []store.Capability {
	var out []store.Capability
	if t.Opts.Mode == ModeFull {
		out = append(out, store.CapReclaim)
	}
	if t.Priv.Physical() {
		out = append(out, store.CapProbePhysical)
	}
	return out
}

// Delete runs del (one DELETE statement of the rows of keys, with args) in
// a transaction under the lock and statement timeouts, retrying timeouts
// as configured, and remembers the deleting transaction's xid for the pin
// check in Reclaim. On a partitioned table it also remembers which
// partitions held the rows: ids is the SQL expression of the keys a row
// answers to (Mapping.IDs), returned with each row's tableoid.
func (t *Target) Delete(ctx context.Context, keys []string, ids, del string, args ...any) error {
	return t.DB.With(ctx, func(c *pgx.Conn) error {
		for attempt := 0; ; attempt++ {
			xid, err := t.deleteOnce(ctx, c, keys, ids, del, args)
			if err == nil {
				t.noteDelete(xid)
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			kind := timeoutKind(err)
			if kind == "" {
				return fmt.Errorf("delete rows: %w", err)
			}
			if attempt >= t.Opts.Retries {
				return fmt.Errorf("delete rows: %s after %d attempt(s): %w", t.timeoutWhat(kind), attempt+1, err)
			}
			if err := sleep(ctx, t.Opts.backoff(attempt)); err != nil {
				return err
			}
		}
	})
}

func (t *Target) deleteOnce(ctx context.Context, c *pgx.Conn, keys []string, ids, del string, args []any) (uint64, error) {
	tx, err := c.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+ms(t.Opts.LockTimeout)+"'"); err != nil {
		return 0, err
	}
	if t.Opts.StatementTimeout > 0 {
		if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = '"+ms(t.Opts.StatementTimeout)+"'"); err != nil {
			return 0, err
		}
	}
	parts, everyKey := map[uint32]bool{}, false
	if t.Partitioned && ids != "" {
		rows, err := tx.Query(ctx, del+" RETURNING tableoid::int8, "+ids, args...)
		if err != nil {
			return 0, err
		}
		matched := map[string]bool{}
		set := NewKeySet(keys)
		var oid int64
		var rowIDs []string
		_, err = pgx.ForEachRow(rows, []any{&oid, &rowIDs}, func() error {
			parts[uint32(oid)] = true
			set.Of(rowIDs, func(k string) { matched[k] = true })
			return nil
		})
		if err != nil {
			return 0, err
		}
		want := map[string]bool{}
		for _, k := range keys {
			want[k] = true
		}
		everyKey = len(matched) == len(want)
	} else if _, err := tx.Exec(ctx, del, args...); err != nil {
		return 0, err
	}
	var xid *string
	if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id_if_assigned()::text`).Scan(&xid); err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	if t.Partitioned {
		t.noteParts(parts, everyKey)
	}
	if xid == nil {
		return 0, nil // nothing was deleted
	}
	return strconv.ParseUint(*xid, 10, 64)
}

func (t *Target) noteDelete(xid uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if xid > t.deleteXid {
		t.deleteXid = xid
	}
}

// Identity names the table (store.Identifier) by its database's oid and
// its own: a table restored or created anew on another server or database
// has other oids as a rule. (The cluster's system identifier would say
// more, but reading it needs a grant a role may gain or lose between two
// runs; a promoted physical standby has the same oids either way.)
func (t *Target) Identity(ctx context.Context) (string, error) {
	var id string
	err := t.DB.With(ctx, func(c *pgx.Conn) error {
		var db, tbl string
		if err := c.QueryRow(ctx, `SELECT (SELECT oid FROM pg_database WHERE datname = current_database())::text, $1::text::regclass::oid::text`, t.Table.Ident()).Scan(&db, &tbl); err != nil {
			return err
		}
		id = "postgres database " + db + " table " + tbl
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("identity of table %s: %w", t.Table, err)
	}
	return id, nil
}

// DeleteMark returns the newest deleting transaction's id (xid8, decimal),
// or "" when no row was deleted through this Target (store.DeleteMarker).
func (t *Target) DeleteMark() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deleteXid == 0 {
		return ""
	}
	return strconv.FormatUint(t.deleteXid, 10)
}

// SetDeleteMark restores a DeleteMark of an earlier process: Reclaim's pin
// check then counts only what began before that delete.
func (t *Target) SetDeleteMark(mark string) error {
	if mark == "" {
		return nil
	}
	x, err := strconv.ParseUint(mark, 10, 64)
	if err != nil || x == 0 {
		return fmt.Errorf("the journaled delete mark %q is not a transaction id", mark)
	}
	t.noteDelete(x)
	return nil
}

// deleteXid8 is the newest delete's xid (xid8), 0 when unknown.
func (t *Target) deleteXid8() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.deleteXid
}

// refXid is the 32-bit form of the newest delete's xid, 0 when unknown.
func (t *Target) refXid() uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return uint32(t.deleteXid)
}

func (t *Target) timeoutWhat(kind string) string {
	if kind == StateStatementTimeout {
		return "statement timeout (" + t.Opts.StatementTimeout.String() + ")"
	}
	return "lock timeout (" + t.Opts.LockTimeout.String() + ")"
}

func sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}
