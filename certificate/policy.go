package certificate

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/amnesia-dev/amnesia/timestamp"
	"github.com/amnesia-dev/amnesia/transparency"
)

// ErrPolicy: a verification policy was given badly (a witness key that
// does not parse, a TSA root file without a certificate, more required
// cosignatures than witness keys): the verifier's input is wrong, not the
// certificate. `amnesia verify` exits 2 (usage) on it.
var ErrPolicy = errors.New("invalid verification policy")

// policyError is an ErrPolicy whose message is err's alone.
type policyError struct{ err error }

func (e *policyError) Error() string        { return e.err.Error() }
func (e *policyError) Unwrap() error        { return e.err }
func (e *policyError) Is(target error) bool { return target == ErrPolicy }

func policyErrorf(format string, a ...any) error {
	return &policyError{fmt.Errorf(format, a...)}
}

// Policy is what a verifier trusts: the signing keys (with the times they
// were retired), the witnesses and how many of them must cosign the log's
// checkpoint, the timestamp authorities, and the log. `amnesia verify`
// builds one from its flags with LoadPolicy; a Go program that builds the
// same Policy verifies a certificate exactly as `amnesia verify` does
// (VerifyBundle with Policy.Options).
//
// The zero Policy trusts nothing; add keys with AddKey, AddPublicKeyPEM or
// AddTrustFile.
type Policy struct {
	// Keys are the trusted signing keys. A key added twice keeps one
	// entry, retired from the earlier of its times (not retired only if
	// no addition says it is).
	Keys []TrustedKey
	// Witnesses are the witness verifier keys (C2SP cosignature/v1 or
	// plain Ed25519 note keys), each once.
	Witnesses []note.Verifier
	// MinWitnesses is how many of Witnesses must have cosigned the
	// checkpoint; 0 means all of them.
	MinWitnesses int
	// TSARoots are the root certificates of the timestamp authorities
	// trusted; nil trusts none: a token's signature and its imprint of
	// the checkpoint are still checked, its chain is not, and a retired
	// key's certificate is judged on its issued_at alone.
	TSARoots *x509.CertPool
	// RequireTimestamp fails a certificate without an RFC 3161 token.
	RequireTimestamp bool
	// Origin, when set, pins the transparency log: the checkpoint must
	// name this origin (as `amnesia audit log-key` prints it).
	Origin string
}

// AddKey trusts k; a key already trusted keeps one entry, retired from the
// earlier of the two times (not retired only if neither says it is).
func (p *Policy) AddKey(k TrustedKey) {
	for i := range p.Keys {
		if !p.Keys[i].Public.Equal(k.Public) {
			continue
		}
		if !k.Retired.IsZero() && (p.Keys[i].Retired.IsZero() || k.Retired.Before(p.Keys[i].Retired)) {
			p.Keys[i].Retired = k.Retired
		}
		return
	}
	p.Keys = append(p.Keys, k)
}

// AddPublicKeyPEM trusts the Ed25519 public key of a PEM "PUBLIC KEY"
// block (the signing-key.pub.pem of a state directory), retired from
// retired (zero: not retired).
func (p *Policy) AddPublicKeyPEM(pemBytes []byte, retired time.Time) error {
	pub, err := ParsePublicKeyPEM(pemBytes)
	if err != nil {
		return err
	}
	p.AddKey(TrustedKey{Public: pub, Retired: retired})
	return nil
}

// AddTrustFile trusts every key of a trust file (`amnesia keys export`),
// with its retirement time. Its errors wrap ErrTrustFile.
func (p *Policy) AddTrustFile(data []byte) error {
	tf, err := ParseTrustFile(data)
	if err != nil {
		return err
	}
	for _, k := range tf.TrustedKeys() {
		p.AddKey(k)
	}
	return nil
}

// AddWitnessKey adds a witness verifier key in its text form
// (name+hash+base64, as `amnesia witness init` prints it): a C2SP
// cosignature/v1 key or a plain Ed25519 note key. The same key text twice
// is kept once; the same Ed25519 key in its other form or under another
// name is kept (either form's signature verifies) but counts as one
// witness (transparency.WitnessIdentity). Its errors wrap ErrPolicy.
func (p *Policy) AddWitnessKey(key string) error {
	v, err := transparency.NewWitnessVerifier(key)
	if err != nil {
		return &policyError{err}
	}
	id := witnessID(v)
	for _, w := range p.Witnesses {
		if witnessID(w) == id {
			return nil
		}
	}
	p.Witnesses = append(p.Witnesses, v)
	return nil
}

func witnessID(v note.Verifier) string { return fmt.Sprintf("%s+%08x", v.Name(), v.KeyHash()) }

