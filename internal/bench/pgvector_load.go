package bench

// The pgvector benchmark's loading: the seeded vectors, the state template
// and its bulk-loaded ledger, and each baseline's table, filled and indexed.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	pgv "github.com/pgvector/pgvector-go"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgvector"
)

// --- vectors ---------------------------------------------------------------

// pgvVector is vector i: seeded, deterministic, unit-normalised.
func pgvVector(seed uint64, i, dim int) []float32 {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	v := make([]float32, dim)
	var n float64
	for j := range v {
		x := rng.NormFloat64()
		v[j] = float32(x)
		n += x * x
	}
	n = math.Sqrt(n)
	for j := range v {
		v[j] = float32(float64(v[j]) / n)
	}
	return v
}

func pgvKey(i int) string { return fmt.Sprintf("vec-%07d", i) }

func pgvSubjectID(s int) string { return fmt.Sprintf("subject-%d", s) }

// keysOf returns subject s's keys.
func (r *pgvRun) keysOf(s int) []string {
	var out []string
	for i := s; i < r.o.Vectors; i += r.o.Subjects {
		out = append(out, pgvKey(i))
	}
	return out
}

// --- the state template and its ledger --------------------------------------

func (r *pgvRun) storeConfig(table, mode string) store.Config {
	return store.Config{Name: pgvStore, Type: pgvector.Type, DSN: r.o.DSN, Table: table, Dimensions: r.o.Dim, Reclaim: mode, DataDir: r.o.DataDir}
}

