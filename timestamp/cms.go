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
	"strings"
	"time"

	"github.com/digitorus/pkcs7"
)

// This file checks the CMS structure of a token strictly, element by
// element, before any third-party decoder sees it. encoding/asn1 alone is
// too lenient for that: it accepts extra elements at the end of a SEQUENCE
// decoded into a struct, and github.com/digitorus/pkcs7 ignores some decoding
// errors. Everything outside the signed attributes and the TSTInfo is not
// covered by the TSA's signature, so here is where changes to it are caught.

var (
	oidSignedData       = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 2}
	oidTSTInfo          = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 1, 4}
	oidAttrContentType  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 3}
	oidAttrDigest       = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 4}
	oidAttrSigningTime  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 5}
	oidAttrSigningCert  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 2, 12}
	oidAttrSigningCert2 = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 16, 2, 47}

	oidSHA1   = asn1.ObjectIdentifier{1, 3, 14, 3, 2, 26}
	oidSHA256 = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 1}
	oidSHA384 = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 2}
	oidSHA512 = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 3}
)

// digestHashes are the SignerInfo digest algorithms accepted.
var digestHashes = []struct {
	oid  asn1.ObjectIdentifier
	hash crypto.Hash
}{
	{oidSHA1, crypto.SHA1}, // pkcs7 accepts it; imprints are checked separately
	{oidSHA256, crypto.SHA256},
	{oidSHA384, crypto.SHA384},
	{oidSHA512, crypto.SHA512},
}

func hashForOID(oid asn1.ObjectIdentifier) crypto.Hash {
	for _, d := range digestHashes {
		if d.oid.Equal(oid) {
			return d.hash
		}
	}
	return 0
}

// sigAlgHash names the hash that a signature algorithm OID implies, if any.
// Signature algorithms that name no hash (rsaEncryption, Ed25519) map to 0.
var sigAlgHash = map[string]crypto.Hash{
	"1.2.840.113549.1.1.5":  crypto.SHA1,   // sha1WithRSAEncryption
	"1.2.840.113549.1.1.11": crypto.SHA256, // sha256WithRSAEncryption
	"1.2.840.113549.1.1.12": crypto.SHA384,
	"1.2.840.113549.1.1.13": crypto.SHA512,
	"1.2.840.10045.4.1":     crypto.SHA1, // ecdsa-with-SHA1
	"1.2.840.10045.4.3.2":   crypto.SHA256,
	"1.2.840.10045.4.3.3":   crypto.SHA384,
	"1.2.840.10045.4.3.4":   crypto.SHA512,
}

// structure is what parseStructure found.
type structure struct {
	certs      []*x509.Certificate
	signer     *x509.Certificate
	digestHash crypto.Hash
	signedAttr map[string][]byte // attribute OID -> DER of its single value
	tsaName    string

	eContent    []byte                // the DER TSTInfo
	signedAttrs []byte                // DER of the [0] signed attributes
	sigOID      asn1.ObjectIdentifier // SignerInfo signatureAlgorithm
	signature   []byte
}

// element is one decoded TLV.
type element = asn1.RawValue

// one decodes exactly one DER element from b.
func one(b []byte, what string) (element, error) {
	var e element
	rest, err := asn1.Unmarshal(b, &e)
	if err != nil {
		return e, errorf(ErrMalformed, "%s: %v", what, err)
	}
	if len(rest) != 0 {
		return e, errorf(ErrMalformed, "%s: %d trailing bytes", what, len(rest))
	}
	return e, nil
}

// elements splits the contents of a constructed element into its elements.
func elements(b []byte, what string) ([]element, error) {
	var out []element
	for len(b) > 0 {
		var e element
		rest, err := asn1.Unmarshal(b, &e)
		if err != nil {
			return nil, errorf(ErrMalformed, "%s: %v", what, err)
		}
		out = append(out, e)
		b = rest
	}
	return out, nil
}

func isUniversal(e element, tag int, compound bool) bool {
	return e.Class == asn1.ClassUniversal && e.Tag == tag && e.IsCompound == compound
}

func isContext(e element, tag int, compound bool) bool {
	return e.Class == asn1.ClassContextSpecific && e.Tag == tag && e.IsCompound == compound
}

