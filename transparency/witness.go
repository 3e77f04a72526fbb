package transparency

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/amnesia-dev/amnesia/internal/atomicfile"
)

// A witness keeps, per log, the last checkpoint it cosigned, and cosigns a
// new checkpoint only when a consistency proof shows that the new tree
// extends that one. Anyone who holds a checkpoint cosigned by a witness they
// trust knows the log showed the witness the same append-only history: a
// split view, a rewritten or a truncated log is refused by the witness and
// so carries no cosignature.
//
// Its directory is its own, not amnesia's state directory:
//
//	witness.key            the witness's private key (0600), signed-note form
//	logs/<id>.json         per log origin: the last cosigned checkpoint (0600)
//	lock                   serialises cosigning (flock)

// Witness refusals. Each wraps ErrProof (the log is not append-only as seen
// by this witness) except ErrWitnessStale.
var (
	// ErrWitnessRollback: the checkpoint is of a smaller tree than the one
	// the witness cosigned last.
	ErrWitnessRollback = fmt.Errorf("witness: checkpoint of a smaller tree than the one cosigned: %w", ErrProof)
	// ErrWitnessFork: the checkpoint is of a tree of the same size as the
	// one cosigned last, with another root: the log forked or was rewritten.
	ErrWitnessFork = fmt.Errorf("witness: a different tree of the size cosigned: %w", ErrProof)
	// ErrWitnessInconsistent: the consistency proof does not show that the
	// new tree extends the one cosigned last.
	ErrWitnessInconsistent = fmt.Errorf("witness: the new tree is not proven to extend the one cosigned: %w", ErrProof)
	// ErrWitnessStale: the proof starts from a size other than the one the
	// witness cosigned last; ask the log for a proof from that size.
	ErrWitnessStale = errors.New("witness: proof is not from the size the witness cosigned last")
	// ErrWitnessLogKey: the checkpoint is checked with another log key than
	// the one the witness used for that log before. A log whose operator
	// rotated its key is cosigned again only when the witness's operator
	// accepts the new key (CosignOptions.AcceptLogKeyChange).
	ErrWitnessLogKey = errors.New("witness: the log key is not the one this witness pinned for the log")
)

const (
	witnessKeyFile  = "witness.key"
	witnessLogsDir  = "logs"
	witnessLockFile = "lock"
)

// Witness is a cosigner with its own key and state directory.
type Witness struct {
	dir      string
	name     string
	pub      ed25519.PublicKey
	signer   note.Signer
	verifier note.Verifier
}

