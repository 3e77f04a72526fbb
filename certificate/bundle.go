package certificate

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/amnesia-dev/amnesia/transparency"
)

// BundleMediaType names the certificate file format: the signed DSSE
// envelope with the proof that it is in the transparency log.
const BundleMediaType = "application/vnd.amnesia.certificate.v1+json"

// Bundle is a certificate as amnesia publishes it.
type Bundle struct {
	MediaType    string          `json:"mediaType"`
	DSSEEnvelope json.RawMessage `json:"dsseEnvelope"`
	LogEntry     *LogEntry       `json:"logEntry"`
}

// LogEntry places the certificate in the transparency log.
type LogEntry struct {
	// LogIndex is the index of the certificate's leaf
	// (transparency.CertificateLeaf of its id and payload).
	LogIndex int64 `json:"logIndex"`
	// InclusionProof proves the leaf in the tree of Checkpoint: base64 hashes.
	InclusionProof []string `json:"inclusionProof"`
	// Checkpoint is the signed checkpoint (C2SP signed note) the proof is
	// against, with any witness cosignatures.
	Checkpoint string `json:"checkpoint"`
	// Timestamp is an RFC 3161 timestamp token (DER, base64) over the
	// checkpoint's signed body, when the log was anchored at a TSA.
	Timestamp string `json:"timestamp,omitempty"`
}

// More verification errors, for bundles.
var (
	// ErrNotLogged: the file is a bare envelope, with no log proof.
	ErrNotLogged = errors.New("certificate carries no transparency log proof")
	// ErrInclusion: the inclusion proof does not place the certificate in
	// the checkpoint's tree.
	ErrInclusion = errors.New("inclusion proof does not verify")
	// ErrCheckpoint: the checkpoint is malformed or not signed by a trusted
	// key under the log's name.
	ErrCheckpoint = errors.New("checkpoint does not verify")
	// ErrTimestamp: the timestamp token does not verify.
	ErrTimestamp = errors.New("timestamp does not verify")
	// ErrWitnesses: fewer valid witness cosignatures than required.
	ErrWitnesses = errors.New("not enough witness cosignatures")
	// ErrKeyRetired: the certificate was issued after its key was retired.
	ErrKeyRetired = errors.New("signing key retired")
)

// EncodeBundle formats b for a file: two-space indent, no HTML escaping,
// trailing newline. It is the only form VerifyBundle accepts, so that any
// change to a published file is detected.
func EncodeBundle(b *Bundle) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(b); err != nil {
		return nil, fmt.Errorf("encode bundle: %w", err)
	}
	return buf.Bytes(), nil
}

// IsBundle reports whether data looks like a bundle rather than a bare
// envelope (it has a mediaType member).
func IsBundle(data []byte) bool {
	var probe struct {
		MediaType *string `json:"mediaType"`
	}
	return json.Unmarshal(data, &probe) == nil && probe.MediaType != nil
}

