package timestamp

import (
	"bytes"
	"crypto"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"math/big"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// This file checks the CMS structure of a token strictly, element by
// element, and then its signature; no third-party decoder sees the token.
// The walk uses golang.org/x/crypto/cryptobyte, which accepts DER only
// (minimal lengths, no indefinite lengths, low-number tags) and leaves any
// unread bytes for the Empty checks below to refuse. encoding/asn1 alone is
// too lenient for that: it accepts extra elements at the end of a SEQUENCE
// decoded into a struct, and github.com/digitorus/pkcs7 ignores some
// decoding errors. Everything outside the signed attributes and the TSTInfo
// is not covered by the TSA's signature, so here is where changes to it are
// caught.

var (
	oidSignedData       = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 2}
	oidTSTInfo          = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 1, 4}
	oidAttrContentType  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 3}
	oidAttrDigest       = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 4}
	oidAttrSigningTime  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 5}
	oidAttrSigningCert  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 2, 12}
	oidAttrSigningCert2 = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 2, 47}
)

// Context-specific constructed tags: [0] and [1] of CMS and TSTInfo, [4]
// (directoryName) of GeneralName.
var (
	tag0 = cbasn1.Tag(0).ContextSpecific().Constructed()
	tag1 = cbasn1.Tag(1).ContextSpecific().Constructed()
	tag4 = cbasn1.Tag(4).ContextSpecific().Constructed()
)

// digestHashes are the SignerInfo digest algorithms (and TSTInfo imprint
// hashes) understood, by OID.
var digestHashes = map[string]crypto.Hash{
	"1.3.14.3.2.26":          crypto.SHA1, // imprints are checked separately
	"2.16.840.1.101.3.4.2.1": crypto.SHA256,
	"2.16.840.1.101.3.4.2.2": crypto.SHA384,
	"2.16.840.1.101.3.4.2.3": crypto.SHA512,
}

func hashForOID(oid asn1.ObjectIdentifier) crypto.Hash { return digestHashes[oid.String()] }

var (
	ecdsaAlgs = map[crypto.Hash]x509.SignatureAlgorithm{crypto.SHA1: x509.ECDSAWithSHA1,
		crypto.SHA256: x509.ECDSAWithSHA256, crypto.SHA384: x509.ECDSAWithSHA384, crypto.SHA512: x509.ECDSAWithSHA512}
	rsaAlgs = map[crypto.Hash]x509.SignatureAlgorithm{crypto.SHA1: x509.SHA1WithRSA,
		crypto.SHA256: x509.SHA256WithRSA, crypto.SHA384: x509.SHA384WithRSA, crypto.SHA512: x509.SHA512WithRSA}
	ed25519Algs = map[crypto.Hash]x509.SignatureAlgorithm{crypto.SHA1: x509.PureEd25519,
		crypto.SHA256: x509.PureEd25519, crypto.SHA384: x509.PureEd25519, crypto.SHA512: x509.PureEd25519}
)

// sigAlgs are the SignerInfo signature algorithms accepted, by OID: the hash
// the OID names, if any, which must be the signer's digest algorithm, and
// crypto/x509's algorithm for each digest algorithm.
var sigAlgs = map[string]struct {
	hash crypto.Hash
	algs map[crypto.Hash]x509.SignatureAlgorithm
}{
	"1.2.840.113549.1.1.1":  {0, rsaAlgs},             // rsaEncryption
	"1.2.840.113549.1.1.5":  {crypto.SHA1, rsaAlgs},   // sha1WithRSAEncryption
	"1.2.840.113549.1.1.11": {crypto.SHA256, rsaAlgs}, // sha256WithRSAEncryption
	"1.2.840.113549.1.1.12": {crypto.SHA384, rsaAlgs},
	"1.2.840.113549.1.1.13": {crypto.SHA512, rsaAlgs},
	"1.2.840.10045.4.1":     {crypto.SHA1, ecdsaAlgs}, // ecdsa-with-SHA1
	"1.2.840.10045.4.3.2":   {crypto.SHA256, ecdsaAlgs},
	"1.2.840.10045.4.3.3":   {crypto.SHA384, ecdsaAlgs},
	"1.2.840.10045.4.3.4":   {crypto.SHA512, ecdsaAlgs},
	"1.3.101.112":           {0, ed25519Algs}, // Ed25519
}

