package transparency

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Leaf texts. Each is a few lines of ids and digests, never personal data;
// the first line names the kind and its version.
const (
	eventLeafV1       = "amnesia/event/v1"
	certificateLeafV1 = "amnesia/certificate/v1"
	anchorLeafV1      = "amnesia/anchor/v1"
)

func leafText(fields ...string) ([]byte, error) {
	for _, f := range fields {
		if f == "" || strings.ContainsAny(f, "\n\r") {
			return nil, fmt.Errorf("leaf: %w: empty field or a field with a line break", ErrMalformed)
		}
	}
	return []byte(strings.Join(fields, "\n") + "\n"), nil
}

// EventLeaf is the leaf of an erasure event: its kind ("erasure-started",
// …), the erasure id and a digest of what the event is about (the trace id).
func EventLeaf(kind, erasure, digest string) ([]byte, error) {
	return leafText(eventLeafV1, kind, erasure, digest)
}

// CertificateLeaf is the leaf of a certificate: its id and the SHA-256 (hex)
// of the signed DSSE payload, so a verifier recomputes it from the
// certificate alone.
func CertificateLeaf(certificateID string, payload []byte) ([]byte, error) {
	sum := sha256.Sum256(payload)
	return leafText(certificateLeafV1, certificateID, hex.EncodeToString(sum[:]))
}

// AnchorLeaf is the leaf recording an RFC 3161 timestamp token obtained over
// the checkpoint of a tree of size leaves: the token's SHA-256 (hex).
func AnchorLeaf(size int64, token []byte) ([]byte, error) {
	sum := sha256.Sum256(token)
	return leafText(anchorLeafV1, fmt.Sprint(size), hex.EncodeToString(sum[:]))
}

// LeafKind returns the kind line of a leaf ("amnesia/event/v1", …).
func LeafKind(leaf []byte) string {
	k, _, _ := strings.Cut(string(leaf), "\n")
	return k
}

// Log is the writer's view of the log: it appends leaves, signs checkpoints
// with the log key and serves proofs. Storage is the ledger's.
type Log struct {
	store     Store
	signer    note.Signer
	verifier  note.Verifier   // the current key's
	vkey      string          // its text form (what a witness is given)
	verifiers []note.Verifier // the current key's, then the earlier keys'
	origin    string
	onSign    func(context.Context, *Signed) error
}

// ErrShrunk: the log holds fewer leaves than a checkpoint it signed before;
// its tail was dropped, or the ledger was replaced by an older copy.
var ErrShrunk = errors.New("the log is smaller than its last signed checkpoint")

// OnCheckpoint sets f to be called with every checkpoint Checkpoint returns
// (newly signed or stored), before it is returned; an error from f is
// Checkpoint's error. amnesia uses it to keep a witness of the log's last
// known state outside the ledger.
func (l *Log) OnCheckpoint(f func(context.Context, *Signed) error) { l.onSign = f }

// DefaultOrigin is the origin a log takes on first use when none is
// configured: unique to the key that first signed it.
func DefaultOrigin(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return "amnesia.local/log/" + hex.EncodeToString(sum[:8])
}

// Open returns the log kept in store, signed by priv. Its origin is fixed on
// first use (proposed, or DefaultOrigin when empty) and read back after.
// earlier are the public keys that signed the log before priv (a key
// rotation): checkpoints they signed still verify, new ones are signed by
// priv only. Keys equal to priv's are ignored.
func Open(ctx context.Context, store Store, priv ed25519.PrivateKey, proposed string, earlier ...ed25519.PublicKey) (*Log, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("open log: %d-byte key, want an Ed25519 private key", len(priv))
	}
	pub := priv.Public().(ed25519.PublicKey)
	if proposed == "" {
		proposed = DefaultOrigin(pub)
	}
	if err := checkOrigin(proposed); err != nil {
		return nil, err
	}
	origin, err := store.LogOrigin(ctx, proposed)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	s, err := NewSigner(origin, priv)
	if err != nil {
		return nil, err
	}
	v, err := NewVerifier(origin, pub)
	if err != nil {
		return nil, err
	}
	vs := []note.Verifier{v}
	seen := map[string]bool{string(pub): true}
	for _, k := range earlier {
		if seen[string(k)] {
			continue
		}
		seen[string(k)] = true
		ev, err := NewVerifier(origin, k)
		if err != nil {
			return nil, fmt.Errorf("open log: earlier key: %w", err)
		}
		for _, o := range vs {
			if o.KeyHash() == ev.KeyHash() {
				return nil, fmt.Errorf("open log: two keys share the signed-note key hash %08x", ev.KeyHash())
			}
		}
		vs = append(vs, ev)
	}
	vkey, err := VerifierKey(origin, pub)
	if err != nil {
		return nil, err
	}
	return &Log{store: store, signer: s, verifier: v, vkey: vkey, verifiers: vs, origin: origin}, nil
}

