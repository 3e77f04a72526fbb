package timestamp

import (
	"bytes"
	"crypto"
	_ "crypto/sha256" // imprint hashes
	_ "crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// Errors returned by ParseToken, Verify and Request. Returned errors wrap
// exactly one of them (test with errors.Is) and add what failed.
var (
	// ErrMalformed: the token (or the TSA's response) is not a well-formed
	// RFC 3161 structure in DER.
	ErrMalformed = errors.New("timestamp: malformed")
	// ErrNoCertificate: the token does not embed the TSA certificate that
	// signed it, so its signature cannot be checked.
	ErrNoCertificate = errors.New("timestamp: signing certificate not in token")
	// ErrSignature: the CMS signature, its message digest, or the ESS
	// binding of the signing certificate does not verify.
	ErrSignature = errors.New("timestamp: signature invalid")
	// ErrChain: the signing certificate does not chain to the given roots
	// for time stamping at the token's genTime.
	ErrChain = errors.New("timestamp: certificate chain invalid")
	// ErrImprint: the token's message imprint is not the digest of the
	// message (or, in Request, of the message sent).
	ErrImprint = errors.New("timestamp: message imprint mismatch")

	// ErrUnreachable: the TSA could not be reached or did not answer in
	// time (Request only).
	ErrUnreachable = errors.New("timestamp: TSA unreachable")
	// ErrHTTPStatus: the TSA answered with an HTTP status other than 200
	// (Request only).
	ErrHTTPStatus = errors.New("timestamp: TSA HTTP error")
	// ErrRejected: the TSA's PKIStatus is not granted (Request only).
	ErrRejected = errors.New("timestamp: TSA rejected the request")
	// ErrNonce: the token's nonce is not the request's (Request only).
	ErrNonce = errors.New("timestamp: nonce mismatch")
	// ErrPolicy: the token's policy is not the one requested (Request
	// only, when RequestOptions.Policy is set).
	ErrPolicy = errors.New("timestamp: policy mismatch")
)

func errorf(kind error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", kind, fmt.Sprintf(format, args...))
}

// Info is what a time-stamp token says, as decoded from its TSTInfo and
// SignedData.
type Info struct {
	// GenTime is the time the TSA asserts the imprint existed (UTC).
	GenTime time.Time
	// Accuracy is the TSA's stated accuracy of GenTime (0 if absent).
	Accuracy time.Duration
	// Ordering is the TSTInfo ordering flag.
	Ordering bool
	// SerialNumber is the TSA's serial number of the token.
	SerialNumber *big.Int
	// Policy is the TSA policy under which the token was issued.
	Policy asn1.ObjectIdentifier
	// HashAlgorithm and HashedMessage are the message imprint.
	HashAlgorithm crypto.Hash
	HashedMessage []byte
	// Nonce is the request's nonce as echoed by the TSA (nil if absent).
	Nonce *big.Int
	// TSAName is the TSTInfo tsa field rendered as text ("" if absent;
	// a directoryName is written as an RFC 2253 distinguished name).
	TSAName string
	// Signer is the certificate whose key signed the token. Its Subject is
	// the TSA's subject. After ParseToken it is only known to have made the
	// signature; after Verify it is known to chain to the roots.
	Signer *x509.Certificate
	// Chain is the verified chain from Signer to a root; set by Verify only.
	Chain []*x509.Certificate

	certs []*x509.Certificate // all certificates embedded in the token
}

// TSASubject returns the subject of the signing certificate, or "".
func (i *Info) TSASubject() string {
	if i == nil || i.Signer == nil {
		return ""
	}
	return i.Signer.Subject.String()
}

// ParseToken decodes a DER TimeStampToken and checks its structure, that it
// embeds its signing certificate, and its CMS signature (see the package
// documentation). It establishes no trust: the certificate is not checked
// against any root and the imprint is not compared with any message. Use
// Verify for that.
func ParseToken(token []byte) (info *Info, err error) {
	defer func() {
		// encoding/asn1 and crypto/x509 decode only parts that passed
		// the strict walk; should one still panic, fail closed.
		if r := recover(); r != nil {
			info, err = nil, errorf(ErrMalformed, "token could not be decoded (%v)", r)
		}
	}()
	st, err := parseStructure(token)
	if err != nil {
		return nil, err
	}
	if err := checkSignature(st); err != nil {
		return nil, err
	}
	info, err = decodeTSTInfo(st.eContent)
	if err != nil {
		return nil, err
	}
	info.TSAName, info.Signer, info.certs = st.tsaName, st.signer, st.certs
	return info, nil
}

// tstInfo is RFC 3161's TSTInfo as github.com/digitorus/timestamp declares
// it. Its Parse would check the CMS signature a second time, so the fields
// are decoded here, with encoding/asn1 as it does, after checkTSTInfoShape
// and checkSignature.
type tstInfo struct {
	Version        int
	Policy         asn1.ObjectIdentifier
	MessageImprint struct {
		HashAlgorithm pkix.AlgorithmIdentifier
		HashedMessage []byte
	}
	SerialNumber *big.Int
	Time         time.Time `asn1:"generalized"`
	Accuracy     struct {
		Seconds      int64 `asn1:"optional"`
		Milliseconds int64 `asn1:"tag:0,optional"`
		Microseconds int64 `asn1:"tag:1,optional"`
	} `asn1:"optional"`
	Ordering   bool             `asn1:"optional,default:false"`
	Nonce      *big.Int         `asn1:"optional"`
	TSA        asn1.RawValue    `asn1:"tag:0,optional"`
	Extensions []pkix.Extension `asn1:"tag:1,optional"`
}

// decodeTSTInfo decodes the fields of a DER TSTInfo.
func decodeTSTInfo(der []byte) (*Info, error) {
	var ti tstInfo
	if _, err := asn1.Unmarshal(der, &ti); err != nil {
		return nil, errorf(ErrMalformed, "TSTInfo: %v", err)
	}
	hash := hashForOID(ti.MessageImprint.HashAlgorithm.Algorithm)
	switch {
	case hash == 0:
		return nil, errorf(ErrMalformed, "TSTInfo: unknown imprint hash algorithm %v", ti.MessageImprint.HashAlgorithm.Algorithm)
	case hash.Size() != len(ti.MessageImprint.HashedMessage):
		return nil, errorf(ErrMalformed, "message imprint is %d bytes, %v needs %d", len(ti.MessageImprint.HashedMessage), hash, hash.Size())
	case ti.SerialNumber == nil || ti.SerialNumber.Sign() < 0:
		return nil, errorf(ErrMalformed, "TSTInfo serial number missing or negative")
	}
	acc := ti.Accuracy
	return &Info{
		GenTime:       ti.Time.UTC(),
		Accuracy:      time.Duration(acc.Seconds)*time.Second + time.Duration(acc.Milliseconds)*time.Millisecond + time.Duration(acc.Microseconds)*time.Microsecond,
		Ordering:      ti.Ordering,
		SerialNumber:  ti.SerialNumber,
		Policy:        ti.Policy,
		HashAlgorithm: hash,
		HashedMessage: ti.MessageImprint.HashedMessage,
		Nonce:         ti.Nonce,
	}, nil
}

// Verify checks that token is a valid RFC 3161 TimeStampToken over message,
// signed by a certificate that chains to roots (through intermediates, which
// may be nil, and any certificates in the token) for time stamping at the
// token's genTime. The package documentation lists every check and what is
// not checked (revocation). roots must not be nil: the system roots are never
// used implicitly (pass x509.SystemCertPool() to trust them).
//
// On success it returns the token's Info with Chain set. Errors wrap
// ErrMalformed, ErrNoCertificate, ErrSignature, ErrChain or ErrImprint.
func Verify(token, message []byte, roots, intermediates *x509.CertPool) (*Info, error) {
	if roots == nil {
		return nil, errorf(ErrChain, "no trust roots given")
	}
	info, err := ParseToken(token)
	if err != nil {
		return nil, err
	}
	if err := verifyParsed(info, message, roots, intermediates); err != nil {
		return nil, err
	}
	return info, nil
}

// verifyParsed makes the checks of Verify that follow ParseToken and sets
// info.Chain.
func verifyParsed(info *Info, message []byte, roots, intermediates *x509.CertPool) error {
	chain, err := verifyChain(info, roots, intermediates)
	if err != nil {
		return err
	}
	info.Chain = chain
	return checkImprint(info, message)
}

// checkImprint compares the token's imprint with the digest of message.
func checkImprint(info *Info, message []byte) error {
	switch info.HashAlgorithm {
	case crypto.SHA256, crypto.SHA384, crypto.SHA512:
	default:
		return errorf(ErrImprint, "imprint hash %v is not accepted (SHA-256, SHA-384 or SHA-512)", info.HashAlgorithm)
	}
	h := info.HashAlgorithm.New()
	h.Write(message)
	if sum := h.Sum(nil); !bytes.Equal(sum, info.HashedMessage) {
		return errorf(ErrImprint, "token covers %v %x, the message's is %x", info.HashAlgorithm, info.HashedMessage, sum)
	}
	return nil
}

var oidTimeStamping = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 3, 8}
var oidExtKeyUsage = asn1.ObjectIdentifier{2, 5, 29, 37}

