/*
Package timestamp obtains and verifies RFC 3161 time-stamp tokens, so that
amnesia can anchor a transparency-log checkpoint to an independent
Time-Stamping Authority (TSA): "this checkpoint existed no later than genTime".

Request sends a TimeStampReq to a TSA over HTTP(S) and returns the
TimeStampToken (the DER CMS SignedData, not the whole TimeStampResp). Verify
checks a stored token against the message it should cover and a set of trust
roots. ParseToken decodes a token and checks its structure and signature, but
establishes no trust; use it only to display a token.

Request encoding and the names of a TSA's failure codes use
github.com/digitorus/timestamp (pinned in go.mod). A token itself is checked
here only: the CMS structure by a strict DER walk on
golang.org/x/crypto/cryptobyte (DER only, every byte read), the signature,
the ESS certificate binding, the certificate chain, which the libraries
leave out, and the request/response matching. The signature is checked
once, by this package: the library's Parse is not used, because it checks
the signature again with github.com/digitorus/pkcs7 after decoding the
token leniently. The TSTInfo fields are decoded with encoding/asn1 once the
signature over them has verified.

# What Verify checks

  - The token is one DER-encoded CMS ContentInfo of type signedData with no
    trailing bytes (minimal lengths, no indefinite lengths, tag numbers
    below 31 throughout), SignedData version 3, encapsulated content of type
    id-ct-TSTInfo (both in eContentType and in the signed content-type
    attribute), exactly one SignerInfo identified by issuer and serial
    number, and digestAlgorithms holding exactly that SignerInfo's digest
    algorithm. AlgorithmIdentifier parameters must be absent or
    NULL, and a signature algorithm that names a hash must name the
    signer's digest algorithm. Signed attributes occur once each, with one
    value, in DER order. CRLs, if present, must decode as CertificateLists
    and unsigned attributes, if present, as Attributes. TSTInfo version is
    1 and its imprint length matches its hash. Violations are ErrMalformed.
  - The token embeds the TSA's signing certificate (requests made here set
    certReq): one embedded certificate, or identical copies of it, matches
    the SignerInfo's issuer and serial number. A token without it cannot be
    verified: ErrNoCertificate. Two different matching certificates are
    ErrMalformed.
  - The CMS signature: the message-digest attribute equals the digest of the
    TSTInfo, and the signature over the signed attributes verifies with the
    signing certificate's key (ECDSA, RSA PKCS #1 v1.5 or Ed25519). It is
    checked once, here, before the ESS and signing-time attributes and the
    TSTInfo fields are decoded. The ESS signing-certificate attribute
    (SigningCertificate with SHA-1, or SigningCertificateV2),
    which RFC 3161 and RFC 5816 require, must be present and its first hash
    must equal the hash of the signing certificate (and its issuerSerial,
    if present, name it). Failures are ErrSignature.
  - A signing-time attribute, if present (openssl writes one), lies within
    the signing certificate's validity; otherwise ErrChain. ParseToken makes
    this check too, so it can return ErrChain.
  - The signing certificate chains to one of the given roots, through the
    given intermediates and any certificates embedded in the token, with
    every certificate valid at the token's genTime (not at the time of
    verification, so tokens stay verifiable after the TSA certificate
    expires), and with the timeStamping extended key usage allowed along
    the whole chain. As RFC 3161 section 2.3 requires (and openssl ts
    -verify checks), the signing certificate's extended key usage extension
    must be critical and hold only id-kp-timeStamping, and a key usage
    extension, if present, must allow digitalSignature or
    contentCommitment. Failures are ErrChain.
  - The message imprint equals the SHA-256, SHA-384 or SHA-512 digest (as the
    token names) of the message. SHA-1 and other imprints are refused.
    Failures are ErrImprint.

# What is not checked

  - Revocation: no CRL or OCSP is consulted, so a token signed with a key
    that was later revoked still verifies. Whoever relies on a token for a
    long time should keep the CA's revocation data for genTime separately.
  - The trustworthiness of genTime itself beyond the TSA's signature, its
    accuracy field and the ordering flag (they are reported, not judged).
  - The TSA policy: Info.Policy is reported; callers that require a policy
    compare it themselves.
  - Unsigned parts of CMS that take no part in the checks above: unsigned
    attributes, CRLs, and embedded certificates that are not on the chain that
    was built. Changing them does not change the outcome, and none of them
    is reported as verified. Certificates on the chain are covered by their
    issuers' signatures.
  - In RSA-signed tokens the SignerInfo signature algorithm may be given as
    rsaEncryption or as the hash-specific sha*WithRSAEncryption; the two
    are treated alike (the hash always comes from the signed digest
    algorithm), so swapping one for the other goes unnoticed and changes
    nothing.

Request additionally checks that the TSA answered HTTP 200 with a
TimeStampResp whose status is granted (or granted with modifications), that
the token's imprint is the SHA-256 of the message sent, that its nonce
equals the random nonce of the request, that its policy is the requested
one when a policy was requested, and that its structure and signature pass
ParseToken. With RequestOptions.Roots set it also runs Verify. Every
exchange is bounded by RequestOptions.Timeout (10 s by default), so a TSA
that is down or silent cannot hold up the caller for longer than that.
*/
package timestamp