// InitWitness creates a witness in dir (created 0700 if missing) with a new
// Ed25519 key named name. It refuses a directory that already has a key.
func InitWitness(dir, name string) (*Witness, error) {
	if err := validKeyName(name); err != nil {
		return nil, fmt.Errorf("witness name: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, witnessLogsDir), 0o700); err != nil {
		return nil, fmt.Errorf("witness init: %w", err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, witnessKeyFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("witness init: %s already holds a witness key", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("witness init: %w", err)
	}
	if _, err := io.WriteString(f, cosignatureSignerKey(name, priv)+"\n"); err != nil {
		f.Close()
		return nil, fmt.Errorf("witness init: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("witness init: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("witness init: %w", err)
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return nil, fmt.Errorf("witness init: %w", err)
	}
	return newWitness(dir, name, priv)
}

// OpenWitness opens the witness kept in dir.
func OpenWitness(dir string) (*Witness, error) {
	b, err := os.ReadFile(filepath.Join(dir, witnessKeyFile))
	if err != nil {
		return nil, fmt.Errorf("open witness: %w (run amnesia witness init)", err)
	}
	name, priv, err := parseWitnessSignerKey(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("open witness: %s: %w", filepath.Join(dir, witnessKeyFile), err)
	}
	return newWitness(dir, name, priv)
}

// parseWitnessSignerKey reads "PRIVATE+KEY+<name>+<hash>+<base64(0x04||seed)>".
func parseWitnessSignerKey(s string) (string, ed25519.PrivateKey, error) {
	parts := strings.SplitN(s, "+", 5) // the base64 key may hold '+'
	if len(parts) != 5 || parts[0] != "PRIVATE" || parts[1] != "KEY" {
		return "", nil, fmt.Errorf("%w: not a PRIVATE+KEY+name+hash+key signer key", ErrMalformed)
	}
	name := parts[2]
	if err := validKeyName(name); err != nil {
		return "", nil, err
	}
	k, err := base64.StdEncoding.Strict().DecodeString(parts[4])
	if err != nil || len(k) != 1+ed25519.SeedSize || k[0] != algCosignatureV1 {
		return "", nil, fmt.Errorf("%w: key is not base64 of 0x04 and an Ed25519 seed", ErrMalformed)
	}
	priv := ed25519.NewKeyFromSeed(k[1:])
	if parts[3] != fmt.Sprintf("%08x", CosignatureKeyHash(name, priv.Public().(ed25519.PublicKey))) {
		return "", nil, fmt.Errorf("%w: key hash %s is not the key's", ErrMalformed, parts[3])
	}
	return name, priv, nil
}

func newWitness(dir, name string, priv ed25519.PrivateKey) (*Witness, error) {
	s, err := NewCosigner(name, priv)
	if err != nil {
		return nil, err
	}
	pub := priv.Public().(ed25519.PublicKey)
	vkey, err := CosignatureVerifierKey(name, pub)
	if err != nil {
		return nil, err
	}
	v, err := NewWitnessVerifier(vkey)
	if err != nil {
		return nil, err
	}
	if v.KeyHash() != s.KeyHash() {
		return nil, fmt.Errorf("witness: signer and verifier key hashes differ")
	}
	return &Witness{dir: dir, name: name, pub: pub, signer: s, verifier: v}, nil
}

// Name returns the witness's key name.
func (w *Witness) Name() string { return w.name }

// Verifier returns the note verifier of the witness's cosignatures.
func (w *Witness) Verifier() note.Verifier { return w.verifier }

// VerifierKey returns the witness's verifier key text, what verifiers are
// given (amnesia verify --witness-key).
func (w *Witness) VerifierKey() string {
	k, _ := CosignatureVerifierKey(w.name, w.pub)
	return k
}

// WitnessState is a witness's record of one log: the checkpoint it cosigned
// last, with its cosignature.
type WitnessState struct {
	Origin string `json:"origin"`
	Size   int64  `json:"size"`
	// RootHash is the tree's root, base64, as in the checkpoint.
	RootHash string `json:"root_hash"`
	// Checkpoint is the signed note as the witness returned it: the log's
	// signature and the witness's cosignature (and any others it carried).
	Checkpoint string `json:"checkpoint"`
	// CosignedAt is the cosignature's timestamp (RFC 3339, UTC).
	CosignedAt string `json:"cosigned_at"`
	// LogKey is the log's verifier key (text form) the checkpoint was
	// checked with: pinned, so that a later checkpoint checked with another
	// key is refused unless the witness's operator accepts the change.
	// Empty in states written before keys were pinned.
	LogKey string `json:"log_key,omitempty"`
}

// EncodeWitnessState gives a state its file form: indented JSON and a
// newline, the only form ParseWitnessState accepts.
func EncodeWitnessState(s *WitnessState) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ParseWitnessState parses a witness state file strictly: known members
// only, in the form EncodeWitnessState writes, a checkpoint note whose body
// is the origin, size and root hash the state names, and a cosignature
// time. It checks no signature (the caller has the keys).
func ParseWitnessState(data []byte) (*WitnessState, Checkpoint, error) {
	var s WitnessState
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, Checkpoint{}, fmt.Errorf("witness state: %w: %v", ErrMalformed, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, Checkpoint{}, fmt.Errorf("witness state: %w: data after the object", ErrMalformed)
	}
	if canon, err := EncodeWitnessState(&s); err != nil || !bytes.Equal(canon, data) {
		return nil, Checkpoint{}, fmt.Errorf("witness state: %w: not in its canonical form (edited?)", ErrMalformed)
	}
	body, _, ok := strings.Cut(s.Checkpoint, "\n\n")
	if !ok {
		return nil, Checkpoint{}, fmt.Errorf("witness state: %w: checkpoint is not a signed note", ErrMalformed)
	}
	c, err := ParseCheckpoint([]byte(body + "\n"))
	if err != nil {
		return nil, Checkpoint{}, fmt.Errorf("witness state: %w", err)
	}
	if c.Origin != s.Origin || c.Size != s.Size || base64.StdEncoding.EncodeToString(c.Hash[:]) != s.RootHash {
		return nil, Checkpoint{}, fmt.Errorf("witness state: %w: origin, size or root hash is not the checkpoint's", ErrMalformed)
	}
	if t, err := time.Parse(time.RFC3339, s.CosignedAt); err != nil || t.UTC().Format(time.RFC3339) != s.CosignedAt {
		return nil, Checkpoint{}, fmt.Errorf("witness state: %w: cosigned_at is not an RFC 3339 UTC time", ErrMalformed)
	}
	return &s, c, nil
}

// statePath is the state file of a log: named by a digest of its origin,
// which may hold any character a file name cannot.
func (w *Witness) statePath(origin string) string {
	sum := sha256.Sum256([]byte(origin))
	return filepath.Join(w.dir, witnessLogsDir, hex.EncodeToString(sum[:16])+".json")
}

// State returns the witness's record of the log origin; nil, nil if it has
// none. The record must carry a valid cosignature by this witness.
func (w *Witness) State(origin string) (*WitnessState, error) {
	s, _, err := w.state(origin)
	return s, err
}

func (w *Witness) state(origin string) (*WitnessState, Checkpoint, error) {
	data, err := os.ReadFile(w.statePath(origin))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Checkpoint{}, nil
	}
	if err != nil {
		return nil, Checkpoint{}, fmt.Errorf("witness state: %w", err)
	}
	s, c, err := ParseWitnessState(data)
	if err != nil {
		return nil, c, err
	}
	if s.Origin != origin {
		return nil, c, fmt.Errorf("witness state: %w: file of %q holds log %q", ErrMalformed, origin, s.Origin)
	}
	if _, err := note.Open([]byte(s.Checkpoint), note.VerifierList(w.verifier)); err != nil {
		return nil, c, fmt.Errorf("witness state of %s: the stored checkpoint does not carry this witness's cosignature: %v: %w", origin, err, ErrMalformed)
	}
	return s, c, nil
}

// CosignResult is what Cosign did.
type CosignResult struct {
	// Note is the checkpoint with the witness's cosignature line added
	// (after the lines it came with).
	Note []byte
	// Checkpoint is the cosigned tree.
	Checkpoint Checkpoint
	// Previous is the tree the witness had cosigned before, nil on first
	// sight of the log (trust on first use).
	Previous *Checkpoint
	// CosignedAt is the cosignature's timestamp.
	CosignedAt time.Time
	// KeyChanged: the log key differs from the one pinned before, and the
	// change was accepted (CosignOptions.AcceptLogKeyChange).
	KeyChanged bool
}

// FirstSeen reports whether the log was new to the witness: the checkpoint
// was accepted on trust, with nothing to check it against.
func (r *CosignResult) FirstSeen() bool { return r.Previous == nil }

// CosignOptions change what CosignReport accepts.
type CosignOptions struct {
	// AcceptLogKeyChange lets the witness cosign a checkpoint checked with
	// a log key other than the one it pinned for the log (after the log's
	// operator rotated its key, confirmed out of band); the new key is
	// pinned. Consistency with the last cosigned tree is still required.
	AcceptLogKeyChange bool
}

// Cosign checks newCheckpoint (a signed note) against the log key (its
// verifier key text, as `amnesia audit log-key` prints it) and the
// checkpoint the witness cosigned last for that log, and cosigns it: see
// CosignReport. It returns the note with the cosignature line added.
func (w *Witness) Cosign(logKey string, newCheckpoint []byte, from int64, proof []string) ([]byte, error) {
	r, err := w.CosignReport(logKey, newCheckpoint, from, proof, CosignOptions{})
	if err != nil {
		return nil, err
	}
	return r.Note, nil
}

// CosignReport opens newCheckpoint with the log key (verifier key text),
// which must be the key the witness pinned for that log when it cosigned it
// last (ErrWitnessLogKey; see CosignOptions). If the witness has
// cosigned a checkpoint of that log before, of size N, it requires from == N
// (ErrWitnessStale), a tree not smaller (ErrWitnessRollback), of the same
// root if of the same size (ErrWitnessFork), and a consistency proof from N
// to the new size (ErrWitnessInconsistent). A log the witness has not seen
// is accepted on trust (FirstSeen). On success it stores the cosigned
// checkpoint as the log's new state and returns it.
func (w *Witness) CosignReport(logKeyText string, newCheckpoint []byte, from int64, proof []string, opts CosignOptions) (*CosignResult, error) {
	logKey, err := note.NewVerifier(logKeyText)
	if err != nil {
		return nil, fmt.Errorf("witness: log key: %v: %w", err, ErrMalformed)
	}
	s, err := OpenCheckpoint(newCheckpoint, logKey)
	if err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	p, err := DecodeProof(proof)
	if err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	unlock, err := lockDir(filepath.Join(w.dir, witnessLockFile))
	if err != nil {
		return nil, fmt.Errorf("witness: lock: %w", err)
	}
	defer unlock()

	res := &CosignResult{Checkpoint: s.Checkpoint}
	old, oc, err := w.state(s.Origin)
	if err != nil {
		return nil, err
	}
	if old != nil && old.LogKey != "" && old.LogKey != logKeyText {
		if !opts.AcceptLogKeyChange {
			return nil, fmt.Errorf("%w: log %s was checked with %s, now %s; if its operator rotated the key (confirm out of band), cosign with the change accepted", ErrWitnessLogKey, s.Origin, old.LogKey, logKeyText)
		}
		res.KeyChanged = true
	}
	if old != nil {
		switch {
		case s.Size < oc.Size:
			return nil, fmt.Errorf("%w: log %s at %d leaves, the witness cosigned %d", ErrWitnessRollback, s.Origin, s.Size, oc.Size)
		case s.Size == oc.Size && s.Hash != oc.Hash:
			return nil, fmt.Errorf("%w: log %s has two trees of %d leaves (root %s cosigned, now %s)", ErrWitnessFork, s.Origin, s.Size,
				base64.StdEncoding.EncodeToString(oc.Hash[:]), base64.StdEncoding.EncodeToString(s.Hash[:]))
		case from != oc.Size:
			return nil, fmt.Errorf("%w: the proof is from %d leaves, the witness cosigned %d: ask the log for a proof --from %d", ErrWitnessStale, from, oc.Size, oc.Size)
		}
		if err := VerifyConsistency(oc, s.Checkpoint, p); err != nil {
			return nil, fmt.Errorf("%w: log %s, from %d to %d leaves: %v", ErrWitnessInconsistent, s.Origin, oc.Size, s.Size, err)
		}
		res.Previous = &oc
	}

	// Cosign: the log's signature and any others it came with, then ours
	// (replacing an earlier cosignature of ours on the same note).
	n := &note.Note{Text: s.Note.Text}
	for _, sig := range append(append([]note.Signature(nil), s.Note.Sigs...), s.Note.UnverifiedSigs...) {
		if sig.Name == w.name && sig.Hash == w.signer.KeyHash() {
			continue
		}
		n.Sigs = append(n.Sigs, sig)
	}
	cosigned, err := note.Sign(n, w.signer)
	if err != nil {
		return nil, fmt.Errorf("witness: cosign: %w", err)
	}
	check, err := note.Open(cosigned, note.VerifierList(logKey, w.verifier))
	if err != nil {
		return nil, fmt.Errorf("witness: own cosignature does not verify: %w", err)
	}
	var at time.Time
	for _, sig := range check.Sigs {
		if sig.Name == w.name && sig.Hash == w.verifier.KeyHash() {
			if at, err = CosignatureTime(sig); err != nil {
				return nil, err
			}
		}
	}
	st := &WitnessState{
		Origin: s.Origin, Size: s.Size, RootHash: base64.StdEncoding.EncodeToString(s.Hash[:]),
		Checkpoint: string(cosigned), CosignedAt: at.UTC().Format(time.RFC3339),
		LogKey: logKeyText,
	}
	if err := writeFileAtomic(w.statePath(s.Origin), mustEncode(st)); err != nil {
		return nil, fmt.Errorf("witness: save state: %w", err)
	}
	res.Note, res.CosignedAt = cosigned, at
	return res, nil
}

func mustEncode(s *WitnessState) []byte {
	b, err := EncodeWitnessState(s)
	if err != nil {
		panic(err) // strings and an integer always encode
	}
	return b
}

// writeFileAtomic writes data to path, mode 0600, creating its directory
// if needed, through atomicfile.WriteFile (temporary file, fsync, rename,
// directory fsync).
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data, 0o600)
}
