package model

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Run is one training run: which rows of which dataset files went in, what
// came out, and where it is served. It holds no personal data: rows are
// keyed artifact ids (art:…, as the lineage ledger names them), files are
// paths and SHA-256 digests.
type Run struct {
	ID      string   `json:"id"`
	Model   string   `json:"model"`
	Shard   int      `json:"shard"`   // the dataset store's index in the model's dataset
	Sharded bool     `json:"sharded"` // the model is trained per shard
	Command []string `json:"command"` // as configured (placeholders kept), or as the pipeline reported it
	Inputs  []Input  `json:"inputs"`
	Output  File     `json:"output"`
	Served  string   `json:"served,omitempty"`  // where the artifact is served from, when known
	Erasure string   `json:"erasure,omitempty"` // the erasure whose retrain made this run
	Follows []string `json:"follows,omitempty"` // the runs this one replaces
	At      string   `json:"at"`                // RFC 3339
}

// Input is one dataset file a run read.
type Input struct {
	Store  string   `json:"store"`
	SHA256 string   `json:"sha256"`  // of the file as read
	Rows   int      `json:"rows"`    // rows in it
	RowIDs []string `json:"row_ids"` // keyed artifact ids of those rows, sorted
}

// File is a file by path and digest.
type File struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// event is one line of the registry.
type event struct {
	Type    string `json:"type"` // run | taint | served | deleted
	At      string `json:"at"`
	Run     *Run   `json:"run,omitempty"`
	RunID   string `json:"run_id,omitempty"`
	Erasure string `json:"erasure,omitempty"`
	Rows    int    `json:"rows,omitempty"`   // taint: the erased subject's rows the run was trained on
	Path    string `json:"path,omitempty"`   // served, deleted
	SHA256  string `json:"sha256,omitempty"` // served, deleted
}

// Registry is the append-only record of training runs
// (<state>/models/registry.jsonl). Appends are serialised across processes
// with an advisory lock on the file.
type Registry struct {
	path string
	now  func() time.Time
	mu   sync.Mutex
}

// RegistryPath is where a state directory keeps its registry.
func RegistryPath(stateDir string) string {
	return filepath.Join(stateDir, "models", "registry.jsonl")
}

// OpenRegistry returns the registry of a state directory.
func OpenRegistry(stateDir string) *Registry {
	return &Registry{path: RegistryPath(stateDir), now: time.Now}
}

func (r *Registry) append(evs ...event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(r.path), 0o700); err != nil {
		return fmt.Errorf("model registry: %w", err)
	}
	f, err := os.OpenFile(r.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("model registry: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("model registry: lock: %w", err)
	}
	var b []byte
	for _, ev := range evs {
		if ev.At == "" {
			ev.At = r.now().UTC().Format(time.RFC3339)
		}
		line, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("model registry: %w", err)
		}
		b = append(append(b, line...), '\n')
	}
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("model registry: %w", err)
	}
	return f.Sync()
}

// RecordRun appends a training run. Its ID is derived from its content
// when empty; recording the same run again is a no-op.
func (r *Registry) RecordRun(run *Run) error {
	if run.Model == "" || run.Output.SHA256 == "" || len(run.Inputs) == 0 {
		return errors.New("model registry: a run needs its model, its inputs and its output's digest")
	}
	for i := range run.Inputs {
		sort.Strings(run.Inputs[i].RowIDs)
		run.Inputs[i].Rows = len(run.Inputs[i].RowIDs)
	}
	if run.At == "" {
		run.At = r.now().UTC().Format(time.RFC3339)
	}
	if run.ID == "" {
		run.ID = runID(run)
	}
	s, err := r.Load()
	if err != nil {
		return err
	}
	if _, ok := s.Runs[run.ID]; ok {
		return nil
	}
	return r.append(event{Type: "run", Run: run})
}

func runID(run *Run) string {
	h := sha256.New()
	fmt.Fprintf(h, "amnesia.model-run/v1\x00%s\x00%d\x00%s\x00%s", run.Model, run.Shard, run.Output.SHA256, run.Erasure)
	for _, in := range run.Inputs {
		fmt.Fprintf(h, "\x00%s\x00%s", in.Store, in.SHA256)
	}
	return "run-" + hex.EncodeToString(h.Sum(nil)[:10])
}

// Taint records that run was trained on rows an erasure removed.
func (r *Registry) Taint(run, erasure string, rows int) error {
	return r.append(event{Type: "taint", RunID: run, Erasure: erasure, Rows: rows})
}

// Served records that a run's artifact is now served from path.
func (r *Registry) Served(run, path, sum string) error {
	return r.append(event{Type: "served", RunID: run, Path: path, SHA256: sum})
}

