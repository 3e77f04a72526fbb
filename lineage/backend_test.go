package lineage_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage"
)

// This test binary imports no backend: lineage alone links no database
// driver, and Open says which import to add.

func TestIsPostgresDSN(t *testing.T) {
	for spec, pg := range map[string]bool{
		"postgres://u@h/db": true, "postgresql://u@h/db": true, "POSTGRES://h/db": true,
		"ledger.db": false, "/srv/amnesia/ledger.db": false, "host=h dbname=db": false,
	} {
		if got := lineage.IsPostgresDSN(spec); got != pg {
			t.Errorf("IsPostgresDSN(%q) = %v, want %v", spec, got, pg)
		}
		want := map[bool]string{true: "postgres", false: "sqlite"}[pg]
		if got := lineage.BackendName(spec); got != want {
			t.Errorf("BackendName(%q) = %q, want %q", spec, got, want)
		}
	}
}

func TestOpenWithoutBackendNamesTheImport(t *testing.T) {
	for _, name := range lineage.Backends() {
		if name == "sqlite" || name == "postgres" {
			t.Fatalf("backend %s registered in a binary that imports none", name)
		}
	}
	ctx := context.Background()
	for spec, imp := range map[string]string{
		"/srv/amnesia/ledger.db":                  `_ "github.com/amnesia-dev/amnesia/lineage/sqliteledger"`,
		"postgres://amnesia:s3cret@db/amnesia":    `_ "github.com/amnesia-dev/amnesia/lineage/pgledger"`,
		"postgresql://amnesia:s3cret@db/amnesia2": `_ "github.com/amnesia-dev/amnesia/lineage/pgledger"`,
	} {
		for name, open := range map[string]func(context.Context, string) (lineage.Ledger, error){"Open": lineage.Open, "OpenExisting": lineage.OpenExisting} {
			l, err := open(ctx, spec)
			if err == nil {
				l.Close()
				t.Fatalf("%s(%s) opened a ledger with no backend registered", name, lineage.BackendName(spec))
			}
			if !strings.Contains(err.Error(), imp) {
				t.Errorf("%s error %q does not name the import %s", name, err, imp)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "/srv/amnesia") {
				t.Errorf("%s error quotes the spec: %q", name, err)
			}
			if errors.Is(err, lineage.ErrNoLedger) {
				t.Errorf("%s error wraps ErrNoLedger: a missing backend is not a missing ledger", name)
			}
		}
	}
}

func TestRegisterBackendDispatches(t *testing.T) {
	// A backend for a spec syntax no real backend matches.
	var got []string
	lineage.RegisterBackend("test-mem", lineage.Backend{
		Match: func(spec string) bool { return strings.HasPrefix(spec, "mem:") },
		Open: func(_ context.Context, spec string, create bool) (lineage.Ledger, error) {
			got = append(got, spec+map[bool]string{true: " create", false: " existing"}[create])
			return nil, lineage.ErrNoLedger
		},
	})
	ctx := context.Background()
	if _, err := lineage.Open(ctx, "mem:a"); !errors.Is(err, lineage.ErrNoLedger) {
		t.Fatalf("Open(mem:a) = %v, want the backend's error", err)
	}
	if _, err := lineage.OpenExisting(ctx, "mem:b"); !errors.Is(err, lineage.ErrNoLedger) {
		t.Fatalf("OpenExisting(mem:b) = %v, want the backend's error", err)
	}
	if want := []string{"mem:a create", "mem:b existing"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("backend called with %v, want %v", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a backend name twice did not panic")
		}
	}()
	lineage.RegisterBackend("test-mem", lineage.Backend{Match: func(string) bool { return false }, Open: func(context.Context, string, bool) (lineage.Ledger, error) { return nil, nil }})
}
