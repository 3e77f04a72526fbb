package certificate

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// SubjectPrefix starts the name of a certificate's single subject; the
// certificate id follows it.
const SubjectPrefix = "amnesia:erasure/"

// NewStatement wraps p in an in-toto Statement v1 whose single subject is
// the erasure, named SubjectPrefix+p.CertificateID, with digest
// {"sha256": traceDigest}. traceDigest is the lowercase hex SHA-256 of the
// canonical trace and must equal p.Trace.ID.
func NewStatement(p Predicate, traceDigest string) *Statement {
	return &Statement{
		Type: StatementType,
		Subject: []ResourceDescriptor{{
			Name:   SubjectPrefix + p.CertificateID,
			Digest: map[string]string{"sha256": traceDigest},
		}},
		PredicateType: PredicateType,
		Predicate:     p,
	}
}

// Encode returns the deterministic payload bytes of st: encoding/json of
// the Go structs in field order (map keys sorted), without HTML escaping
// and without a trailing newline.
func Encode(st *Statement) ([]byte, error) {
	if st == nil {
		return nil, fmt.Errorf("encode statement: nil statement")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(st); err != nil {
		return nil, fmt.Errorf("encode statement: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Sign sets st.Predicate.KeyID to the id of priv's public key, encodes st
// with Encode, checks that the payload is a valid v1 certificate (the schema
// checks of Verify; failures wrap ErrSchema) and signs it as a DSSE envelope with
// payload type PayloadType. It returns the envelope as JSON indented by two
// spaces with a trailing newline. Ed25519 is deterministic: the same
// statement and key always give the same bytes.
func Sign(ctx context.Context, st *Statement, priv ed25519.PrivateKey) ([]byte, error) {
	s, err := SignStatement(ctx, st, priv)
	if err != nil {
		return nil, err
	}
	return s.Envelope, nil
}

// checkedPayload is Sign's payload: st with its key id, encoded and
// checked.
func checkedPayload(st *Statement, priv ed25519.PrivateKey) ([]byte, error) {
	if st == nil {
		return nil, fmt.Errorf("sign certificate: nil statement")
	}
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("sign certificate: private key has %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	keyID := KeyID(priv.Public().(ed25519.PublicKey))
	st.Predicate.KeyID = keyID
	payload, err := Encode(st)
	if err != nil {
		return nil, fmt.Errorf("sign certificate: %w", err)
	}
	if _, err := checkEncoded(payload, keyID); err != nil {
		return nil, fmt.Errorf("sign certificate: %w: %w", err, ErrSchema)
	}
	return payload, nil
}

// signPayload signs payload as-is and returns the formatted envelope. It
// checks nothing, so tests can sign broken statements.
func signPayload(ctx context.Context, payload []byte, priv ed25519.PrivateKey) ([]byte, error) {
	s, err := signEnvelope(ctx, payload, priv)
	if err != nil {
		return nil, err
	}
	return s.Envelope, nil
}

func signEnvelope(ctx context.Context, payload []byte, priv ed25519.PrivateKey) (*Signed, error) {
	signer, err := NewSigner(priv)
	if err != nil {
		return nil, fmt.Errorf("sign certificate: %w", err)
	}
	es, err := dsse.NewEnvelopeSigner(signer)
	if err != nil {
		return nil, fmt.Errorf("sign certificate: %w", err)
	}
	env, err := es.SignPayload(ctx, PayloadType, payload)
	if err != nil {
		return nil, fmt.Errorf("sign certificate: %w", err)
	}
	b, err := encodeEnvelope(env)
	if err != nil {
		return nil, err
	}
	return &Signed{Envelope: b, Payload: payload, env: env}, nil
}

// encodeEnvelope formats env for a file: two-space indent, no HTML
// escaping, trailing newline (encoding/json's form: see appendEnvelope).
func encodeEnvelope(env *dsse.Envelope) ([]byte, error) {
	b, err := appendEnvelope(make([]byte, 0, len(env.Payload)+512), env, "")
	if err != nil {
		return nil, fmt.Errorf("encode envelope: %w", err)
	}
	return append(b, '\n'), nil
}
