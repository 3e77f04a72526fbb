package pg

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/store"
)

// Checked is what Check found on a reachable server, for the adapter's own
// column checks. Conn is valid only inside the callback.
type Checked struct {
	Conn    *pgx.Conn
	Table   Table
	Columns map[string]Column
	Where   string // "table t in database d on host:port", for messages
}

// Check is the shared, read-only part of the PostgreSQL adapters' checks
// (store.CheckFunc): connect (a refused or unreachable server is named by
// host:port and database, never by the DSN, which may hold a password),
// find the table (an ordinary table, never created here), and read the
// role's privileges on it: SELECT and DELETE are needed to erase at all
// (errors); what reclaim and the physical probe lack lowers what can be
// verified (warnings). Everything runs in a READ ONLY transaction that is
// rolled back. cols, when not nil, runs the adapter's column checks.
func Check(ctx context.Context, c store.Config, table string, cols func(Checked) []store.Problem) []store.Problem {
	bad := func(key, format string, a ...any) []store.Problem {
		return []store.Problem{{Severity: store.SeverityError, Key: key, Message: fmt.Sprintf(format, a...)}}
	}
	opts, err := ParseOptions(c)
	if err != nil {
		return bad("", "%v", err)
	}
	tbl, err := ParseTable(table)
	if err != nil {
		return bad("table", "%v", err)
	}
	cfg, err := pgx.ParseConfig(c.DSN)
	if err != nil {
		return bad("dsn", "not a valid PostgreSQL connection string (postgres://user@host:port/dbname)")
	}
	server := cfg.Host + ":" + strconv.Itoa(int(cfg.Port))
	where := "database " + Display(cfg.Database) + " on " + server
	db, err := Connect(ctx, c.DSN)
	if err != nil {
		return bad("dsn", "cannot connect to %s as role %s: %s (is the server running, and are host, port and credentials right?)", where, Display(cfg.User), cause(err))
	}
	defer db.Close()
	var probs []store.Problem
	err = db.With(ctx, func(conn *pgx.Conn) error {
		tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
		if err != nil {
			return err
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		var kind *string
		if err := conn.QueryRow(ctx, `SELECT c.relkind::text FROM pg_class c WHERE c.oid = to_regclass($1)`, tbl.Ident()).Scan(&kind); err != nil && err != pgx.ErrNoRows {
			return err
		}
		if kind == nil {
			probs = bad("table", "table %s does not exist in %s (amnesia never creates a store it is to erase from: check table and dsn)", tbl, where)
			return nil
		}
		if *kind != "r" && *kind != "p" {
			probs = bad("table", "%s in %s is not an ordinary or partitioned table (relkind %q): only those are supported", tbl, where, *kind)
			return nil
		}
		var sel, del bool
		if err := conn.QueryRow(ctx, `SELECT has_table_privilege($1::text::regclass, 'SELECT'), has_table_privilege($1::text::regclass, 'DELETE')`, tbl.Ident()).Scan(&sel, &del); err != nil {
			return err
		}
		role := Display(cfg.User)
		if !sel || !del {
			probs = append(probs, store.Problem{Severity: store.SeverityError, Message: fmt.Sprintf("role %s may not %s table %s in %s: GRANT SELECT, DELETE ON %s TO %s", role, missing(sel, del), tbl, where, tbl, role)})
		}
		colmap, err := Columns(ctx, conn, tbl)
		if err != nil {
			return err
		}
		if cols != nil {
			probs = append(probs, cols(Checked{Conn: conn, Table: tbl, Columns: colmap, Where: "table " + tbl.String() + " in " + where})...)
		}
		priv, err := ReadPrivileges(ctx, conn, tbl, opts.DataDir)
		if err != nil {
			return err
		}
		if opts.Mode == ModeFull {
			if m := priv.MissingMaintain(tbl); m != "" {
				probs = append(probs, store.Problem{Severity: store.SeverityWarning, Message: m + "; without it the erasure deletes but cannot reclaim, and the store's residue is reported UNVERIFIED-managed"})
			}
		}
		if opts.DataDir != "" && !priv.DataDir {
			probs = append(probs, store.Problem{Severity: store.SeverityWarning, Key: "data_dir", Message: opts.DataDir + ": " + priv.DataDirReason})
		}
		if m := priv.MissingPhysical(); m != "" {
			probs = append(probs, store.Problem{Severity: store.SeverityWarning, Message: m + "; without it records are verified at the logical level only"})
		}
		return nil
	})
	if err != nil {
		return append(probs, store.Problem{Severity: store.SeverityError, Message: fmt.Sprintf("check %s in %s: %s", tbl, where, cause(err))})
	}
	return probs
}

func missing(sel, del bool) string {
	switch {
	case !sel && !del:
		return "SELECT from or DELETE from"
	case !sel:
		return "SELECT from"
	}
	return "DELETE from"
}

// cause is err without what a driver may quote from the DSN.
func cause(err error) string { return connectCause(err) }