// verifyChain builds a chain from the signer to roots at genTime for time
// stamping and applies RFC 3161's rules on the signing certificate.
func verifyChain(info *Info, roots, intermediates *x509.CertPool) ([]*x509.Certificate, error) {
	leaf := info.Signer
	var ekuExt bool
	for _, e := range leaf.Extensions {
		if e.Id.Equal(oidExtKeyUsage) {
			if !e.Critical {
				return nil, errorf(ErrChain, "signing certificate %q: extended key usage is not critical (RFC 3161 2.3)", leaf.Subject)
			}
			ekuExt = true
		}
	}
	if !ekuExt || len(leaf.ExtKeyUsage) != 1 || leaf.ExtKeyUsage[0] != x509.ExtKeyUsageTimeStamping || len(leaf.UnknownExtKeyUsage) != 0 {
		return nil, errorf(ErrChain, "signing certificate %q: extended key usage must be timeStamping only (RFC 3161 2.3)", leaf.Subject)
	}
	if leaf.KeyUsage != 0 && leaf.KeyUsage&(x509.KeyUsageDigitalSignature|x509.KeyUsageContentCommitment) == 0 {
		return nil, errorf(ErrChain, "signing certificate %q: key usage allows neither digitalSignature nor contentCommitment", leaf.Subject)
	}

	pool := x509.NewCertPool()
	if intermediates != nil {
		pool = intermediates.Clone()
	}
	for _, c := range info.certs {
		if c != leaf {
			pool.AddCert(c)
		}
	}
	chains, err := leaf.Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: pool,
		CurrentTime:   info.GenTime,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageTimeStamping},
	})
	if err != nil {
		return nil, errorf(ErrChain, "signing certificate %q at genTime %s: %v", leaf.Subject, info.GenTime.Format(time.RFC3339), err)
	}
	return chains[0], nil
}

