package provenance

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
)

// The settings come from the real server, and Describe names them.
func TestPostgresSettingsRecorded(t *testing.T) {
	dsn := pgtest.DB(t, "vector")
	set, err := PostgresSettings(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(set["server"], "PostgreSQL ") || !strings.Contains(set["server"], "pgvector ") {
		t.Fatalf("server = %q", set["server"])
	}
	for _, k := range []string{"fsync", "synchronous_commit", "maintenance_work_mem"} {
		if set[k] == "" {
			t.Fatalf("setting %s not recorded: %v", k, set)
		}
	}
	p := Provenance{Machine: "linux/amd64, 2 CPUs, go1", LoadAvg: "0.10 0.20 0.30", ServerSettings: set}
	d := p.Describe()
	if !strings.Contains(d, "fsync="+set["fsync"]) || !strings.Contains(d, "load average 0.10/0.20/0.30 at start") {
		t.Fatalf("Describe() = %q", d)
	}
	if _, err := PostgresSettings(context.Background(), "postgres://nobody:secret-pw@127.0.0.1:1/x"); err == nil || strings.Contains(err.Error(), "secret-pw") {
		t.Fatalf("an unreachable server: err = %v", err)
	}
}

func TestCaptureRecordsLoad(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("load averages are read from /proc/loadavg")
	}
	if p := Capture(ResiduePaths); len(strings.Fields(p.LoadAvg)) != 3 {
		t.Fatalf("LoadAvg = %q", p.LoadAvg)
	}
}
