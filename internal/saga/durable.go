package saga

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/internal/atomicfile"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/model"
)

// Durable is where the durable state of erasures lives: their journals,
// their sealed evidence, the traces saved for them and the certificates
// they publish. Two implementations: files in the state directory
// (FileDurable, a single-machine installation, a SQLite ledger), and the
// ledger's own tables (a ledger that implements lineage.ErasureRecords:
// PostgreSQL), so that hosts that share a ledger share nothing else.
// DurableFor picks one.
//
// Contracts, for both:
//   - a journal is append-only and hash-chained; an entry written is
//     durable after the journal's sync at the latest (files: fsync; the
//     ledger: at once, each entry is its own transaction); a journal whose
//     chain is broken is refused by openJournal and read leniently by
//     readJournal;
//   - sealed evidence is stored as given (ciphertext; seal.go) and
//     shredSealed destroys it, measured as far as the storage allows;
//   - traces and certificates are stored byte for byte; a missing one is
//     an error wrapping fs.ErrNotExist;
//   - writes of an erasure run for a claimed job are refused with
//     lineage.ErrLeaseLost once the claim is no longer current (the
//     ledger; a state directory has one host, its flocks fence it).
type Durable interface {
	// Where names the storage in messages: "the state directory …" or
	// "the ledger".
	Where() string
	// CertificateRef is what a person is shown for certificate id: the
	// path of its file (or of this host's copy of it).
	CertificateRef(id string) string

	// SaveTrace stores trace id's encoding; Trace returns it.
	SaveTrace(ctx context.Context, id string, b []byte) error
	Trace(ctx context.Context, id string) ([]byte, error)
	// PutCertificate stores certificate id's bundle; Certificate returns
	// it; Certificates lists the ids stored, sorted.
	PutCertificate(ctx context.Context, id string, b []byte) error
	Certificate(ctx context.Context, id string) ([]byte, error)
	Certificates(ctx context.Context) ([]string, error)

	// openJournal opens, or creates, journal name of erasure and replays it.
	openJournal(ctx context.Context, erasure, name string, now func() time.Time) (*journal, error)
	// readJournal reads a journal for inspection, leniently (readEntries);
	// exists is false when there is none.
	readJournal(ctx context.Context, erasure, name string) (es []JournalEntry, exists bool, err error)
	// journalBytes returns a journal as ParseJournal reads it, unrepaired
	// (nil when there is none).
	journalBytes(ctx context.Context, erasure, name string) ([]byte, error)
	// journaled lists, sorted, the erasures with a main journal, leaving
	// out those whose journal has a done entry of unfinishedStep (unless "").
	journaled(ctx context.Context, unfinishedStep string) ([]string, error)
	// putSealed, sealed and shredSealed keep an erasure's sealed evidence
	// (name: evidence-<store>.sealed); sealed of a missing one wraps
	// fs.ErrNotExist. shredSealed returns how the bytes were destroyed.
	putSealed(ctx context.Context, erasure, name string, b []byte) error
	sealed(ctx context.Context, erasure, name string) ([]byte, error)
	shredSealed(ctx context.Context, erasure string, names []string) (string, error)
	// fenced returns the Durable whose writes carry claim j (nil: none).
	fenced(j *lineage.Job) Durable
}

// mainJournal is the name of an erasure's own journal (journal.jsonl).
const mainJournal = "journal"

// DurableFor returns where the erasures of dir and l keep their durable
// state: the ledger when it keeps it (lineage.ErasureRecords), the state
// directory otherwise.
func DurableFor(dir *state.Dir, l lineage.Ledger) Durable {
	if rec, ok := l.(lineage.ErasureRecords); ok {
		return &ledgerDurable{dir: dir, rec: rec}
	}
	return FileDurable(dir)
}

// FileDurable keeps erasures' durable state in files of the state directory
// (traces/, erasures/<id>/, certificates/), as a single-machine
// installation always has.
func FileDurable(dir *state.Dir) Durable { return &fileDurable{dir: dir} }

type fileDurable struct{ dir *state.Dir }

var _ Durable = (*fileDurable)(nil)

func (d *fileDurable) Where() string                   { return "the state directory " + d.dir.Path }
func (d *fileDurable) CertificateRef(id string) string { return d.dir.CertificatePath(id) }
func (d *fileDurable) fenced(*lineage.Job) Durable     { return d }

func (d *fileDurable) SaveTrace(_ context.Context, id string, b []byte) error {
	return state.WriteFileAtomic(d.dir.TracePath(id), b)
}

func (d *fileDurable) Trace(_ context.Context, id string) ([]byte, error) {
	return os.ReadFile(d.dir.TracePath(id))
}

func (d *fileDurable) PutCertificate(_ context.Context, id string, b []byte) error {
	return state.WriteFileAtomic(d.dir.CertificatePath(id), b)
}

