package pgdoc_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
)

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func oneError(t *testing.T, probs []store.Problem, key, substr string) store.Problem {
	t.Helper()
	errs := store.Errors(probs)
	if len(errs) != 1 || errs[0].Key != key || !strings.Contains(errs[0].Message, substr) {
		t.Fatalf("problems %v: want one error on %q mentioning %q", probs, key, substr)
	}
	return errs[0]
}

// A closed port is named by host:port, never with the DSN's password.
func TestCheckClosedPort(t *testing.T) {
	port := closedPort(t)
	c := store.Config{Name: "docs", Type: pgdoc.Type, DSN: fmt.Sprintf("postgres://amnesia:s3cret-pw@127.0.0.1:%d/appdb", port)}
	p := oneError(t, store.Check(context.Background(), c), "dsn", fmt.Sprintf("127.0.0.1:%d", port))
	if strings.Contains(p.Message, "s3cret-pw") {
		t.Fatalf("the message holds the password: %s", p.Message)
	}
	if !strings.Contains(p.Message, "appdb") {
		t.Errorf("the message does not name the database: %s", p.Message)
	}
}

// A missing table is reported and not created; a table without the
// adapter's columns is named with what it lacks; a role that may not
// DELETE is not ready; one that may delete but not reclaim or read the
// relation files is ready, with warnings that say what is not verified.
func TestCheckTableAndPrivileges(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	oneError(t, store.Check(ctx, c), "table", "does not exist")
	a := admin(t)
	var exists bool
	if err := a.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, c.Table).Scan(&exists); err != nil || exists {
		t.Fatalf("the check created table %s (%v)", c.Table, err)
	}

	exec(t, a, "CREATE TABLE "+c.Table+" (id text PRIMARY KEY, subject text)")
	oneError(t, store.Check(ctx, c), "table", "no column kind, content, metadata")
	exec(t, a, "DROP TABLE "+c.Table)

	owner := open(t, c)
	put(t, owner, "rec-a", "subject-1", 1)
	if probs := store.Check(ctx, c); len(probs) != 0 {
		t.Fatalf("superuser on a ready table: %v", probs)
	}

	role := uniq("amnesia_chk_")
	exec(t, a, "CREATE ROLE "+role+" LOGIN")
	t.Cleanup(func() {
		ctx := context.Background()
		if x, err := pgx.Connect(ctx, dsn(t)); err == nil {
			x.Exec(ctx, "DROP OWNED BY "+role)
			x.Exec(ctx, "DROP ROLE "+role)
			x.Close(ctx)
		}
	})
	exec(t, a, "GRANT SELECT ON "+owner.Table()+" TO "+role)
	lc := c
	lc.DSN = withUser(t, c.DSN, role)
	oneError(t, store.Check(ctx, lc), "", "may not DELETE from")

	exec(t, a, "GRANT DELETE ON "+owner.Table()+" TO "+role)
	probs := store.Check(ctx, lc)
	if errs := store.Errors(probs); len(errs) != 0 {
		t.Fatalf("a role that may SELECT and DELETE: %v", errs)
	}
	var text []string
	for _, p := range probs {
		text = append(text, p.Message)
	}
	all := strings.Join(text, "\n")
	for _, want := range []string{"VACUUM FULL", "UNVERIFIED-managed", "pg_read_binary_file", "logical level only"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings do not mention %q:\n%s", want, all)
		}
	}
	lc.Reclaim = "delete-only"
	for _, p := range store.Check(ctx, lc) {
		if strings.Contains(p.Message, "VACUUM FULL") {
			t.Errorf("delete-only still warns about reclaim: %s", p)
		}
	}
}
