// Package transparency is amnesia's append-only audit log: a Merkle tree
// with RFC 6962 hashing (golang.org/x/mod/sumdb/tlog) whose leaves are the
// erasure events and certificates, kept in the ledger (a [Store]), and
// whose state is published as checkpoints in the C2SP tlog-checkpoint format,
// signed notes (golang.org/x/mod/sumdb/note, C2SP signed-note).
//
// Everything a verifier needs is in this package and needs no database: a
// checkpoint is parsed and its signature checked with [OpenCheckpoint], an
// inclusion proof with [VerifyInclusion], a consistency proof between two
// checkpoints with [VerifyConsistency].
//
// A checkpoint's signed body is, per C2SP tlog-checkpoint:
//
//	<origin>\n
//	<tree size, decimal>\n
//	<root hash, base64>\n
//
// followed by a blank line and one signature line per signer
// ("— <key name> <base64(key hash || signature)>"). The log's own key is an
// Ed25519 key named by the origin.
package transparency

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Verification errors; every error of the verify functions wraps one.
var (
	// ErrMalformed: a checkpoint, proof or leaf does not parse.
	ErrMalformed = errors.New("malformed")
	// ErrCheckpointSignature: the checkpoint is not signed by the log key.
	ErrCheckpointSignature = errors.New("checkpoint signature does not verify")
	// ErrProof: an inclusion or consistency proof does not verify.
	ErrProof = errors.New("proof does not verify")
)

// Checkpoint is a log state: origin, size and root hash.
type Checkpoint struct {
	Origin string
	Size   int64
	Hash   tlog.Hash
}

// Body returns the checkpoint's signed text.
func (c Checkpoint) Body() []byte {
	return fmt.Appendf(nil, "%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Hash[:]))
}

// ParseCheckpoint parses a checkpoint body (the signed text, without
// signatures). Extension lines after the root hash are refused: amnesia
// writes none.
func ParseCheckpoint(body []byte) (Checkpoint, error) {
	var c Checkpoint
	s := string(body)
	if !utf8.ValidString(s) || !strings.HasSuffix(s, "\n") {
		return c, fmt.Errorf("checkpoint: %w: not UTF-8 text ending in a newline", ErrMalformed)
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) != 3 {
		return c, fmt.Errorf("checkpoint: %w: %d lines, want origin, size, root hash", ErrMalformed, len(lines))
	}
	if err := checkOrigin(lines[0]); err != nil {
		return c, err
	}
	c.Origin = lines[0]
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != lines[1] {
		return c, fmt.Errorf("checkpoint: %w: tree size %q is not a canonical decimal", ErrMalformed, lines[1])
	}
	c.Size = n
	h, err := base64.StdEncoding.Strict().DecodeString(lines[2])
	if err != nil || len(h) != tlog.HashSize || base64.StdEncoding.EncodeToString(h) != lines[2] {
		return c, fmt.Errorf("checkpoint: %w: root hash is not 32 bytes of canonical base64", ErrMalformed)
	}
	copy(c.Hash[:], h)
	return c, nil
}

func checkOrigin(o string) error {
	if o == "" || strings.ContainsAny(o, " +\t\n") || !utf8.ValidString(o) {
		return fmt.Errorf("checkpoint: %w: origin %q must be non-empty, without spaces or '+'", ErrMalformed, o)
	}
	return nil
}

// keyHash is the C2SP signed-note key id of an Ed25519 key: the first four
// bytes of SHA-256(name || "\n" || 0x01 || public key).
func keyHash(name string, pub ed25519.PublicKey) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{'\n', 1})
	h.Write(pub)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// ed25519Signer is a note.Signer over an Ed25519 private key.
type ed25519Signer struct {
	name string
	hash uint32
	priv ed25519.PrivateKey
}

func (s *ed25519Signer) Name() string                    { return s.name }
func (s *ed25519Signer) KeyHash() uint32                 { return s.hash }
func (s *ed25519Signer) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.priv, msg), nil }

// NewSigner returns the note signer of the log key: priv, named origin.
func NewSigner(origin string, priv ed25519.PrivateKey) (note.Signer, error) {
	if err := checkOrigin(origin); err != nil {
		return nil, err
	}
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("log key: %d bytes, want an Ed25519 private key", len(priv))
	}
	pub := priv.Public().(ed25519.PublicKey)
	return &ed25519Signer{name: origin, hash: keyHash(origin, pub), priv: priv}, nil
}

