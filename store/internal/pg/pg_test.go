package pg

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/amnesia-dev/amnesia/store"
)

func TestParseTable(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Table
		ident   string
		display string
	}{
		{"docs", Table{Name: "docs"}, `"docs"`, "docs"},
		{"App.Docs", Table{Schema: "app", Name: "docs"}, `"app"."docs"`, "app.docs"},
		{`"My Table"`, Table{Name: "My Table"}, `"My Table"`, `"My Table"`},
		{`s."a""b"`, Table{Schema: "s", Name: `a"b`}, `"s"."a""b"`, `s."a""b"`},
		{"user", Table{Name: "user"}, `"user"`, `"user"`},
	} {
		got, err := ParseTable(tc.in)
		if err != nil || got != tc.want || got.Ident() != tc.ident || got.String() != tc.display {
			t.Errorf("ParseTable(%q) = %+v (%s, %s), %v; want %+v (%s, %s)", tc.in, got, got.Ident(), got.String(), err, tc.want, tc.ident, tc.display)
		}
	}
	for _, bad := range []string{"", "a.b.c", `"open`, "a.", ".a", `a"b`, `"a"b`} {
		if _, err := ParseTable(bad); err == nil {
			t.Errorf("ParseTable(%q) accepted", bad)
		}
	}
}

func TestParseOptions(t *testing.T) {
	o, err := ParseOptions(store.Config{})
	if err != nil || o.Mode != ModeFull || o.LockTimeout != DefaultLockTimeout || o.StatementTimeout != 0 || o.Retries != 0 {
		t.Fatalf("defaults = %+v, %v", o, err)
	}
	o, err = ParseOptions(store.Config{Reclaim: "delete-only", LockTimeout: "200ms", StatementTimeout: "1m", Retries: 3})
	if err != nil || o.Mode != ModeDeleteOnly || o.LockTimeout != 200*time.Millisecond || o.StatementTimeout != time.Minute || o.Retries != 3 {
		t.Fatalf("ParseOptions = %+v, %v", o, err)
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}
	for i, w := range want {
		if got := o.backoff(i); got != w {
			t.Errorf("backoff(%d) = %v, want %v", i, got, w)
		}
	}
	if got := o.backoff(20); got != MaxBackoff {
		t.Errorf("backoff(20) = %v, want the cap %v", got, MaxBackoff)
	}
}

func TestVerdictOrder(t *testing.T) {
	if s, e := Verdict(nil); s != "" || e != "" {
		t.Fatalf("Verdict(nil) = %q %q: a clean reclaim must leave State empty", s, e)
	}
	fs := []Finding{
		{StateManaged, "m"}, {StateDeadTuples, "d"}, {StateLockTimeout, "l"},
		{StateIndexNotRebuilt, "i"}, {"PENDING-replication-slot", "r"}, {StateStatementTimeout, "s"},
	}
	order := []string{"PENDING-replication-slot", StateIndexNotRebuilt, StateLockTimeout, StateStatementTimeout, StateDeadTuples, StateManaged}
	for _, want := range order {
		s, e := Verdict(fs)
		if s != want {
			t.Fatalf("Verdict state = %q, want %q", s, want)
		}
		if !strings.HasPrefix(e, want+": ") || len(fs) > 1 && !strings.Contains(e, " | ") {
			t.Fatalf("Verdict evidence = %q: want every finding, the winner first", e)
		}
		var rest []Finding // drop the winner: the next one wins
		for _, f := range fs {
			if f.State != want {
				rest = append(rest, f)
			}
		}
		fs = rest
	}
	if s, _ := Verdict([]Finding{{StateDeferred, "x"}, {"PENDING-long-transaction", "y"}}); s != StateDeferred {
		t.Errorf("delete-only's deferral must come first, got %q", s)
	}
}