// Origin returns the log's origin.
func (l *Log) Origin() string { return l.origin }

// Verifier returns the note verifier of the log's current key, the one
// that signs new checkpoints.
func (l *Log) Verifier() note.Verifier { return l.verifier }

// VerifierKey returns the current key's verifier key in its text form
// (<origin>+<key hash>+<base64 key>), what `amnesia audit log-key` prints
// and a witness is given.
func (l *Log) VerifierKey() string { return l.vkey }

// Verifiers returns the note verifiers of every key the log trusts: the
// current key's first, then those of the earlier keys given to Open.
func (l *Log) Verifiers() []note.Verifier { return append([]note.Verifier(nil), l.verifiers...) }

// Append appends leaf (idempotently: an equal leaf keeps its index).
func (l *Log) Append(ctx context.Context, leaf []byte) (int64, error) {
	i, _, err := l.store.LogAppend(ctx, leaf)
	if err != nil {
		return 0, fmt.Errorf("log append: %w", err)
	}
	return i, nil
}

func (l *Log) reader(ctx context.Context) tlog.HashReader {
	return tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) { return l.store.ReadHashes(ctx, ids) })
}

// Checkpoint signs and stores a checkpoint of the log as it is now, or
// returns the one stored for its size, and returns it.
//
// It never signs a tree smaller than the newest checkpoint stored: that is
// ErrShrunk.
func (l *Log) Checkpoint(ctx context.Context) (*Signed, error) {
	cp, err := l.checkpoint(ctx)
	if err != nil || l.onSign == nil {
		return cp, err
	}
	if err := l.onSign(ctx, cp); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return cp, nil
}

func (l *Log) checkpoint(ctx context.Context) (*Signed, error) {
	// The newest checkpoint is read before the size: leaves are stored
	// before any checkpoint over them, so a healthy log is never smaller
	// than a checkpoint read earlier, however many processes append.
	latest, err := l.store.Checkpoint(ctx, -1)
	if err != nil && !errors.Is(err, ErrNoCheckpoint) {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	n, err := l.store.LogSize(ctx)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	raw, save, err := l.signAt(ctx, l.store, latest, n)
	if err != nil {
		return nil, err
	}
	if save {
		if err := l.store.SaveCheckpoint(ctx, n, raw); err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
	}
	return OpenCheckpoint(raw, l.verifiers...)
}

// signAt returns the checkpoint of the log's first n leaves: the one r
// holds for n (save false), or one signed now (save true), never one
// smaller than latest, the newest stored checkpoint (nil when none), read
// before n.
func (l *Log) signAt(ctx context.Context, r CheckpointReader, latest []byte, n int64) (raw []byte, save bool, err error) {
	if latest != nil {
		c, err := parseSignedBody(latest)
		if err != nil {
			return nil, false, fmt.Errorf("checkpoint: the newest stored checkpoint: %w", err)
		}
		if c.Size > n {
			return nil, false, fmt.Errorf("checkpoint: %w: it holds %d leaves, a checkpoint of %d leaves was signed; refusing to sign a smaller tree (restore the ledger from a backup: docs/ledger.md)", ErrShrunk, n, c.Size)
		}
	}
	if raw, err := r.Checkpoint(ctx, n); err == nil {
		return raw, false, nil
	} else if !errors.Is(err, ErrNoCheckpoint) {
		return nil, false, fmt.Errorf("checkpoint: %w", err)
	}
	h, err := tlog.TreeHash(n, tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) { return r.ReadHashes(ctx, ids) }))
	if err != nil {
		return nil, false, fmt.Errorf("checkpoint: tree hash of %d leaves: %w", n, err)
	}
	raw, err = Sign(Checkpoint{Origin: l.origin, Size: n, Hash: h}, l.signer)
	if err != nil {
		return nil, false, err
	}
	return raw, true, nil
}