// NewVerifier returns the note verifier of the log key pub, named origin.
func NewVerifier(origin string, pub ed25519.PublicKey) (note.Verifier, error) {
	if err := checkOrigin(origin); err != nil {
		return nil, err
	}
	if len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("log key: %d bytes, want an Ed25519 public key", len(pub))
	}
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		return nil, err
	}
	return note.NewVerifier(vkey)
}

// VerifierKey returns the text form of the log's verifier key
// ("<origin>+<key hash>+<base64 key>"), what a witness is given.
func VerifierKey(origin string, pub ed25519.PublicKey) (string, error) {
	if err := checkOrigin(origin); err != nil {
		return "", err
	}
	return note.NewEd25519VerifierKey(origin, pub)
}

// Sign signs c with the log signer and returns the signed note.
func Sign(c Checkpoint, signer note.Signer) ([]byte, error) {
	if signer.Name() != c.Origin {
		return nil, fmt.Errorf("sign checkpoint: signer %q is not the log %q", signer.Name(), c.Origin)
	}
	return note.Sign(&note.Note{Text: string(c.Body())}, signer)
}

// Signed is a checkpoint with the signatures it carries.
type Signed struct {
	Checkpoint
	Note *note.Note // the parsed note: verified and unverified signatures
	Raw  []byte     // the signed note as given
}

// OpenCheckpoint parses a signed checkpoint and checks that a log key
// (named as the checkpoint's first line, the origin) signed it. logKeys are
// the log's keys: the current one and, after a key rotation, the earlier
// ones, all under the same name; a signature by any one of them suffices.
// Signatures by other keys (witness cosignatures) are kept in
// Note.UnverifiedSigs for the caller to check with their own verifiers.
// The signature lines must pass CheckSignatureLines (canonical base64, no
// key twice), else the error wraps ErrMalformed.
func OpenCheckpoint(signed []byte, logKeys ...note.Verifier) (*Signed, error) {
	if len(logKeys) == 0 {
		return nil, fmt.Errorf("checkpoint: no log key given: %w", ErrCheckpointSignature)
	}
	name := logKeys[0].Name()
	for _, k := range logKeys[1:] {
		if k.Name() != name {
			return nil, fmt.Errorf("checkpoint: log keys named %q and %q: one log has one name", name, k.Name())
		}
	}
	if err := CheckSignatureLines(signed); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	n, err := note.Open(signed, note.VerifierList(logKeys...))
	if err != nil {
		var unk *note.UnverifiedNoteError
		switch {
		case errors.As(err, &unk):
			return nil, fmt.Errorf("checkpoint: no signature by the log key %s: %w", name, ErrCheckpointSignature)
		default:
			var inv *note.InvalidSignatureError
			if errors.As(err, &inv) {
				return nil, fmt.Errorf("checkpoint: %v: %w", err, ErrCheckpointSignature)
			}
			return nil, fmt.Errorf("checkpoint: %w: %v", ErrMalformed, err)
		}
	}
	c, err := ParseCheckpoint([]byte(n.Text))
	if err != nil {
		return nil, err
	}
	if c.Origin != name {
		return nil, fmt.Errorf("checkpoint: origin %q is not the log key's name %q: %w", c.Origin, name, ErrCheckpointSignature)
	}
	return &Signed{Checkpoint: c, Note: n, Raw: append([]byte(nil), signed...)}, nil
}

// sigPrefix starts every signature line of a signed note: an em dash and a
// space.
const sigPrefix = "\u2014 "