func TestPinFinding(t *testing.T) {
	if PinFinding(nil) != nil {
		t.Fatal("no pins, yet a finding")
	}
	pins := []Pin{
		{Kind: PinLongTransaction, Age: 50, Desc: "pid 7"},
		{Kind: PinPreparedTransaction, Age: 3, Desc: "prepared transaction 'g'"},
		{Kind: PinReplicationSlot, Age: 9, Desc: "slot s"},
		{Kind: PinLongTransaction, Age: 90, Desc: "pid 8"},
	}
	SortPins(pins)
	f := PinFinding(pins)
	if f.State != "PENDING-prepared-transaction" {
		t.Fatalf("state = %q: a prepared transaction outlives every session and comes first", f.State)
	}
	for _, want := range []string{"prepared transaction 'g'", "slot s", "pid 8", "pid 7"} {
		if !strings.Contains(f.Evidence, want) {
			t.Errorf("evidence %q lacks %q", f.Evidence, want)
		}
	}
	if strings.Index(f.Evidence, "pid 8") > strings.Index(f.Evidence, "pid 7") {
		t.Errorf("evidence lists the younger snapshot first: %q", f.Evidence)
	}
}

func TestTimeoutKind(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&pgconn.PgError{Code: "55P03", Message: "canceling statement due to lock timeout"}, StateLockTimeout},
		{&pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"}, StateStatementTimeout},
		{&pgconn.PgError{Code: "57014", Message: "canceling statement due to user request"}, ""},
		// lc_messages = 'de_DE': the same timeout, in German.
		{&pgconn.PgError{Code: "57014", Message: "storniere Anfrage wegen Zeitüberschreitung der Anweisung"}, StateStatementTimeout},
		{&pgconn.PgError{Code: "42501", Message: "permission denied"}, ""},
	} {
		if got := timeoutKind(tc.err); got != tc.want {
			t.Errorf("timeoutKind(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestLeftoverNames(t *testing.T) {
	for name, want := range map[string]bool{
		"docs_embedding_idx_ccnew": true, "docs_embedding_idx_ccnew1": true, "docs_embedding_idx_ccold": true,
		"docs_embedding_idx": false, "ccnew": false, "docs_ccnewer": false,
	} {
		if got := isLeftover(name); got != want {
			t.Errorf("isLeftover(%q) = %v, want %v", name, got, want)
		}
	}
	if got := baseName("a_idx_ccnew2"); got != "a_idx" {
		t.Errorf("baseName = %q", got)
	}
}

func TestMissingGrants(t *testing.T) {
	p := Privileges{Role: "app", ServerVersion: 150000}
	m := p.MissingPhysical()
	for _, want := range []string{"GRANT EXECUTE ON FUNCTION pg_read_binary_file(text, bigint, bigint, boolean) TO app", "GRANT pg_checkpoint TO app", "or superuser"} {
		if !strings.Contains(m, want) {
			t.Errorf("MissingPhysical = %q, lacks %q", m, want)
		}
	}
	p.ReadFiles, p.Checkpoint = true, true
	if m := p.MissingPhysical(); m != "" || !p.Physical() {
		t.Errorf("with both grants MissingPhysical = %q", m)
	}
	p.ServerVersion = 170000
	if m := p.MissingMaintain(Table{Schema: "app", Name: "docs"}); !strings.Contains(m, "ALTER TABLE app.docs OWNER TO app") || !strings.Contains(m, "GRANT MAINTAIN ON app.docs TO app") {
		t.Errorf("MissingMaintain = %q", m)
	}
	p.Maintain = true
	if m := p.MissingMaintain(Table{Name: "docs"}); m != "" {
		t.Errorf("owner: MissingMaintain = %q", m)
	}
}

func TestCapabilities(t *testing.T) {
	full := &Target{Opts: Options{Mode: ModeFull}, Priv: Privileges{Superuser: true, ReadFiles: true, Checkpoint: true}}
	if c := full.Capabilities(); len(c) != 2 || c[0] != store.CapReclaim || c[1] != store.CapProbePhysical {
		t.Errorf("full, superuser: %v", c)
	}
	del := &Target{Opts: Options{Mode: ModeDeleteOnly}, Priv: Privileges{ReadFiles: true, Checkpoint: true}}
	if c := del.Capabilities(); len(c) != 1 || c[0] != store.CapProbePhysical {
		t.Errorf("delete-only: %v, want the physical probe and no reclaim", c)
	}
	lp := &Target{Opts: Options{Mode: ModeFull}}
	if c := lp.Capabilities(); len(c) != 1 || c[0] != store.CapReclaim {
		t.Errorf("least privilege: %v, want reclaim (which reports what it lacks) and no physical probe", c)
	}
}