func parseInt(e element, what string) (int, error) {
	var v int
	if !isUniversal(e, asn1.TagInteger, false) {
		return 0, errorf(ErrMalformed, "%s is not an INTEGER", what)
	}
	if _, err := asn1.Unmarshal(e.FullBytes, &v); err != nil {
		return 0, errorf(ErrMalformed, "%s: %v", what, err)
	}
	return v, nil
}

func parseOID(e element, what string) (asn1.ObjectIdentifier, error) {
	var v asn1.ObjectIdentifier
	if !isUniversal(e, asn1.TagOID, false) {
		return nil, errorf(ErrMalformed, "%s is not an OBJECT IDENTIFIER", what)
	}
	if _, err := asn1.Unmarshal(e.FullBytes, &v); err != nil {
		return nil, errorf(ErrMalformed, "%s: %v", what, err)
	}
	return v, nil
}

// parseAlgID decodes an AlgorithmIdentifier whose parameters must be absent
// or NULL (true of every algorithm a TSA token uses here).
func parseAlgID(e element, what string) (asn1.ObjectIdentifier, []byte, error) {
	if !isUniversal(e, asn1.TagSequence, true) {
		return nil, nil, errorf(ErrMalformed, "%s is not a SEQUENCE", what)
	}
	parts, err := elements(e.Bytes, what)
	if err != nil {
		return nil, nil, err
	}
	if len(parts) < 1 || len(parts) > 2 {
		return nil, nil, errorf(ErrMalformed, "%s has %d elements", what, len(parts))
	}
	oid, err := parseOID(parts[0], what+" algorithm")
	if err != nil {
		return nil, nil, err
	}
	if len(parts) == 2 && !bytes.Equal(parts[1].FullBytes, []byte{0x05, 0x00}) {
		return nil, nil, errorf(ErrMalformed, "%s %v: parameters are neither absent nor NULL", what, oid)
	}
	return oid, e.FullBytes, nil
}

// parseStructure checks everything about the token that can be checked
// without cryptography and finds the signing certificate.
func parseStructure(token []byte) (*structure, error) {
	if len(token) == 0 {
		return nil, errorf(ErrMalformed, "empty token")
	}
	ci, err := one(token, "ContentInfo")
	if err != nil {
		return nil, err
	}
	if !isUniversal(ci, asn1.TagSequence, true) {
		return nil, errorf(ErrMalformed, "ContentInfo is not a SEQUENCE")
	}
	parts, err := elements(ci.Bytes, "ContentInfo")
	if err != nil {
		return nil, err
	}
	if len(parts) >= 1 && isUniversal(parts[0], asn1.TagSequence, true) {
		return nil, errorf(ErrMalformed, "this looks like a TimeStampResp (it starts with a PKIStatusInfo); pass its TimeStampToken")
	}
	if len(parts) != 2 {
		return nil, errorf(ErrMalformed, "ContentInfo has %d elements, want 2", len(parts))
	}
	ct, err := parseOID(parts[0], "ContentInfo contentType")
	if err != nil {
		return nil, err
	}
	if !ct.Equal(oidSignedData) {
		return nil, errorf(ErrMalformed, "content type %v is not signedData", ct)
	}
	if !isContext(parts[1], 0, true) {
		return nil, errorf(ErrMalformed, "ContentInfo content is not [0] EXPLICIT")
	}
	sdEl, err := one(parts[1].Bytes, "SignedData")
	if err != nil {
		return nil, err
	}
	if !isUniversal(sdEl, asn1.TagSequence, true) {
		return nil, errorf(ErrMalformed, "SignedData is not a SEQUENCE")
	}
	sd, err := elements(sdEl.Bytes, "SignedData")
	if err != nil {
		return nil, err
	}
	// version, digestAlgorithms, encapContentInfo, [0] certificates,
	// [1] crls, signerInfos.
	if len(sd) < 4 || len(sd) > 6 {
		return nil, errorf(ErrMalformed, "SignedData has %d elements", len(sd))
	}
	if v, err := parseInt(sd[0], "SignedData version"); err != nil {
		return nil, err
	} else if v != 3 {
		return nil, errorf(ErrMalformed, "SignedData version %d, want 3", v)
	}
	if !isUniversal(sd[1], asn1.TagSet, true) {
		return nil, errorf(ErrMalformed, "digestAlgorithms is not a SET")
	}
	digestAlgs, err := elements(sd[1].Bytes, "digestAlgorithms")
	if err != nil {
		return nil, err
	}
	if err := checkEncapContent(sd[2]); err != nil {
		return nil, err
	}
	st := &structure{}
	if st.tsaName, st.eContent, err = checkTSTInfoShape(sd[2]); err != nil {
		return nil, err
	}
	var certsEl, signerInfos element
	i := 3
	if i < len(sd)-1 && isContext(sd[i], 0, true) {
		certsEl = sd[i]
		i++
	}
	if i < len(sd)-1 && isContext(sd[i], 1, true) {
		i++ // CRLs: allowed, not used
	}
	if i != len(sd)-1 {
		return nil, errorf(ErrMalformed, "SignedData has unexpected elements")
	}
	signerInfos = sd[i]
	if !isUniversal(signerInfos, asn1.TagSet, true) {
		return nil, errorf(ErrMalformed, "signerInfos is not a SET")
	}
	sis, err := elements(signerInfos.Bytes, "signerInfos")
	if err != nil {
		return nil, err
	}
	if len(sis) != 1 {
		return nil, errorf(ErrMalformed, "token has %d signers, want exactly 1", len(sis))
	}

	if certsEl.FullBytes != nil {
		// CertificateChoices: only plain certificates are accepted.
		cs, err := elements(certsEl.Bytes, "certificates")
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if !isUniversal(c, asn1.TagSequence, true) {
				return nil, errorf(ErrMalformed, "certificates holds a non-X.509 certificate")
			}
			cert, err := x509.ParseCertificate(c.FullBytes)
			if err != nil {
				return nil, errorf(ErrMalformed, "embedded certificate: %v", err)
			}
			st.certs = append(st.certs, cert)
		}
	}

	digestAlg, err := checkSignerInfo(sis[0], st)
	if err != nil {
		return nil, err
	}
	if len(digestAlgs) != 1 || !bytes.Equal(digestAlgs[0].FullBytes, digestAlg) {
		return nil, errorf(ErrMalformed, "digestAlgorithms is not exactly the signer's digest algorithm")
	}
	return st, nil
}

