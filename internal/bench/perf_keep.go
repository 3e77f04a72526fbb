package bench

// A trace ledger kept between runs (amnesia-bench trace --keep DIR, then
// --reuse DIR): a ledger of ten million edges takes long to build through
// the real write path, so it is built once and measured again, on a quiet
// machine or after a change to the read path. DIR holds, for each ledger,
// a manifest (trace-<ledger>.json): what was built, by which commit, how
// fast, and the ledger's head when the build ended, which a reuse checks
// so that a ledger changed since is not measured as the one built.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/pgledger"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
)

// keptLedger is DIR/trace-<ledger>.json.
type keptLedger struct {
	Ledger   string `json:"ledger"`
	Database string `json:"database,omitempty"` // PostgreSQL: the database on the --pg server
	File     string `json:"file,omitempty"`     // SQLite: the ledger's file in DIR
	Subjects int    `json:"subjects"`
	Edges    int    `json:"edges"`
	// Events and Head are the ledger's head when the build ended.
	Events int64  `json:"events"`
	Head   string `json:"head"`
	// Builds are the growth steps, in order (a reuse may grow the ledger
	// further).
	Builds []keptBuild `json:"builds"`
}

// keptBuild is one growth step of a kept ledger.
type keptBuild struct {
	Commit       string  `json:"commit"`
	Machine      string  `json:"machine"`
	Date         string  `json:"date"`
	FromSubjects int     `json:"from_subjects"`
	ToSubjects   int     `json:"to_subjects"`
	TxSubjects   int     `json:"tx_subjects"`
	Seconds      float64 `json:"seconds"`
	PerS         float64 `json:"artifacts_per_s"`
}

func keptPath(dir, kind string) string { return filepath.Join(dir, "trace-"+kind+".json") }

func readKept(dir, kind string) (*keptLedger, error) {
	b, err := os.ReadFile(keptPath(dir, kind))
	if err != nil {
		return nil, err
	}
	var k keptLedger
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("%s: %w", keptPath(dir, kind), err)
	}
	if k.Ledger != kind || len(k.Builds) == 0 || (kind == "sqlite" && (k.File == "" || filepath.Base(k.File) != k.File)) || (kind == "postgres" && k.Database == "") {
		return nil, fmt.Errorf("%s: not the manifest of a kept %s ledger", keptPath(dir, kind), kind)
	}
	return &k, nil
}

// writeKept records k (its head read from l) in dir.
func writeKept(ctx context.Context, dir string, l lineage.Ledger, k *keptLedger) error {
	var err error
	if k.Events, k.Head, err = l.Head(ctx); err != nil {
		return err
	}
	b, err := json.MarshalIndent(k, "", "  ")
	if err != nil {
		return err
	}
	tmp := keptPath(dir, k.Ledger) + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, keptPath(dir, k.Ledger))
}

// reopenKept opens the ledger of kind kept in dir, and checks that its
// head is still the one its manifest recorded.
func reopenKept(ctx context.Context, o PerfOptions, dir, kind string) (lineage.Ledger, string, *keptLedger, error) {
	k, err := readKept(dir, kind)
	if err != nil {
		return nil, "", nil, fmt.Errorf("--reuse: %w", err)
	}
	var l lineage.Ledger
	var spec string
	switch kind {
	case "sqlite":
		spec = filepath.Join(dir, k.File)
		l, err = sqliteledger.OpenExisting(ctx, spec)
	case "postgres":
		if o.PG == "" {
			return nil, "", nil, errors.New("--reuse of a postgres ledger needs --pg, the server it was built on")
		}
		if spec, err = databaseDSN(o.PG, k.Database); err == nil {
			l, err = pgledger.OpenExisting(ctx, spec)
		}
	default:
		err = fmt.Errorf("unknown ledger %q", kind)
	}
	if err != nil {
		return nil, "", nil, fmt.Errorf("--reuse %s: %w", kind, err)
	}
	seq, head, err := l.Head(ctx)
	if err == nil && (seq != k.Events || head != k.Head) {
		err = fmt.Errorf("the ledger's head is event %d, but it was kept at event %d: it changed since it was built", seq, k.Events)
	}
	if err != nil {
		l.Close()
		return nil, "", nil, fmt.Errorf("--reuse %s: %w", kind, err)
	}
	return l, spec, k, nil
}

// databaseDSN is server's URL with its database replaced by db.
func databaseDSN(server, db string) (string, error) {
	cfg, err := pgx.ParseConfig(server)
	if err != nil {
		return "", err
	}
	if cfg.Password != "" {
		return fmt.Sprintf("postgres://%s:%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Password, cfg.Host, cfg.Port, db), nil
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, db), nil
}

// newBuild is a growth step that commit (the run's) made.
func newBuild(commit string, from, to, tx int, took time.Duration) keptBuild {
	return keptBuild{Commit: commit, Machine: provenance.Capture(nil).Machine, Date: time.Now().UTC().Format("2006-01-02"), FromSubjects: from, ToSubjects: to, TxSubjects: tx,
		Seconds: took.Seconds(), PerS: float64((to-from)*docsPer*(1+2*chunksPer)) / took.Seconds()}
}

// builtBy is the commits of k's growth steps.
func (k *keptLedger) builtBy() []string {
	var out []string
	for _, b := range k.Builds {
		out = append(out, b.Commit)
	}
	return out
}

// ledgerFiles are the files that hold the ledger spec names (SQLite: its
// file and WAL; PostgreSQL: its database's files under datadir), or none
// for PostgreSQL without datadir.
func ledgerFiles(ctx context.Context, kind, spec, datadir string) ([]string, error) {
	switch kind {
	case "sqlite":
		return []string{spec, spec + "-wal"}, nil
	case "postgres":
		if datadir == "" {
			return nil, nil
		}
		c, err := pgx.Connect(ctx, spec)
		if err != nil {
			return nil, err
		}
		var oid uint32
		err = c.QueryRow(ctx, `SELECT oid FROM pg_database WHERE datname = current_database()`).Scan(&oid)
		c.Close(ctx)
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(datadir, "base", fmt.Sprint(oid))
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		var files []string
		for _, e := range ents {
			if e.Type().IsRegular() {
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
		return files, nil
	}
	return nil, fmt.Errorf("no ledger kind %q", kind)
}

// cachedPercent is the share of files' pages the page cache holds (nil
// where it cannot be told: no files, or not Linux).
func cachedPercent(files []string) *float64 {
	var in, size int64
	for _, p := range files {
		i, n, err := residentBytes(p)
		if err != nil {
			return nil
		}
		in, size = in+i, size+n
	}
	if size == 0 {
		return nil
	}
	pc := 100 * float64(in) / float64(size)
	return &pc
}

// prewarm reads the files of the ledger spec names into the page cache
// (ledgerFiles) and says what it read.
func prewarm(ctx context.Context, kind, spec, datadir string) (string, error) {
	files, err := ledgerFiles(ctx, kind, spec, datadir)
	if err != nil {
		return "", err
	}
	if kind == "postgres" && datadir == "" {
		return "no prewarm (no --pg-datadir): warm-up traces only", nil
	}
	var n int64
	buf := make([]byte, 1<<20)
	for _, p := range files {
		f, err := os.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		k, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf)
		f.Close()
		n += k
		if err != nil {
			return "", err
		}
	}
	what := "the ledger's files"
	if kind == "postgres" {
		what = "the database's files (not the server's shared buffers)"
	}
	return fmt.Sprintf("%s read whole (%d MiB) into the page cache, then warm-up traces", what, n>>20), nil
}
