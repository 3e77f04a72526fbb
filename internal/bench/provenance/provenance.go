// Package provenance records which code and which machine a benchmark
// measured, and tells later whether that code has changed since.
//
// Every results file under bench/results/ embeds a Provenance. Capture runs
// when a benchmark starts; Check runs when `amnesia-bench report`
// regenerates RESULTS.md and the README table, and decides whether a row is
// stale: measured on code that is no longer the code at HEAD.
package provenance

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// Provenance is what a results file records about the measured code and the
// machine. Every field is optional when read back: files written before a
// field existed still load, and report treats what they lack as unknown.
type Provenance struct {
	// Commit is the full hash of HEAD when the run started, with "+dirty"
	// appended when the measured paths had uncommitted changes (tracked or
	// untracked, not ignored). Empty or "unknown": not recorded.
	Commit string `json:"commit,omitempty"`
	// MeasuredPaths are the git pathspecs of the code the benchmark measures.
	MeasuredPaths []string `json:"measured_paths,omitempty"`
	// MeasuredTree is "sha256:" and the hash of `git ls-files -s` over the
	// measured paths as they were in the working tree when the run started
	// (mode, blob hash and path of every file). It tells which code a
	// "+dirty" run measured.
	MeasuredTree string `json:"measured_tree,omitempty"`
	// Machine is a one-line summary ("linux/amd64, 2 CPUs, go1.26.8"), as
	// files have always had it; the fields below split it up.
	Machine   string `json:"machine"`
	GoVersion string `json:"go_version,omitempty"`
	GOOS      string `json:"goos,omitempty"`
	GOARCH    string `json:"goarch,omitempty"`
	CPUs      int    `json:"cpus,omitempty"`
	CPU       string `json:"cpu,omitempty"` // model name from /proc/cpuinfo
	// Date is the UTC day the run started (YYYY-MM-DD); MeasuredAt the instant.
	Date       string `json:"date"`
	MeasuredAt string `json:"measured_at,omitempty"`
	// LoadAvg is /proc/loadavg's 1-, 5- and 15-minute load averages when
	// the run started: whether the machine was quiet.
	LoadAvg string `json:"load_avg,omitempty"`
	// ServerSettings are the settings of a database server the run
	// measured that change its timings (PostgreSQL: version, fsync,
	// synchronous_commit, shared_buffers, maintenance_work_mem, …), as the
	// server reported them; nil when the run used no server or predates the
	// field. Set by the benchmark (PostgresSettings), not by Capture.
	ServerSettings map[string]string `json:"server_settings,omitempty"`
	// BuildTags are the build tags of the binary that measured ("faiss",
	// "sqlite_fts5"), "" when none or not known.
	BuildTags string `json:"build_tags,omitempty"`
}

// erasureCode is every package an erasure benchmark runs: the stores and
// their probes, the saga, the ledgers, capture, the erasure and state
// packages the saga runs on, what an erasure signs and logs with
// (certificate/, transparency/, timestamp/) and every other package of this
// module the benchmarks import (TestPathsCoverWhatRuns checks), the
// benchmark's own measuring code, and the module's dependency versions.
var erasureCode = []string{
	"store/", "internal/saga/", "internal/erasure/", "internal/state/", "lineage/", "capture/", "internal/bench/", "go.mod",
	"certificate/", "transparency/", "timestamp/", "internal/atomicfile/", "internal/secrets/", "subject/", "shred/",
	"model/", "internal/explain/", "internal/demo/", "internal/worker/", "internal/queuestatus/",
}

// measuresNothing is what lies under erasureCode and measures nothing: test
// files and the report's own code.
var measuresNothing = []string{
	":(exclude,glob)**/*_test.go",
	":(exclude)internal/bench/report*.go",
	":(exclude)internal/bench/peers*.go",
	":(exclude)internal/bench/provenance/",
}

// notScale leaves out the scale benchmark's driver, which only the scale
// command runs.
const notScale = ":(exclude)internal/bench/scale*.go"

// ResiduePaths is the code the residue, window and pgvector benchmarks
// measure: erasureCode, less what measures nothing and the scale driver.
var ResiduePaths = join(erasureCode, measuresNothing, []string{notScale})

// ScalePaths is what the scale benchmark measures: the residue
// benchmark's paths and its own driver.
var ScalePaths = join(erasureCode, measuresNothing)

