package certificate

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// The file forms of an envelope and a bundle are encoding/json's, indented
// by two spaces without HTML escaping (encodeEnvelope, EncodeBundle check
// that a file is in that form). A certificate's payload is tens of
// kilobytes of base64 for an erasure of a few hundred records, and
// encoding/json writes a value compact and then indents it byte by byte,
// and a RawMessage inside a bundle is compacted and indented again: the
// envelope's few members are written here directly, in that form, and
// only strings that JSON must escape go through encoding/json.
// TestEnvelopeAndBundleEncodingsMatchEncodingJSON holds the two equal.

// appendEnvelope appends env as the encoding/json Encoder with indent
// "  " writes it at the depth of ind ("" at the top, "  " as a member of a
// top-level object), without the trailing newline.
func appendEnvelope(b []byte, env *dsse.Envelope, ind string) ([]byte, error) {
	var err error
	b = append(b, "{\n"...)
	b = append(append(b, ind...), `  "payloadType": `...)
	if b, err = appendString(b, env.PayloadType); err != nil {
		return nil, err
	}
	b = append(append(append(b, ",\n"...), ind...), `  "payload": `...)
	if b, err = appendString(b, env.Payload); err != nil {
		return nil, err
	}
	b = append(append(append(b, ",\n"...), ind...), `  "signatures": `...)
	switch {
	case env.Signatures == nil:
		b = append(b, "null"...)
	case len(env.Signatures) == 0:
		b = append(b, "[]"...)
	default:
		b = append(b, "[\n"...)
		for i, s := range env.Signatures {
			b = append(append(b, ind...), "    {\n"...)
			b = append(append(b, ind...), `      "keyid": `...)
			if b, err = appendString(b, s.KeyID); err != nil {
				return nil, err
			}
			b = append(append(append(b, ",\n"...), ind...), `      "sig": `...)
			if b, err = appendString(b, s.Sig); err != nil {
				return nil, err
			}
			b = append(append(append(b, '\n'), ind...), "    }"...)
			if i < len(env.Signatures)-1 {
				b = append(b, ',')
			}
			b = append(b, '\n')
		}
		b = append(append(b, ind...), "  ]"...)
	}
	return append(append(append(b, '\n'), ind...), '}'), nil
}

// appendString appends s as a JSON string, as encoding/json writes it
// without HTML escaping: printable ASCII but '"' and '\' as it is (base64,
// hex, a media type), anything else through encoding/json.
func appendString(b []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(s); err != nil {
				return nil, err
			}
			return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
		}
	}
	return append(append(append(b, '"'), s...), '"'), nil
}

// Signed is a certificate as Sign makes it: the envelope in its file form
// and the payload it signs, kept with the envelope itself so that its
// bundle is written without parsing the file form again.
type Signed struct {
	Envelope []byte // the envelope as Sign returns it
	Payload  []byte // the signed statement (Encode's bytes)
	env      *dsse.Envelope
}

// SignStatement is Sign, returning the payload and envelope together.
func SignStatement(ctx context.Context, st *Statement, priv ed25519.PrivateKey) (*Signed, error) {
	payload, err := checkedPayload(st, priv)
	if err != nil {
		return nil, err
	}
	return signEnvelope(ctx, payload, priv)
}

// EncodeBundle returns the bundle of s with entry, in the form of
// EncodeBundle(&Bundle{MediaType: BundleMediaType, DSSEEnvelope:
// s.Envelope, LogEntry: entry}), byte for byte.
func (s *Signed) EncodeBundle(entry *LogEntry) ([]byte, error) {
	b := make([]byte, 0, len(s.Envelope)+len(s.Envelope)/8+1024)
	b = append(b, "{\n  \"mediaType\": "...)
	b, err := appendString(b, BundleMediaType)
	if err != nil {
		return nil, fmt.Errorf("encode bundle: %w", err)
	}
	b = append(b, ",\n  \"dsseEnvelope\": "...)
	if b, err = appendEnvelope(b, s.env, "  "); err != nil {
		return nil, fmt.Errorf("encode bundle: %w", err)
	}
	b = append(b, ",\n  \"logEntry\": "...)
	var le bytes.Buffer
	enc := json.NewEncoder(&le)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	if err := enc.Encode(entry); err != nil {
		return nil, fmt.Errorf("encode bundle: %w", err)
	}
	b = append(b, bytes.TrimSuffix(le.Bytes(), []byte("\n"))...)
	return append(b, "\n}\n"...), nil
}
