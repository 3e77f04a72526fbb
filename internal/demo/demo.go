package demo

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/explain"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

// Sizes of the demo corpus.
const (
	People    = 24
	DocsEach  = 10
	Dim       = 64
	ChunkSize = 160
	Seed      = 17
)

// StoreCount is one store's line of the report.
type StoreCount struct {
	Records    int `json:"records"`     // records deleted or erased
	BytesFound int `json:"bytes_found"` // records whose bytes are still in the store's files
	Probed     int `json:"probed"`      // records whose bytes were found before deletion (probe power)
}

// Report is what `amnesia demo --json` prints.
type Report struct {
	Dir          string                `json:"dir"`
	Documents    int                   `json:"documents"`
	Subjects     int                   `json:"subjects"`
	NativeDelete map[string]StoreCount `json:"native_delete"`
	Amnesia      map[string]StoreCount `json:"amnesia"`
	Certificate  string                `json:"certificate"`
	PublicKey    string                `json:"public_key"`
	Verified     bool                  `json:"verified"`
	Complete     bool                  `json:"complete"`
	NeedsHuman   int                   `json:"needs_human"`
}

// Run tells the story in dir (which must be empty or absent), writing
// human-readable progress to w.
func Run(ctx context.Context, dir string, w io.Writer) (*Report, error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("demo: %s is not empty; give an empty or new directory", dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{
		{Name: "docs", Type: sqlitedoc.Type, Path: filepath.Join(abs, "docs.db")},
		{Name: "vectors", Type: sqlitevec.Type, Path: filepath.Join(abs, "vectors.db"), Dimensions: Dim},
	}
	sd, err := state.Init(filepath.Join(abs, "state"), cfg)
	if err != nil {
		return nil, err
	}
	ledger, err := sqliteledger.Open(ctx, sd.LedgerPath())
	if err != nil {
		return nil, err
	}
	defer ledger.Close()
	logf, err := os.OpenFile(sd.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	log := slog.New(slog.NewJSONHandler(logf, nil))

	docs, err := sqlitedoc.Open(ctx, "docs", cfg.Stores[0].Path, true)
	if err != nil {
		return nil, err
	}
	defer docs.Close()
	vecs, err := sqlitevec.Open(ctx, "vectors", cfg.Stores[1].Path, Dim, true)
	if err != nil {
		return nil, err
	}
	defer vecs.Close()

	corpus := Generate(Seed, People, DocsEach)
	fmt.Fprintf(w, "1. Ingest: %d documents of %d people, chunked and embedded, through capture\n", len(corpus.Docs), len(corpus.People))
	chunks, err := ingest(ctx, corpus, capture.New(ledger, sd.Keyer, cfg.Scope), docs, vecs)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "   %d chunks, %d embeddings of %d dimensions; lineage in %s\n", chunks, chunks, Dim, sd.LedgerPath())

	rep := &Report{Dir: abs, Documents: len(corpus.Docs), Subjects: len(corpus.People), PublicKey: sd.PublicKeyPath()}

	// 2. What a native delete leaves behind.
	victim := corpus.People[0]
	fmt.Fprintf(w, "\n2. Native delete of everything of one person (plain DELETE, as an application would)\n")
	rep.NativeDelete, err = nativeDelete(ctx, ledger, sd, victim.ID, docs, vecs)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"docs", "vectors"} {
		c := rep.NativeDelete[name]
		fmt.Fprintf(w, "   %-8s %3d records deleted; bytes of %3d of them still found in the store's files\n", name, c.Records, c.BytesFound)
	}

	// 3. amnesia.
	target := corpus.People[1]
	fmt.Fprintf(w, "\n3. amnesia forget of another person\n")
	k, err := sd.Keyer.Key(cfg.Scope, target.ID)
	if err != nil {
		return nil, err
	}
	v, err := ledger.View(ctx, cfg.Scope, k)
	if err != nil {
		return nil, err
	}
	t, err := lineage.BuildTrace(v)
	if err != nil {
		return nil, err
	}
	res, err := saga.Run(ctx, &saga.Erasure{
		Dir: sd, Ledger: ledger, Stores: map[string]store.Store{"docs": docs, "vectors": vecs},
		Trace: t, Reason: "DEMO-DSR-0001", Log: log, Progress: w,
	})
	if err != nil {
		return nil, err
	}
	p := res.Statement.Predicate
	rep.Amnesia = map[string]StoreCount{}
	for _, a := range p.Artifacts {
		if a.Outcome == certificate.NeedsHuman {
			rep.NeedsHuman++
			continue
		}
		c := rep.Amnesia[a.Store]
		c.Records++
		if m := a.Measurement; m != nil && m.Physical != nil {
			if m.Physical.FoundAfter > 0 {
				c.BytesFound++
			}
			if m.Physical.FoundBefore > 0 {
				c.Probed++
			}
		}
		rep.Amnesia[a.Store] = c
	}
	printTable(w, p)
	explain.Write(w, p, "   ", 100)
	rep.Certificate, rep.Complete = res.CertificatePath, p.Complete

	// 4. Offline verification, from the files alone.
	fmt.Fprintf(w, "\n4. Offline verification with only the certificate and the public key\n")
	rep.Verified, err = verifyFiles(ctx, rep.Certificate, rep.PublicKey)
	if err != nil {
		fmt.Fprintf(w, "   INVALID: %v\n", err)
	} else {
		fmt.Fprintf(w, "   valid: signed by %s\n", p.KeyID)
	}
	fmt.Fprintf(w, "\n   certificate: %s\n   public key:  %s\n   check it yourself: amnesia verify %s --public-key %s\n",
		rep.Certificate, rep.PublicKey, rep.Certificate, rep.PublicKey)
	return rep, nil
}