// checkEncapContent checks EncapsulatedContentInfo: id-ct-TSTInfo and an
// eContent [0] EXPLICIT OCTET STRING.
func checkEncapContent(e element) error {
	if !isUniversal(e, asn1.TagSequence, true) {
		return errorf(ErrMalformed, "encapContentInfo is not a SEQUENCE")
	}
	parts, err := elements(e.Bytes, "encapContentInfo")
	if err != nil {
		return err
	}
	if len(parts) != 2 {
		return errorf(ErrMalformed, "encapContentInfo has %d elements, want 2 (eContent is required)", len(parts))
	}
	ct, err := parseOID(parts[0], "eContentType")
	if err != nil {
		return err
	}
	if !ct.Equal(oidTSTInfo) {
		return errorf(ErrMalformed, "eContentType %v is not id-ct-TSTInfo", ct)
	}
	if !isContext(parts[1], 0, true) {
		return errorf(ErrMalformed, "eContent is not [0] EXPLICIT")
	}
	oct, err := one(parts[1].Bytes, "eContent")
	if err != nil {
		return err
	}
	if !isUniversal(oct, asn1.TagOctetString, false) {
		return errorf(ErrMalformed, "eContent is not a primitive OCTET STRING")
	}
	return nil
}

// checkTSTInfoShape checks the TSTInfo's outer shape and version and returns
// its tsa name and DER. The fields are decoded by digitorus/timestamp.
func checkTSTInfoShape(encap element) (string, []byte, error) {
	parts, _ := elements(encap.Bytes, "encapContentInfo")
	econtent, _ := one(parts[1].Bytes, "eContent")
	tst, err := one(econtent.Bytes, "TSTInfo")
	if err != nil {
		return "", nil, err
	}
	if !isUniversal(tst, asn1.TagSequence, true) {
		return "", nil, errorf(ErrMalformed, "TSTInfo is not a SEQUENCE")
	}
	fields, err := elements(tst.Bytes, "TSTInfo")
	if err != nil {
		return "", nil, err
	}
	if len(fields) < 5 {
		return "", nil, errorf(ErrMalformed, "TSTInfo has %d elements", len(fields))
	}
	if v, err := parseInt(fields[0], "TSTInfo version"); err != nil {
		return "", nil, err
	} else if v != 1 {
		return "", nil, errorf(ErrMalformed, "TSTInfo version %d, want 1", v)
	}
	for _, f := range fields[5:] {
		if isContext(f, 0, true) {
			return generalName(f.Bytes), econtent.Bytes, nil
		}
	}
	return "", econtent.Bytes, nil
}

