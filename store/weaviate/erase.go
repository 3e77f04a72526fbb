package weaviate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/store"
)

// StatePending is Reclaim's residue state while a deleted record's bytes
// are still in the class's files: Weaviate rewrites them only when it
// flushes a memtable and compacts segments, on its own schedule.
const StatePending = "PENDING-weaviate-compaction"

// DefaultPoll is how long one Reclaim call polls the class's files for
// the server's flush and compaction before it answers PENDING (the
// erasure calls it again for up to its reclaim wait).
const DefaultPoll = 10 * time.Second

const pollEvery = 500 * time.Millisecond

// StateDeferred is Reclaim's state in delete-only mode.
const StateDeferred = "PENDING-reclaim-deferred"

// StateNotMeasured is Reclaim's state without data_dir: the store's files
// could not be read, so what they still hold was not measured.
const StateNotMeasured = "UNVERIFIED-physical-not-measured"

// StateCompressed is Reclaim's state when the class keeps compressed
// vector codes (pq, bq, sq, rq), which no needle can find.
const StateCompressed = "UNVERIFIED-compressed-vectors"

// TextBytes is how the object store writes a text property's value: the
// body of the JSON string encoding/json makes of it (the server marshals
// an object's properties with encoding/json: HTML characters escaped as
// \u003c, non-ASCII kept as UTF-8).
func TextBytes(v string) []byte {
	b, _ := json.Marshal(v)
	return b[1 : len(b)-1]
}

// vectorBytes is how the object store writes a vector: float32
// little-endian, contiguous.
func vectorBytes(v []float32) []byte { return store.Float32LE(v) }

// recordFields returns the byte strings of an object that needles are cut
// from: each content property's text (each element of a text[]), and the
// vector.
func recordFields(o *object, content []string) [][]byte {
	var out [][]byte
	for _, p := range content {
		switch v := o.Properties[p].(type) {
		case string:
			out = append(out, TextBytes(v))
		case []any:
			for _, e := range v {
				if s, ok := e.(string); ok {
					out = append(out, TextBytes(s))
				}
			}
		}
	}
	if len(o.Vector) > 0 {
		out = append(out, vectorBytes(o.Vector))
	}
	return out
}

// ReadEvidence implements store.EvidenceReader: windows of each content
// property (as the object store writes it) and of the vector (float32
// LE), the subject tag, the vector. The subject tag is not cut into
// needles: it is no content of the record, and the subject property's
// inverted index keeps it as a key until Weaviate compacts that bucket,
// which in a quiet class may not happen for a long time (Reclaim reports
// it instead, see tagNote). Windows another live object of the
// class holds are counted as Shared (store.DropShared). When the class
// compresses its vectors, the compressed code (at least one byte per
// dimension) is counted in RecordBytes and not covered: no window can find
// it, so the certificate does not claim the physical level. The evidence
// is also kept in this process's memory, for Reclaim's wait.
func (s *Store) ReadEvidence(ctx context.Context, keys []string) (map[string]*store.Evidence, error) {
	cl, err := s.schema(ctx)
	if err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	if cl == nil {
		return nil, fmt.Errorf("read evidence: class %s is gone: %w", s.class, store.ErrUnavailable)
	}
	content := s.contentProps(cl)
	comp := cl.compression()
	batch := map[string]bool{}
	out := map[string]*store.Evidence{}
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read evidence: %w", err)
		}
		batch[KeyUUID(k)] = true
		o, err := s.getObject(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("read evidence: %w", err)
		}
		if o == nil {
			continue
		}
		e := &store.Evidence{Key: k, Vector: o.Vector}
		for _, f := range recordFields(o, content) {
			e.AddWindows(f)
		}
		if tag, _ := o.Properties[s.subject].(string); tag != "" {
			e.Filter = map[string]string{s.subject: tag}
		}
		if comp != "" {
			e.RecordBytes += len(o.Vector)
		}
		out[k] = e
	}
	if len(out) == 0 {
		return out, nil
	}
	others := func(fn func(string, []byte) error) error {
		return s.each(ctx, func(o *object) error {
			if batch[o.ID] {
				return nil
			}
			for _, p := range content {
				// Content windows name their holder by object id: it
				// may be a copy.
				for _, f := range recordFields(&object{Properties: map[string]any{p: o.Properties[p]}}, []string{p}) {
					holder := o.ID
					if k, _ := o.Properties[KeyProperty].(string); k != "" {
						holder = k
					}
					if err := fn(holder, f); err != nil {
						return err
					}
				}
			}
			if len(o.Vector) > 0 {
				return fn("", vectorBytes(o.Vector))
			}
			return nil
		})
	}
	if err := store.DropShared(ctx, out, others); err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	s.mu.Lock()
	for k, e := range out {
		s.watch[k] = e
	}
	s.mu.Unlock()
	return out, nil
}