// structure is what parseStructure found.
type structure struct {
	certs      []*x509.Certificate
	signer     *x509.Certificate
	digestHash crypto.Hash
	signedAttr map[string][]byte // attribute OID -> DER of its single value
	tsaName    string

	eContent    []byte // the DER TSTInfo
	signedAttrs []byte // DER of the [0] signed attributes
	sigAlg      x509.SignatureAlgorithm
	signature   []byte
}

func malformed(format string, args ...any) error { return errorf(ErrMalformed, format, args...) }

// readElement reads an element with the given tag from s and returns its
// DER and its contents.
func readElement(s *cryptobyte.String, tag cbasn1.Tag) (der, contents cryptobyte.String, ok bool) {
	if !s.ReadASN1Element(&der, tag) {
		return nil, nil, false
	}
	inner := der
	return der, contents, inner.ReadASN1(&contents, tag)
}

// readAlgID reads an AlgorithmIdentifier whose parameters must be absent or
// NULL (true of every algorithm a TSA token uses here), returning its OID
// and DER.
func readAlgID(s *cryptobyte.String, what string) (asn1.ObjectIdentifier, []byte, error) {
	var oid asn1.ObjectIdentifier
	der, alg, ok := readElement(s, cbasn1.SEQUENCE)
	if !ok {
		return nil, nil, malformed("%s is not a DER SEQUENCE", what)
	}
	if !alg.ReadASN1ObjectIdentifier(&oid) {
		return nil, nil, malformed("%s algorithm is not an OBJECT IDENTIFIER", what)
	}
	if !alg.Empty() && !bytes.Equal(alg, []byte{0x05, 0x00}) {
		return nil, nil, malformed("%s %v: parameters are neither absent nor NULL", what, oid)
	}
	return oid, der, nil
}

// readAttributes reads the contents of a [0] or [1] IMPLICIT SET OF
// Attribute, each a SEQUENCE of a type and a SET of values, and calls f (if
// not nil) with each attribute's DER, type and values.
func readAttributes(set cryptobyte.String, what string, f func(der []byte, oid asn1.ObjectIdentifier, values cryptobyte.String) error) error {
	for !set.Empty() {
		var values cryptobyte.String
		var oid asn1.ObjectIdentifier
		der, attr, ok := readElement(&set, cbasn1.SEQUENCE)
		if !ok || !attr.ReadASN1ObjectIdentifier(&oid) || !attr.ReadASN1(&values, cbasn1.SET) || !attr.Empty() {
			return malformed("%s attribute is not a DER {type, SET OF value}", what)
		}
		if f != nil {
			if err := f(der, oid, values); err != nil {
				return err
			}
		}
	}
	return nil
}