// generalName renders a DER GeneralName as text.
func generalName(b []byte) string {
	var gn element
	if _, err := asn1.Unmarshal(b, &gn); err != nil || gn.Class != asn1.ClassContextSpecific {
		return "(undecodable name)"
	}
	switch gn.Tag {
	case 4: // directoryName, EXPLICIT Name
		var rdn pkix.RDNSequence
		if rest, err := asn1.Unmarshal(gn.Bytes, &rdn); err == nil && len(rest) == 0 {
			var n pkix.Name
			n.FillFromRDNSequence(&rdn)
			return n.String()
		}
	case 1, 2, 6: // rfc822Name, dNSName, uniformResourceIdentifier
		if !gn.IsCompound {
			return string(gn.Bytes)
		}
	}
	return fmt.Sprintf("(GeneralName [%d])", gn.Tag)
}

// checkSignerInfo checks a SignerInfo's structure, finds its certificate and
// reads its signed attributes. It returns the DER of its digestAlgorithm.
func checkSignerInfo(si element, st *structure) ([]byte, error) {
	if !isUniversal(si, asn1.TagSequence, true) {
		return nil, errorf(ErrMalformed, "SignerInfo is not a SEQUENCE")
	}
	f, err := elements(si.Bytes, "SignerInfo")
	if err != nil {
		return nil, err
	}
	// version, sid, digestAlgorithm, [0] signedAttrs, signatureAlgorithm,
	// signature, [1] unsignedAttrs.
	if len(f) < 6 || len(f) > 7 {
		return nil, errorf(ErrMalformed, "SignerInfo has %d elements", len(f))
	}
	if v, err := parseInt(f[0], "SignerInfo version"); err != nil {
		return nil, err
	} else if v != 1 {
		return nil, errorf(ErrMalformed, "SignerInfo version %d: only issuerAndSerialNumber signer identifiers (version 1) are supported", v)
	}
	if err := findSigner(f[1], st); err != nil {
		return nil, err
	}
	digestOID, digestDER, err := parseAlgID(f[2], "SignerInfo digestAlgorithm")
	if err != nil {
		return nil, err
	}
	if st.digestHash = hashForOID(digestOID); st.digestHash == 0 {
		return nil, errorf(ErrMalformed, "unsupported signer digest algorithm %v", digestOID)
	}
	if !isContext(f[3], 0, true) {
		return nil, errorf(ErrMalformed, "SignerInfo has no signed attributes")
	}
	if err := readSignedAttrs(f[3], st); err != nil {
		return nil, err
	}
	st.signedAttrs = f[3].FullBytes
	sigOID, _, err := parseAlgID(f[4], "SignerInfo signatureAlgorithm")
	if err != nil {
		return nil, err
	}
	if h, ok := sigAlgHash[sigOID.String()]; ok && h != st.digestHash {
		return nil, errorf(ErrMalformed, "signature algorithm %v does not match digest algorithm %v", sigOID, digestOID)
	}
	if !isUniversal(f[5], asn1.TagOctetString, false) {
		return nil, errorf(ErrMalformed, "SignerInfo signature is not a primitive OCTET STRING")
	}
	st.sigOID, st.signature = sigOID, f[5].Bytes
	if len(f) == 7 && !isContext(f[6], 1, true) {
		return nil, errorf(ErrMalformed, "SignerInfo has an unexpected last element")
	}
	return digestDER, nil
}