// prepare creates the state template, its subject tags and its ledger (one
// embedding artifact per vector, bulk-loaded with the real schema), and
// checks the server.
func (r *pgvRun) prepare(ctx context.Context) error {
	r.tmpl = filepath.Join(r.o.Work, "state-template")
	os.RemoveAll(r.tmpl)
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{r.storeConfig(r.o.Tables+"template", "")}
	d, err := state.Init(r.tmpl, cfg)
	if err != nil {
		return err
	}
	r.dir = d
	scope := d.Config.Scope
	r.tags = make([]string, r.o.Subjects)
	for s := range r.tags {
		k, err := d.Keyer.Key(scope, pgvSubjectID(s))
		if err != nil {
			return err
		}
		r.tags[s] = k.String()
	}
	start := time.Now()
	if err := r.bulkLedger(ctx); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	r.logf("ledger: %d embedding artifacts in %.1fs", r.o.Vectors, time.Since(start).Seconds())
	return r.withConn(ctx, func(c *pgx.Conn) error {
		var ver, ext string
		if _, err := c.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector`); err != nil {
			return err
		}
		if err := c.QueryRow(ctx, `SELECT version(), (SELECT extversion FROM pg_extension WHERE extname = 'vector')`).Scan(&ver, &ext); err != nil {
			return err
		}
		r.res.Server = ver + "; pgvector " + ext
		return nil
	})
}

// bulkLedger writes the artifacts capture would record (kind embedding,
// store, key, keyed digest of the vector's float32 bytes) straight into
// the ledger's tables (a side loader: scale.go and the trace benchmark record through RecordBatch instead).
func (r *pgvRun) bulkLedger(ctx context.Context) error {
	path := r.dir.LedgerPath()
	l, err := sqliteledger.Open(ctx, path) // creates the real schema
	if err != nil {
		return err
	}
	l.Close()
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous=OFF")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	scope, k := r.dir.Config.Scope, r.dir.Keyer
	const batch = 5000
	for i0 := 0; i0 < r.o.Vectors; i0 += batch {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		ins, err := tx.Prepare(`INSERT INTO artifacts (id, seq, scope, subject, kind, store, key, digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			tx.Rollback()
			return err
		}
		for i := i0; i < i0+batch && i < r.o.Vectors; i++ {
			key := pgvKey(i)
			dig := lineage.ContentDigest(k, store.Float32LE(pgvVector(r.o.Seed, i, r.o.Dim)))
			if _, err := ins.Exec(lineage.ArtifactID(k, scope, pgvStore, key), i+1, scope, r.tags[i%r.o.Subjects], string(lineage.KindEmbedding), pgvStore, key, dig); err != nil {
				tx.Rollback()
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// stateFor copies the template to a new state directory whose only store is
// table in mode, and opens it with its ledger.
func (r *pgvRun) stateFor(ctx context.Context, name, table, mode string) (*state.Dir, *sqliteledger.Ledger, error) {
	path := filepath.Join(r.o.Work, name, "state")
	if err := copyDir(r.tmpl, path); err != nil {
		return nil, nil, err
	}
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{r.storeConfig(table, mode)}
	b, err := cfg.Marshal()
	if err != nil {
		return nil, nil, err
	}
	if err := state.WriteFileAtomic(filepath.Join(path, "amnesia.yaml"), b); err != nil {
		return nil, nil, err
	}
	d, err := state.Open(path)
	if err != nil {
		return nil, nil, err
	}
	l, err := sqliteledger.Open(ctx, d.LedgerPath())
	if err != nil {
		return nil, nil, err
	}
	return d, l, nil
}

// pgvInsertRows is how many rows one INSERT carries (4 parameters each).
const pgvInsertRows = 250

// row returns vector i's row: id, embedding, content, metadata.
func (r *pgvRun) row(i int) []any {
	meta, _ := json.Marshal(map[string]string{"subject": r.tags[i%r.o.Subjects]})
	return []any{pgvKey(i), pgv.NewVector(pgvVector(r.o.Seed, i, r.o.Dim)), "", string(meta)}
}

// insert loads rows 0..n-1 into t with multi-row INSERTs whose vectors are
// sent in pgvector's binary format, in transactions of 20 statements.
// (PGlite's socket server loses protocol sync on COPY FROM STDIN.)
func (r *pgvRun) insert(ctx context.Context, c *pgx.Conn, t string, n int) error {
	stmt := func(rows int) string {
		var b strings.Builder
		b.WriteString("INSERT INTO " + t + " (id, embedding, content, metadata) VALUES ")
		for k := 0; k < rows; k++ {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "($%d, $%d, $%d, $%d)", 4*k+1, 4*k+2, 4*k+3, 4*k+4)
		}
		return b.String()
	}
	full := stmt(pgvInsertRows)
	for i0 := 0; i0 < n; {
		tx, err := c.Begin(ctx)
		if err != nil {
			return err
		}
		for s := 0; s < 20 && i0 < n; s++ {
			rows := min(pgvInsertRows, n-i0)
			q := full
			if rows < pgvInsertRows {
				q = stmt(rows)
			}
			args := make([]any, 0, 4*rows)
			for i := i0; i < i0+rows; i++ {
				args = append(args, r.row(i)...)
			}
			if _, err := tx.Exec(ctx, q, args...); err != nil {
				tx.Rollback(ctx)
				return err
			}
			i0 += rows
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
	}
	return nil
}

// load creates table in the adapter's layout (what pgvector.Open with create
// does, the vector index left for later), fills it (insert), runs VACUUM
// (ANALYZE) as a settled application table would have had, then builds the
// vector index (method) and the subject index.
func (r *pgvRun) load(ctx context.Context, table, method string, rows int) (PGVectorSetup, error) {
	su := PGVectorSetup{Table: table}
	t := pgx.Identifier{table}.Sanitize()
	err := r.withConn(ctx, func(c *pgx.Conn) error {
		if err := pgxvec.RegisterTypes(ctx, c); err != nil { // pgvector-go's codecs: pgv.Vector is sent binary
			return err
		}
		for _, q := range []string{
			`DROP TABLE IF EXISTS ` + t,
			fmt.Sprintf(`CREATE TABLE %s (id text PRIMARY KEY, embedding vector(%d) NOT NULL, content text NOT NULL DEFAULT '', metadata jsonb NOT NULL DEFAULT '{}')`, t, r.o.Dim),
			`ALTER TABLE ` + t + ` ALTER COLUMN content SET STORAGE EXTERNAL`,
		} {
			if _, err := c.Exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		r.tables = append(r.tables, table)
		start := time.Now()
		if err := r.insert(ctx, c, t, rows); err != nil {
			return fmt.Errorf("insert: %w", err)
		}
		su.InsertSeconds = time.Since(start).Seconds()
		start = time.Now()
		if _, err := c.Exec(ctx, `VACUUM (ANALYZE) `+t); err != nil {
			return err
		}
		su.VacuumSeconds = time.Since(start).Seconds()
		start = time.Now()
		r.notices = nil
		if _, err := c.Exec(ctx, r.indexDDL(table, method)); err != nil {
			return fmt.Errorf("vector index: %w", err)
		}
		su.IndexSeconds = time.Since(start).Seconds()
		start = time.Now()
		if _, err := c.Exec(ctx, `CREATE INDEX `+pgx.Identifier{table + "_subject"}.Sanitize()+` ON `+t+` ((metadata->>'subject'))`); err != nil {
			return err
		}
		su.OtherSeconds = time.Since(start).Seconds()
		return nil
	})
	return su, err
}

func (r *pgvRun) indexDDL(table, method string) string {
	t := pgx.Identifier{table}.Sanitize()
	if method == "hnsw" { // exactly what pgvector.Open creates
		return `CREATE INDEX ` + pgx.Identifier{table + "_embedding_hnsw"}.Sanitize() + ` ON ` + t + ` USING hnsw (embedding vector_l2_ops)`
	}
	return fmt.Sprintf(`CREATE INDEX %s ON %s USING ivfflat (embedding vector_l2_ops) WITH (lists = %d)`, pgx.Identifier{table + "_embedding_ivfflat"}.Sanitize(), t, r.o.Lists)
}

// chooseIndex settles the vector index method. For "auto": HNSW builds,
// timed, on scratch tables of the first HNSWTrial/2 and HNSWTrial vectors
// (loaded like the others, then dropped); the build of all the vectors is
// projected from them as t·(N/n)^b, b fitted to the two builds (at least 1).
func (r *pgvRun) chooseIndex(ctx context.Context) error {
	if r.o.Index != "auto" {
		r.index = r.o.Index
		r.res.Index.Note = "index method given on the command line (--index " + r.o.Index + ")"
		return nil
	}
	n := r.o.Vectors
	if r.o.HNSWTrial > 0 && r.o.HNSWTrial < n {
		n = r.o.HNSWTrial
	}
	a := &HNSWAttempt{Vectors: n, BudgetSeconds: r.o.HNSWBudget.Seconds()}
	table := r.o.Tables + "hnsw_trial"
	var half float64
	for _, rows := range []int{n / 2, n} {
		if rows == n/2 && n == r.o.Vectors {
			continue // the trial is the real size: nothing to project
		}
		r.logf("index: timing an HNSW build of %d×%d vectors", rows, r.o.Dim)
		su, err := r.load(ctx, table, "hnsw", rows)
		if err != nil {
			return fmt.Errorf("hnsw trial: %w", err)
		}
		if rows == n/2 {
			a.HalfSeconds = su.IndexSeconds
			half = su.IndexSeconds
		} else {
			a.Seconds, a.Notices = su.IndexSeconds, r.notices
		}
		if err := r.drop(ctx, table); err != nil {
			return err
		}
	}
	a.ProjectedSeconds = a.Seconds
	if n < r.o.Vectors {
		a.Exponent = 1
		if half > 0 && a.Seconds > half {
			a.Exponent = max(1, math.Log(a.Seconds/half)/math.Log(float64(n)/float64(n/2)))
		}
		a.ProjectedSeconds = a.Seconds * math.Pow(float64(r.o.Vectors)/float64(n), a.Exponent)
	}
	r.res.Index.HNSWAttempt = a
	what := fmt.Sprintf("HNSW (m=16, ef_construction=64, vector_l2_ops: what the adapter creates) built in %.1fs for %d×%d vectors", a.Seconds, n, r.o.Dim)
	if n < r.o.Vectors {
		what += fmt.Sprintf(" and %.1fs for %d; projected as t·(N/n)^%.2f: %.0fs for the %d vectors of each table", a.HalfSeconds, n/2, a.Exponent, a.ProjectedSeconds, r.o.Vectors)
	}
	if len(a.Notices) > 0 {
		what += " (the server said: " + strings.Join(a.Notices, "; ") + ")"
	}
	if a.ProjectedSeconds <= a.BudgetSeconds {
		r.index = "hnsw"
		r.res.Index.Note = what + fmt.Sprintf(", within the %s budget per build: HNSW used", r.o.HNSWBudget)
	} else {
		r.index = "ivfflat"
		r.res.Index.Note = what + fmt.Sprintf(", over the %s budget per build (each table is indexed once, and VACUUM FULL, native or in amnesia's full reclaim, "+
			"rebuilds the index once per subject): IVFFlat (lists=%d, vector_l2_ops) used for every table", r.o.HNSWBudget, r.o.Lists)
	}
	r.logf("index: %s", r.res.Index.Note)
	return nil
}