// DecodeBundle parses a bundle strictly: known members only, the media type
// of v1, the canonical encoding of EncodeBundle. Errors wrap ErrMalformed.
func DecodeBundle(data []byte) (*Bundle, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var b Bundle
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("bundle is not a JSON object of the v1 form: %w", ErrMalformed)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the bundle: %w", ErrMalformed)
	}
	if b.MediaType != BundleMediaType {
		return nil, fmt.Errorf("bundle mediaType is not %s: %w", BundleMediaType, ErrMalformed)
	}
	if len(b.DSSEEnvelope) == 0 || b.LogEntry == nil {
		return nil, fmt.Errorf("bundle lacks dsseEnvelope or logEntry: %w", ErrMalformed)
	}
	canon, err := EncodeBundle(&b)
	if err != nil || !bytes.Equal(canon, data) {
		return nil, fmt.Errorf("bundle is not in its canonical encoding (was it edited?): %w", ErrMalformed)
	}
	// The envelope too: encoding/json matches member names without regard
	// to case, so only a re-encoding shows "PayloadType" for "payloadType".
	env, _, err := decodeEnvelope(b.DSSEEnvelope)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrMalformed)
	}
	// In a bundle, base64 is the standard alphabet only (amnesia writes
	// it; DSSE also allows URL-safe, a second spelling of the same bytes).
	if _, err := decodeStdBase64(env.Payload); err != nil {
		return nil, fmt.Errorf("the envelope's payload is not canonical standard base64: %w", ErrMalformed)
	}
	if _, err := decodeStdBase64(env.Signatures[0].Sig); err != nil {
		return nil, fmt.Errorf("the envelope's signature is not canonical standard base64: %w", ErrMalformed)
	}
	envCanon, err := encodeEnvelope(env)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrMalformed)
	}
	var a, c bytes.Buffer
	if json.Compact(&a, b.DSSEEnvelope) != nil || json.Compact(&c, envCanon) != nil || !bytes.Equal(a.Bytes(), c.Bytes()) {
		return nil, fmt.Errorf("the bundle's envelope is not in its canonical encoding (was it edited?): %w", ErrMalformed)
	}
	return &b, nil
}

// TrustedKey is a certificate and log key the verifier trusts, from the
// time it was created until it was retired (zero: not retired).
type TrustedKey struct {
	Public  ed25519.PublicKey
	Retired time.Time
}

// VerifyOptions say what VerifyBundle requires beyond the signature.
type VerifyOptions struct {
	// Keys: the signing keys to trust; the certificate's key id picks one.
	Keys []TrustedKey
	// Witnesses and MinWitnesses: at least MinWitnesses of these verifiers
	// (C2SP cosignature keys) must have cosigned the checkpoint.
	Witnesses    []note.Verifier
	MinWitnesses int
	// Timestamp verifies an RFC 3161 token over message and returns its
	// time. When nil a token present in the bundle is not checked, and the
	// result says so.
	Timestamp func(token, message []byte) (time.Time, error)
	// RequireTimestamp fails a bundle without a token.
	RequireTimestamp bool
	// Origin, when set, pins the log: the checkpoint must name this origin.
	// Without it any trusted key's log is accepted, so an operator could
	// keep a second log for some certificates (a split view that witnesses
	// of the first log never see).
	Origin string
	// TimestampTrusted says that Timestamp checks the TSA's chain to roots
	// the verifier trusts. Then a certificate of a retired key must also
	// be timestamped before the retirement: its issued_at alone is the key
	// holder's word.
	TimestampTrusted bool
}

// Checked is what VerifyBundle established.
type Checked struct {
	Statement  *Statement
	KeyID      string
	LogIndex   int64
	Checkpoint transparency.Checkpoint
	// Witnesses names the witness keys whose cosignatures verified.
	Witnesses []string
	// Unchecked counts signature lines on the checkpoint by keys not given.
	Unchecked int
	// Timestamp is the token's time when one was checked; TimestampNote
	// says why none was.
	Timestamp     time.Time
	TimestampNote string
}