// CheckSignatureLines checks the form of a signed note's signature lines
// more strictly than note.Open does, so that a signed checkpoint has one
// written form: every line is "— <key name> <base64>" where the base64 is
// the canonical standard encoding (padded, unused bits zero, no other
// characters) of at least a 4-byte key hash and a signature, and no two
// lines carry the same key (name and key hash). note.Open decodes base64
// leniently and skips, without checking it, every line after the first by
// a key it knows, so without this check a checkpoint could be re-written
// (other padding bits, a repeated or a junk line after the good one) and
// still open. It checks no signature. Errors wrap ErrMalformed and name
// the key, never the signature.
func CheckSignatureLines(signed []byte) error {
	split := bytes.LastIndex(signed, []byte("\n\n"))
	if split < 0 {
		return fmt.Errorf("%w: not a signed note (no blank line before the signatures)", ErrMalformed)
	}
	sigs := string(signed[split+2:])
	if sigs == "" || !strings.HasSuffix(sigs, "\n") {
		return fmt.Errorf("%w: the signature lines do not end in a newline", ErrMalformed)
	}
	type key struct {
		name string
		hash uint32
	}
	seen := map[key]bool{}
	for i, line := range strings.Split(strings.TrimSuffix(sigs, "\n"), "\n") {
		rest, ok := strings.CutPrefix(line, sigPrefix)
		if !ok {
			return fmt.Errorf("%w: signature line %d does not start with \"\u2014 \"", ErrMalformed, i+1)
		}
		name, b64, ok := strings.Cut(rest, " ")
		if !ok || name == "" {
			return fmt.Errorf("%w: signature line %d is not a key name and a signature", ErrMalformed, i+1)
		}
		b, err := base64.StdEncoding.Strict().DecodeString(b64)
		if err != nil || base64.StdEncoding.EncodeToString(b) != b64 {
			return fmt.Errorf("%w: the signature by %q (line %d) is not canonical base64", ErrMalformed, name, i+1)
		}
		if len(b) < 5 {
			return fmt.Errorf("%w: the signature by %q (line %d) is too short for a key hash and a signature", ErrMalformed, name, i+1)
		}
		k := key{name, binary.BigEndian.Uint32(b[:4])}
		if seen[k] {
			return fmt.Errorf("%w: key %s+%08x signs the note twice (lines with the same key must not repeat)", ErrMalformed, name, k.hash)
		}
		seen[k] = true
	}
	return nil
}

// VerifyInclusion checks that leaf is at index in the tree of cp, given the
// inclusion proof.
func VerifyInclusion(leaf []byte, index int64, proof tlog.RecordProof, cp Checkpoint) error {
	if index < 0 || index >= cp.Size {
		return fmt.Errorf("inclusion: %w: index %d outside a tree of %d leaves", ErrProof, index, cp.Size)
	}
	if err := tlog.CheckRecord(proof, cp.Size, cp.Hash, index, tlog.RecordHash(leaf)); err != nil {
		return fmt.Errorf("inclusion of leaf %d in tree %d: %w", index, cp.Size, ErrProof)
	}
	return nil
}

// VerifyConsistency checks that the tree of newer extends the tree of older,
// given the consistency proof: the log was only appended to in between.
func VerifyConsistency(older, newer Checkpoint, proof tlog.TreeProof) error {
	if older.Origin != newer.Origin {
		return fmt.Errorf("consistency: %w: checkpoints of two logs (%q, %q)", ErrProof, older.Origin, newer.Origin)
	}
	if older.Size > newer.Size {
		return fmt.Errorf("consistency: %w: the log shrank from %d to %d leaves", ErrProof, older.Size, newer.Size)
	}
	if older.Size == newer.Size {
		if older.Hash != newer.Hash {
			return fmt.Errorf("consistency: %w: two different trees of %d leaves", ErrProof, older.Size)
		}
		return nil
	}
	if older.Size == 0 {
		return nil
	}
	if err := tlog.CheckTree(proof, newer.Size, newer.Hash, older.Size, older.Hash); err != nil {
		return fmt.Errorf("consistency of tree %d with tree %d: %w", older.Size, newer.Size, ErrProof)
	}
	return nil
}

// EncodeProof and DecodeProof give proofs their text form: base64 hashes.
func EncodeProof(p []tlog.Hash) []string {
	out := make([]string, len(p))
	for i, h := range p {
		out[i] = base64.StdEncoding.EncodeToString(h[:])
	}
	return out
}

// DecodeProof parses the text form of a proof. At most 64 hashes: a tree of
// up to 2^63 leaves needs no more.
func DecodeProof(s []string) ([]tlog.Hash, error) {
	if len(s) > 64 {
		return nil, fmt.Errorf("proof: %w: %d hashes", ErrMalformed, len(s))
	}
	out := make([]tlog.Hash, len(s))
	for i, x := range s {
		b, err := base64.StdEncoding.Strict().DecodeString(x)
		if err != nil || len(b) != tlog.HashSize || !bytes.Equal([]byte(base64.StdEncoding.EncodeToString(b)), []byte(x)) {
			return nil, fmt.Errorf("proof: %w: hash %d is not 32 bytes of canonical base64", ErrMalformed, i)
		}
		copy(out[i][:], b)
	}
	return out, nil
}
