package saga

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/internal/atomicfile"
)

// JournalVersion is the first line of every journal.
const JournalVersion = "amnesia.journal/v1"

// Phases of a journal entry.
const (
	phaseBegin  = "begin"
	phaseDone   = "done"
	phaseFailed = "failed"
)

// JournalEntry is one journal line. Result holds the step's outcome
// (counts, methods, never personal data) and is what a resumed run reuses.
type JournalEntry struct {
	Seq    int             `json:"seq"`
	Step   string          `json:"step"`
	Phase  string          `json:"phase"`
	At     string          `json:"at"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
	Prev   string          `json:"prev"`
	Hash   string          `json:"hash"`
}

// journal is an append-only, hash-chained journal: a JSON-lines file in
// the state directory (fileJournal), or rows of the ledger (ledgerJournal,
// durable.go). Its entries and their chain are the same in both.
type journal struct {
	w       journalWriter
	entries []JournalEntry
	appends int
	dirty   bool // written since the last sync
	// dirtyKinds are the kinds of step ("delete", …) of the entries
	// written since the last sync.
	dirtyKinds map[string]bool
	now        func() time.Time
	release    func() // the subject's erasure lock (lock.go), released by close
}

// journalWriter is where a journal's entries go.
type journalWriter interface {
	// writeLine writes entry e, encoded as line (no newline). It may
	// reach durable storage only with the next sync.
	writeLine(e JournalEntry, line []byte) error
	// sync makes every line written so far durable.
	sync() error
	close() error
}

// fileJournal is a journal's JSON-lines file, fsynced by sync.
type fileJournal struct {
	path string
	f    *os.File
	// newEntries are the directories whose entries (the journal file's
	// name, the erasure directory's name) a new journal created: fsynced
	// once, at its first sync, so that a power loss cannot take away a
	// journal whose entries were reported durable.
	newEntries []string
}

func (w *fileJournal) writeLine(_ JournalEntry, line []byte) error {
	_, err := w.f.Write(append(line, '\n'))
	return err
}

func (w *fileJournal) sync() error {
	if err := w.f.Sync(); err != nil {
		return err
	}
	for len(w.newEntries) > 0 {
		if err := atomicfile.SyncDir(w.newEntries[0]); err != nil {
			return err
		}
		if onJournalSyncDir != nil {
			onJournalSyncDir(w.newEntries[0])
		}
		w.newEntries = w.newEntries[1:]
	}
	if onJournalSyncFile != nil {
		onJournalSyncFile(w.path)
	}
	return nil
}

func (w *fileJournal) close() error { return w.f.Close() }

// openJournal opens or creates the journal at path and replays it. A torn
// last line (a crash mid-write) is truncated away; any other damage is an
// error. It is the only reader of a journal that repairs it: ParseJournal
// does the reading.
func openJournal(path string, now func() time.Time) (*journal, error) {
	j := &journal{now: now}
	fj := &fileJournal{path: path}
	j.w = fj
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	unterminated := false
	if len(b) > 0 {
		entries, torn, err := ParseJournal(b)
		if err != nil {
			return nil, fmt.Errorf("open journal %s: %w", path, err)
		}
		if torn != nil {
			if err := os.Truncate(path, torn.Offset); err != nil {
				return nil, err
			}
		}
		j.entries = entries
		unterminated = torn == nil && b[len(b)-1] != '\n'
	}
	fj.f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	switch {
	case len(b) == 0:
		if _, err := fj.f.WriteString(JournalVersion + "\n"); err != nil {
			return nil, fmt.Errorf("open journal: %w", err)
		}
		// The file's name in the erasure's directory, and that
		// directory's name in its parent (both may be new): made durable
		// with the first sync.
		fj.newEntries = []string{filepath.Dir(path), filepath.Dir(filepath.Dir(path))}
	case unterminated:
		// The last line is whole but its newline never reached the disk
		// (a power loss between the two): end it, or the next entry would
		// be written onto the same line and break the journal.
		if _, err := fj.f.WriteString("\n"); err != nil {
			return nil, fmt.Errorf("open journal: %w", err)
		}
		if err := fj.f.Sync(); err != nil {
			return nil, fmt.Errorf("open journal: %w", err)
		}
	}
	return j, nil
}

// append writes one entry and fsyncs the journal.
func (j *journal) append(step, phase string, result any, stepErr error) error {
	if err := j.write(step, phase, result, stepErr); err != nil {
		return err
	}
	return j.sync()
}

// write appends one entry without fsyncing it: it reaches the disk with the
// next sync (or the next append). A process that is killed loses nothing
// written; a power loss can lose the entries written since the last sync,
// all of them after the last synced one (the file is append-only, so what
// survives is a prefix, its last line perhaps torn: openJournal truncates
// it). The saga syncs before every step whose effect would make an earlier
// step, run again, give a different result (runner.step, durableBefore).
func (j *journal) write(step, phase string, result any, stepErr error) error {
	e := JournalEntry{Seq: len(j.entries) + 1, Step: step, Phase: phase, At: j.now().UTC().Format(time.RFC3339Nano)}
	if len(j.entries) > 0 {
		e.Prev = j.entries[len(j.entries)-1].Hash
	}
	if result != nil {
		b, err := json.Marshal(result)
		if err != nil {
			return fmt.Errorf("journal %s: %w", step, err)
		}
		e.Result = b
	}
	if stepErr != nil {
		e.Error = stepErr.Error()
	}
	line, err := e.line()
	if err != nil {
		return fmt.Errorf("journal %s: %w", step, err)
	}
	if err := j.w.writeLine(e, line); err != nil {
		return fmt.Errorf("journal %s: %w", step, err)
	}
	j.entries = append(j.entries, e)
	j.appends++
	j.dirty = true
	if j.dirtyKinds == nil {
		j.dirtyKinds = map[string]bool{}
	}
	kind, _, _ := strings.Cut(step, ":")
	j.dirtyKinds[kind] = true
	afterJournalAppend(j.appends) // test hook: testhooks.go
	return nil
}

// sync fsyncs what was written since the last sync, if anything.
func (j *journal) sync() error {
	if !j.dirty {
		return nil
	}
	if err := j.w.sync(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.dirty = false
	clear(j.dirtyKinds)
	if onJournalSync != nil {
		onJournalSync(j.entries[len(j.entries)-1]) // tests: export_test.go
	}
	return nil
}

// dirtyWithin reports whether every entry written since the last sync is
// of a step of one of kinds.
func (j *journal) dirtyWithin(kinds map[string]bool) bool {
	for k := range j.dirtyKinds {
		if !kinds[k] {
			return false
		}
	}
	return true
}

// onJournalSync, when set (by tests), is called after each fsync of a
// journal with its last entry.
var onJournalSync func(last JournalEntry)

// onJournalSyncFile, when set (by tests), is called after each fsync of a
// journal with its path.
var onJournalSyncFile func(path string)

// onJournalSyncDir, when set (by tests), is called after each fsync of a
// directory that a new journal file created an entry in.
var onJournalSyncDir func(dir string)

// final returns the finished entry (done or failed) of a step, if any.
func (j *journal) final(step string) *JournalEntry {
	for i := range j.entries {
		e := &j.entries[i]
		if e.Step == step && (e.Phase == phaseDone || e.Phase == phaseFailed) {
			return e
		}
	}
	return nil
}

// head is the hash chain over the finished entries' steps and results, in
// order, up to and including the finished entry of step last. Begin entries
// and times are left out, so a resumed erasure has the same head as one that
// never crashed, and entries after last (the certificate's own steps) never
// change it.
func (j *journal) head(last string) (string, int) {
	stop := len(j.entries)
	if e := j.final(last); e != nil {
		stop = e.Seq
	}
	h := ""
	n := 0
	for _, e := range j.entries[:stop] {
		if e.Phase == phaseBegin {
			continue
		}
		sum := sha256.New()
		fmt.Fprintf(sum, "%s\n%s\n%s\n%s\n", h, e.Step, e.Phase, e.Error)
		sum.Write(e.Result)
		h = hex.EncodeToString(sum.Sum(nil))
		n++
	}
	return h, n
}

func (j *journal) close() error {
	if j.release != nil {
		defer j.release()
		j.release = nil
	}
	return j.w.close()
}