// parseStructure checks everything about the token that can be checked
// without cryptography and finds the signing certificate.
func parseStructure(token []byte) (*structure, error) {
	if len(token) == 0 {
		return nil, malformed("empty token")
	}
	in := cryptobyte.String(token)
	var ci, wrapped, sd cryptobyte.String
	if !in.ReadASN1(&ci, cbasn1.SEQUENCE) {
		return nil, malformed("ContentInfo is not a DER SEQUENCE")
	}
	if !in.Empty() {
		return nil, malformed("ContentInfo: %d trailing bytes", len(in))
	}
	if ci.PeekASN1Tag(cbasn1.SEQUENCE) {
		return nil, malformed("this looks like a TimeStampResp (it starts with a PKIStatusInfo); pass its TimeStampToken")
	}
	var ct asn1.ObjectIdentifier
	switch {
	case !ci.ReadASN1ObjectIdentifier(&ct):
		return nil, malformed("ContentInfo contentType is not an OBJECT IDENTIFIER")
	case !ct.Equal(oidSignedData):
		return nil, malformed("content type %v is not signedData", ct)
	case !ci.ReadASN1(&wrapped, tag0) || !ci.Empty():
		return nil, malformed("ContentInfo content is not one [0] EXPLICIT element")
	case !wrapped.ReadASN1(&sd, cbasn1.SEQUENCE) || !wrapped.Empty():
		return nil, malformed("SignedData is not one DER SEQUENCE")
	}

	// version, digestAlgorithms, encapContentInfo, [0] certificates,
	// [1] crls, signerInfos.
	var version int
	var digestAlgs, encap, certs, crls, signerInfos, si cryptobyte.String
	switch {
	case !sd.ReadASN1Integer(&version):
		return nil, malformed("SignedData version is not an INTEGER")
	case version != 3:
		return nil, malformed("SignedData version %d, want 3", version)
	case !sd.ReadASN1(&digestAlgs, cbasn1.SET):
		return nil, malformed("digestAlgorithms is not a SET")
	case !sd.ReadASN1(&encap, cbasn1.SEQUENCE):
		return nil, malformed("encapContentInfo is not a SEQUENCE")
	case !sd.ReadOptionalASN1(&certs, nil, tag0) || !sd.ReadOptionalASN1(&crls, nil, tag1):
		return nil, malformed("SignedData certificates or crls are not DER")
	case !sd.ReadASN1(&signerInfos, cbasn1.SET):
		return nil, malformed("signerInfos is not a SET")
	case !sd.Empty():
		return nil, malformed("SignedData has unexpected elements")
	case !signerInfos.ReadASN1(&si, cbasn1.SEQUENCE) || !signerInfos.Empty():
		return nil, malformed("signerInfos does not hold exactly one SignerInfo SEQUENCE; a token has exactly 1 signer")
	}
	st := &structure{}
	var err error
	if st.eContent, err = readEncapContent(encap); err != nil {
		return nil, err
	}
	if st.tsaName, err = checkTSTInfoShape(st.eContent); err != nil {
		return nil, err
	}
	// CertificateChoices: only plain certificates are accepted.
	for !certs.Empty() {
		var c cryptobyte.String
		if !certs.ReadASN1Element(&c, cbasn1.SEQUENCE) {
			return nil, malformed("certificates holds something other than a DER X.509 certificate")
		}
		cert, err := x509.ParseCertificate(c)
		if err != nil {
			return nil, malformed("embedded certificate: %v", err)
		}
		st.certs = append(st.certs, cert)
	}
	// CRLs are allowed and not used, but must decode as CertificateLists.
	for !crls.Empty() {
		var c cryptobyte.String
		var list pkix.CertificateList
		if !crls.ReadASN1Element(&c, cbasn1.SEQUENCE) {
			return nil, malformed("crls holds something other than a DER CertificateList")
		}
		if _, err := asn1.Unmarshal(c, &list); err != nil {
			return nil, malformed("crls: %v", err)
		}
	}

	digestAlg, err := checkSignerInfo(si, st)
	if err != nil {
		return nil, err
	}
	var da cryptobyte.String
	if !digestAlgs.ReadASN1Element(&da, cbasn1.SEQUENCE) || !digestAlgs.Empty() || !bytes.Equal(da, digestAlg) {
		return nil, malformed("digestAlgorithms is not exactly the signer's digest algorithm")
	}
	return st, nil
}

// readEncapContent checks EncapsulatedContentInfo, id-ct-TSTInfo and an
// eContent [0] EXPLICIT OCTET STRING, and returns the eContent.
func readEncapContent(encap cryptobyte.String) ([]byte, error) {
	var ct asn1.ObjectIdentifier
	var wrapped, econtent cryptobyte.String
	switch {
	case !encap.ReadASN1ObjectIdentifier(&ct):
		return nil, malformed("eContentType is not an OBJECT IDENTIFIER")
	case !ct.Equal(oidTSTInfo):
		return nil, malformed("eContentType %v is not id-ct-TSTInfo", ct)
	case !encap.ReadASN1(&wrapped, tag0) || !encap.Empty():
		return nil, malformed("encapContentInfo is not {eContentType, [0] EXPLICIT eContent} (eContent is required)")
	case !wrapped.ReadASN1(&econtent, cbasn1.OCTET_STRING) || !wrapped.Empty():
		return nil, malformed("eContent is not one primitive OCTET STRING")
	}
	return econtent, nil
}

// checkTSTInfoShape checks the TSTInfo's outer shape and version and returns
// its tsa name. The fields are decoded by decodeTSTInfo.
func checkTSTInfoShape(der []byte) (string, error) {
	in := cryptobyte.String(der)
	var tst cryptobyte.String
	var version int
	if !in.ReadASN1(&tst, cbasn1.SEQUENCE) || !in.Empty() {
		return "", malformed("TSTInfo is not one DER SEQUENCE")
	}
	if !tst.ReadASN1Integer(&version) {
		return "", malformed("TSTInfo version is not an INTEGER")
	}
	if version != 1 {
		return "", malformed("TSTInfo version %d, want 1", version)
	}
	// policy, messageImprint, serialNumber, genTime, then the optional
	// accuracy, ordering, nonce, [0] tsa and [1] extensions.
	name, n := "", 1
	for ; !tst.Empty(); n++ {
		var f cryptobyte.String
		var tag cbasn1.Tag
		if !tst.ReadAnyASN1(&f, &tag) {
			return "", malformed("TSTInfo element %d is not DER", n+1)
		}
		if n >= 5 && tag == tag0 && name == "" {
			name = generalName(f)
		}
	}
	if n < 5 {
		return "", malformed("TSTInfo has %d elements", n)
	}
	return name, nil
}

