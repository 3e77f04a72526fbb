package certificate

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	v1 "github.com/in-toto/attestation/go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// Verification errors. Every error from Verify given a well-formed public key
// wraps exactly one of them; test with errors.Is.
var (
	// ErrMalformed: the input is not a DSSE envelope of PayloadType with
	// exactly one signature, or its payload or signature is not canonical
	// base64.
	ErrMalformed = errors.New("malformed envelope")
	// ErrWrongKey: the envelope's signature does not carry the key id of
	// the verifying key.
	ErrWrongKey = errors.New("not signed by this key")
	// ErrSignature: the signature does not verify with the key its key id
	// names; the envelope was tampered with or the key id was forged.
	ErrSignature = errors.New("signature does not verify")
	// ErrSchema: the payload is correctly signed but is not a valid v1
	// erasure certificate.
	ErrSchema = errors.New("not a valid v1 certificate")
)

// Verify checks envelope against pub offline, in the order the package
// documentation gives, and returns the certified statement. It does not
// check the validity window; see Predicate.Expired.
func Verify(ctx context.Context, envelope []byte, pub ed25519.PublicKey) (*Statement, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("verify certificate: public key has %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	env, payload, err := decodeEnvelope(envelope)
	if err != nil {
		return nil, fmt.Errorf("verify certificate: %w: %w", err, ErrMalformed)
	}

	keyID := KeyID(pub)
	var mine []dsse.Signature
	for _, s := range env.Signatures {
		if s.KeyID == keyID {
			mine = append(mine, s)
		}
	}
	if len(mine) == 0 {
		return nil, fmt.Errorf("verify certificate: no signature has key id %s: %w", keyID, ErrWrongKey)
	}

	verifier, err := NewVerifier(pub)
	if err != nil {
		return nil, fmt.Errorf("verify certificate: %w", err)
	}
	ev, err := dsse.NewEnvelopeVerifier(verifier)
	if err != nil {
		return nil, fmt.Errorf("verify certificate: %w", err)
	}
	signed := &dsse.Envelope{PayloadType: env.PayloadType, Payload: env.Payload, Signatures: mine}
	if _, err := ev.Verify(ctx, signed); err != nil {
		return nil, fmt.Errorf("verify certificate: signature by key id %s: %w", keyID, ErrSignature)
	}

	st, err := checkPayload(payload, keyID)
	if err != nil {
		return nil, fmt.Errorf("verify certificate: %w: %w", err, ErrSchema)
	}
	return st, nil
}

// Parse decodes envelope WITHOUT verifying it, for display. Its result must
// not be trusted. Errors wrap ErrMalformed.
func Parse(envelope []byte) (*Statement, error) {
	_, payload, err := decodeEnvelope(envelope)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w: %w", err, ErrMalformed)
	}
	st, err := decodeStatement(payload)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w: %w", err, ErrMalformed)
	}
	return st, nil
}

// Expired reports whether now is after ValidUntil. An unparsable
// ValidUntil counts as expired.
func (p *Predicate) Expired(now time.Time) bool {
	t, err := time.Parse(time.RFC3339, p.ValidUntil)
	return err != nil || now.After(t)
}

// checkPayload makes the schema checks (steps 4 to 11 of the package
// documentation) on payload bytes signed by keyID and returns the decoded
// statement.
func checkPayload(payload []byte, keyID string) (*Statement, error) {
	var its v1.Statement
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(payload, &its); err != nil {
		return nil, errors.New("payload is not an in-toto statement")
	}
	if err := its.Validate(); err != nil {
		return nil, fmt.Errorf("payload is not a valid in-toto v1 statement: %s", intotoReason(err))
	}
	if err := checkKeys(payload); err != nil {
		return nil, err
	}
	st, err := decodeStatement(payload)
	if err != nil {
		return nil, err
	}
	if err := checkStatement(st, keyID); err != nil {
		return nil, err
	}
	return st, nil
}

// checkEncoded makes checkPayload's checks on a payload that Encode made
// (Sign's): the same schema checks, with the in-toto one (step 4) made on
// the decoded statement instead of a protobuf JSON parse of the payload,
// which costs Sign about half its time. The two agree on such a payload
// (TestCheckEncodedAgreesWithCheckPayload): Encode writes each in-toto
// field with the JSON type protobuf expects (strings, an array of
// descriptors, a string map, the predicate always an object) and valid
// UTF-8, so the parse cannot fail, and the descriptors in-toto validates
// are the ones decoded here. Verify, which reads payloads it did not
// make, keeps the parse.
func checkEncoded(payload []byte, keyID string) (*Statement, error) {
	st, err := decodeStatement(payload)
	if err != nil {
		return nil, err
	}
	its := v1.Statement{Type: st.Type, PredicateType: st.PredicateType, Predicate: &structpb.Struct{}}
	for _, s := range st.Subject {
		its.Subject = append(its.Subject, &v1.ResourceDescriptor{Name: s.Name, Digest: s.Digest})
	}
	if err := its.Validate(); err != nil {
		return nil, fmt.Errorf("payload is not a valid in-toto v1 statement: %s", intotoReason(err))
	}
	if err := checkStatement(st, keyID); err != nil {
		return nil, err
	}
	return st, nil
}