// TracePaths is the code the trace benchmark measures: the ledgers it grows
// and reads (lineage/ and the packages lineage's ledgers import, which
// TestPathsCoverWhatRuns checks), the benchmark's own code and the
// module's dependency versions. The stores and the saga are not on its path.
var TracePaths = []string{
	"lineage/", "subject/", "shred/", "transparency/", "internal/atomicfile/", "go.mod",
	"internal/bench/perf.go", "internal/bench/perf_keep.go", "internal/bench/stats.go", "internal/bench/dropcache_linux.go", "internal/bench/dropcache_other.go",
	":(exclude,glob)**/*_test.go",
}

// ServePaths is what the serve-capture and workers benchmarks measure: the
// residue benchmark's paths, and the server and the service behind it.
var ServePaths = join(erasureCode, []string{"internal/server/", "internal/service/", "internal/comeback/"}, measuresNothing, []string{notScale})

// adapterDirs are the directories of the store adapters, and of the
// packages under store/internal that only some adapters import.
var adapterDirs = []string{
	"store/chroma/", "store/chromem/", "store/faiss/", "store/file/", "store/pgdoc/", "store/pgvector/",
	"store/pinecone/", "store/redis/", "store/sqlitedoc/", "store/sqlitevec/", "store/weaviate/",
	"store/internal/pg/", "store/internal/sqlitex/",
}

// StoreDirs names, for each store a benchmark runs (see ForStores), the
// directories of adapterDirs that running it takes: its adapter and what
// the adapter imports (TestStoreDirsCoverWhatRuns checks both, and that
// no package but the benchmarks' own dispatch imports an adapter).
var StoreDirs = map[string][]string{
	"sqlite-doc":   {"store/sqlitedoc/", "store/internal/sqlitex/"},
	"sqlite-vec":   {"store/sqlitevec/", "store/internal/sqlitex/"},
	"postgres":     {"store/pgdoc/", "store/internal/pg/"},
	"pgvector":     {"store/pgvector/", "store/internal/pg/"},
	"chromem":      {"store/chromem/"},
	"chromem-gzip": {"store/chromem/"},
	"file-jsonl":   {"store/file/"},
	"faiss-flat":   {"store/faiss/"},
	"faiss-hnsw":   {"store/faiss/"},
	"weaviate":     {"store/weaviate/"},
	"chroma":       {"store/chroma/"},
	"redis":        {"store/redis/"},
}

// ForStores narrows measured paths to what a benchmark that runs the
// stores sts (none at all when sts is empty) runs: the other adapters'
// directories are excluded, so that a change to one adapter makes only the
// results of the benchmarks that run its store stale. Paths that do not
// hold "store/" whole, and a list with a store StoreDirs does not name, are
// returned unchanged.
func ForStores(paths []string, sts ...string) []string {
	if !slices.Contains(paths, "store/") {
		return paths
	}
	var own []string
	for _, st := range sts {
		dirs, ok := StoreDirs[st]
		if !ok {
			return paths
		}
		own = append(own, dirs...)
	}
	out := slices.Clone(paths)
	for _, d := range adapterDirs {
		if !slices.Contains(own, d) {
			out = append(out, ":(exclude)"+d)
		}
	}
	return out
}

// CheckStores is Check for a results file whose benchmark ran the stores
// sts and no other adapter (none when sts is empty): a file measured on a
// clean commit is compared with HEAD on ForStores's paths. A file measured
// with uncommitted changes keeps its recorded paths, over which its
// measured tree was hashed.
func CheckStores(root string, p Provenance, defaults []string, sts ...string) Freshness {
	if strings.HasSuffix(p.Commit, "+dirty") || strings.HasSuffix(p.Commit, "-dirty") {
		return Check(root, p, defaults)
	}
	paths := p.MeasuredPaths
	if len(paths) == 0 {
		paths = defaults
	}
	p.MeasuredPaths = ForStores(paths, sts...)
	return Check(root, p, defaults)
}