// AppendCheckpoint appends leaf (idempotently, as Append) and returns its
// index with a checkpoint of the log that holds it, as Checkpoint would
// right after: with a store that is an AppendCheckpointer, both are one
// write to the store (one commit) instead of two.
func (l *Log) AppendCheckpoint(ctx context.Context, leaf []byte) (int64, *Signed, error) {
	ac, ok := l.store.(AppendCheckpointer)
	if !ok {
		idx, err := l.Append(ctx, leaf)
		if err != nil {
			return 0, nil, err
		}
		cp, err := l.Checkpoint(ctx)
		if err != nil {
			return 0, nil, err
		}
		return idx, cp, nil
	}
	idx, raw, err := ac.LogAppendCheckpoint(ctx, leaf, func(r CheckpointReader, n int64) ([]byte, bool, error) {
		latest, err := r.Checkpoint(ctx, -1)
		if err != nil && !errors.Is(err, ErrNoCheckpoint) {
			return nil, false, fmt.Errorf("checkpoint: %w", err)
		}
		return l.signAt(ctx, r, latest, n)
	})
	if err != nil {
		return 0, nil, fmt.Errorf("log append: %w", err)
	}
	cp, err := OpenCheckpoint(raw, l.verifiers...)
	if err != nil {
		return 0, nil, err
	}
	if l.onSign != nil {
		if err := l.onSign(ctx, cp); err != nil {
			return 0, nil, fmt.Errorf("checkpoint: %w", err)
		}
	}
	return idx, cp, nil
}

// Latest returns the newest stored checkpoint without signing a new one;
// ErrNoCheckpoint if there is none.
func (l *Log) Latest(ctx context.Context) (*Signed, error) {
	raw, err := l.store.Checkpoint(ctx, -1)
	if err != nil {
		return nil, err
	}
	return OpenCheckpoint(raw, l.verifiers...)
}

// AddSignatures stores signed, a checkpoint the log already signed with more
// signature lines (witness cosignatures), in place of the stored one. The
// body and the log's own signature must be the stored ones.
func (l *Log) AddSignatures(ctx context.Context, signed []byte) (*Signed, error) {
	s, err := OpenCheckpoint(signed, l.verifiers...)
	if err != nil {
		return nil, err
	}
	// Read, merge and write in one step: two witnesses' cosignatures stored
	// at once are both kept (the store serialises the update).
	var merged []byte
	err = l.store.UpdateCheckpoint(ctx, s.Size, func(raw []byte) ([]byte, error) {
		old, err := OpenCheckpoint(raw, l.verifiers...)
		if err != nil {
			return nil, fmt.Errorf("add signatures: stored checkpoint: %w", err)
		}
		if old.Note.Text != s.Note.Text {
			return nil, fmt.Errorf("add signatures: %w: the checkpoint of size %d differs from the log's", ErrProof, s.Size)
		}
		// Keep every signature line the stored one had, then add the new ones.
		merged = mergeSignatures(raw, signed)
		if _, err := OpenCheckpoint(merged, l.verifiers...); err != nil {
			return nil, err
		}
		return merged, nil
	})
	if errors.Is(err, ErrNoCheckpoint) {
		return nil, fmt.Errorf("add signatures: the log has no checkpoint of size %d: %w", s.Size, err)
	}
	if err != nil {
		return nil, err
	}
	return OpenCheckpoint(merged, l.verifiers...)
}