// VerifyBundle checks a published certificate offline, in this order: the
// bundle's form; the DSSE signature by a trusted key and the schema
// (Verify); the key's retirement; the checkpoint's signature by a trusted
// key named by the log's origin; the inclusion proof of the certificate's
// leaf; witness cosignatures; the timestamp. Each failure wraps its own
// error: ErrMalformed, ErrWrongKey, ErrSignature, ErrSchema, ErrKeyRetired,
// ErrCheckpoint, ErrInclusion, ErrWitnesses, ErrTimestamp.
func VerifyBundle(ctx context.Context, data []byte, o VerifyOptions) (*Checked, error) {
	if !IsBundle(data) {
		if _, err := decodeEnvelopeOnly(data); err != nil {
			return nil, fmt.Errorf("verify certificate: %w: %w", err, ErrMalformed)
		}
		return nil, fmt.Errorf("verify certificate: a bare DSSE envelope: %w", ErrNotLogged)
	}
	b, err := DecodeBundle(data)
	if err != nil {
		return nil, fmt.Errorf("verify certificate: %w", err)
	}
	if len(o.Keys) == 0 {
		return nil, errors.New("verify certificate: no trusted key given")
	}
	env, payload, err := decodeEnvelope(b.DSSEEnvelope)
	if err != nil {
		return nil, fmt.Errorf("verify certificate: %w: %w", err, ErrMalformed)
	}
	// The trusted key the envelope's one signature names (decodeEnvelope
	// admits exactly one; the schema check then requires predicate.key_id
	// to name the same key).
	var key *TrustedKey
	for i := range o.Keys {
		if env.Signatures[0].KeyID == KeyID(o.Keys[i].Public) {
			key = &o.Keys[i]
			break
		}
	}
	if key == nil {
		return nil, fmt.Errorf("verify certificate: no signature is by a trusted key: %w", ErrWrongKey)
	}
	st, err := Verify(ctx, b.DSSEEnvelope, key.Public)
	if err != nil {
		return nil, err
	}
	v := &Checked{Statement: st, KeyID: KeyID(key.Public), LogIndex: b.LogEntry.LogIndex}
	if !key.Retired.IsZero() {
		issued, err := time.Parse(time.RFC3339, st.Predicate.IssuedAt)
		if err != nil || !issued.Before(key.Retired) {
			return nil, fmt.Errorf("verify certificate: issued %s by key %s, retired from %s: %w", st.Predicate.IssuedAt, v.KeyID, key.Retired.UTC().Format(time.RFC3339), ErrKeyRetired)
		}
	}

	// The checkpoint, signed under the log's origin by a trusted key.
	cpText := []byte(b.LogEntry.Checkpoint)
	body, _, ok := bytes.Cut(cpText, []byte("\n\n"))
	if !ok {
		return nil, fmt.Errorf("verify certificate: checkpoint is not a signed note: %w", ErrCheckpoint)
	}
	// One written form: canonical base64, no key's line twice (note.Open
	// would skip a second line by a key unchecked).
	if err := transparency.CheckSignatureLines(cpText); err != nil {
		return nil, fmt.Errorf("verify certificate: checkpoint: %v: %w", err, ErrCheckpoint)
	}
	cp0, err := transparency.ParseCheckpoint(append(body, '\n'))
	if err != nil {
		return nil, fmt.Errorf("verify certificate: %v: %w", err, ErrCheckpoint)
	}
	if o.Origin != "" && cp0.Origin != o.Origin {
		return nil, fmt.Errorf("verify certificate: the checkpoint is of log %q, not the pinned %q: %w", cp0.Origin, o.Origin, ErrCheckpoint)
	}
	var logKeys []note.Verifier
	for _, k := range o.Keys {
		lv, err := transparency.NewVerifier(cp0.Origin, k.Public)
		if err != nil {
			return nil, fmt.Errorf("verify certificate: %v: %w", err, ErrCheckpoint)
		}
		logKeys = append(logKeys, lv)
	}
	// A witness key given twice counts once (and would make note.Open's key
	// lookup ambiguous).
	var witnesses []note.Verifier
	for _, w := range o.Witnesses {
		dup := false
		for _, x := range witnesses {
			dup = dup || (x.Name() == w.Name() && x.KeyHash() == w.KeyHash())
		}
		if !dup {
			witnesses = append(witnesses, w)
		}
	}
	known := append(append([]note.Verifier(nil), logKeys...), witnesses...)
	n, err := note.Open(cpText, note.VerifierList(known...))
	if err != nil {
		return nil, fmt.Errorf("verify certificate: checkpoint: %v: %w", err, ErrCheckpoint)
	}
	if n.Text != string(cp0.Body()) {
		return nil, fmt.Errorf("verify certificate: the checkpoint's signed text is not its body: %w", ErrCheckpoint)
	}
	byLog := false
	for _, s := range n.Sigs {
		for _, lk := range logKeys {
			if s.Name == lk.Name() && s.Hash == lk.KeyHash() {
				byLog = true
			}
		}
	}
	if !byLog {
		return nil, fmt.Errorf("verify certificate: checkpoint is not signed by a trusted key as %s: %w", cp0.Origin, ErrCheckpoint)
	}
	v.Checkpoint = cp0
	v.Unchecked = len(n.UnverifiedSigs)

	// The certificate's leaf in that tree.
	proof, err := transparency.DecodeProof(b.LogEntry.InclusionProof)
	if err != nil {
		return nil, fmt.Errorf("verify certificate: %v: %w", err, ErrInclusion)
	}
	leaf, err := transparency.CertificateLeaf(st.Predicate.CertificateID, payload)
	if err != nil {
		return nil, fmt.Errorf("verify certificate: %v: %w", err, ErrInclusion)
	}
	if err := transparency.VerifyInclusion(leaf, b.LogEntry.LogIndex, proof, cp0); err != nil {
		return nil, fmt.Errorf("verify certificate: %v: %w", err, ErrInclusion)
	}

	// Witnesses: one Ed25519 key counts once, however many of its forms
	// (cosignature/v1, plain Ed25519, other names) signed the checkpoint.
	counted := map[string]bool{}
	for _, s := range n.Sigs {
		for _, w := range witnesses {
			if s.Name == w.Name() && s.Hash == w.KeyHash() {
				if id := transparency.WitnessIdentity(w); !counted[id] {
					counted[id] = true
					v.Witnesses = append(v.Witnesses, w.Name())
				}
			}
		}
	}
	if len(v.Witnesses) < o.MinWitnesses {
		return nil, fmt.Errorf("verify certificate: %d of the %d required witness cosignatures: %w", len(v.Witnesses), o.MinWitnesses, ErrWitnesses)
	}

	// Timestamp over the checkpoint's signed body. A token is canonical
	// base64 even when it is not checked.
	var tok []byte
	if b.LogEntry.Timestamp != "" {
		if tok, err = decodeStdBase64(b.LogEntry.Timestamp); err != nil || len(tok) == 0 {
			return nil, fmt.Errorf("verify certificate: timestamp is not canonical base64: %w", ErrTimestamp)
		}
	}
	switch {
	case b.LogEntry.Timestamp == "" && o.RequireTimestamp:
		return nil, fmt.Errorf("verify certificate: no timestamp, and one is required: %w", ErrTimestamp)
	case b.LogEntry.Timestamp == "" && o.TimestampTrusted && !key.Retired.IsZero():
		// Only issued_at, the key holder's word, dates it before the
		// retirement: a stolen key would leave the timestamp out.
		return nil, fmt.Errorf("verify certificate: key %s is retired from %s and the certificate carries no timestamp to date it before that: %w",
			v.KeyID, key.Retired.UTC().Format(time.RFC3339), ErrKeyRetired)
	case b.LogEntry.Timestamp == "":
		v.TimestampNote = "no timestamp"
	case o.Timestamp == nil:
		v.TimestampNote = "a timestamp is present but was not checked (no TSA root given)"
	default:
		at, err := o.Timestamp(tok, cp0.Body())
		if err != nil {
			return nil, fmt.Errorf("verify certificate: %v: %w", err, ErrTimestamp)
		}
		v.Timestamp = at
		if o.TimestampTrusted && !key.Retired.IsZero() && !at.Before(key.Retired) {
			return nil, fmt.Errorf("verify certificate: timestamped %s, but key %s is retired from %s: %w",
				at.UTC().Format(time.RFC3339), v.KeyID, key.Retired.UTC().Format(time.RFC3339), ErrKeyRetired)
		}
	}
	return v, nil
}

// decodeEnvelopeOnly checks that data is at least a DSSE envelope.
func decodeEnvelopeOnly(data []byte) (*Statement, error) {
	_, payload, err := decodeEnvelope(data)
	if err != nil {
		return nil, err
	}
	return decodeStatement(payload)
}