// rawEnvelope tells a missing field from an empty one.
type rawEnvelope struct {
	PayloadType *string          `json:"payloadType"`
	Payload     *string          `json:"payload"`
	Signatures  []dsse.Signature `json:"signatures"`
}

// decodeEnvelope parses a DSSE envelope of PayloadType with exactly one
// signature and returns it with its decoded payload. Errors name what is
// wrong, never the content.
func decodeEnvelope(b []byte) (*dsse.Envelope, []byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var raw rawEnvelope
	if err := dec.Decode(&raw); err != nil {
		return nil, nil, errors.New("envelope is not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("data after the envelope")
	}
	switch {
	case raw.PayloadType == nil:
		return nil, nil, errors.New("envelope has no payloadType")
	case *raw.PayloadType != PayloadType:
		return nil, nil, fmt.Errorf("payloadType is not %s", PayloadType)
	case raw.Payload == nil || *raw.Payload == "":
		return nil, nil, errors.New("envelope has no payload")
	case len(raw.Signatures) == 0:
		return nil, nil, errors.New("envelope has no signatures")
	case len(raw.Signatures) > 1:
		// One certificate, one signer: amnesia writes exactly one
		// signature, by the key predicate.key_id names. A second one (a
		// copy, another key's, or a bad one next to the good one) would
		// make the same certificate one of many files.
		return nil, nil, fmt.Errorf("envelope carries %d signatures; a certificate carries exactly one", len(raw.Signatures))
	}
	payload, err := decodeBase64(*raw.Payload)
	if err != nil {
		return nil, nil, errors.New("payload is not base64")
	}
	for i, s := range raw.Signatures {
		if sig, err := decodeBase64(s.Sig); err != nil || len(sig) == 0 {
			return nil, nil, fmt.Errorf("signatures[%d].sig is not base64", i)
		}
	}
	env := &dsse.Envelope{PayloadType: *raw.PayloadType, Payload: *raw.Payload, Signatures: raw.Signatures}
	return env, payload, nil
}

// decodeBase64 accepts standard or URL-safe base64, both padded, as DSSE
// allows, in canonical form: unused bits of the last character must be
// zero and nothing else (no line breaks, which Go's decoder skips) may
// appear, so each byte string has one encoding per alphabet and a changed
// character is seen. A bundle requires the standard alphabet
// (decodeStdBase64).
func decodeBase64(s string) ([]byte, error) {
	if b, err := decodeStdBase64(s); err == nil {
		return b, nil
	}
	b, err := base64.URLEncoding.Strict().DecodeString(s)
	if err == nil && base64.URLEncoding.EncodeToString(b) != s {
		err = errors.New("not canonical base64")
	}
	return b, err
}

// decodeStdBase64 accepts only the canonical standard padded base64 of a
// byte string: what EncodeToString gives back.
func decodeStdBase64(s string) ([]byte, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err == nil && base64.StdEncoding.EncodeToString(b) != s {
		err = errors.New("not canonical base64")
	}
	return b, err
}

// decodeStatement decodes a payload into a Statement, ignoring unknown
// fields. Errors name at most a field, never a value.
func decodeStatement(payload []byte) (*Statement, error) {
	var st Statement
	if err := json.Unmarshal(payload, &st); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, fmt.Errorf("payload field %s has the wrong JSON type", te.Field)
		}
		return nil, errors.New("payload is not a JSON statement")
	}
	return &st, nil
}

// intotoReason names why an in-toto statement is invalid without quoting
// digests from it.
func intotoReason(err error) string {
	for _, known := range []error{
		v1.ErrInvalidStatementType, v1.ErrSubjectRequired, v1.ErrDigestRequired,
		v1.ErrPredicateTypeRequired, v1.ErrPredicateRequired,
		v1.ErrIncorrectDigestLength, v1.ErrInvalidDigestEncoding, v1.ErrRDRequiredField,
	} {
		if errors.Is(err, known) {
			return known.Error()
		}
	}
	return "invalid statement"
}

// Payload returns the decoded payload of a DSSE envelope WITHOUT verifying
// it. Errors wrap ErrMalformed.
func Payload(envelope []byte) ([]byte, error) {
	_, payload, err := decodeEnvelope(envelope)
	if err != nil {
		return nil, fmt.Errorf("certificate payload: %w: %w", err, ErrMalformed)
	}
	return payload, nil
}