func ingest(ctx context.Context, c *Corpus, rec *capture.Recorder, ds *sqlitedoc.Store, vs *sqlitevec.Store) (int, error) {
	docs, vecs := rec.Docs(ds), rec.Vectors(vs)
	n := 0
	for _, d := range c.Docs {
		var mentions []string
		for _, m := range d.Mentions {
			mentions = append(mentions, c.People[m].ID)
		}
		if err := docs.Put(ctx, capture.Doc{ID: d.ID, Kind: sqlitedoc.KindDocument, Subject: c.People[d.Owner].ID, Text: d.Text, Mentions: mentions}); err != nil {
			return 0, err
		}
		for i, text := range Chunk(d.Text, ChunkSize) {
			id := fmt.Sprintf("%s#%d", d.ID, i)
			if err := docs.Put(ctx, capture.Doc{ID: id, Kind: sqlitedoc.KindChunk, Parent: d.ID, Text: text, Mentions: mentions}); err != nil {
				return 0, err
			}
			if err := vecs.Put(ctx, capture.Vector{ID: id, Embedding: Embed(text, Dim)}); err != nil {
				return 0, err
			}
			n++
		}
	}
	return n, nil
}

// nativeDelete deletes one person's records the way an application would,
// then measures with amnesia's probes what is left.
func nativeDelete(ctx context.Context, l lineage.Ledger, sd *state.Dir, raw string, ds *sqlitedoc.Store, vs *sqlitevec.Store) (map[string]StoreCount, error) {
	k, err := sd.Keyer.Key(sd.Config.Scope, raw)
	if err != nil {
		return nil, err
	}
	v, err := l.View(ctx, sd.Config.Scope, k)
	if err != nil {
		return nil, err
	}
	t, err := lineage.BuildTrace(v)
	if err != nil {
		return nil, err
	}
	out := map[string]StoreCount{}
	for _, p := range t.Plan {
		var s interface {
			store.EvidenceReader
			store.PhysicalProber
		}
		var path, table string
		switch p.Store {
		case "docs":
			s, path, table = ds, ds.Path(), "documents"
		case "vectors":
			s, path, table = vs, vs.Path(), "vectors"
		}
		ev, err := s.ReadEvidence(ctx, p.Delete)
		if err != nil {
			return nil, err
		}
		before, err := s.ProbePhysical(ctx, store.NewNeedleSet(ev))
		if err != nil {
			return nil, err
		}
		if err := plainDelete(ctx, path, table, p.Delete); err != nil {
			return nil, err
		}
		after, err := s.ProbePhysical(ctx, store.NewNeedleSet(ev))
		if err != nil {
			return nil, err
		}
		out[p.Store] = StoreCount{Records: len(p.Delete), BytesFound: after.FoundKeys(), Probed: before.FoundKeys()}
	}
	return out, nil
}

// plainDelete is an application's DELETE on its own connection: default
// settings (secure_delete off), no overwrite, no reclaim.
func plainDelete(ctx context.Context, path, table string, keys []string) error {
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		return err
	}
	defer db.Close()
	for _, k := range keys {
		if _, err := db.ExecContext(ctx, "DELETE FROM "+table+" WHERE id = ?", k); err != nil {
			return fmt.Errorf("native delete: %w", err)
		}
	}
	return nil
}

func verifyFiles(ctx context.Context, certPath, pubPath string) (bool, error) {
	pemBytes, err := os.ReadFile(pubPath)
	if err != nil {
		return false, err
	}
	pub, err := certificate.ParsePublicKeyPEM(pemBytes)
	if err != nil {
		return false, err
	}
	env, err := os.ReadFile(certPath)
	if err != nil {
		return false, err
	}
	if _, err := certificate.VerifyBundle(ctx, env, certificate.VerifyOptions{Keys: []certificate.TrustedKey{{Public: pub}}}); err != nil {
		return false, err
	}
	return true, nil
}

func printTable(w io.Writer, p certificate.Predicate) {
	type row struct{ store, kind, outcome string }
	counts := map[row]int{}
	for _, a := range p.Artifacts {
		o := a.Outcome
		if a.Level != "" {
			o += "(" + a.Level + ")"
		}
		counts[row{a.Store, a.Kind, o}]++
	}
	rows := make([]row, 0, len(counts))
	for r := range counts {
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool {
		return fmt.Sprint(rows[i]) < fmt.Sprint(rows[j])
	})
	fmt.Fprintf(w, "\n   %-9s %-10s %-20s %s\n", "STORE", "KIND", "OUTCOME", "ARTIFACTS")
	for _, r := range rows {
		fmt.Fprintf(w, "   %-9s %-10s %-20s %d\n", r.store, r.kind, r.outcome, counts[r])
	}
	for _, s := range p.DeclaredScope {
		fmt.Fprintf(w, "   store %-8s residue %-10s %s\n", s.Name, s.Residue, s.Evidence)
	}
}
