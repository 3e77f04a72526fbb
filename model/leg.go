package model

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/atomicfile"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// Leg is the model leg of one erasure: it runs after the erasure deleted
// the subject's rows from the dataset files.
type Leg struct {
	StateDir   string
	ErasureDir string // the erasure's own directory: the leg's journal lives there
	Erasure    string
	Scope      string
	Subject    subject.Key
	Keyer      *subject.Keyer
	// TraceIDs are the artifact ids of the subject's traced rows.
	TraceIDs map[string]bool
	// StorePath returns a dataset store's data file.
	StorePath func(store string) string
	// RowKeys returns the keys of the rows now in a dataset store.
	RowKeys func(ctx context.Context, store string) ([]string, error)
	Now     func() time.Time
	// Progress receives human progress lines; may be nil.
	Progress io.Writer
	// Journal, when set, keeps the leg's journal instead of a file in
	// ErasureDir (the ledger, with a PostgreSQL ledger: internal/saga).
	Journal LegJournal
}

// LegJournal keeps a model leg's journal: the encoded state of model's
// leg, rewritten after each stage. Load returns nil when there is none.
type LegJournal interface {
	Load(ctx context.Context, model string) ([]byte, error)
	Save(ctx context.Context, model string, b []byte) error
}

// Reached returns the configured models the subject's rows reached (a
// recorded training run read one of them), sorted by name.
func (l *Leg) Reached(models []Config) ([]Config, error) {
	snap, err := OpenRegistry(l.StateDir).Load()
	if err != nil {
		return nil, err
	}
	hit := map[string]bool{}
	for _, r := range snap.Reached(l.TraceIDs) {
		hit[r.Model] = true
	}
	var out []Config
	for _, c := range models {
		if hit[c.Name] {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// legState is the leg's journal for one model, rewritten atomically after
// each stage, so that a crash resumes where it stopped.
type legState struct {
	Tainted     bool                   `json:"tainted"`
	ProbeBefore *ProbeResult           `json:"probe_before,omitempty"`
	ProbeDone   bool                   `json:"probe_before_done"`
	Shards      map[string]*shardState `json:"shards"`
	ProbeAfter  *ProbeResult           `json:"probe_after,omitempty"`
	AfterDone   bool                   `json:"probe_after_done"`
}

type shardState struct {
	Started bool   `json:"started"`
	Attempt int    `json:"attempt"`
	Output  string `json:"output"`
	Done    bool   `json:"done"`
	Failed  string `json:"failed,omitempty"`
	Run     string `json:"run,omitempty"`
	Millis  int64  `json:"millis,omitempty"`
}

func (l *Leg) statePath(name string) string {
	return filepath.Join(l.ErasureDir, "model-"+name+".json")
}

func (l *Leg) load(ctx context.Context, name string) (*legState, error) {
	st := &legState{Shards: map[string]*shardState{}}
	var b []byte
	var err error
	if l.Journal != nil {
		b, err = l.Journal.Load(ctx, name)
		if err == nil && b == nil {
			// An erasure begun before the leg kept its journal in the
			// ledger left it in its own file: carry it over.
			b, err = l.adoptFile(ctx, name)
			if err == nil && b == nil {
				return st, nil
			}
		}
	} else {
		b, err = os.ReadFile(l.statePath(name))
		if errors.Is(err, os.ErrNotExist) {
			return st, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("model %s: leg journal: %w", name, err)
	}
	if st.Shards == nil {
		st.Shards = map[string]*shardState{}
	}
	return st, nil
}

// adoptFile reads model name's leg journal file (written when the leg's
// journal was always a file in the erasure's directory) for a Journal that
// holds no entry, copies it into the Journal as its first entry and, once
// that write succeeded, removes the file. It returns nil when there is no
// file.
func (l *Leg) adoptFile(ctx context.Context, name string) ([]byte, error) {
	b, err := os.ReadFile(l.statePath(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("model %s: leg journal file: %w", name, err)
	}
	var st legState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("model %s: leg journal file: %w", name, err)
	}
	c, _ := json.Marshal(&st)
	if err := l.Journal.Save(ctx, name, c); err != nil {
		return nil, fmt.Errorf("model %s: copying the leg journal file into the ledger: %w", name, err)
	}
	if err := os.Remove(l.statePath(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("model %s: leg journal file copied into the ledger: %w", name, err)
	}
	l.progress("  %-28s leg journal file carried into the ledger", "model:"+name)
	return c, nil
}

func (l *Leg) save(ctx context.Context, name string, st *legState) error {
	if l.Journal != nil {
		b, _ := json.Marshal(st)
		return l.Journal.Save(ctx, name, b)
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	if err := os.MkdirAll(l.ErasureDir, 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(l.statePath(name), b, 0o600)
}

func (l *Leg) progress(format string, a ...any) {
	if l.Progress != nil {
		fmt.Fprintf(l.Progress, format+"\n", a...)
	}
}

// Run carries the erasure to model c: taint, probe, retrain the tainted
// shards, switch what is served, probe again, and return the outcome.
// Every stage is journaled; running it again after a crash resumes.
func (l *Leg) Run(ctx context.Context, c Config) (*certificate.ModelOutcome, error) {
	if l.Now == nil {
		l.Now = time.Now
	}
	reg := OpenRegistry(l.StateDir)
	reg.now = l.Now
	snap, err := reg.Load()
	if err != nil {
		return nil, err
	}
	var reached []Reach
	for _, r := range snap.Reached(l.TraceIDs) {
		if r.Model == c.Name {
			reached = append(reached, r)
		}
	}
	if len(reached) == 0 {
		return nil, nil
	}
	st, err := l.load(ctx, c.Name)
	if err != nil {
		return nil, err
	}
	if !st.Tainted {
		for _, r := range reached {
			if _, done := snap.Tainted[r.Run][l.Erasure]; !done {
				if err := reg.Taint(r.Run, l.Erasure, r.Rows); err != nil {
					return nil, err
				}
			}
		}
		st.Tainted = true
		if err := l.save(ctx, c.Name, st); err != nil {
			return nil, err
		}
	}

	canaries, err := l.canaries(c)
	if err != nil {
		return nil, err
	}
	if c.Probe != nil && len(canaries) > 0 && !st.ProbeDone {
		l.progress("  %-28s asking the served model about %d canaries", "model:"+c.Name, len(canaries))
		st.ProbeBefore, err = l.probe(ctx, c, canaries)
		if err != nil {
			return nil, err
		}
		st.ProbeDone = true
		if err := l.save(ctx, c.Name, st); err != nil {
			return nil, err
		}
	}

	byShard := map[int][]Reach{}
	for _, r := range reached {
		byShard[r.Shard] = append(byShard[r.Shard], r)
	}
	shards := make([]int, 0, len(byShard))
	for s := range byShard {
		shards = append(shards, s)
	}
	sort.Ints(shards)

	out := &certificate.ModelOutcome{Model: c.Name, Sharded: c.Sharded, Level: certificate.LevelModel}
	if c.Sharded {
		for _, s := range shards {
			if err := l.retrain(ctx, c, reg, s, byShard[s], st); err != nil {
				return nil, err
			}
		}
	}
	if c.Probe != nil && len(canaries) > 0 && !st.AfterDone {
		if c.Sharded {
			st.ProbeAfter, err = l.probe(ctx, c, canaries)
			if err != nil {
				return nil, err
			}
		} else {
			st.ProbeAfter = st.ProbeBefore // nothing was retrained: the model is the one probed
		}
		st.AfterDone = true
		if err := l.save(ctx, c.Name, st); err != nil {
			return nil, err
		}
	}
	snap, err = reg.Load()
	if err != nil {
		return nil, err
	}
	for _, s := range shards {
		out.Shards = append(out.Shards, l.shardOutcome(c, snap, s, byShard[s], st))
	}
	out.ProbeBefore, out.ProbeAfter = certProbe(st.ProbeBefore), certProbe(st.ProbeAfter)
	l.decide(c, out, len(canaries))
	return out, nil
}

// probe runs the canary probe. An endpoint that fails does not stop the
// retrain: the failure is recorded (the model cannot then be VERIFIED);
// only a stop of amnesia itself is returned.
func (l *Leg) probe(ctx context.Context, c Config, canaries []Canary) (*ProbeResult, error) {
	res, err := NewProber(c.Probe).Probe(ctx, canaries, c.Probe.References)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		per, any := FalsePositiveRates(len(canaries), c.Probe.References)
		return &ProbeResult{Endpoint: strings.TrimRight(c.Probe.URL, "/") + "/v1/completions", Canaries: len(canaries), References: c.Probe.References,
			FPRPerCanary: per, FPRAny: any, Error: err.Error()}, nil
	}
	return res, nil
}

func (l *Leg) canaries(c Config) ([]Canary, error) {
	ps, err := OpenCanaries(l.StateDir, l.Keyer).Get(l.Scope, l.Subject)
	if err != nil {
		return nil, err
	}
	in := map[string]bool{}
	for _, s := range c.Dataset {
		in[s] = true
	}
	var out []Canary
	for _, p := range ps {
		if in[p.Store] {
			out = append(out, p.Canary)
		}
	}
	return out, nil
}

// retrain retrains one shard, unless its journal says it is done.
func (l *Leg) retrain(ctx context.Context, c Config, reg *Registry, shard int, tainted []Reach, st *legState) error {
	key := fmt.Sprint(shard)
	ss := st.Shards[key]
	if ss != nil && (ss.Done || ss.Failed != "") {
		return nil
	}
	name := fmt.Sprintf("model:%s shard %d", c.Name, shard)
	if shard < 0 || shard >= len(c.Dataset) {
		st.Shards[key] = &shardState{Failed: fmt.Sprintf("shard %d is not in the configured dataset (%d stores)", shard, len(c.Dataset))}
		return l.save(ctx, c.Name, st)
	}
	storeName := c.Dataset[shard]
	dir := c.ArtifactsDir(l.StateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("model %s: %w", c.Name, err)
	}
	attempt := 1
	if ss != nil && ss.Started {
		l.progress("  %-28s resuming: the retrain that was running when the erasure stopped starts again", name)
		attempt = ss.Attempt + 1
	}
	// Each attempt writes its own file, so that a retrain command left
	// running by a crashed amnesia cannot overwrite a later attempt's
	// artifact; a partial output of an interrupted attempt is never used.
	old, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("shard-%d-%s-*.artifact", shard, l.Erasure)))
	for _, p := range old {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("model %s: %w", c.Name, err)
		}
	}
	output := filepath.Join(dir, fmt.Sprintf("shard-%d-%s-%d.artifact", shard, l.Erasure, attempt))
	st.Shards[key] = &shardState{Started: true, Attempt: attempt, Output: output}
	if err := l.save(ctx, c.Name, st); err != nil {
		return err
	}
	ss = st.Shards[key]
	// One retrain of a shard at a time, across processes sharing the state
	// directory: two erasures in the same shard must not switch the served
	// artifact out of order.
	unlock, err := lockShard(filepath.Join(l.StateDir, "models", c.Name), shard)
	if err != nil {
		return fmt.Errorf("model %s: %w", c.Name, err)
	}
	defer unlock()
	var ids []string
	var in File
	var outFile File
	start := time.Now()
	for try := 1; ; try++ {
		before, inBefore, err := l.rowIDs(ctx, storeName)
		if err != nil {
			return fmt.Errorf("model %s: read shard %d's rows: %w", c.Name, shard, err)
		}
		os.Remove(output)
		cerr := l.exec(ctx, c, shard, l.StorePath(storeName), output)
		ss.Millis = time.Since(start).Milliseconds()
		if cerr != nil {
			if ctx.Err() != nil {
				return ctx.Err() // amnesia was stopped: the shard stays started, a resume retrains it
			}
			ss.Failed = cerr.Error()
			l.progress("  %-28s FAILED: %v", name, cerr)
			return l.save(ctx, c.Name, st)
		}
		if outFile, err = FileDigest(output); err != nil {
			ss.Failed = "the retrain command exited 0 but wrote no artifact at {output}"
			return l.save(ctx, c.Name, st)
		}
		after, _, err := l.rowIDs(ctx, storeName)
		if err != nil {
			return fmt.Errorf("model %s: read shard %d's rows: %w", c.Name, shard, err)
		}
		now := map[string]bool{}
		for _, id := range after {
			now[id] = true
		}
		removed := false
		for _, id := range before {
			if !now[id] {
				removed = true
			}
		}
		// Rows appended while it trained may or may not be in the
		// artifact: the run records them too (the lineage over-approximates,
		// never misses). Rows deleted while it trained (another erasure)
		// may be in it: train again.
		ids, in = append(before, after...), inBefore
		if !removed {
			break
		}
		if try == 3 {
			ss.Failed = "rows of the shard were deleted during each of 3 retrains (other erasures): run the erasure again"
			return l.save(ctx, c.Name, st)
		}
		l.progress("  %-28s rows were deleted while it trained: training again", name)
	}
	ids = dedupe(ids)
	run := &Run{Model: c.Name, Shard: shard, Sharded: true, Command: c.Retrain.Command,
		Inputs: []Input{{Store: storeName, SHA256: in.SHA256, RowIDs: ids}}, Output: outFile, Erasure: l.Erasure}
	for _, t := range tainted {
		run.Follows = append(run.Follows, t.Run)
	}
	if err := reg.RecordRun(run); err != nil {
		return err
	}
	ss.Run = run.ID
	if served := c.ServedPath(shard); served != "" {
		b, err := os.ReadFile(output)
		if err != nil {
			return err
		}
		if err := atomicfile.WriteFile(served, b, 0o644); err != nil {
			return fmt.Errorf("model %s: install shard %d at %s: %w", c.Name, shard, served, err)
		}
		if err := reg.Served(run.ID, served, outFile.SHA256); err != nil {
			return err
		}
	}
	if c.DeleteTainted {
		for _, t := range tainted {
			p := t.Output.Path
			if p == "" || p == c.ServedPath(shard) {
				continue
			}
			if f, err := FileDigest(p); err == nil && f.SHA256 == t.Output.SHA256 {
				if err := atomicfile.Shred(p); err != nil {
					return fmt.Errorf("model %s: delete tainted artifact of shard %d: %w", c.Name, shard, err)
				}
				if err := reg.Deleted(t.Run, p, t.Output.SHA256); err != nil {
					return err
				}
			}
		}
	}
	ss.Done = true
	l.progress("  %-28s retrained (%dms)", name, ss.Millis)
	return l.save(ctx, c.Name, st)
}

func (l *Leg) subjectRows(run *Run) int {
	n := 0
	for _, in := range run.Inputs {
		for _, id := range in.RowIDs {
			if l.TraceIDs[id] {
				n++
			}
		}
	}
	return n
}

func (l *Leg) rowIDs(ctx context.Context, storeName string) ([]string, File, error) {
	in, err := FileDigest(l.StorePath(storeName))
	if err != nil {
		return nil, File{}, err
	}
	keys, err := l.RowKeys(ctx, storeName)
	if err != nil {
		return nil, File{}, err
	}
	ids := make([]string, 0, len(keys))
	for _, k := range keys {
		ids = append(ids, lineage.ArtifactID(l.Keyer, l.Scope, storeName, k))
	}
	return ids, in, nil
}

func dedupe(ids []string) []string {
	sort.Strings(ids)
	out := ids[:0]
	for i, id := range ids {
		if i == 0 || id != ids[i-1] {
			out = append(out, id)
		}
	}
	return out
}

// lockShard takes an exclusive advisory lock on one shard of a model.
func lockShard(dir string, shard int) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("shard-%d.lock", shard)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock shard %d: %w", shard, err)
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// exec runs the retrain command for one shard under the configured
// timeout. Its log (<state>/models/logs/) records the command, the exit,
// the duration and the size and SHA-256 of what it printed: never what it
// printed, which may quote training rows.
func (l *Leg) exec(ctx context.Context, c Config, shard int, data, output string) error {
	argv := make([]string, len(c.Retrain.Command))
	for i, a := range c.Retrain.Command {
		a = strings.ReplaceAll(a, "{shard}", data)
		a = strings.ReplaceAll(a, "{output}", output)
		a = strings.ReplaceAll(a, "{index}", fmt.Sprint(shard))
		argv[i] = strings.ReplaceAll(a, "{model}", c.Name)
	}
	logDir := filepath.Join(l.StateDir, "models", "logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return err
	}
	lf, err := os.OpenFile(filepath.Join(logDir, fmt.Sprintf("%s-%s-shard-%d.log", l.Erasure, c.Name, shard)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer lf.Close()
	logLine := func(v map[string]any) {
		v["at"] = l.Now().UTC().Format(time.RFC3339)
		b, _ := json.Marshal(v)
		lf.Write(append(b, '\n'))
		lf.Sync()
	}
	logLine(map[string]any{"event": "start", "argv": argv, "timeout": c.RetrainTimeout().String()})
	cctx, cancel := context.WithTimeout(ctx, c.RetrainTimeout())
	defer cancel()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.WaitDelay = 5 * time.Second
	var so, se countHash
	cmd.Stdout, cmd.Stderr = &so, &se
	start := time.Now()
	err = cmd.Run()
	res := map[string]any{"event": "exit", "millis": time.Since(start).Milliseconds(),
		"stdout_bytes": so.n, "stdout_sha256": so.sum(), "stderr_bytes": se.n, "stderr_sha256": se.sum()}
	switch {
	case ctx.Err() != nil:
		res["status"] = "stopped: amnesia was stopped"
	case cctx.Err() != nil:
		res["status"] = "timeout"
		err = fmt.Errorf("the retrain command ran past retrain.timeout %s", c.RetrainTimeout())
	case err != nil:
		res["status"] = err.Error()
		err = fmt.Errorf("the retrain command failed (%v); its output is not kept (it may quote training rows): run it by hand to see why", err)
	default:
		res["status"] = "exit status 0"
	}
	logLine(res)
	return err
}

type countHash struct {
	n int64
	h []byte
	b bytes.Buffer
}

func (c *countHash) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	// Only the digest is kept: hash incrementally over a bounded buffer.
	c.b.Write(p)
	if c.b.Len() > 1<<16 {
		c.fold()
	}
	return len(p), nil
}

func (c *countHash) fold() {
	h := sha256.New()
	h.Write(c.h)
	h.Write(c.b.Bytes())
	c.h = h.Sum(nil)
	c.b.Reset()
}

func (c *countHash) sum() string {
	c.fold()
	return hex.EncodeToString(c.h)
}

func (l *Leg) shardOutcome(c Config, snap *Snapshot, shard int, tainted []Reach, st *legState) certificate.ModelShard {
	ms := certificate.ModelShard{Shard: shard, Tainted: []certificate.ModelArtifact{}, Retrain: "not-run", Served: certificate.ServedNotRetrained}
	for _, t := range tainted {
		run := snap.Runs[t.Run]
		rows := 0
		for _, in := range run.Inputs {
			rows += len(in.RowIDs)
		}
		ms.Tainted = append(ms.Tainted, certificate.ModelArtifact{Run: t.Run, SHA256: t.Output.SHA256, Rows: rows, SubjectRows: t.Rows})
		if t.Output.Path != "" && t.Output.Path != c.ServedPath(shard) {
			if f, err := FileDigest(t.Output.Path); err == nil && f.SHA256 == t.Output.SHA256 {
				ms.TaintedFilesLeft++
			}
		}
	}
	ss := st.Shards[fmt.Sprint(shard)]
	switch {
	case ss == nil:
	case ss.Failed != "":
		ms.Retrain = "failed: " + ss.Failed
	case ss.Done:
		ms.Retrain = "done"
		ms.RetrainMillis = ss.Millis
		if run := snap.Runs[ss.Run]; run != nil {
			rows, subj := 0, 0
			for _, in := range run.Inputs {
				for _, id := range in.RowIDs {
					rows++
					if l.TraceIDs[id] {
						subj++
					}
				}
			}
			ms.Retrained = &certificate.ModelArtifact{Run: run.ID, SHA256: run.Output.SHA256, Rows: rows, SubjectRows: subj}
			ms.TrainedWithout = subj == 0
			ms.Served = certificate.ServedOperatorMust
			// What is served now: this run's artifact, or a later retrain's
			// (another erasure in the same shard) that holds none of the
			// subject's rows either, with the recorded digest on disk.
			if sv, ok := snap.Served[c.Name][shard]; ok && c.ServedPath(shard) != "" {
				if cur := snap.Runs[sv.Run]; cur != nil && l.subjectRows(cur) == 0 {
					if f, err := FileDigest(sv.Path); err == nil && f.SHA256 == sv.SHA256 {
						ms.Served = certificate.ServedSwitched
					}
				}
			}
		}
	}
	return ms
}

var choicesUnsharded = []string{
	"retrain the whole model on its dataset, from which the rows are already deleted, and record the run with where it is served (amnesia model record-run --served): amnesia model list then shows the served artifact untainted; this certificate stays as issued",
	"shard the dataset (sharded: true, one file store per shard) so that later erasures retrain one shard",
	"accept the residual risk: this certificate stays incomplete and says so",
}

func (l *Leg) decide(c Config, m *certificate.ModelOutcome, canaries int) {
	probe := "no probe configured"
	if c.Probe != nil {
		probe = fmt.Sprintf("canary probe at %s/v1/completions: %d canaries, %d references each (extraction, greedy; membership inference, rank among references)", strings.TrimRight(c.Probe.URL, "/"), canaries, c.Probe.References)
		if canaries == 0 {
			probe = "probe configured but no canary was planted for this subject: nothing to ask"
		}
	}
	if !c.Sharded {
		rows := 0
		for _, s := range m.Shards {
			for _, t := range s.Tainted {
				rows += t.SubjectRows
			}
		}
		m.Outcome = certificate.Tainted
		m.Reason = fmt.Sprintf("trained without sharding on %d of the subject's rows: amnesia cannot retrain it without them; the rows are deleted from the dataset, not from what the model learned", rows)
		m.Choices = choicesUnsharded
		m.Method = "artifacts marked tainted in the model registry; " + probe
		return
	}
	m.Method = "SISA-style exact unlearning: each shard that held the subject's rows retrained by the configured command from its data file after the rows were deleted; " + probe
	var failed, operator, left []string
	for _, s := range m.Shards {
		switch {
		case s.Retrained == nil || !s.TrainedWithout:
			failed = append(failed, fmt.Sprintf("shard %d: %s", s.Shard, s.Retrain))
		case s.Served != certificate.ServedSwitched:
			operator = append(operator, fmt.Sprintf("shard %d to sha256:%s", s.Shard, s.Retrained.SHA256))
		}
		if s.TaintedFilesLeft > 0 {
			left = append(left, fmt.Sprintf("shard %d: %d", s.Shard, s.TaintedFilesLeft))
		}
	}
	switch {
	case len(failed) > 0:
		m.Outcome = certificate.Unverified
		m.Reason = "not retrained without the subject's rows: " + strings.Join(failed, "; ") + "; the served artifact is still the tainted one"
	case len(operator) > 0:
		m.Outcome = certificate.NeedsHuman
		m.Reason = "retrained without the subject's rows, but amnesia does not manage serving (no served path): the operator must serve " + strings.Join(operator, ", ")
		if m.ProbeAfter.Found() {
			m.Reason += fmt.Sprintf("; until then the endpoint still gives up the subject's canaries (%d extracted, %d flagged of %d)", m.ProbeAfter.Extracted, m.ProbeAfter.Flagged, m.ProbeAfter.Canaries)
		}
	case m.ProbeAfter != nil && m.ProbeAfter.Error != "":
		m.Outcome = certificate.Unverified
		m.Reason = "retrained without the subject's rows and served, but the configured probe failed, so nothing was measured: " + m.ProbeAfter.Error
	case m.ProbeAfter.Found():
		m.Outcome = certificate.Residual
		m.Reason = fmt.Sprintf("retrained, but the probe still found the subject's canaries (%d extracted, %d flagged of %d): the rows may have copies in other shards or the endpoint may not serve the retrained artifact", m.ProbeAfter.Extracted, m.ProbeAfter.Flagged, m.ProbeAfter.Canaries)
	case len(left) > 0:
		m.Outcome = certificate.NeedsHuman
		m.Reason = "retrained and served, but tainted artifact files remain at their recorded paths (" + strings.Join(left, ", ") + "): delete them, or set delete_tainted: true"
	default:
		m.Outcome = certificate.Verified
	}
	if m.Outcome == certificate.Verified && !certificate.ModelVerified(*m) {
		m.Outcome = certificate.Unverified
		m.Reason = "the shards' records do not show a retrain without the subject's rows"
	}
}

func certProbe(p *ProbeResult) *certificate.ModelProbe {
	if p == nil {
		return nil
	}
	return &certificate.ModelProbe{Error: p.Error, Endpoint: p.Endpoint, Canaries: p.Canaries, References: p.References, Extracted: p.Extracted,
		Flagged: p.Flagged, Exposure: p.Exposure, FPRPerCanary: p.FPRPerCanary, FPRAny: p.FPRAny, Requests: p.Requests, Millis: p.Millis}
}