// join concatenates lists of pathspecs into a new slice.
func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// Capture records the code under paths and this machine. It never fails:
// what it cannot find out (no git, not a repository) it leaves "unknown".
func Capture(paths []string) Provenance {
	now := time.Now().UTC()
	p := Provenance{
		MeasuredPaths: append([]string{}, paths...),
		GoVersion:     runtime.Version(),
		GOOS:          runtime.GOOS,
		GOARCH:        runtime.GOARCH,
		CPUs:          runtime.NumCPU(),
		CPU:           cpuModel(),
		Date:          now.Format("2006-01-02"),
		MeasuredAt:    now.Format(time.RFC3339),
		LoadAvg:       loadAvg(),
	}
	p.Machine = fmt.Sprintf("%s/%s, %d CPUs, %s", p.GOOS, p.GOARCH, p.CPUs, p.GoVersion)
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-tags" {
				p.BuildTags = s.Value
			}
		}
	}
	p.Commit = "unknown"
	if root, err := Toplevel("."); err == nil {
		if head, err := git(root, nil, "rev-parse", "--verify", "HEAD^{commit}"); err == nil {
			p.Commit = head
			if st, err := git(root, nil, append([]string{"status", "--porcelain", "--"}, paths...)...); err == nil && st != "" {
				p.Commit += "+dirty"
			}
			if t, err := WorkTree(root, paths); err == nil {
				p.MeasuredTree = t
			}
		}
	} else if bi, ok := debug.ReadBuildInfo(); ok {
		// A built binary run outside its checkout: the build's stamp.
		var rev string
		var modified bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" {
			p.Commit = rev
			if modified {
				p.Commit += "+dirty"
			}
		}
	}
	return p
}

// Toplevel is the root of the git working tree that holds dir.
func Toplevel(dir string) (string, error) {
	return git(dir, nil, "rev-parse", "--show-toplevel")
}

// WorkTree hashes the measured paths as they are in root's working tree.
// It stages them into a copy of the index, so the repository's own index is
// left as it was.
func WorkTree(root string, paths []string) (string, error) {
	idx, err := git(root, nil, "rev-parse", "--git-path", "index")
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(idx) {
		idx = filepath.Join(root, idx)
	}
	tmp, done, err := scratchIndex()
	if err != nil {
		return "", err
	}
	defer done()
	env := []string{"GIT_INDEX_FILE=" + tmp}
	if err := copyFile(idx, tmp); err != nil {
		// No index yet: start from HEAD.
		if _, err := git(root, env, "read-tree", "HEAD"); err != nil {
			return "", err
		}
	}
	// git add refuses a pathspec that matches nothing: pass only the
	// paths that exist on disk or in the index (and every exclusion).
	var add []string
	for _, p := range paths {
		if strings.HasPrefix(p, ":") {
			add = append(add, p)
			continue
		}
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			add = append(add, p)
		} else if _, err := git(root, env, "ls-files", "--error-unmatch", "--", p); err == nil {
			add = append(add, p)
		}
	}
	if len(add) > 0 && !strings.HasPrefix(add[0], ":") {
		if _, err := git(root, env, append([]string{"add", "-A", "--"}, add...)...); err != nil {
			return "", err
		}
	}
	return listHash(root, env, paths)
}

// CommitTree hashes the measured paths as they are in commit rev, the same
// way WorkTree does, so the two compare.
func CommitTree(root, rev string, paths []string) (string, error) {
	tmp, done, err := scratchIndex()
	if err != nil {
		return "", err
	}
	defer done()
	env := []string{"GIT_INDEX_FILE=" + tmp}
	if _, err := git(root, env, "read-tree", rev); err != nil {
		return "", err
	}
	return listHash(root, env, paths)
}

func listHash(root string, env, paths []string) (string, error) {
	ls, err := git(root, env, append([]string{"ls-files", "-s", "--"}, paths...)...)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(ls))
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Freshness is report's verdict on one results file.
type Freshness struct {
	Commit string // short hash as recorded ("abc1234" or "abc1234+dirty"), or "" when unknown
	Stale  bool
	Why    string // why it is stale; empty when current
}

// Label is how a row names its code: "7b3e49d" or "commit unknown".
func (f Freshness) Label() string {
	if f.Commit == "" {
		return "commit unknown"
	}
	return f.Commit
}

// ErrNoGit: the git command cannot be run.
var ErrNoGit = errors.New("git is not available")

