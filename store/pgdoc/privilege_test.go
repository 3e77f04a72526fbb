package pgdoc_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/pg"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
)

// A role with table privileges only gets logical verification: no physical
// probe is declared, and reclaim reports UNVERIFIED-managed naming the
// grants that are missing.
func TestLeastPrivilegeRole(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	owner := open(t, c) // creates the table as the superuser
	put(t, owner, "rec-a", "subject-1", 1)
	put(t, owner, "rec-b", "subject-2", 2)
	role := uniq("amnesia_lp_")
	a := admin(t)
	exec(t, a, "CREATE ROLE "+role+" LOGIN")
	t.Cleanup(func() {
		ctx := context.Background()
		if x, err := pgx.Connect(ctx, dsn(t)); err == nil {
			x.Exec(ctx, "DROP OWNED BY "+role)
			x.Exec(ctx, "DROP ROLE "+role)
			x.Close(ctx)
		}
	})
	exec(t, a, "GRANT SELECT, INSERT, UPDATE, DELETE ON "+owner.Table()+" TO "+role)

	lc := c
	lc.DSN = withUser(t, c.DSN, role)
	s, err := pgdoc.Open(ctx, lc, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	info := s.Info()
	if info.Has(store.CapProbePhysical) {
		t.Fatalf("least-privilege role declares %v: it cannot read relation files", info.Capabilities)
	}
	if !info.Has(store.CapProbeByID) || !info.Has(store.CapProbeByFilter) || !info.Has(store.CapReclaim) {
		t.Fatalf("least-privilege role declares %v: want the logical probes, and reclaim (which reports what it lacks)", info.Capabilities)
	}
	if _, err := s.ProbePhysical(ctx, store.NewNeedleSet(nil)); err == nil || !strings.Contains(err.Error(), "pg_read_binary_file") {
		t.Errorf("ProbePhysical = %v, want an error naming the missing grant", err)
	}
	ev, err := s.ReadEvidence(ctx, []string{"rec-a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	res, err := s.ProbeLogical(ctx, []string{"rec-a", "rec-b"}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Found() || !res[1].ByID {
		t.Fatalf("logical probe = %+v: want rec-a gone and rec-b found", res)
	}
	rep, err := s.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reclaim: state=%q evidence=%q", rep.State, rep.Evidence)
	for _, want := range []string{
		"GRANT EXECUTE ON FUNCTION pg_read_binary_file(text, bigint, bigint, boolean) TO " + role,
		"GRANT pg_checkpoint TO " + role,
		"OWNER TO " + role,
	} {
		if !strings.Contains(rep.Evidence, want) {
			t.Errorf("reclaim evidence lacks %q", want)
		}
	}
	if rep.State != pg.StateManaged {
		t.Fatalf("Reclaim as a least-privilege role = state %q, want %s", rep.State, pg.StateManaged)
	}
}

// An owner without the file grants can reclaim, but still gets no physical
// probe: its reclaim finishes and says UNVERIFIED-managed with the grant.
func TestOwnerWithoutFileGrants(t *testing.T) {
	ctx := context.Background()
	role := uniq("amnesia_own_")
	a := admin(t)
	exec(t, a, "CREATE ROLE "+role+" LOGIN")
	t.Cleanup(func() {
		ctx := context.Background()
		if x, err := pgx.Connect(ctx, dsn(t)); err == nil {
			x.Exec(ctx, "DROP OWNED BY "+role)
			x.Exec(ctx, "DROP ROLE "+role)
			x.Close(ctx)
		}
	})
	c := config(t)
	exec(t, a, "GRANT CREATE ON SCHEMA public TO "+role)
	t.Cleanup(func() { a.Exec(context.Background(), "REVOKE CREATE ON SCHEMA public FROM "+role) })
	c.DSN = withUser(t, c.DSN, role)
	s := open(t, c) // the role creates, so owns, the table
	put(t, s, "rec-a", "subject-1", 1)
	if s.Info().Has(store.CapProbePhysical) {
		t.Fatalf("owner without file grants declares %v", s.Info().Capabilities)
	}
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reclaim: state=%q evidence=%q steps=%q", rep.State, rep.Evidence, rep.Steps)
	steps := strings.Join(rep.Steps, "\n")
	if !strings.Contains(steps, "VACUUM FULL") || !strings.Contains(steps, "CHECKPOINT and WAL rotation skipped") {
		t.Errorf("owner's reclaim steps = %q: want VACUUM FULL run and CHECKPOINT skipped", rep.Steps)
	}
	if rep.State != pg.StateManaged || !strings.Contains(rep.Evidence, "pg_read_binary_file") {
		t.Fatalf("owner without file grants: state %q evidence %q, want %s naming pg_read_binary_file", rep.State, rep.Evidence, pg.StateManaged)
	}

	// The grants the message names are enough: with them the same role
	// gets the physical probe, and it has power.
	exec(t, a, "GRANT EXECUTE ON FUNCTION pg_read_binary_file(text, bigint, bigint, boolean) TO "+role)
	exec(t, a, "GRANT pg_checkpoint TO "+role)
	t.Cleanup(func() {
		a.Exec(context.Background(), "REVOKE EXECUTE ON FUNCTION pg_read_binary_file(text, bigint, bigint, boolean) FROM "+role)
		a.Exec(context.Background(), "REVOKE pg_checkpoint FROM "+role)
	})
	granted := open(t, c)
	if !granted.Info().Has(store.CapProbePhysical) {
		t.Fatalf("with the named grants the role declares %v: want the physical probe", granted.Info().Capabilities)
	}
	put(t, granted, "rec-b", "subject-2", 2)
	ev := evidence(t, granted, "rec-b")
	if f := found(t, granted, ev); f["rec-b"] == 0 {
		t.Fatalf("with the named grants the probe found none of rec-b's needles")
	}
	// Without pg_monitor (or a data_dir) the role cannot list pg_wal: the
	// scan says it is partial, and the saga then claims no physical level.
	if rep, err := granted.ProbePhysical(ctx, store.NewNeedleSet(ev)); err != nil || !strings.Contains(rep.Partial, "pg_wal not scanned") {
		t.Errorf("a scan that could not list pg_wal: partial %q, %v; want it to say so", rep.Partial, err)
	}
	if rep, err := granted.Reclaim(ctx); err != nil || rep.State != "" {
		t.Fatalf("Reclaim with the grants = %q %q, %v: want clean", rep.State, rep.Evidence, err)
	}
}