// findSigner matches an IssuerAndSerialNumber against the embedded
// certificates; exactly one must match.
func findSigner(sid element, st *structure) error {
	if !isUniversal(sid, asn1.TagSequence, true) {
		return errorf(ErrMalformed, "signer identifier is not an IssuerAndSerialNumber")
	}
	parts, err := elements(sid.Bytes, "IssuerAndSerialNumber")
	if err != nil {
		return err
	}
	if len(parts) != 2 || !isUniversal(parts[0], asn1.TagSequence, true) || !isUniversal(parts[1], asn1.TagInteger, false) {
		return errorf(ErrMalformed, "IssuerAndSerialNumber is not {Name, INTEGER}")
	}
	var serial *big.Int
	if _, err := asn1.Unmarshal(parts[1].FullBytes, &serial); err != nil {
		return errorf(ErrMalformed, "signer serial number: %v", err)
	}
	var match []*x509.Certificate
	for _, c := range st.certs {
		if c.SerialNumber.Cmp(serial) == 0 && bytes.Equal(c.RawIssuer, parts[0].FullBytes) &&
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
		return errorf(ErrMalformed, "%d different embedded certificates have the signer's issuer and serial number", len(match))
	}
}

// readSignedAttrs records the signed attributes, each of which must occur
// once with one value, and checks the content type.
func readSignedAttrs(e element, st *structure) error {
	attrs, err := elements(e.Bytes, "signed attributes")
	if err != nil {
		return err
	}
	st.signedAttr = map[string][]byte{}
	for _, a := range attrs {
		if !isUniversal(a, asn1.TagSequence, true) {
			return errorf(ErrMalformed, "signed attribute is not a SEQUENCE")
		}
		p, err := elements(a.Bytes, "signed attribute")
		if err != nil {
			return err
		}
		if len(p) != 2 || !isUniversal(p[1], asn1.TagSet, true) {
			return errorf(ErrMalformed, "signed attribute is not {type, SET OF value}")
		}
		oid, err := parseOID(p[0], "signed attribute type")
		if err != nil {
			return err
		}
		vals, err := elements(p[1].Bytes, "signed attribute values")
		if err != nil {
			return err
		}
		if len(vals) != 1 {
			return errorf(ErrMalformed, "signed attribute %v has %d values, want 1", oid, len(vals))
		}
		if _, dup := st.signedAttr[oid.String()]; dup {
			return errorf(ErrMalformed, "signed attribute %v occurs twice", oid)
		}
		st.signedAttr[oid.String()] = vals[0].FullBytes
	}
	ct, ok := st.signedAttr[oidAttrContentType.String()]
	if !ok {
		return errorf(ErrMalformed, "no content-type signed attribute")
	}
	if v, err := one(ct, "content-type attribute"); err != nil {
		return err
	} else if oid, err := parseOID(v, "content-type attribute"); err != nil {
		return err
	} else if !oid.Equal(oidTSTInfo) {
		return errorf(ErrMalformed, "content-type attribute %v is not id-ct-TSTInfo", oid)
	}
	if _, ok := st.signedAttr[oidAttrDigest.String()]; !ok {
		return errorf(ErrMalformed, "no message-digest signed attribute")
	}
	return nil
}

// ESS signing-certificate attributes (RFC 2634, RFC 5035).
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