// generalName renders a DER GeneralName as text.
func generalName(b cryptobyte.String) string {
	var gn cryptobyte.String
	var tag cbasn1.Tag
	if !b.ReadAnyASN1(&gn, &tag) || tag&0xc0 != 0x80 {
		return "(undecodable name)"
	}
	switch tag {
	case tag4: // directoryName, EXPLICIT Name
		var rdn pkix.RDNSequence
		if rest, err := asn1.Unmarshal(gn, &rdn); err == nil && len(rest) == 0 {
			var n pkix.Name
			n.FillFromRDNSequence(&rdn)
			return n.String()
		}
	case 0x81, 0x82, 0x86: // rfc822Name, dNSName, uniformResourceIdentifier
		return string(gn)
	}
	return fmt.Sprintf("(GeneralName [%d])", tag&0x1f)
}

// checkSignerInfo checks a SignerInfo's structure, finds its certificate and
// reads its signed attributes. It returns the DER of its digestAlgorithm.
func checkSignerInfo(si cryptobyte.String, st *structure) ([]byte, error) {
	// version, sid, digestAlgorithm, [0] signedAttrs, signatureAlgorithm,
	// signature, [1] unsignedAttrs.
	var version int
	var sid, attrs, unsigned cryptobyte.String
	var ok bool
	switch {
	case !si.ReadASN1Integer(&version):
		return nil, malformed("SignerInfo version is not an INTEGER")
	case version != 1:
		return nil, malformed("SignerInfo version %d: only issuerAndSerialNumber signer identifiers (version 1) are supported", version)
	case !si.ReadASN1(&sid, cbasn1.SEQUENCE):
		return nil, malformed("signer identifier is not an IssuerAndSerialNumber")
	}
	if err := findSigner(sid, st); err != nil {
		return nil, err
	}
	digestOID, digestDER, err := readAlgID(&si, "SignerInfo digestAlgorithm")
	if err != nil {
		return nil, err
	}
	if st.digestHash = hashForOID(digestOID); st.digestHash == 0 {
		return nil, malformed("unsupported signer digest algorithm %v", digestOID)
	}
	if st.signedAttrs, attrs, ok = readElement(&si, tag0); !ok {
		return nil, malformed("SignerInfo has no signed attributes")
	}
	if err := readSignedAttrs(attrs, st); err != nil {
		return nil, err
	}
	sigOID, _, err := readAlgID(&si, "SignerInfo signatureAlgorithm")
	if err != nil {
		return nil, err
	}
	alg := sigAlgs[sigOID.String()]
	if st.sigAlg = alg.algs[st.digestHash]; st.sigAlg == x509.UnknownSignatureAlgorithm {
		return nil, malformed("signature algorithm %v is not supported", sigOID)
	}
	if alg.hash != 0 && alg.hash != st.digestHash {
		return nil, malformed("signature algorithm %v does not match digest algorithm %v", sigOID, digestOID)
	}
	if !si.ReadASN1Bytes(&st.signature, cbasn1.OCTET_STRING) {
		return nil, malformed("SignerInfo signature is not a primitive OCTET STRING")
	}
	// Unsigned attributes are allowed and not used, but must be attributes.
	if !si.ReadOptionalASN1(&unsigned, nil, tag1) || !si.Empty() {
		return nil, malformed("SignerInfo has unexpected elements after the signature")
	}
	if err := readAttributes(unsigned, "unsigned", nil); err != nil {
		return nil, err
	}
	return digestDER, nil
}