// WatchDeleted implements store.ReclaimWatcher: Reclaim waits for the
// bytes of these deleted records too (a resumed erasure's evidence, read
// by another process).
func (s *Store) WatchDeleted(ev map[string]*store.Evidence) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range ev {
		s.watch[k] = e
		s.deleted[KeyUUID(k)] = true
	}
}

// each calls fn for every object of the class, with its vector, paging
// with the REST list's cursor.
func (s *Store) each(ctx context.Context, fn func(*object) error) error {
	after := ""
	for {
		q := url.Values{"class": {s.class}, "limit": {"200"}, "include": {"vector"}}
		if after != "" {
			q.Set("after", after)
		}
		var res struct {
			Objects []object `json:"objects"`
		}
		if _, err := s.call(ctx, http.MethodGet, "/v1/objects?"+q.Encode(), nil, &res, true); err != nil {
			return fmt.Errorf("list objects of class %s: %w", s.class, err)
		}
		for i := range res.Objects {
			if err := fn(&res.Objects[i]); err != nil {
				return err
			}
		}
		if len(res.Objects) < 200 {
			return nil
		}
		after = res.Objects[len(res.Objects)-1].ID
	}
}

// ProbeLogical implements store.Store: a get by id; a where filter on the
// subject property (with the record's tag, and its id, so that a subject
// with many objects is not paged); a nearVector search (k=10) with the
// record's own vector.
func (s *Store) ProbeLogical(ctx context.Context, keys []string, ev map[string]*store.Evidence) ([]store.LogicalResult, error) {
	out := make([]store.LogicalResult, 0, len(keys))
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
		res := store.LogicalResult{Key: k, Methods: []string{"by-id"}}
		o, err := s.getObject(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
		res.ByID = o != nil
		e := ev[k]
		if e != nil && e.Filter[s.subject] != "" {
			res.Methods = append(res.Methods, "by-filter:"+s.subject)
			if res.ByFilter, err = s.hasSubjectAndID(ctx, e.Filter[s.subject], k); err != nil {
				return nil, fmt.Errorf("probe: %w", err)
			}
		}
		if e != nil && len(e.Vector) > 0 {
			res.Methods = append(res.Methods, fmt.Sprintf("by-similarity:nearVector,k=%d", SimilarityK))
			ns, err := s.Search(ctx, e.Vector, SimilarityK)
			if err != nil {
				return nil, fmt.Errorf("probe: %w", err)
			}
			id := KeyUUID(k)
			for _, n := range ns {
				res.BySimilarity = res.BySimilarity || n.UUID == id
			}
		}
		out = append(out, res)
	}
	return out, nil
}

// ClassDir is the directory the server keeps the class's shards in:
// PERSISTENCE_DATA_PATH/<class name in lower case>.
func (s *Store) ClassDir() string {
	if s.dataDir == "" {
		return ""
	}
	return filepath.Join(s.dataDir, strings.ToLower(s.class))
}

// files lists the regular files under the class's directory, sorted.
func (s *Store) files() ([]string, error) {
	dir := s.ClassDir()
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("class directory %s: %v (is data_dir the server's PERSISTENCE_DATA_PATH, readable here?)", dir, err)
	}
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // compaction removed it meanwhile
			}
			return err
		}
		if d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// FileKind says what a file under the class directory is, and how far the