// checkSignature verifies the CMS signature, the ESS binding of the signer
// and a signing-time attribute against the signer's validity.
//
// The signature is checked twice: here first, so that a changed signed
// attribute (a signing time, say) is reported as a signature failure before
// anything reads it, and then by digitorus/pkcs7.
func checkSignature(token []byte, st *structure) error {
	// The message-digest attribute is the digest of the TSTInfo.
	var md []byte
	if rest, err := asn1.Unmarshal(st.signedAttr[oidAttrDigest.String()], &md); err != nil || len(rest) != 0 {
		return errorf(ErrMalformed, "message-digest attribute is not an OCTET STRING")
	}
	h := st.digestHash.New()
	h.Write(st.eContent)
	if sum := h.Sum(nil); !bytes.Equal(sum, md) {
		return errorf(ErrSignature, "the TSTInfo's %v digest %x is not the signed message digest %x", st.digestHash, sum, md)
	}
	// The signature covers the signed attributes' DER with a SET tag.
	signed := append([]byte{0x31}, st.signedAttrs[1:]...)
	alg, err := signatureAlgorithm(st.sigOID, st.digestHash)
	if err != nil {
		return err
	}
	if err := st.signer.CheckSignature(alg, signed, st.signature); err != nil {
		return errorf(ErrSignature, "signature by %q: %v", st.signer.Subject, err)
	}
	if err := checkESS(st); err != nil {
		return err
	}

	// digitorus/pkcs7 compares a signing-time attribute with the signer's
	// validity and reports it as a signature failure; it is a certificate
	// validity failure (and now authenticated), so check it first and say so.
	if v, ok := st.signedAttr[oidAttrSigningTime.String()]; ok {
		var t time.Time
		if rest, err := asn1.Unmarshal(v, &t); err != nil || len(rest) != 0 {
			return errorf(ErrMalformed, "signing-time attribute is not decodable")
		}
		if t.Before(st.signer.NotBefore) || t.After(st.signer.NotAfter) {
			return errorf(ErrChain, "signing time %s is outside the validity of the signing certificate %q (%s to %s)",
				t.UTC().Format(time.RFC3339), st.signer.Subject, st.signer.NotBefore.UTC().Format(time.RFC3339), st.signer.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	p7, err := pkcs7.Parse(token)
	if err != nil {
		return errorf(ErrMalformed, "CMS: %v", err)
	}
	if s := p7.GetOnlySigner(); s == nil || !bytes.Equal(s.Raw, st.signer.Raw) {
		return errorf(ErrMalformed, "CMS decoder found a different signer")
	}
	if err := p7.Verify(); err != nil {
		return errorf(ErrSignature, "%v", err)
	}
	return nil
}

// signatureAlgorithm maps a SignerInfo signature algorithm and digest to
// crypto/x509's name for it.
func signatureAlgorithm(oid asn1.ObjectIdentifier, h crypto.Hash) (x509.SignatureAlgorithm, error) {
	byHash := func(m map[crypto.Hash]x509.SignatureAlgorithm) (x509.SignatureAlgorithm, error) {
		if a, ok := m[h]; ok {
			return a, nil
		}
		return 0, errorf(ErrMalformed, "signature algorithm %v with digest %v is not supported", oid, h)
	}
	switch s := oid.String(); {
	case s == "1.2.840.10045.4.1" || strings.HasPrefix(s, "1.2.840.10045.4.3."):
		return byHash(map[crypto.Hash]x509.SignatureAlgorithm{
			crypto.SHA1: x509.ECDSAWithSHA1, crypto.SHA256: x509.ECDSAWithSHA256,
			crypto.SHA384: x509.ECDSAWithSHA384, crypto.SHA512: x509.ECDSAWithSHA512})
	case s == "1.2.840.113549.1.1.1" || s == "1.2.840.113549.1.1.5" || s == "1.2.840.113549.1.1.11" ||
		s == "1.2.840.113549.1.1.12" || s == "1.2.840.113549.1.1.13":
		return byHash(map[crypto.Hash]x509.SignatureAlgorithm{
			crypto.SHA1: x509.SHA1WithRSA, crypto.SHA256: x509.SHA256WithRSA,
			crypto.SHA384: x509.SHA384WithRSA, crypto.SHA512: x509.SHA512WithRSA})
	case s == "1.3.101.112":
		return x509.PureEd25519, nil
	}
	return 0, errorf(ErrMalformed, "signature algorithm %v is not supported", oid)
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
			return errorf(ErrMalformed, "signingCertificateV2 attribute is not decodable")
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
			return errorf(ErrMalformed, "signingCertificate attribute is not decodable")
		}
		hash = crypto.SHA1
		want, issuerSerial = sc.Certs[0].CertHash, sc.Certs[0].IssuerSerial.FullBytes
	} else {
		return errorf(ErrMalformed, "no ESS signing-certificate attribute (RFC 3161 2.4.2)")
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
	if issuerSerial != nil {
		var is struct {
			Issuer asn1.RawValue
			Serial *big.Int
		}
		if rest, err := asn1.Unmarshal(issuerSerial, &is); err != nil || len(rest) != 0 {
			return errorf(ErrMalformed, "ESS issuerSerial is not decodable")
		}
		names, _ := elements(is.Issuer.Bytes, "ESS issuer")
		var nameOK bool
		for _, n := range names {
			if isContext(n, 4, true) && bytes.Equal(n.Bytes, st.signer.RawIssuer) {
				nameOK = true
			}
		}
		if !nameOK || is.Serial == nil || is.Serial.Cmp(st.signer.SerialNumber) != 0 {
			return errorf(ErrSignature, "ESS issuerSerial is not the signer's")
		}
	}
	return nil
}