// findSigner matches an IssuerAndSerialNumber against the embedded
// certificates; exactly one must match.
func findSigner(sid cryptobyte.String, st *structure) error {
	var issuer cryptobyte.String
	serial := new(big.Int)
	if !sid.ReadASN1Element(&issuer, cbasn1.SEQUENCE) || !sid.ReadASN1Integer(serial) || !sid.Empty() {
		return malformed("IssuerAndSerialNumber is not {Name, INTEGER}")
	}
	var match []*x509.Certificate
	for _, c := range st.certs {
		if c.SerialNumber.Cmp(serial) == 0 && bytes.Equal(c.RawIssuer, issuer) &&
			(len(match) == 0 || !bytes.Equal(match[0].Raw, c.Raw)) { // identical copies are one
			match = append(match, c)
		}
	}
	switch len(match) {
	case 1:
		st.signer = match[0]
		return nil
	case 0:
		return errorf(ErrNoCertificate, "%d embedded certificates, none is the signer's (issuer and serial %x); request tokens with certReq", len(st.certs), serial)
	default:
		return malformed("%d different embedded certificates have the signer's issuer and serial number", len(match))
	}
}

// readSignedAttrs records the signed attributes, each of which must occur
// once with one value and in DER (SET OF) order, and checks the content
// type.
func readSignedAttrs(attrs cryptobyte.String, st *structure) error {
	st.signedAttr = map[string][]byte{}
	var prev []byte
	err := readAttributes(attrs, "signed", func(der []byte, oid asn1.ObjectIdentifier, values cryptobyte.String) error {
		var v cryptobyte.String
		var tag cbasn1.Tag
		if !values.ReadAnyASN1Element(&v, &tag) || !values.Empty() {
			return malformed("signed attribute %v does not have exactly one DER value", oid)
		}
		if _, dup := st.signedAttr[oid.String()]; dup {
			return malformed("signed attribute %v occurs twice", oid)
		}
		if bytes.Compare(prev, der) > 0 {
			return malformed("signed attributes are not in DER order")
		}
		prev, st.signedAttr[oid.String()] = der, v
		return nil
	})
	if err != nil {
		return err
	}
	ct, ok := st.signedAttr[oidAttrContentType.String()]
	if !ok {
		return malformed("no content-type signed attribute")
	}
	var oid asn1.ObjectIdentifier
	if v := cryptobyte.String(ct); !v.ReadASN1ObjectIdentifier(&oid) || !v.Empty() {
		return malformed("content-type attribute is not an OBJECT IDENTIFIER")
	}
	if !oid.Equal(oidTSTInfo) {
		return malformed("content-type attribute %v is not id-ct-TSTInfo", oid)
	}
	if _, ok := st.signedAttr[oidAttrDigest.String()]; !ok {
		return malformed("no message-digest signed attribute")
	}
	return nil
}

// signatureChecks counts signature verifications, so that tests can show
// that a token's signature is checked once.
var signatureChecks atomic.Int64