// byte scan can see into it.
func FileKind(path string) string {
	p := filepath.ToSlash(path)
	base := filepath.Base(p)
	switch {
	case strings.Contains(p, "/lsm/objects/") && strings.HasSuffix(base, ".wal"):
		return "write-ahead log of the objects bucket (objects as written: full scan)"
	case strings.Contains(p, "/lsm/objects/") && strings.HasSuffix(base, ".db"):
		return "LSM segment of the objects bucket (objects as written: full scan)"
	case strings.Contains(p, "/lsm/objects/"):
		return "index file of the objects bucket (keys and bloom filters, no object bytes)"
	case strings.Contains(p, "/lsm/vectors_compressed"):
		return "compressed vector codes (no needle can find a code: not measured)"
	case strings.Contains(p, "/lsm/property_"):
		return "inverted index (keeps a text's words one token at a time, lower-cased, and the subject tag as a key: scanned for the same windows, which find no single word)"
	case strings.Contains(p, ".hnsw.commitlog.d/"):
		return "HNSW commit log (graph links and tombstones; vectors only when compressed)"
	default:
		return "other file of the class (scanned raw)"
	}
}

// ProbePhysical implements store.PhysicalProber: every file under the
// class's directory (all shards: LSM segments, WALs, HNSW commit logs,
// index and metadata files), raw.
func (s *Store) ProbePhysical(ctx context.Context, set *store.NeedleSet) (store.ScanReport, error) {
	if s.dataDir == "" {
		return store.ScanReport{}, errors.New("physical probe: data_dir is not set (the server's PERSISTENCE_DATA_PATH)")
	}
	sc := store.NewScanner(set, "every file under the Weaviate class directory (LSM segments and WALs of every bucket, HNSW commit logs), raw, listed again when a listed file went before it was read; "+
		"the objects bucket holds the record as written, the inverted-index buckets hold its words one token at a time, which windows do not find")
	// Compaction and flushes write a record's bytes into a new file and
	// remove the old one: when a listed file went before it was read, the
	// class directory is listed again (store.RescanGone). A file opened is
	// read whole; files that only appear hold newer writes.
	if _, err := store.RescanGone(ctx, s.files, func(f string) (bool, string, error) { return sc.ScanFileGone(ctx, f) }); err != nil {
		return store.ScanReport{}, fmt.Errorf("physical probe: %w", err)
	}
	return sc.Report(), nil
}

// holding returns the files (relative to the class directory) that hold
// at least one needle of set, with how many.
func (s *Store) holding(ctx context.Context, set *store.NeedleSet) (map[string]int, int, error) {
	files, err := s.files()
	if err != nil {
		return nil, 0, err
	}
	out := map[string]int{}
	for _, f := range files {
		rep, err := store.ScanFiles(ctx, set, "", f)
		if err != nil {
			return nil, 0, err
		}
		if rep.NeedlesFound > 0 {
			rel, _ := filepath.Rel(s.ClassDir(), f)
			out[rel] = rep.NeedlesFound
		}
	}
	return out, len(files), nil
}