func (d *fileDurable) Certificate(_ context.Context, id string) ([]byte, error) {
	return os.ReadFile(d.dir.CertificatePath(id))
}

func (d *fileDurable) Certificates(context.Context) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(d.dir.Path, "certificates", "*.dsse.json"))
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, strings.TrimSuffix(filepath.Base(p), ".dsse.json"))
	}
	sort.Strings(out)
	return out, nil
}

func (d *fileDurable) journalPath(erasure, name string) string {
	return filepath.Join(d.dir.ErasureDir(erasure), name+".jsonl")
}

func (d *fileDurable) openJournal(_ context.Context, erasure, name string, now func() time.Time) (*journal, error) {
	if err := os.MkdirAll(d.dir.ErasureDir(erasure), 0o700); err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	return openJournal(d.journalPath(erasure, name), now)
}

func (d *fileDurable) readJournal(_ context.Context, erasure, name string) ([]JournalEntry, bool, error) {
	p := d.journalPath(erasure, name)
	es, err := readEntries(p)
	if err != nil {
		return nil, false, err
	}
	if _, err := os.Stat(p); err != nil {
		return nil, false, nil
	}
	return es, true, nil
}

func (d *fileDurable) journalBytes(_ context.Context, erasure, name string) ([]byte, error) {
	b, err := os.ReadFile(d.journalPath(erasure, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

func (d *fileDurable) journaled(ctx context.Context, unfinishedStep string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(d.dir.Path, "erasures", "*", mainJournal+".jsonl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []string
	for _, p := range paths {
		id := filepath.Base(filepath.Dir(p))
		if unfinishedStep != "" {
			es, err := readEntries(p)
			if err != nil {
				return nil, err
			}
			if doneIn(es, unfinishedStep) {
				continue
			}
		}
		out = append(out, id)
	}
	return out, nil
}

func (d *fileDurable) putSealed(_ context.Context, erasure, name string, b []byte) error {
	if err := os.MkdirAll(d.dir.ErasureDir(erasure), 0o700); err != nil {
		return fmt.Errorf("seal evidence: %w", err)
	}
	return state.WriteFileAtomic(filepath.Join(d.dir.ErasureDir(erasure), name), b)
}

func (d *fileDurable) sealed(_ context.Context, erasure, name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(d.dir.ErasureDir(erasure), name))
}

func (d *fileDurable) shredSealed(_ context.Context, erasure string, names []string) (string, error) {
	for _, n := range names {
		// The file was only ever ciphertext (seal.go). Its zeros are
		// fsynced before the unlink; the unlink is not (no directory
		// fsync): a power loss right after it can bring back only a file
		// of zeros, which nothing reads (the steps that read evidence
		// were done and synced before publish).
		if err := shredZeroed(filepath.Join(d.dir.ErasureDir(erasure), n)); err != nil {
			return "", err
		}
	}
	return "overwritten, fsynced and unlinked", nil
}

// shredZeroed is atomicfile.Shred without the directory fsync after the
// unlink. A missing file is not an error.
func shredZeroed(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = atomicfile.Zero(f)
	f.Close()
	if err != nil {
		return err
	}
	return os.Remove(path)
}

// ledgerDurable keeps erasures' durable state in the ledger
// (lineage.ErasureRecords). This host's state directory keeps a copy of
// each certificate it publishes or reads (certificates/<id>.dsse.json), a
// cache only: the ledger's copy is the one that counts.
type ledgerDurable struct {
	dir   *state.Dir
	rec   lineage.ErasureRecords
	claim *lineage.Job
}

var _ Durable = (*ledgerDurable)(nil)

func (d *ledgerDurable) Where() string                   { return "the ledger" }
func (d *ledgerDurable) CertificateRef(id string) string { return d.dir.CertificatePath(id) }

// Fenced returns d whose writes carry the queue's claim j (nil: none):
// in the ledger (lineage.ErasureRecords) each is refused with
// lineage.ErrLeaseLost unless j is the job's current claim, in the same
// transaction; files in the state directory are not fenced (d itself). A
// worker saves the traces of its claimed job through it.
func Fenced(d Durable, j *lineage.Job) Durable { return d.fenced(j) }

func (d *ledgerDurable) fenced(j *lineage.Job) Durable {
	c := *d
	c.claim = j
	return &c
}

// notExist turns the ledger's "not found" into fs.ErrNotExist, as a file
// would give.
func notExist(err error) error {
	if errors.Is(err, lineage.ErrNotFound) {
		return fmt.Errorf("%w (%v)", fs.ErrNotExist, err)
	}
	return err
}

func (d *ledgerDurable) SaveTrace(ctx context.Context, id string, b []byte) error {
	return d.rec.PutErasureRecord(ctx, d.claim, lineage.RecordTrace, id, b)
}

func (d *ledgerDurable) Trace(ctx context.Context, id string) ([]byte, error) {
	b, err := d.rec.ErasureRecord(ctx, lineage.RecordTrace, id)
	return b, notExist(err)
}

func (d *ledgerDurable) PutCertificate(ctx context.Context, id string, b []byte) error {
	if err := d.rec.PutErasureRecord(ctx, d.claim, lineage.RecordCertificate, id, b); err != nil {
		return err
	}
	return d.cache(id, b)
}

// cache writes this host's copy of certificate id, when it differs.
func (d *ledgerDurable) cache(id string, b []byte) error {
	p := d.dir.CertificatePath(id)
	if old, err := os.ReadFile(p); err == nil && string(old) == string(b) {
		return nil
	}
	return state.WriteFileAtomic(p, b)
}

func (d *ledgerDurable) Certificate(ctx context.Context, id string) ([]byte, error) {
	b, err := d.rec.ErasureRecord(ctx, lineage.RecordCertificate, id)
	if err != nil {
		return nil, notExist(err)
	}
	_ = d.cache(id, b) // a copy for this host's people and tools; best effort
	return b, nil
}

func (d *ledgerDurable) Certificates(ctx context.Context) ([]string, error) {
	return d.rec.ErasureRecordIDs(ctx, lineage.RecordCertificate)
}

func (d *ledgerDurable) openJournal(ctx context.Context, erasure, name string, now func() time.Time) (*journal, error) {
	lines, err := d.rec.JournalLines(ctx, erasure, name)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	j := &journal{now: now, w: &ledgerJournal{ctx: ctx, d: d, erasure: erasure, name: name}}
	if len(lines) > 0 {
		entries, torn, err := ParseJournal(joinLines(lines))
		if err == nil && torn != nil {
			err = errors.New("a line does not decode")
		}
		if err != nil {
			return nil, fmt.Errorf("open journal %s/%s in the ledger: %w", erasure, name, err)
		}
		j.entries = entries
	}
	return j, nil
}

// joinLines is the bytes of a journal whose lines are lines: what
// ParseJournal reads.
func joinLines(lines [][]byte) []byte {
	b := []byte(JournalVersion + "\n")
	for _, l := range lines {
		b = append(append(b, l...), '\n')
	}
	return b
}

func (d *ledgerDurable) readJournal(ctx context.Context, erasure, name string) ([]JournalEntry, bool, error) {
	lines, err := d.rec.JournalLines(ctx, erasure, name)
	if err != nil || len(lines) == 0 {
		return nil, false, err
	}
	all, _, _ := ParseJournal(joinLines(lines)) // lenient, as readEntries
	var out []JournalEntry
	for _, e := range all {
		if e.Step != "" {
			out = append(out, e)
		}
	}
	return out, true, nil
}

func (d *ledgerDurable) journalBytes(ctx context.Context, erasure, name string) ([]byte, error) {
	lines, err := d.rec.JournalLines(ctx, erasure, name)
	if err != nil || len(lines) == 0 {
		return nil, err
	}
	return joinLines(lines), nil
}

func (d *ledgerDurable) journaled(ctx context.Context, unfinishedStep string) ([]string, error) {
	return d.rec.JournalErasures(ctx, mainJournal, unfinishedStep)
}

// sealedID is the record id of an erasure's sealed evidence.
func sealedID(erasure, name string) string { return erasure + "/" + name }

func (d *ledgerDurable) putSealed(ctx context.Context, erasure, name string, b []byte) error {
	return d.rec.PutErasureRecord(ctx, d.claim, lineage.RecordSealed, sealedID(erasure, name), b)
}

func (d *ledgerDurable) sealed(ctx context.Context, erasure, name string) ([]byte, error) {
	b, err := d.rec.ErasureRecord(ctx, lineage.RecordSealed, sealedID(erasure, name))
	return b, notExist(err)
}

func (d *ledgerDurable) shredSealed(ctx context.Context, erasure string, names []string) (string, error) {
	ids := make([]string, len(names))
	for i, n := range names {
		ids[i] = sealedID(erasure, n)
	}
	return d.rec.ShredErasureRecords(ctx, d.claim, lineage.RecordSealed, ids)
}

// ledgerJournal writes a journal's entries to the ledger, each committed
// (durable) before writeLine returns: sync has nothing left to do.
type ledgerJournal struct {
	ctx     context.Context
	d       *ledgerDurable
	erasure string
	name    string
}

func (w *ledgerJournal) writeLine(e JournalEntry, line []byte) error {
	return w.d.rec.AppendJournalLine(w.ctx, w.d.claim, w.erasure, w.name, e.Seq, e.Step, e.Phase, line)
}

func (w *ledgerJournal) sync() error  { return nil }
func (w *ledgerJournal) close() error { return nil }

// Digest is "sha256:<hex>" of b: a certificate's reference in the queue.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Started reports whether the erasure of trace traceID has begun (its
// journal exists): it then resumes, and the ledger is not asked again.
func Started(ctx context.Context, d Durable, traceID string) (bool, error) {
	_, ok, err := d.readJournal(ctx, ID(traceID), mainJournal)
	return ok, err
}

// ReadJournal returns the entries of erasure's own journal, for inspection
// (tests, reports): an error when it is missing, or when anything breaks
// its format (ParseJournal), a torn last line included. It repairs nothing.
func ReadJournal(ctx context.Context, d Durable, erasure string) ([]JournalEntry, error) {
	b, err := d.journalBytes(ctx, erasure, mainJournal)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("erasure %s has no journal in %s", erasure, d.Where())
	}
	es, torn, err := ParseJournal(b)
	if err == nil && torn != nil {
		err = fmt.Errorf("its last line is torn (%d bytes)", torn.Len)
	}
	if err != nil {
		return nil, fmt.Errorf("journal of erasure %s: %w", erasure, err)
	}
	for i, e := range es {
		if e.Seq != i+1 {
			return nil, fmt.Errorf("journal of erasure %s: entry %d has seq %d", erasure, i+1, e.Seq)
		}
	}
	return es, nil
}

// InLedger reports whether d keeps erasures' state in the ledger (not in
// files of the state directory).
func InLedger(d Durable) bool {
	_, ok := d.(*ledgerDurable)
	return ok
}

// modelJournal returns where erasure's model legs keep their journals:
// nil (a file per model in the erasure's directory, model.Leg's own) with
// the state directory; the ledger's erasure_journal otherwise (journal
// "model-<name>"), fenced by the claim, append-only and hash-chained, so
// that another host resumes or reads it.
func modelJournal(d Durable, erasure string) model.LegJournal {
	ld, ok := d.(*ledgerDurable)
	if !ok {
		return nil
	}
	return &ledgerLegJournal{d: ld, erasure: erasure}
}

// ModelJournalName is the name, in the ledger's erasure_journal, of the
// journal of an erasure's model leg for model name.
func ModelJournalName(name string) string { return "model-" + name }

// legLine is one entry of a model leg's journal in the ledger: the leg's
// whole state after a stage, chained to the entry before by the SHA-256
// of its line.
type legLine struct {
	Seq   int             `json:"seq"`
	Prev  string          `json:"prev"`
	State json.RawMessage `json:"state"`
}

type ledgerLegJournal struct {
	d       *ledgerDurable
	erasure string
}

// entries reads and checks the chain of model name's leg journal and
// returns its last entry's state (nil when there is none), its number and
// the hash the next entry chains to.
func (j *ledgerLegJournal) entries(ctx context.Context, name string) (state []byte, seq int, next string, err error) {
	lines, err := j.d.rec.JournalLines(ctx, j.erasure, ModelJournalName(name))
	if err != nil {
		return nil, 0, "", err
	}
	for i, b := range lines {
		var e legLine
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, 0, "", fmt.Errorf("model %s: leg journal in the ledger: entry %d: %w", name, i+1, err)
		}
		if e.Seq != i+1 || e.Prev != next {
			return nil, 0, "", fmt.Errorf("model %s: leg journal in the ledger: entry %d breaks the chain", name, i+1)
		}
		sum := sha256.Sum256(b)
		state, seq, next = e.State, e.Seq, hex.EncodeToString(sum[:])
	}
	return state, seq, next, nil
}

func (j *ledgerLegJournal) Load(ctx context.Context, name string) ([]byte, error) {
	st, _, _, err := j.entries(ctx, name)
	return st, err
}

func (j *ledgerLegJournal) Save(ctx context.Context, name string, b []byte) error {
	_, seq, prev, err := j.entries(ctx, name)
	if err != nil {
		return err
	}
	line, err := json.Marshal(legLine{Seq: seq + 1, Prev: prev, State: b})
	if err != nil {
		return err
	}
	return j.d.rec.AppendJournalLine(ctx, j.d.claim, j.erasure, ModelJournalName(name), seq+1, "model", "state", line)
}

// ModelLegState returns the last state recorded by erasure's model leg for
// model name in d (nil when there is none): for inspection and tests. With
// the state directory it reads erasures/<id>/model-<name>.json.
func ModelLegState(ctx context.Context, d Durable, erasure, name string) ([]byte, error) {
	if j := modelJournal(d, erasure); j != nil {
		return j.Load(ctx, name)
	}
	fd := d.(*fileDurable)
	b, err := os.ReadFile(filepath.Join(fd.dir.ErasureDir(erasure), ModelJournalName(name)+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}
