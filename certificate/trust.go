package certificate

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"
)

// TrustFormat is the format line of a trust file.
const TrustFormat = "amnesia.trust/v1"

// Limits of a trust file.
const (
	maxTrustFileSize = 1 << 20
	maxTrustKeys     = 1024
)

// ErrTrustFile: a trust file does not parse or is not self-consistent.
var ErrTrustFile = errors.New("invalid trust file")

// TrustFile lists the signing keys a verifier trusts: every key of an
// installation's keyring (`amnesia keys export`), with its retirement time.
// Its JSON form is
//
//	{
//	  "format": "amnesia.trust/v1",
//	  "keys": [
//	    {
//	      "key_id": "sha256:<64 hex>",
//	      "public_key": "-----BEGIN PUBLIC KEY-----\n...\n-----END PUBLIC KEY-----\n",
//	      "created": "2026-01-02T03:04:05Z",
//	      "retired": "2026-06-01T00:00:00Z"
//	    }
//	  ]
//	}
//
// created and retired are optional RFC 3339 times; a key without retired is
// not retired. ParseTrustFile documents what it refuses.
type TrustFile struct {
	Keys []TrustEntry
}

// TrustEntry is one key of a trust file.
type TrustEntry struct {
	KeyID   string // KeyID(Public)
	Public  ed25519.PublicKey
	Created time.Time // zero: not stated
	Retired time.Time // zero: not retired
}

// trustJSON and trustKeyJSON are the wire form.
type trustJSON struct {
	Format string         `json:"format"`
	Keys   []trustKeyJSON `json:"keys"`
}

type trustKeyJSON struct {
	KeyID     string  `json:"key_id"`
	PublicKey string  `json:"public_key"`
	Created   *string `json:"created,omitempty"`
	Retired   *string `json:"retired,omitempty"`
}

// TrustedKeys returns the file's keys as VerifyOptions.Keys.
func (t *TrustFile) TrustedKeys() []TrustedKey {
	out := make([]TrustedKey, 0, len(t.Keys))
	for _, k := range t.Keys {
		out = append(out, TrustedKey{Public: k.Public, Retired: k.Retired})
	}
	return out
}