// Reclaim implements store.Reclaimer. Weaviate has no compaction API, so
// Reclaim forces nothing: it scans the class's files for the needles of
// the records this process deleted (their evidence is held in memory since
// ReadEvidence) and reports StatePending, naming the files that still
// hold them and the server settings it can see are not in effect, until
// none is left. The erasure calls it again, for up to its reclaim wait,
// while it says PENDING; then the erasure pauses and can be resumed.
func (s *Store) Reclaim(ctx context.Context) (store.ReclaimReport, error) {
	if err := ctx.Err(); err != nil {
		return store.ReclaimReport{}, err
	}
	method := "Weaviate has no compaction API: waited for the server's own memtable flush and segment compaction, scanning the class's files"
	if s.deleteOnly {
		return store.ReclaimReport{Method: "none (reclaim: delete-only)", State: StateDeferred,
			Evidence: "configured delete-only: deleted objects stay in the class's WALs and segments until the server flushes and compacts them"}, nil
	}
	cl, err := s.schema(ctx)
	if err != nil {
		return store.ReclaimReport{}, fmt.Errorf("reclaim: %w", err)
	}
	if s.dataDir == "" {
		return store.ReclaimReport{Method: "none: Weaviate has no compaction API, and data_dir is not set, so its own compaction cannot be waited for",
			State: StateNotMeasured,
			Evidence: "data_dir is not set: Weaviate keeps a deleted object's bytes in the class's write-ahead logs and segments until its own memtable flush and compaction, " +
				"and amnesia could neither wait for that nor scan the files for them; only the logical probes were made"}, nil
	}
	s.mu.Lock()
	watch := map[string]*store.Evidence{}
	for k, e := range s.watch {
		if s.deleted[KeyUUID(k)] {
			watch[k] = e
		}
	}
	if s.started.IsZero() {
		s.started = time.Now()
	}
	s.mu.Unlock()
	notes := s.settingNotes(cl)
	if len(watch) == 0 {
		return store.ReclaimReport{Method: method, Steps: []string{"nothing to wait for in this process"},
			Evidence: "no record deleted by this process has its evidence in this process's memory (a resumed erasure): the probe's byte scan measures what remains" + joinNotes(notes)}, nil
	}
	set := store.NewNeedleSet(watch)
	var held map[string]int
	var nfiles int
	for begin := time.Now(); ; {
		if held, nfiles, err = s.holding(ctx, set); err != nil {
			return store.ReclaimReport{}, fmt.Errorf("reclaim: %w", err)
		}
		if len(held) == 0 || time.Since(begin) >= s.poll {
			break
		}
		select {
		case <-ctx.Done():
			return store.ReclaimReport{}, fmt.Errorf("reclaim: %w", ctx.Err())
		case <-time.After(pollEvery):
		}
	}
	s.mu.Lock()
	waited := time.Since(s.started).Round(time.Second)
	s.mu.Unlock()
	// The tag note is part of the method: it is the only field of a clean
	// reclaim that reaches the certificate (each artifact's method).
	tag, err := s.tagNote(ctx, watch)
	if err != nil {
		return store.ReclaimReport{}, fmt.Errorf("reclaim: %w", err)
	}
	if tag != "" {
		method += "; " + tag
	}
	step := fmt.Sprintf("scanned %d files under %s for %d needles of %d deleted records after %s", nfiles, s.ClassDir(), set.Len(), len(watch), waited)
	if len(held) > 0 {
		names := make([]string, 0, len(held))
		for f := range held {
			names = append(names, f)
		}
		sort.Strings(names)
		parts := make([]string, 0, len(names))
		for _, f := range names {
			parts = append(parts, fmt.Sprintf("%s (%s: %d needles)", f, FileKind(f), held[f]))
		}
		return store.ReclaimReport{Method: method, Steps: []string{step}, State: StatePending,
			Evidence: fmt.Sprintf("after %s, bytes of deleted records remain in %d of %d files under %s: %s",
				waited, len(held), nfiles, s.ClassDir(), strings.Join(parts, "; ")) + joinNotes(notes)}, nil
	}
	// Clean: forget what was waited for.
	s.mu.Lock()
	for k := range watch {
		delete(s.watch, k)
		delete(s.deleted, KeyUUID(k))
	}
	s.started = time.Time{}
	s.mu.Unlock()
	rep := store.ReclaimReport{Method: method, Steps: []string{step},
		Evidence: fmt.Sprintf("after %s no needle of the %d deleted records is in the %d files under %s", waited, len(watch), nfiles, s.ClassDir()) + joinNotes(notes)}
	if c := cl.compression(); c != "" {
		rep.State, rep.Unseen = StateCompressed, true
		rep.Evidence += fmt.Sprintf("; the class compresses vectors (%s): the compressed codes (bucket vectors_compressed) cannot be searched for, so they are not measured", c)
	}
	return rep, nil
}

func joinNotes(n []string) string {
	if len(n) == 0 {
		return ""
	}
	return "; " + strings.Join(n, "; ")
}

// settingNotes names the server settings under which the wait may not end
// (docs/weaviate.md), as far as they can be seen from here: the class's
// HNSW configuration, and the environment of a weaviate-server process on
// this machine whose PERSISTENCE_DATA_PATH is data_dir.
func (s *Store) settingNotes(cl *classDef) []string {
	var notes []string
	if cl != nil {
		if c := cl.compression(); c != "" {
			notes = append(notes, "the class compresses vectors ("+c+"): compressed codes are not measured")
		}
	}
	env, ok := serverEnv(s.dataDir)
	if !ok {
		return append(notes, "the server's settings could not be read (no weaviate-server process on this machine with PERSISTENCE_DATA_PATH="+s.dataDir+"): whether they let flush and compaction finish is judged only by the files")
	}
	for _, p := range SettingProblems(env) {
		notes = append(notes, "server setting not in effect: "+p)
	}
	return notes
}