// countWitnesses is how many distinct witnesses vs name: one Ed25519 key is
// one witness, in whichever forms it was given.
func countWitnesses(vs []note.Verifier) int {
	ids := map[string]bool{}
	for _, v := range vs {
		ids[transparency.WitnessIdentity(v)] = true
	}
	return len(ids)
}

// AddTSARootsPEM trusts every PEM certificate in pemBytes as the root of a
// timestamp authority. Bytes without one are an ErrPolicy.
func (p *Policy) AddTSARootsPEM(pemBytes []byte) error {
	pool, err := timestamp.AppendRootsPEM(p.TSARoots, pemBytes)
	if err != nil {
		return &policyError{err}
	}
	p.TSARoots = pool
	return nil
}

// Options returns the VerifyOptions of the policy. It refuses (ErrPolicy)
// a negative MinWitnesses and one above the number of witness keys.
func (p *Policy) Options() (VerifyOptions, error) {
	o := VerifyOptions{
		Keys:             p.Keys,
		Witnesses:        p.Witnesses,
		MinWitnesses:     p.MinWitnesses,
		Timestamp:        timestamp.Checker(p.TSARoots),
		TimestampTrusted: p.TSARoots != nil,
		RequireTimestamp: p.RequireTimestamp,
		Origin:           p.Origin,
	}
	if p.MinWitnesses < 0 {
		return o, policyErrorf("%d required witness cosignatures: want a count, 0 or more", p.MinWitnesses)
	}
	n := countWitnesses(p.Witnesses)
	if p.MinWitnesses == 0 {
		o.MinWitnesses = n
	}
	if p.MinWitnesses > n {
		return o, policyErrorf("%d required witness cosignatures, but only %d distinct witness keys given", p.MinWitnesses, n)
	}
	return o, nil
}

// PolicyFiles names, by file, what LoadPolicy reads: the flags of
// `amnesia verify`.
type PolicyFiles struct {
	// PublicKeys are PEM public key files (--public-key); FILE@RFC3339
	// trusts the key as retired from that time.
	PublicKeys []string
	// TrustFiles are trust files written by `amnesia keys export`
	// (--trust).
	TrustFiles []string
	// WitnessKeys are witness verifier keys, each given inline
	// (name+hash+base64) or as a file holding one (--witness-key): a
	// value with a "+" is a key, any other a path.
	WitnessKeys []string
	// MinWitnesses is Policy.MinWitnesses (--witnesses).
	MinWitnesses int
	// TSARoots are PEM files of timestamp authority roots (--tsa-root).
	TSARoots []string
	// RequireTimestamp and Origin are Policy's (--require-timestamp,
	// --log-origin).
	RequireTimestamp bool
	Origin           string
}

// LoadPolicy reads the files f names into a Policy, as `amnesia verify`
// does. An unreadable file is an error that names it; a witness key or TSA
// root that does not parse, or a bad MinWitnesses, is an ErrPolicy.
func LoadPolicy(f PolicyFiles) (*Policy, error) {
	p := &Policy{MinWitnesses: f.MinWitnesses, RequireTimestamp: f.RequireTimestamp, Origin: f.Origin}
	for _, spec := range f.PublicKeys {
		path, retired := SplitRetired(spec)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read public key: %w", err)
		}
		if err := p.AddPublicKeyPEM(b, retired); err != nil {
			return nil, fmt.Errorf("read public key %s: %w", path, err)
		}
	}
	for _, path := range f.TrustFiles {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read trust file: %w", err)
		}
		if err := p.AddTrustFile(b); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	for _, w := range f.WitnessKeys {
		key := w
		if !strings.Contains(w, "+") {
			b, err := os.ReadFile(w)
			if err != nil {
				return nil, &policyError{fmt.Errorf("witness key %s: %w", w, err)}
			}
			key = strings.TrimSpace(string(b))
		}
		if err := p.AddWitnessKey(key); err != nil {
			return nil, err
		}
	}
	for _, path := range f.TSARoots {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("TSA root: %w", err)
		}
		if err := p.AddTSARootsPEM(b); err != nil {
			return nil, policyErrorf("TSA root %s: %w", path, err)
		}
	}
	if _, err := p.Options(); err != nil {
		return nil, err
	}
	return p, nil
}

// SplitRetired splits "FILE@RFC3339" into the file and the time the key
// was retired; a spec without a valid time after its last "@" is a file
// name alone (zero time).
func SplitRetired(spec string) (path string, retired time.Time) {
	if i := strings.LastIndex(spec, "@"); i > 0 {
		if t, err := time.Parse(time.RFC3339, spec[i+1:]); err == nil {
			return spec[:i], t
		}
	}
	return spec, time.Time{}
}