// Checker returns the RFC 3161 check a certificate verifier applies to a
// token over message, returning the token's time. With roots (the root
// certificates of the timestamp authorities trusted) it is Verify: the
// token's signature, its imprint of message and its chain to one of the
// roots. With nil roots no TSA is trusted: the token's own signature and
// its imprint of message are still checked, so a damaged token fails, but
// the token's time is only the TSA's word.
func Checker(roots *x509.CertPool) func(token, message []byte) (time.Time, error) {
	if roots == nil {
		return func(token, message []byte) (time.Time, error) {
			info, err := ParseToken(token)
			if err != nil {
				return time.Time{}, err
			}
			if err := checkImprint(info, message); err != nil {
				// The same hashes as with roots: a SHA-1 imprint is refused.
				return time.Time{}, fmt.Errorf("the token's message imprint is not the checkpoint's: %w", err)
			}
			return info.GenTime, nil
		}
	}
	return func(token, message []byte) (time.Time, error) {
		info, err := Verify(token, message, roots, nil)
		if err != nil {
			return time.Time{}, err
		}
		return info.GenTime, nil
	}
}

// AppendRootsPEM adds every PEM certificate of pemBytes to pool (a new
// pool when nil) as a trusted TSA root. Bytes without a certificate are an
// error.
func AppendRootsPEM(pool *x509.CertPool, pemBytes []byte) (*x509.CertPool, error) {
	if pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pemBytes) {
		return pool, errors.New("no PEM certificate")
	}
	return pool, nil
}