// SettingProblems returns, for a Weaviate server's environment, each
// setting under which deleted objects' bytes can stay in the files
// indefinitely (see docs/weaviate.md), with what to set instead.
func SettingProblems(env map[string]string) []string {
	var out []string
	if v, ok := env["PERSISTENCE_MAX_REUSE_WAL_SIZE"]; !ok || strings.TrimSpace(v) != "0" {
		if !ok {
			v = "unset (default 4KiB)"
		}
		out = append(out, "PERSISTENCE_MAX_REUSE_WAL_SIZE is "+v+": a memtable whose WAL is that small is never flushed, and the WAL keeps deleted objects across restarts; set 0")
	}
	flush := 60
	for _, k := range []string{"PERSISTENCE_FLUSH_IDLE_MEMTABLES_AFTER", "PERSISTENCE_MEMTABLES_FLUSH_IDLE_AFTER_SECONDS", "PERSISTENCE_MEMTABLES_FLUSH_DIRTY_AFTER_SECONDS"} {
		if n, err := strconv.Atoi(strings.TrimSpace(env[k])); err == nil && n > 0 {
			flush = n
		}
	}
	if flush > MaxFlushSeconds {
		out = append(out, fmt.Sprintf("memtables are flushed after %d s without writes (PERSISTENCE_MEMTABLES_FLUSH_DIRTY_AFTER_SECONDS): set it to %d or less, or give the erasure a reclaim wait longer than that", flush, MaxFlushSeconds))
	}
	return out
}

// MaxFlushSeconds is the largest memtable flush delay docs/weaviate.md
// recommends.
const MaxFlushSeconds = 10

// serverEnv returns the environment of the weaviate-server process on this
// machine whose PERSISTENCE_DATA_PATH is dataDir, reading only the
// variables named PERSISTENCE_* (others may hold secrets).
func serverEnv(dataDir string) (map[string]string, bool) {
	if dataDir == "" {
		return nil, false
	}
	want := cleanPath(dataDir)
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv0, _, _ := strings.Cut(string(cmd), "\x00")
		if b := filepath.Base(argv0); b != "weaviate-server" && b != "weaviate" {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", p.Name(), "environ"))
		if err != nil {
			continue
		}
		env := map[string]string{}
		for _, kv := range strings.Split(string(raw), "\x00") {
			k, v, ok := strings.Cut(kv, "=")
			if ok && strings.HasPrefix(k, "PERSISTENCE_") {
				env[k] = v
			}
		}
		if cleanPath(env["PERSISTENCE_DATA_PATH"]) == want {
			return env, true
		}
	}
	return nil, false
}

func cleanPath(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return filepath.Clean(p)
}

// tagNote says in how many files of the subject property's inverted index
// the subject tags of the deleted records are still keys (a tag shorter
// than a needle is not looked for), or "". The tag is a keyed digest of
// the subject, not content, and is not a needle (see ReadEvidence): this
// is said, not waited for.
func (s *Store) tagNote(ctx context.Context, watch map[string]*store.Evidence) (string, error) {
	tags := map[string]*store.Evidence{}
	for _, e := range watch {
		if t := e.Filter[s.subject]; len(t) >= store.MinNeedle {
			tags[t] = &store.Evidence{Key: t, Needles: [][]byte{[]byte(t)}}
		}
	}
	if len(tags) == 0 {
		return "", nil
	}
	set := store.NewNeedleSet(tags)
	files, err := s.files()
	if err != nil {
		return "", err
	}
	n := 0
	for _, f := range files {
		if !strings.Contains(filepath.ToSlash(f), "/lsm/property_"+s.subject) {
			continue
		}
		rep, err := store.ScanFiles(ctx, set, "", f)
		if err != nil {
			return "", err
		}
		if rep.NeedlesFound > 0 {
			n++
		}
	}
	if n == 0 {
		return "", nil
	}
	return fmt.Sprintf("the subject tag (a keyed digest, no content) is still a key in %d inverted-index files of property %s until Weaviate compacts that bucket", n, s.subject), nil
}