// Check decides whether the code p measured is still the code at HEAD of
// the repository at root. paths replace p's measured paths when p recorded
// none (files written before they were recorded).
//
//   - no commit recorded: stale, "commit unknown";
//   - git not available, or root not a repository: stale, nothing can be checked;
//   - the commit is not in this repository: stale;
//   - a clean commit: stale when `git diff --quiet <commit> HEAD -- <paths>` reports a difference;
//   - a "+dirty" commit (or an old file's "-dirty"): current only when the recorded measured tree equals HEAD's.
func Check(root string, p Provenance, defaults []string) Freshness {
	paths := p.MeasuredPaths
	if len(paths) == 0 {
		paths = defaults
	}
	commit, dirty := strings.CutSuffix(p.Commit, "+dirty")
	if !dirty {
		// Files written before trace and capture recorded this
		// provenance: a short hash with "-dirty".
		commit, dirty = strings.CutSuffix(commit, "-dirty")
	}
	if commit == "" || commit == "unknown" {
		return Freshness{Stale: true, Why: "commit unknown: the code it measured cannot be compared with today's"}
	}
	f := Freshness{Commit: short(commit)}
	if dirty {
		f.Commit += "+dirty"
	}
	if _, err := exec.LookPath("git"); err != nil {
		f.Stale, f.Why = true, "git is not available here, so whether the measured code changed since cannot be checked"
		return f
	}
	if _, err := git(root, nil, "rev-parse", "--verify", "HEAD^{commit}"); err != nil {
		f.Stale, f.Why = true, "no git repository with a HEAD here, so whether the measured code changed since cannot be checked"
		return f
	}
	if _, err := git(root, nil, "cat-file", "-e", commit+"^{commit}"); err != nil {
		f.Stale, f.Why = true, "its commit is not in this repository, so whether the measured code changed since cannot be checked"
		return f
	}
	if dirty {
		if p.MeasuredTree == "" {
			f.Stale, f.Why = true, "measured with uncommitted changes that were not recorded, so what it measured is unknown"
			return f
		}
		head, err := CommitTree(root, "HEAD", paths)
		if err != nil || head != p.MeasuredTree {
			f.Stale, f.Why = true, "measured with uncommitted changes, and the measured code at HEAD differs from what was measured"
		}
		return f
	}
	out, err := git(root, nil, append([]string{"diff", "--name-only", commit, "HEAD", "--"}, paths...)...)
	switch {
	case err != nil:
		f.Stale, f.Why = true, "git could not compare the measured code with HEAD"
	case out != "":
		f.Stale, f.Why = true, "the measured code changed since ("+changedFiles(strings.Split(out, "\n"))+")"
	}
	return f
}

// changedFiles names up to six changed files, and how many more.
func changedFiles(files []string) string {
	const most = 6
	if len(files) <= most {
		return strings.Join(files, ", ")
	}
	return fmt.Sprintf("%s and %d more files", strings.Join(files[:most], ", "), len(files)-most)
}

func short(h string) string {
	if len(h) > 7 {
		return h[:7]
	}
	return h
}

func git(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", ErrNoGit
		}
		return "", fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(filepath.Clean(to))
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// loadAvg returns the three load averages of /proc/loadavg, or "".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// Describe is the machine in one line, with the CPU model when known, the
// load when the run started and the settings of the server it measured.
func (p Provenance) Describe() string {
	m := p.Machine
	if m == "" {
		m = "machine unknown"
	}
	if p.CPU != "" && !strings.Contains(m, p.CPU) {
		m += ", " + p.CPU
	}
	if p.LoadAvg != "" {
		m += ", load average " + strings.ReplaceAll(p.LoadAvg, " ", "/") + " at start"
	}
	if p.BuildTags != "" {
		m += ", built with -tags " + p.BuildTags
	}
	if s := p.ServerSettings; len(s) > 0 {
		m += "; " + s["server"]
		for _, k := range PostgresSettingNames {
			if v, ok := s[k]; ok {
				m += ", " + k + "=" + v
			}
		}
	}
	return m
}

// scratchIndex returns the path of a git index file of its own, in a new
// temporary directory that done removes: git reads and writes it, so the
// repository's own index is never touched. (A scratch file, not a file
// amnesia publishes: internal/atomicfile is for those.)
func scratchIndex() (path string, done func(), err error) {
	dir, err := os.MkdirTemp("", "amnesia-bench-index-")
	if err != nil {
		return "", nil, err
	}
	return filepath.Join(dir, "index"), func() { os.RemoveAll(dir) }, nil
}