// mergeSignatures returns a with the signature lines of b by keys a has no
// line of appended. A key's line already in a is kept (a witness that
// cosigned the same checkpoint twice, at two times, keeps its first
// cosignature): a signed note carries at most one line per key
// (CheckSignatureLines).
func mergeSignatures(a, b []byte) []byte {
	have := map[string]bool{}
	for _, line := range sigLines(a) {
		have[lineKey(line)] = true
	}
	out := append([]byte(nil), a...)
	for _, line := range sigLines(b) {
		if k := lineKey(line); !have[k] {
			out = append(out, line+"\n"...)
			have[k] = true
		}
	}
	return out
}

// lineKey names the key of a signature line: its key name and its 4-byte
// key hash. A line that does not parse is its own key.
func lineKey(line string) string {
	rest, ok := strings.CutPrefix(line, sigPrefix)
	if !ok {
		return line
	}
	name, b64, _ := strings.Cut(rest, " ")
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(b) < 4 {
		return line
	}
	return name + " " + string(b[:4])
}

func sigLines(signed []byte) []string {
	_, sigs, ok := strings.Cut(string(signed), "\n\n")
	if !ok {
		return nil
	}
	return strings.Split(strings.TrimSuffix(sigs, "\n"), "\n")
}

// InclusionProof proves leaf index in the tree of size leaves.
func (l *Log) InclusionProof(ctx context.Context, index, size int64) (tlog.RecordProof, error) {
	p, err := tlog.ProveRecord(size, index, l.reader(ctx))
	if err != nil {
		return nil, fmt.Errorf("inclusion proof of %d in %d: %w", index, size, err)
	}
	return p, nil
}

// ConsistencyProof proves that the tree of size newer extends that of older.
func (l *Log) ConsistencyProof(ctx context.Context, older, newer int64) (tlog.TreeProof, error) {
	if older == 0 || older == newer {
		return tlog.TreeProof{}, nil
	}
	p, err := tlog.ProveTree(newer, older, l.reader(ctx))
	if err != nil {
		return nil, fmt.Errorf("consistency proof of %d in %d: %w", older, newer, err)
	}
	return p, nil
}

// Leaves returns leaves [from, to).
func (l *Log) Leaves(ctx context.Context, from, to int64) ([][]byte, error) {
	var out [][]byte
	for i := from; i < to; {
		end := min(to, i+4096)
		ls, err := l.store.LogLeaves(ctx, i, end)
		if err != nil {
			return nil, err
		}
		out = append(out, ls...)
		i = end
	}
	return out, nil
}

// Size returns the number of leaves.
func (l *Log) Size(ctx context.Context) (int64, error) { return l.store.LogSize(ctx) }

// Anchor records an RFC 3161 token obtained over the signed body of the
// checkpoint of size: the token is stored with the checkpoint and its
// digest becomes a leaf (AnchorLeaf). It returns the leaf's index.
func (l *Log) Anchor(ctx context.Context, size int64, token []byte) (int64, error) {
	if _, err := l.store.Checkpoint(ctx, size); err != nil {
		return 0, fmt.Errorf("anchor: no checkpoint of size %d: %w", size, err)
	}
	if err := l.store.SaveTimestamp(ctx, size, token); err != nil {
		return 0, fmt.Errorf("anchor: %w", err)
	}
	leaf, err := AnchorLeaf(size, token)
	if err != nil {
		return 0, err
	}
	return l.Append(ctx, leaf)
}

// Timestamp returns the token recorded for the checkpoint of size, or nil.
func (l *Log) Timestamp(ctx context.Context, size int64) ([]byte, error) {
	t, err := l.store.Timestamp(ctx, size)
	if errors.Is(err, ErrNoCheckpoint) {
		return nil, nil
	}
	return t, err
}

// parseSignedBody parses the body of a stored signed checkpoint without
// checking its signatures.
func parseSignedBody(signed []byte) (Checkpoint, error) {
	i := strings.Index(string(signed), "\n\n")
	if i < 0 {
		return Checkpoint{}, fmt.Errorf("checkpoint: %w: no signature block", ErrMalformed)
	}
	return ParseCheckpoint(signed[:i+1])
}
