/*
Package certificate issues and verifies amnesia erasure certificates: signed,
offline-verifiable statements that an erasure of one data subject ran, what
it reached in each store, and how each result was shown. This comment is the
format specification of version 1; docs/certificate.md describes the fields
for people.

# Envelope

A certificate file is a DSSE envelope
(https://github.com/secure-systems-lab/dsse) in its JSON form:

	{
	  "payloadType": "application/vnd.in-toto+json",
	  "payload": "<base64 of the payload bytes>",
	  "signatures": [
	    {
	      "keyid": "sha256:<64 lowercase hex>",
	      "sig": "<base64 of the 64-byte Ed25519 signature>"
	    }
	  ]
	}

payloadType is always PayloadType, and there is exactly one signature: by
the key predicate.key_id names. Sign writes standard padded base64, indents
the JSON by two spaces and ends the file with a newline. Verify, on a bare
envelope, accepts any JSON with the same values and ignores unknown
envelope fields; each base64 string must be the canonical encoding of its
bytes (padded, unused bits zero, no line breaks) in the standard or, as DSSE
allows, the URL-safe alphabet. In a published certificate (a bundle,
VerifyBundle) the envelope must be exactly as Sign writes it: standard
base64, known fields only.

# Payload

The payload is an in-toto Statement v1
(https://github.com/in-toto/attestation/blob/main/spec/v1/statement.md):

	{"_type":"https://in-toto.io/Statement/v1",
	 "subject":[{"name":"amnesia:erasure/<certificate_id>",
	             "digest":{"sha256":"<trace id>"}}],
	 "predicateType":"https://amnesia.dev/erasure-certificate/v1",
	 "predicate":{...}}

There is exactly one subject: the erasure itself, named SubjectPrefix
followed by the certificate id, whose sha256 digest is the id of the traced
artifact set that was erased (the lowercase hex SHA-256 of the canonical
trace, also in predicate.trace.id). predicateType is PredicateType and the
predicate is a Predicate, with schema_version SchemaVersion.

# Deterministic encoding

The payload bytes are encoding/json of the Go structs of this package in
declaration order, as Encode produces them: no insignificant whitespace, map
keys sorted, HTML characters not escaped (SetEscapeHTML(false)), and no
trailing newline. Fields tagged omitempty are left out when empty. Encoding
the same Statement therefore always gives the same bytes, and since Ed25519
signatures are deterministic, signing the same Statement with the same key
gives a byte-identical envelope. Verifiers never re-encode: they check the
signature over the payload bytes as received.

# Keys and key ids

Keys are Ed25519. Public keys are stored as PEM "PUBLIC KEY" blocks (PKIX
SubjectPublicKeyInfo), private keys as PEM "PRIVATE KEY" blocks (PKCS #8).
The key id is

	"sha256:" + lowercase hex(SHA-256(SubjectPublicKeyInfo DER))

so that

	openssl pkey -pubin -in key.pem -outform DER | sha256sum

prints the same digest. The key id appears in the envelope's signature
keyid and, inside the signed payload, in predicate.key_id.

# Signature

The signature is Ed25519 (RFC 8032, pure, no prehash) over the DSSE
pre-authentication encoding of the payload type and payload bytes:

	PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body

where SP is one space and LEN is the length in bytes as ASCII decimal with no
leading zeros.

# Verification

Verify needs only the envelope and the trusted public key: no database,
no network. It makes these checks in this order and stops at the first
failure, reporting it with the error named:

 1. The input is one JSON object with payloadType, a non-empty payload and
    exactly one signature; payloadType is PayloadType; payload and sig are
    canonical base64. Otherwise ErrMalformed. (A second signature, even a
    copy of the first or a valid one by another trusted key, is refused:
    the same certificate would have several files.)
 2. The signature's keyid equals KeyID(public key). Otherwise ErrWrongKey.
 3. It is a valid Ed25519 signature by the public key over
    PAE(payloadType, payload). Otherwise ErrSignature.
 4. The payload is a valid in-toto Statement v1 (protojson, unknown fields
    discarded, then the attestation library's Validate). Otherwise, and for
    every later failure, ErrSchema.
 5. Decoded into Statement: _type is StatementType; predicateType is
    PredicateType; predicate.schema_version is SchemaVersion;
    predicate.key_id equals KeyID(public key); predicate.certificate_id is
    not empty.
 6. There is exactly one subject, named SubjectPrefix + certificate_id; its
    digest.sha256 is 64 lowercase hex digits and equals predicate.trace.id.
 7. predicate.issued_at and predicate.valid_until are RFC 3339 times and
    valid_until is after issued_at.
 8. Every artifact's outcome is one of VERIFIED, UNVERIFIED, RESIDUAL,
    OUT_OF_SCOPE, NEEDS_HUMAN. A VERIFIED artifact has level "physical" or
    "logical" and lists no measurement.copies; a VERIFIED
    artifact of level "physical" whose measurement.physical.coverage is
    present has covered_bytes equal to record_bytes; any other outcome has
    a non-empty reason. An artifact of kind "near-duplicate" or with
    measurement.near has both, is NEEDS_HUMAN with measurement.deleted
    false, near.method "quote" or "paraphrase", a non-empty near.of and
    near.similarity in (0, 1]; predicate.semantic, when present, has level
    "semantic" and drift entries with k ≥ 1 and 0 ≤ min_overlap_at_k ≤
    overlap_at_k ≤ 1 and overlap_unerased_at_k in [0, 1].
 9. predicate.out_of_scope is not empty and each entry names what it
    excludes.
 10. predicate.counts equals the counts recomputed from the artifacts
    (CountArtifacts). predicate.complete is not true while an artifact is
    UNVERIFIED, RESIDUAL or OUT_OF_SCOPE, a model is not VERIFIED, or a
    store of predicate.declared_scope is RESIDUAL or
    UNVERIFIED-store-failed, or is UNREACHABLE while no out_of_scope entry
    names it ("store NAME" or "store NAME (unreachable)", as amnesia
    writes them).
 11. When predicate.reverifies is present (a re-verification certificate):
    its certificate_id is not empty and is not predicate.certificate_id,
    its payload_sha256 is 64 lowercase hex digits and its log_index is not
    negative; and no artifact has level "physical" or a
    measurement.physical, since a re-verification cannot repeat the byte
    scan.
 12. When predicate.follows is present (an erasure that continues an
    earlier, incomplete erasure of the same trace): the same rules on
    certificate_id, payload_sha256 and log_index as in step 11, and
    predicate.reverifies is absent.

Passing the validity window is not a verification failure: Verify accepts
an expired certificate, and the caller reports Predicate.Expired. Sign
makes the checks of steps 4 to 12 on the payload before signing, so it
never issues a certificate that Verify would reject. Error messages name fields, never their values, so
they do not leak certificate contents.

Parse decodes an envelope without any of steps 2 to 11, for display only.

# Versioning

Within a version, fields may be added; verifiers ignore fields they do not
know, in the envelope and in the payload. A change that a version-1 verifier
would read wrongly (removing or renaming a field, changing its meaning,
type or encoding, or adding an outcome) is a new schema: it gets a new
SchemaVersion and a new PredicateType (".../erasure-certificate/v2"), and a
version-1 verifier rejects it with ErrSchema rather than misreading it.

The golden vectors in testdata (golden-v1.dsse.json, golden-v1.payload.json,
golden-v1.pub.pem) are signed with the Ed25519 key whose seed is the 32
bytes 0x00, 0x01, …, 0x1f; `go test ./certificate -update` regenerates
them, and a diff in them is a format change.
*/
package certificate