// checkSignature verifies the CMS signature, the ESS binding of the signer
// and a signing-time attribute against the signer's validity. It is the only
// signature check a token gets: no third-party CMS code verifies it again.
func checkSignature(st *structure) error {
	// The message-digest attribute is the digest of the TSTInfo.
	var md []byte
	if v := cryptobyte.String(st.signedAttr[oidAttrDigest.String()]); !v.ReadASN1Bytes(&md, cbasn1.OCTET_STRING) || !v.Empty() {
		return malformed("message-digest attribute is not an OCTET STRING")
	}
	h := st.digestHash.New()
	h.Write(st.eContent)
	if sum := h.Sum(nil); !bytes.Equal(sum, md) {
		return errorf(ErrSignature, "the TSTInfo's %v digest %x is not the signed message digest %x", st.digestHash, sum, md)
	}
	// The signature covers the signed attributes' DER with a SET tag.
	signed := append([]byte{byte(cbasn1.SET)}, st.signedAttrs[1:]...)
	signatureChecks.Add(1)
	if err := st.signer.CheckSignature(st.sigAlg, signed, st.signature); err != nil {
		return errorf(ErrSignature, "signature by %q: %v", st.signer.Subject, err)
	}
	if err := checkESS(st); err != nil {
		return err
	}
	// A signing time is now authenticated; one outside the signer's
	// validity is a certificate validity failure. encoding/asn1 decodes it
	// because it takes both UTCTime and GeneralizedTime.
	if v, ok := st.signedAttr[oidAttrSigningTime.String()]; ok {
		var t time.Time
		if rest, err := asn1.Unmarshal(v, &t); err != nil || len(rest) != 0 {
			return malformed("signing-time attribute is not decodable")
		}
		if t.Before(st.signer.NotBefore) || t.After(st.signer.NotAfter) {
			return errorf(ErrChain, "signing time %s is outside the validity of the signing certificate %q (%s to %s)",
				t.UTC().Format(time.RFC3339), st.signer.Subject, st.signer.NotBefore.UTC().Format(time.RFC3339), st.signer.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// ESS signing-certificate attributes (RFC 2634, RFC 5035), decoded with
// encoding/asn1 after the signature over them has verified.
type essCertID struct {
	CertHash     []byte
	IssuerSerial asn1.RawValue `asn1:"optional"`
}

type signingCertificate struct {
	Certs    []essCertID
	Policies asn1.RawValue `asn1:"optional"`
}

type essCertIDv2 struct {
	HashAlgorithm pkix.AlgorithmIdentifier `asn1:"optional"`
	CertHash      []byte
	IssuerSerial  asn1.RawValue `asn1:"optional"`
}

type signingCertificateV2 struct {
	Certs    []essCertIDv2
	Policies asn1.RawValue `asn1:"optional"`
}

// checkESS checks that the first ESSCertID(v2) of the signing-certificate
// attribute is the hash of the signing certificate and, when it carries an
// issuer and serial, that they are the signer's.
func checkESS(st *structure) error {
	var hash crypto.Hash
	var want, issuerSerial []byte
	if v2, ok := st.signedAttr[oidAttrSigningCert2.String()]; ok {
		var sc signingCertificateV2
		if rest, err := asn1.Unmarshal(v2, &sc); err != nil || len(rest) != 0 || len(sc.Certs) == 0 {
			return malformed("signingCertificateV2 attribute is not decodable")
		}
		hash = crypto.SHA256
		if len(sc.Certs[0].HashAlgorithm.Algorithm) != 0 {
			hash = hashForOID(sc.Certs[0].HashAlgorithm.Algorithm)
		}
		if hash == 0 || hash == crypto.SHA1 {
			return errorf(ErrSignature, "signingCertificateV2 uses unsupported hash %v", sc.Certs[0].HashAlgorithm.Algorithm)
		}
		want, issuerSerial = sc.Certs[0].CertHash, sc.Certs[0].IssuerSerial.FullBytes
	} else if v1, ok := st.signedAttr[oidAttrSigningCert.String()]; ok {
		var sc signingCertificate
		if rest, err := asn1.Unmarshal(v1, &sc); err != nil || len(rest) != 0 || len(sc.Certs) == 0 {
			return malformed("signingCertificate attribute is not decodable")
		}
		hash = crypto.SHA1
		want, issuerSerial = sc.Certs[0].CertHash, sc.Certs[0].IssuerSerial.FullBytes
	} else {
		return malformed("no ESS signing-certificate attribute (RFC 3161 2.4.2)")
	}
	var got []byte
	if hash == crypto.SHA1 {
		s := sha1.Sum(st.signer.Raw)
		got = s[:]
	} else {
		h := hash.New()
		h.Write(st.signer.Raw)
		got = h.Sum(nil)
	}
	if !bytes.Equal(got, want) {
		return errorf(ErrSignature, "ESS signing-certificate attribute names another certificate than the signer %q", st.signer.Subject)
	}
	if issuerSerial == nil {
		return nil
	}
	// IssuerSerial ::= SEQUENCE { issuer GeneralNames, serialNumber,
	// issuerUID OPTIONAL }; one of the names must be the signer's issuer.
	in := cryptobyte.String(issuerSerial)
	var is, names cryptobyte.String
	serial := new(big.Int)
	if !in.ReadASN1(&is, cbasn1.SEQUENCE) || !in.Empty() || !is.ReadASN1(&names, cbasn1.SEQUENCE) || !is.ReadASN1Integer(serial) {
		return malformed("ESS issuerSerial is not decodable")
	}
	nameOK := false
	for !names.Empty() {
		var n cryptobyte.String
		var tag cbasn1.Tag
		if !names.ReadAnyASN1(&n, &tag) {
			return malformed("ESS issuerSerial names are not DER")
		}
		nameOK = nameOK || (tag == tag4 && bytes.Equal(n, st.signer.RawIssuer))
	}
	if !nameOK || serial.Cmp(st.signer.SerialNumber) != 0 {
		return errorf(ErrSignature, "ESS issuerSerial is not the signer's")
	}
	return nil
}