// Deleted records that a run's artifact file was deleted.
func (r *Registry) Deleted(run, path, sum string) error {
	return r.append(event{Type: "deleted", RunID: run, Path: path, SHA256: sum})
}

// Snapshot is the registry read at one moment.
type Snapshot struct {
	Order   []string                       // run ids in record order
	Runs    map[string]*Run                // by id
	Tainted map[string]map[string]int      // run id -> erasure -> rows
	Served  map[string]map[int]ServedState // model -> shard -> what is served
	Deleted map[string]bool                // run id -> its file was deleted
}

// ServedState is the artifact currently served for one shard.
type ServedState struct {
	Run    string
	Path   string
	SHA256 string
}

// Load reads the registry; a missing registry is empty.
func (r *Registry) Load() (*Snapshot, error) {
	s := &Snapshot{Runs: map[string]*Run{}, Tainted: map[string]map[string]int{}, Served: map[string]map[int]ServedState{}, Deleted: map[string]bool{}}
	f, err := os.Open(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("model registry: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) && len(strings.TrimSpace(string(line))) == 0 {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("model registry: %w", err)
		}
		var ev event
		if jerr := json.Unmarshal(line, &ev); jerr != nil {
			if errors.Is(err, io.EOF) {
				break // a torn last line: an append that did not finish
			}
			return nil, fmt.Errorf("model registry %s: line %d: %v", r.path, n, jerr)
		}
		s.apply(ev)
		if err != nil {
			break
		}
	}
	return s, nil
}

func (s *Snapshot) apply(ev event) {
	switch ev.Type {
	case "run":
		if ev.Run == nil || s.Runs[ev.Run.ID] != nil {
			return
		}
		s.Runs[ev.Run.ID] = ev.Run
		s.Order = append(s.Order, ev.Run.ID)
		if ev.Run.Served != "" {
			s.serve(ev.Run, ev.Run.Served, ev.Run.Output.SHA256)
		}
	case "taint":
		if s.Tainted[ev.RunID] == nil {
			s.Tainted[ev.RunID] = map[string]int{}
		}
		s.Tainted[ev.RunID][ev.Erasure] = ev.Rows
	case "served":
		if run := s.Runs[ev.RunID]; run != nil {
			s.serve(run, ev.Path, ev.SHA256)
		}
	case "deleted":
		s.Deleted[ev.RunID] = true
	}
}

func (s *Snapshot) serve(run *Run, path, sum string) {
	if s.Served[run.Model] == nil {
		s.Served[run.Model] = map[int]ServedState{}
	}
	s.Served[run.Model][run.Shard] = ServedState{Run: run.ID, Path: path, SHA256: sum}
}

// Reach is one model artifact that a subject's rows reached.
type Reach struct {
	Model   string `json:"model"`
	Shard   int    `json:"shard"`
	Sharded bool   `json:"sharded"`
	Run     string `json:"run"`
	Output  File   `json:"artifact"`
	Rows    int    `json:"rows"`              // the subject's rows the run was trained on
	Served  string `json:"served,omitempty"`  // where it is served, when it is the served artifact
	Tainted bool   `json:"tainted,omitempty"` // an erasure already marked it
	Deleted bool   `json:"deleted,omitempty"` // its file was deleted
}

// Reached returns every run whose inputs hold one of the artifact ids
// (a subject's traced rows), in record order.
func (s *Snapshot) Reached(ids map[string]bool) []Reach {
	var out []Reach
	for _, id := range s.Order {
		run := s.Runs[id]
		n := 0
		for _, in := range run.Inputs {
			for _, rid := range in.RowIDs {
				if ids[rid] {
					n++
				}
			}
		}
		if n == 0 {
			continue
		}
		re := Reach{Model: run.Model, Shard: run.Shard, Sharded: run.Sharded, Run: id, Output: run.Output, Rows: n,
			Tainted: len(s.Tainted[id]) > 0, Deleted: s.Deleted[id]}
		if sv, ok := s.Served[run.Model][run.Shard]; ok && sv.Run == id {
			re.Served = sv.Path
		}
		out = append(out, re)
	}
	return out
}

// FileDigest returns the SHA-256 and size of a file.
func FileDigest(path string) (File, error) {
	f, err := os.Open(path)
	if err != nil {
		return File{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return File{}, err
	}
	return File{Path: path, SHA256: hex.EncodeToString(h.Sum(nil)), Size: n}, nil
}

// TraceModels returns the model artifacts that the artifacts of a trace
// (a subject's rows) reached, from the registry of a state directory.
func TraceModels(stateDir string, artifactIDs []string) ([]Reach, error) {
	s, err := OpenRegistry(stateDir).Load()
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, id := range artifactIDs {
		ids[id] = true
	}
	return s.Reached(ids), nil
}