// EncodeTrustFile returns t's JSON form (two-space indent, trailing
// newline). Times are written in UTC, to the second if they have no
// fraction. It checks what ParseTrustFile checks, so that what it writes
// parses.
func EncodeTrustFile(t *TrustFile) ([]byte, error) {
	w := trustJSON{Format: TrustFormat, Keys: []trustKeyJSON{}}
	for _, k := range t.Keys {
		p, err := EncodePublicKeyPEM(k.Public)
		if err != nil {
			return nil, fmt.Errorf("encode trust file: %w", err)
		}
		e := trustKeyJSON{KeyID: KeyID(k.Public), PublicKey: string(p)}
		if k.KeyID != "" && k.KeyID != e.KeyID {
			return nil, fmt.Errorf("encode trust file: key id %s is not that of its key (%s)", k.KeyID, e.KeyID)
		}
		if !k.Created.IsZero() {
			s := k.Created.UTC().Format(time.RFC3339Nano)
			e.Created = &s
		}
		if !k.Retired.IsZero() {
			s := k.Retired.UTC().Format(time.RFC3339Nano)
			e.Retired = &s
		}
		w.Keys = append(w.Keys, e)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(w); err != nil {
		return nil, fmt.Errorf("encode trust file: %w", err)
	}
	if _, err := ParseTrustFile(buf.Bytes()); err != nil {
		return nil, fmt.Errorf("encode trust file: %w", err)
	}
	return buf.Bytes(), nil
}

// ParseTrustFile parses a trust file strictly. It refuses: more than 1 MiB;
// text that is not UTF-8; anything but one JSON object (trailing data
// included); a member name twice in one object; null anywhere; members
// other than those above; a format other than amnesia.trust/v1; no keys or
// more than 1024; a public_key that is not exactly one PEM "PUBLIC KEY"
// block of an Ed25519 key (whitespace around it aside); a key_id that is
// not KeyID of that key; the same key twice; created or retired that are
// not RFC 3339 times. Every error wraps ErrTrustFile.
func ParseTrustFile(data []byte) (*TrustFile, error) {
	fail := func(format string, a ...any) (*TrustFile, error) {
		return nil, fmt.Errorf("trust file: %s: %w", fmt.Sprintf(format, a...), ErrTrustFile)
	}
	if len(data) > maxTrustFileSize {
		return fail("%d bytes, at most %d", len(data), maxTrustFileSize)
	}
	if !utf8.Valid(data) {
		return fail("not UTF-8")
	}
	if err := checkJSONShape(data); err != nil {
		return fail("%v", err)
	}
	var w trustJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return fail("%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail("data after the JSON object")
	}
	if w.Format != TrustFormat {
		return fail("format %q, want %q", w.Format, TrustFormat)
	}
	if len(w.Keys) == 0 || len(w.Keys) > maxTrustKeys {
		return fail("%d keys, want 1 to %d", len(w.Keys), maxTrustKeys)
	}
	t := &TrustFile{}
	seen := map[string]bool{}
	for i, k := range w.Keys {
		pub, err := parseSinglePublicKeyPEM(k.PublicKey)
		if err != nil {
			return fail("key %d: %v", i, err)
		}
		id := KeyID(pub)
		if k.KeyID != id {
			return fail("key %d: key_id %q is not the id of its public key (%s)", i, k.KeyID, id)
		}
		if seen[id] {
			return fail("key %s listed twice", id)
		}
		seen[id] = true
		e := TrustEntry{KeyID: id, Public: pub}
		if e.Created, err = trustTime(k.Created); err != nil {
			return fail("key %s: created: %v", id, err)
		}
		if e.Retired, err = trustTime(k.Retired); err != nil {
			return fail("key %s: retired: %v", id, err)
		}
		t.Keys = append(t.Keys, e)
	}
	return t, nil
}

// trustTime parses an optional RFC 3339 time; absent is zero.
func trustTime(s *string) (time.Time, error) {
	if s == nil {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time", *s)
	}
	if t.IsZero() {
		return time.Time{}, fmt.Errorf("%q is the zero time", *s)
	}
	return t, nil
}

// parseSinglePublicKeyPEM parses s, which must be one PEM block of an
// Ed25519 public key in the form EncodePublicKeyPEM writes (what openssl
// writes too), with nothing but whitespace around it.
func parseSinglePublicKeyPEM(s string) (ed25519.PublicKey, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, errors.New("public_key is not PEM")
	}
	if !bytes.Equal(bytes.TrimSpace(pem.EncodeToMemory(block)), bytes.TrimSpace([]byte(s))) {
		return nil, errors.New("public_key is not exactly one PEM block (64-column base64, no headers, nothing around it)")
	}
	return ParsePublicKeyPEM([]byte(s))
}

// trustMembers are the member names of a trust file, in their only case.
var trustMembers = map[string]bool{"format": true, "keys": true, "key_id": true, "public_key": true, "created": true, "retired": true}

// checkJSONShape walks data's tokens and refuses a member name that is not
// one of trustMembers, spelt exactly, a member name repeated in one object,
// and null. (encoding/json matches names without regard to case, takes the
// last of repeated members and reads null as absent; a trust file should
// mean one thing.) Which member belongs where is left to the decoder.
func checkJSONShape(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object  bool
		names   map[string]bool
		wantKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			name := tok.(string) // the decoder only yields strings here
			if !trustMembers[name] {
				return fmt.Errorf("unknown member %q", name)
			}
			if top.names[name] {
				return fmt.Errorf("member %q twice in one object", name)
			}
			top.names[name] = true
			top.wantKey = false
			continue
		}
		if top != nil && top.object {
			top.wantKey = true // this token is a value (or opens one)
		}
		switch v := tok.(type) {
		case nil:
			return errors.New("null is not allowed")
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &frame{object: true, names: map[string]bool{}, wantKey: true})
			case '[':
				stack = append(stack, &frame{})
			case ']':
				stack = stack[:len(stack)-1]
			}
		}
	}
}
