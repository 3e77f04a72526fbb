"""Offline verification of amnesia certificates, standard library only.

The same checks, in the same order, as ``amnesia verify --public-key KEY``
(certificate.VerifyBundle of the Go module): the bundle's canonical form, the
DSSE envelope, the Ed25519 signature by a trusted key, the v1 schema (steps 4
to 12 of the certificate package documentation), the key's retirement, the
checkpoint's signature by that key under the log's origin, and the RFC 6962
inclusion proof of the certificate's leaf. Each failure raises a subclass of
:class:`CertificateInvalid` whose ``exit_code`` is the one ``amnesia verify``
exits with for the same file.

Not done here (``amnesia verify`` does them when asked): witness
cosignatures (``--witness-key``; lines by keys not given are counted in
``unchecked_signatures``, as amnesia does) and RFC 3161 timestamps
(``--tsa-root``; a token present is reported as not checked, as amnesia does
without a TSA root, and one that is not canonical base64 is refused).

>>> from amnesia_client.offline import verify_bundle, load_public_key
>>> key = load_public_key(open("signing-key.pub.pem").read())
>>> checked = verify_bundle(open("er-....dsse.json", "rb").read(), [key])
>>> checked.predicate["complete"]
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _ed25519

__all__ = [
    "BUNDLE_MEDIA_TYPE",
    "PAYLOAD_TYPE",
    "PREDICATE_TYPE",
    "CertificateInvalid",
    "Malformed",
    "WrongKey",
    "BadSignature",
    "BadSchema",
    "NotLogged",
    "BadCheckpoint",
    "BadInclusion",
    "KeyRetired",
    "BadTimestamp",
    "TrustedKey",
    "Checked",
    "load_public_key",
    "key_id",
    "verify_envelope",
    "verify_bundle",
    "encode_bundle",
]

BUNDLE_MEDIA_TYPE = "application/vnd.amnesia.certificate.v1+json"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://amnesia.dev/erasure-certificate/v1"
SCHEMA_VERSION = "amnesia.certificate/v1"
SUBJECT_PREFIX = "amnesia:erasure/"
OUTCOMES = ("VERIFIED", "UNVERIFIED", "RESIDUAL", "OUT_OF_SCOPE", "NEEDS_HUMAN")

# DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): SEQUENCE {
# SEQUENCE { OID 1.3.101.112 }, BIT STRING (32 bytes) }.
_SPKI_PREFIX = bytes.fromhex("302a300506032b6570032100")


# ------------------------------------------------------------------ errors


class CertificateInvalid(Exception):
    """A certificate that does not verify. ``exit_code`` is ``amnesia verify``'s.

    Messages name fields, never their values."""

    exit_code = 10


class Malformed(CertificateInvalid):
    """Not a v1 bundle or DSSE envelope in its canonical form (exit 10)."""

    exit_code = 10


class BadSchema(CertificateInvalid):
    """Correctly signed, but not a valid v1 erasure certificate (exit 10)."""

    exit_code = 10


class BadSignature(CertificateInvalid):
    """The signature does not verify: the certificate was changed (exit 11)."""

    exit_code = 11


class WrongKey(CertificateInvalid):
    """Not signed by any trusted key (exit 12)."""

    exit_code = 12


class NotLogged(CertificateInvalid):
    """A bare envelope with no transparency log proof (exit 13)."""

    exit_code = 13


class BadInclusion(NotLogged):
    """The inclusion proof does not place the certificate in the checkpoint's tree (exit 13)."""

    exit_code = 13


class BadCheckpoint(CertificateInvalid):
    """The checkpoint is malformed or not signed by a trusted key under the log's origin (exit 14)."""

    exit_code = 14


class BadTimestamp(CertificateInvalid):
    """The timestamp token is not canonical base64 (exit 15)."""

    exit_code = 15


class KeyRetired(CertificateInvalid):
    """Issued after its key was retired (exit 17)."""

    exit_code = 17


# ------------------------------------------------------------------ keys


@dataclass(frozen=True)
class TrustedKey:
    """An Ed25519 public key (32 bytes) trusted from its creation until ``retired`` (None: not retired)."""

    public: bytes
    retired: Optional[datetime] = None

    @property
    def key_id(self) -> str:
        return key_id(self.public)


def load_public_key(pem: Union[str, bytes], retired: Optional[datetime] = None) -> TrustedKey:
    """Reads a PEM ``PUBLIC KEY`` block holding an Ed25519 key (``signing-key.pub.pem``)."""
    text = pem.decode("ascii", "replace") if isinstance(pem, bytes) else pem
    m = re.search(r"-----BEGIN PUBLIC KEY-----\s*(.*?)\s*-----END PUBLIC KEY-----", text, re.S)
    if not m:
        raise ValueError("public key: want a PEM block 'BEGIN PUBLIC KEY' (e.g. the state directory's signing-key.pub.pem)")
    try:
        der = base64.b64decode("".join(m.group(1).split()), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("public key: the PEM block is not base64") from None
    if len(der) != len(_SPKI_PREFIX) + 32 or not der.startswith(_SPKI_PREFIX):
        raise ValueError("public key: not an Ed25519 SubjectPublicKeyInfo (amnesia keys are Ed25519)")
    return TrustedKey(der[len(_SPKI_PREFIX):], retired)


def key_id(public: bytes) -> str:
    """``sha256:`` + hex SHA-256 of the key's DER SubjectPublicKeyInfo."""
    return "sha256:" + hashlib.sha256(_SPKI_PREFIX + bytes(public)).hexdigest()


# ------------------------------------------------------------------ results


@dataclass
class Checked:
    """What :func:`verify_bundle` established."""

    statement: Dict[str, Any]
    key_id: str
    log_index: int
    log_origin: str
    tree_size: int
    unchecked_signatures: int = 0
    timestamp_note: str = ""
    payload: bytes = field(default=b"", repr=False)

    @property
    def predicate(self) -> Dict[str, Any]:
        return self.statement["predicate"]

    @property
    def certificate_id(self) -> str:
        return str(self.predicate["certificate_id"])

    @property
    def complete(self) -> bool:
        return bool(self.predicate["complete"])

    @property
    def counts(self) -> Dict[str, int]:
        return dict(self.predicate["counts"])

    def expired(self, now: Optional[datetime] = None) -> bool:
        """Whether ``now`` is after valid_until (an expired certificate still verifies)."""
        until = _parse_rfc3339(self.predicate.get("valid_until"))
        return until is None or (now or datetime.now(timezone.utc)) > until


# ------------------------------------------------------------------ base64 and JSON


def _std_b64(s: Any) -> bytes:
    """The canonical standard padded base64 of a byte string, or ValueError."""
    if not isinstance(s, str):
        raise ValueError("not a string")
    try:
        b = base64.b64decode(s.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise ValueError("not base64") from None
    if base64.b64encode(b).decode("ascii") != s:
        raise ValueError("not canonical base64")
    return b


def _any_b64(s: Any) -> bytes:
    """Standard or URL-safe padded base64, canonical, as DSSE allows."""
    try:
        return _std_b64(s)
    except ValueError:
        pass
    if not isinstance(s, str):
        raise ValueError("not a string")
    try:
        b = base64.urlsafe_b64decode(s.encode("ascii"))
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise ValueError("not base64") from None
    if base64.urlsafe_b64encode(b).decode("ascii") != s:
        raise ValueError("not canonical base64")
    return b


def _strict_json(data: bytes, what: str) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Malformed(f"{what} is not UTF-8 JSON") from None
    try:
        doc, end = json.JSONDecoder().raw_decode(text.lstrip(" \t\r\n"))
    except ValueError:
        raise Malformed(f"{what} is not a JSON object") from None
    rest = text.lstrip(" \t\r\n")[end:]
    if rest.strip(" \t\r\n"):
        raise Malformed(f"data after the {what}")
    if not isinstance(doc, dict):
        raise Malformed(f"{what} is not a JSON object")
    return doc


def _go_json(v: Any) -> str:
    """Go's encoding/json with SetIndent("", "  ") and SetEscapeHTML(false)."""
    s = json.dumps(v, indent=2, ensure_ascii=False, separators=(",", ": "))
    return s.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def encode_bundle(doc: Dict[str, Any]) -> bytes:
    """A bundle document in the one form amnesia writes and accepts
    (certificate.EncodeBundle): two-space indent, no HTML escaping, final newline."""
    return (_go_json(doc) + "\n").encode("utf-8")


# ------------------------------------------------------------------ envelope


def _decode_envelope(env: Any) -> Tuple[str, bytes, Dict[str, Any]]:
    """(payload base64, payload bytes, the one signature) of a DSSE envelope."""
    if not isinstance(env, dict):
        raise Malformed("envelope is not a JSON object")
    pt, payload, sigs = env.get("payloadType"), env.get("payload"), env.get("signatures")
    if pt is None:
        raise Malformed("envelope has no payloadType")
    if pt != PAYLOAD_TYPE:
        raise Malformed(f"payloadType is not {PAYLOAD_TYPE}")
    if not payload:
        raise Malformed("envelope has no payload")
    if not isinstance(sigs, list) or not sigs:
        raise Malformed("envelope has no signatures")
    if len(sigs) > 1:
        raise Malformed(f"envelope carries {len(sigs)} signatures; a certificate carries exactly one")
    try:
        body = _any_b64(payload)
    except ValueError:
        raise Malformed("payload is not base64") from None
    sig = sigs[0]
    if not isinstance(sig, dict):
        raise Malformed("signatures[0] is not an object")
    try:
        if not _any_b64(sig.get("sig")):
            raise ValueError("empty")
    except ValueError:
        raise Malformed("signatures[0].sig is not base64") from None
    return payload, body, sig


def _pae(payload_type: bytes, body: bytes) -> bytes:
    return b"DSSEv1 %d %s %d %s" % (len(payload_type), payload_type, len(body), body)


def verify_envelope(envelope: Union[bytes, Dict[str, Any]], key: Union[TrustedKey, bytes]) -> Dict[str, Any]:
    """Checks a bare DSSE envelope (or a bundle's ``dsseEnvelope``) against one key,
    as certificate.Verify does, and returns the signed statement."""
    pub = key.public if isinstance(key, TrustedKey) else bytes(key)
    if len(pub) != 32:
        raise ValueError(f"public key has {len(pub)} bytes, want 32")
    env = envelope if isinstance(envelope, dict) else _strict_json(bytes(envelope), "envelope")
    _, body, sig = _decode_envelope(env)
    kid = key_id(pub)
    if sig.get("keyid") != kid:
        raise WrongKey(f"no signature has key id {kid}")
    if not _ed25519.verify(pub, _pae(PAYLOAD_TYPE.encode(), body), _any_b64(sig["sig"])):
        raise BadSignature(f"signature by key id {kid} does not verify")
    return _check_payload(body, kid)


# ------------------------------------------------------------------ schema


_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _parse_rfc3339(v: Any) -> Optional[datetime]:
    if not isinstance(v, str) or not _RFC3339.match(v):
        return None
    s = v.upper().replace("Z", "+00:00")
    if "." in s:  # fromisoformat wants at most 6 fraction digits on 3.9/3.10
        head, rest = s.split(".", 1)
        digits = re.match(r"\d+", rest).group(0)  # type: ignore[union-attr]
        s = head + "." + (digits + "000000")[:6] + rest[len(digits):]
    try:
        return datetime.fromisoformat(s)
    except ValueError:
        return None


def _is_sha256_hex(v: Any) -> bool:
    return isinstance(v, str) and re.fullmatch(r"[0-9a-f]{64}", v) is not None


def _obj(v: Any, where: str) -> Dict[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise BadSchema(f"payload field {where} has the wrong JSON type")
    return v


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_near(i: int, a: Dict[str, Any], m: Dict[str, Any]) -> None:
    """A near-duplicate candidate is left to a person, never deleted, and
    its similarity is a fraction (certificate/check.go checkNear)."""
    n = m.get("near")
    kind = a.get("kind")
    if n is None and kind != "near-duplicate":
        return
    if n is None:
        raise BadSchema(f"predicate.artifacts[{i}] is a near-duplicate without measurement.near")
    n = _obj(n, f"predicate.artifacts[{i}].measurement.near")
    if kind != "near-duplicate":
        raise BadSchema(f"predicate.artifacts[{i}].measurement.near is set but kind is not near-duplicate")
    if a.get("outcome") != "NEEDS_HUMAN":
        raise BadSchema(f"predicate.artifacts[{i}] is a near-duplicate but its outcome is not NEEDS_HUMAN")
    if m.get("deleted"):
        raise BadSchema(f"predicate.artifacts[{i}] is a near-duplicate but measurement.deleted is true")
    if n.get("method") not in ("quote", "paraphrase"):
        raise BadSchema(f"predicate.artifacts[{i}].measurement.near.method is not quote or paraphrase")
    if not n.get("of"):
        raise BadSchema(f"predicate.artifacts[{i}].measurement.near.of is empty")
    sim = n.get("similarity", 0)
    if not (_is_num(sim) and 0 < sim <= 1):
        raise BadSchema(f"predicate.artifacts[{i}].measurement.near.similarity is not more than 0 and at most 1")


def _check_semantic(s: Any) -> None:
    """The semantic section: its level, and drift figures that are
    fractions (certificate/check.go checkSemantic)."""
    if s is None:
        return
    s = _obj(s, "predicate.semantic")
    if s.get("level") != "semantic":
        raise BadSchema("predicate.semantic.level is not semantic")
    drift = s.get("drift") or []
    if not isinstance(drift, list):
        raise BadSchema("payload field predicate.semantic.drift has the wrong JSON type")
    for i, d in enumerate(drift):
        d = _obj(d, f"predicate.semantic.drift[{i}]")
        k, q = d.get("k", 0), d.get("queries", 0)
        if not (_is_num(k) and _is_num(q)) or k < 1 or q < 0:
            raise BadSchema(f"predicate.semantic.drift[{i}] needs k of at least 1 and queries of at least 0")
        o, mn = d.get("overlap_at_k", 0), d.get("min_overlap_at_k", 0)
        if not (_is_num(o) and _is_num(mn)) or o < 0 or o > 1 or mn < 0 or mn > o:
            raise BadSchema(f"predicate.semantic.drift[{i}].overlap_at_k is not a fraction at least min_overlap_at_k")
        u = d.get("overlap_unerased_at_k", 0)
        if not _is_num(u) or u < 0 or u > 1:
            raise BadSchema(f"predicate.semantic.drift[{i}].overlap_unerased_at_k is not a fraction")


# The JSON names of every field of the statement (certificate.SchemaFields in
# Go; a Go test compares the two lists). Go's encoding/json matches a key to a
# field without regard to case; this verifier reads keys exactly. So that the
# two never read one payload differently, a key that differs from one of these
# only in case is refused, as a repeated key is.
SCHEMA_FIELDS = frozenset((
    "_type", "artifacts", "by_filter", "by_id", "by_similarity", "bytes_scanned", "canaries",
    "candidates", "capabilities", "certificate_id", "choices", "complete", "copies",
    "copies_unlisted", "counts", "coverage", "covered_bytes", "covers", "crypto_shredding",
    "declared_scope", "deleted", "digest", "does_not_cover", "drift", "endpoint",
    "erased_neighbours", "error", "evidence", "exposure", "extracted", "files_scanned", "flagged",
    "follows", "found_after", "found_before", "fpr_any", "fpr_per_canary", "fragment_bytes",
    "head", "id", "issued_at", "journal", "k", "key_destroyed", "key_id", "kind", "level",
    "log_index", "logical", "measurement", "method", "methods", "millis", "min_overlap_at_k",
    "model", "models", "name", "near", "needles", "needs_human", "neighbours", "not_searched",
    "note", "of", "of_windows", "out_of_scope", "outcome", "overlap_at_k", "overlap_unerased_at_k",
    "payload_sha256", "physical", "predicate", "predicateType", "probe_after", "probe_before",
    "queries", "quote_fraction", "reason", "reclaim", "record", "record_bytes", "records",
    "references", "requests", "residual", "residue", "retrain", "retrain_millis", "retrained",
    "reverifiable", "reverifies", "reverify_note", "rows", "run", "schema_version", "scope",
    "sealed", "sealed_artifacts", "searches", "semantic", "served", "sha256", "shard", "sharded",
    "shards", "shared", "similarity", "steps", "store", "subject", "subject_ref", "subject_rows",
    "tainted", "tainted_files_left", "touched", "trace", "trained_without", "type", "unverified",
    "valid_until", "verified", "verified_logical", "verified_physical", "via", "what",
    "window_bytes", "windows",
))
_FOLDED_FIELDS = {f.casefold(): f for f in SCHEMA_FIELDS}


def _strict_pairs(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            if k in SCHEMA_FIELDS:
                raise BadSchema(f"payload repeats the field {k} in one object")
            raise BadSchema("payload repeats a key in one object")
        if k not in SCHEMA_FIELDS and k.casefold() in _FOLDED_FIELDS:
            raise BadSchema(f"payload has a key that differs from the field {_FOLDED_FIELDS[k.casefold()]} only in case")
        out[k] = v
    return out


def _check_payload(body: bytes, kid: str) -> Dict[str, Any]:
    try:
        st = json.loads(body.decode("utf-8"), object_pairs_hook=_strict_pairs)
    except BadSchema:
        raise
    except (UnicodeDecodeError, ValueError):
        raise BadSchema("payload is not an in-toto statement") from None
    if not isinstance(st, dict):
        raise BadSchema("payload is not an in-toto statement")
    # In-toto Statement v1 (what the attestation library's Validate checks).
    if st.get("_type") != STATEMENT_TYPE:
        raise BadSchema("payload is not a valid in-toto v1 statement: wrong statement type")
    subjects = st.get("subject")
    if not isinstance(subjects, list) or not subjects:
        raise BadSchema("payload is not a valid in-toto v1 statement: at least one subject required")
    for s in subjects:
        if not isinstance(s, dict):
            raise BadSchema("payload is not a valid in-toto v1 statement: invalid subject")
        d = s.get("digest")
        if not isinstance(d, dict) or not d:
            raise BadSchema("payload is not a valid in-toto v1 statement: at least one digest required")
        for alg, val in d.items():
            if not isinstance(val, str) or not re.fullmatch(r"[0-9a-fA-F]*", val) or len(val) % 2:
                raise BadSchema("payload is not a valid in-toto v1 statement: digest is not hex")
            if alg == "sha256" and len(val) != 64:
                raise BadSchema("payload is not a valid in-toto v1 statement: digest has the wrong length")
    if not st.get("predicateType"):
        raise BadSchema("payload is not a valid in-toto v1 statement: predicate type required")
    p = st.get("predicate")
    if not isinstance(p, dict) or not p:
        raise BadSchema("payload is not a valid in-toto v1 statement: predicate required")

    # Steps 5 to 12 (certificate/check.go).
    if st.get("predicateType") != PREDICATE_TYPE:
        raise BadSchema(f"predicateType is not {PREDICATE_TYPE}")
    if p.get("schema_version") != SCHEMA_VERSION:
        raise BadSchema(f"predicate.schema_version is not {SCHEMA_VERSION}")
    if p.get("key_id") != kid:
        raise BadSchema("predicate.key_id does not match the signing key")
    cid = p.get("certificate_id")
    if not cid or not isinstance(cid, str):
        raise BadSchema("predicate.certificate_id is empty")
    if len(subjects) != 1:
        raise BadSchema("subject does not hold exactly one entry")
    if subjects[0].get("name") != SUBJECT_PREFIX + cid:
        raise BadSchema(f"subject[0].name is not {SUBJECT_PREFIX} followed by predicate.certificate_id")
    digest = subjects[0]["digest"].get("sha256")
    if not _is_sha256_hex(digest):
        raise BadSchema("subject[0].digest.sha256 is not 64 lowercase hex digits")
    if _obj(p.get("trace"), "predicate.trace").get("id") != digest:
        raise BadSchema("predicate.trace.id does not equal subject[0].digest.sha256")
    issued = _parse_rfc3339(p.get("issued_at"))
    if issued is None:
        raise BadSchema("predicate.issued_at is not an RFC 3339 time")
    until = _parse_rfc3339(p.get("valid_until"))
    if until is None:
        raise BadSchema("predicate.valid_until is not an RFC 3339 time")
    if not until > issued:
        raise BadSchema("predicate.valid_until is not after predicate.issued_at")

    arts = p.get("artifacts") or []
    if not isinstance(arts, list):
        raise BadSchema("payload field predicate.artifacts has the wrong JSON type")
    counts = {k: 0 for k in ("artifacts", "verified", "verified_physical", "verified_logical",
                             "unverified", "residual", "out_of_scope", "needs_human")}
    counts["artifacts"] = len(arts)
    for i, a in enumerate(arts):
        a = _obj(a, f"predicate.artifacts[{i}]")
        outcome, level = a.get("outcome"), a.get("level", "")
        m = _obj(a.get("measurement"), f"predicate.artifacts[{i}].measurement")
        if a.get("via", "") not in ("", "reconcile"):
            raise BadSchema(f'predicate.artifacts[{i}].via is not "reconcile"')
        _check_near(i, a, m)
        if outcome == "VERIFIED":
            if level not in ("physical", "logical"):
                raise BadSchema(f"predicate.artifacts[{i}].level is not physical or logical")
            if m.get("copies") or m.get("copies_unlisted", 0) > 0:
                raise BadSchema(f"predicate.artifacts[{i}] is VERIFIED but measurement.copies lists records outside the lineage")
            lg = _obj(m.get("logical"), "measurement.logical")
            if lg.get("by_id") or lg.get("by_filter") or lg.get("by_similarity"):
                raise BadSchema(f"predicate.artifacts[{i}] is VERIFIED but measurement.logical says a query still returns it")
            ph = m.get("physical")
            phd = _obj(ph, "measurement.physical")
            if phd.get("found_after", 0) != 0:
                raise BadSchema(f"predicate.artifacts[{i}] is VERIFIED but measurement.physical.found_after is not 0")
            cov = _obj(phd.get("coverage"), "coverage")
            if level == "physical":
                if ph is None:
                    raise BadSchema(f"predicate.artifacts[{i}].level is physical but it has no measurement.physical")
                if phd.get("needles", 0) <= 0 or phd.get("found_before", 0) <= 0:
                    raise BadSchema(f"predicate.artifacts[{i}].level is physical but measurement.physical found none of its needles before deletion (the probe had no power)")
                if cov and cov.get("covered_bytes", 0) < cov.get("record_bytes", 0):
                    raise BadSchema(f"predicate.artifacts[{i}].level is physical but measurement.physical.coverage.covered_bytes is less than record_bytes")
            counts["verified"] += 1
            counts["verified_" + level] += 1
        elif outcome in OUTCOMES:
            if not a.get("reason"):
                raise BadSchema(f"predicate.artifacts[{i}].reason is empty")
            counts[outcome.lower()] += 1
        else:
            raise BadSchema(f"predicate.artifacts[{i}].outcome is not a known outcome")
    sh = p.get("crypto_shredding")
    if sh is not None:
        sh = _obj(sh, "predicate.crypto_shredding")
        if sh.get("level") not in ("physical", "logical"):
            raise BadSchema("predicate.crypto_shredding.level is not physical or logical")
        if not sh.get("evidence") or not sh.get("covers") or not sh.get("does_not_cover"):
            raise BadSchema("predicate.crypto_shredding needs evidence, covers and does_not_cover")
        if not sh.get("key_destroyed") and sh.get("level") == "physical":
            raise BadSchema("predicate.crypto_shredding.level is physical but key_destroyed is false")
    _check_semantic(p.get("semantic"))
    oos = p.get("out_of_scope")
    if not isinstance(oos, list) or not oos:
        raise BadSchema("predicate.out_of_scope is empty")
    for i, x in enumerate(oos):
        if not _obj(x, f"predicate.out_of_scope[{i}]").get("what"):
            raise BadSchema(f"predicate.out_of_scope[{i}].what is empty")
    got = _obj(p.get("counts"), "predicate.counts")
    for k, want in counts.items():
        if got.get(k, 0) != want:
            raise BadSchema(f"predicate.counts.{k} does not match the artifacts")
    if p.get("complete") is True and counts["unverified"] + counts["residual"] + counts["out_of_scope"] > 0:
        raise BadSchema("predicate.complete is true but an artifact is UNVERIFIED, RESIDUAL or OUT_OF_SCOPE")

    def link(name: str) -> None:
        ln = p.get(name)
        if ln is None:
            return
        ln = _obj(ln, "predicate." + name)
        if not ln.get("certificate_id"):
            raise BadSchema(f"predicate.{name}.certificate_id is empty")
        if ln.get("certificate_id") == cid:
            raise BadSchema(f"predicate.{name}.certificate_id is the certificate's own id")
        if not _is_sha256_hex(ln.get("payload_sha256")):
            raise BadSchema(f"predicate.{name}.payload_sha256 is not 64 lowercase hex digits")
        if ln.get("log_index", 0) < 0:
            raise BadSchema(f"predicate.{name}.log_index is negative")

    link("follows")
    if p.get("reverifies") is not None:
        if p.get("follows") is not None:
            raise BadSchema("predicate.follows is set on a re-verification: only erasure certificates continue an earlier erasure")
        link("reverifies")
        for i, a in enumerate(arts):
            if a.get("level") == "physical":
                raise BadSchema(f"predicate.artifacts[{i}].level is physical in a re-verification")
            if _obj(a.get("measurement"), "measurement").get("physical") is not None:
                raise BadSchema(f"predicate.artifacts[{i}].measurement.physical is present in a re-verification")
    return st


# ------------------------------------------------------------------ transparency log


def _leaf_hash(leaf: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + leaf).digest()


def _node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _inclusion_root(proof: List[bytes], lo: int, hi: int, n: int, leaf: bytes) -> Optional[bytes]:
    """RFC 6962 root from an inclusion proof, as golang.org/x/mod/sumdb/tlog computes it."""
    if hi - lo == 1:
        return leaf if not proof else None
    if not proof:
        return None
    k = 1
    while k * 2 < hi - lo:
        k *= 2
    if n < lo + k:
        th = _inclusion_root(proof[:-1], lo, lo + k, n, leaf)
        return None if th is None else _node_hash(th, proof[-1])
    th = _inclusion_root(proof[:-1], lo + k, hi, n, leaf)
    return None if th is None else _node_hash(proof[-1], th)


def _note_key_hash(name: str, public: bytes) -> bytes:
    return hashlib.sha256(name.encode("utf-8") + b"\n\x01" + public).digest()[:4]


def _check_checkpoint(cp_text: str, keys: Sequence[TrustedKey], origin: Optional[str]) -> Tuple[str, int, bytes, int]:
    """(origin, size, root hash, unchecked signature lines) of a signed checkpoint."""
    if "\n\n" not in cp_text:
        raise BadCheckpoint("checkpoint is not a signed note")
    body = cp_text.split("\n\n", 1)[0] + "\n"
    split = cp_text.rfind("\n\n")
    sigs_text = cp_text[split + 2:]
    if not sigs_text or not sigs_text.endswith("\n"):
        raise BadCheckpoint("checkpoint: the signature lines do not end in a newline")
    lines: List[Tuple[str, bytes, bytes]] = []
    seen = set()
    for i, line in enumerate(sigs_text[:-1].split("\n")):
        if not line.startswith("\u2014 "):
            raise BadCheckpoint(f"checkpoint: signature line {i + 1} does not start with an em dash and a space")
        name, sp, b64 = line[2:].partition(" ")
        if not sp or not name:
            raise BadCheckpoint(f"checkpoint: signature line {i + 1} is not a key name and a signature")
        try:
            raw = _std_b64(b64)
        except ValueError:
            raise BadCheckpoint(f"checkpoint: the signature on line {i + 1} is not canonical base64") from None
        if len(raw) < 5:
            raise BadCheckpoint(f"checkpoint: the signature on line {i + 1} is too short")
        if (name, raw[:4]) in seen:
            raise BadCheckpoint("checkpoint: a key signs the note twice")
        seen.add((name, raw[:4]))
        lines.append((name, raw[:4], raw[4:]))
    # The body: origin, size, root hash, nothing else.
    parts = body[:-1].split("\n")
    if len(parts) != 3:
        raise BadCheckpoint(f"checkpoint: {len(parts)} lines, want origin, size, root hash")
    cp_origin, size_s, root_s = parts
    if not cp_origin or re.search(r"[ +\t\n]", cp_origin):
        raise BadCheckpoint("checkpoint: the origin must be non-empty, without spaces or '+'")
    if not re.fullmatch(r"0|[1-9][0-9]*", size_s) or int(size_s) >= 2**63:
        raise BadCheckpoint("checkpoint: tree size is not a canonical decimal")
    try:
        root = _std_b64(root_s)
    except ValueError:
        root = b""
    if len(root) != 32:
        raise BadCheckpoint("checkpoint: root hash is not 32 bytes of canonical base64")
    if origin is not None and cp_origin != origin:
        raise BadCheckpoint("the checkpoint is of another log than the pinned origin")
    by_log, unchecked = False, 0
    for name, khash, sig in lines:
        matched = False
        for k in keys:
            if name == cp_origin and khash == _note_key_hash(cp_origin, k.public):
                matched = True
                if len(sig) != 64 or not _ed25519.verify(k.public, body.encode("utf-8"), sig):
                    raise BadCheckpoint("checkpoint: invalid signature by the log key")
                by_log = True
        if not matched:
            unchecked += 1
    if not by_log:
        raise BadCheckpoint("checkpoint is not signed by a trusted key under the log's origin")
    return cp_origin, int(size_s), root, unchecked


# ------------------------------------------------------------------ bundles


def verify_bundle(
    data: bytes,
    keys: Sequence[Union[TrustedKey, bytes]],
    *,
    origin: Optional[str] = None,
    require_timestamp: bool = False,
) -> Checked:
    """Checks a published certificate (the bundle ``GET /v1/certificates/{id}``
    returns, or ``<state>/certificates/*.dsse.json``) offline against trusted keys,
    as ``amnesia verify --public-key ...`` does. ``origin`` pins the log
    (``--log-origin``). Raises a :class:`CertificateInvalid` subclass."""
    tkeys = [k if isinstance(k, TrustedKey) else TrustedKey(bytes(k)) for k in keys]
    data = bytes(data)
    try:
        probe = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        probe = None
    if not (isinstance(probe, dict) and "mediaType" in probe):
        env = _strict_json(data, "envelope")
        _decode_envelope(env)
        raise NotLogged("a bare DSSE envelope: the certificate carries no transparency log proof")
    b = _strict_json(data, "bundle")
    if set(b) - {"mediaType", "dsseEnvelope", "logEntry"}:
        raise Malformed("bundle is not a JSON object of the v1 form")
    if b.get("mediaType") != BUNDLE_MEDIA_TYPE:
        raise Malformed(f"bundle mediaType is not {BUNDLE_MEDIA_TYPE}")
    env, le = b.get("dsseEnvelope"), b.get("logEntry")
    if not env or not isinstance(le, dict):
        raise Malformed("bundle lacks dsseEnvelope or logEntry")
    if set(le) - {"logIndex", "inclusionProof", "checkpoint", "timestamp"}:
        raise Malformed("bundle is not a JSON object of the v1 form")
    if not isinstance(env, dict):
        raise Malformed("envelope is not a JSON object")
    payload_b64, body, sig = _decode_envelope(env)
    try:
        _std_b64(payload_b64)
    except ValueError:
        raise Malformed("the envelope's payload is not canonical standard base64") from None
    try:
        _std_b64(sig.get("sig"))
    except ValueError:
        raise Malformed("the envelope's signature is not canonical standard base64") from None
    # The one written form (EncodeBundle): a changed byte anywhere is seen.
    canon_le: Dict[str, Any] = {
        "logIndex": le.get("logIndex"),
        "inclusionProof": le.get("inclusionProof"),
        "checkpoint": le.get("checkpoint"),
    }
    if le.get("timestamp"):
        canon_le["timestamp"] = le["timestamp"]
    canon = {
        "mediaType": b["mediaType"],
        "dsseEnvelope": {
            "payloadType": env["payloadType"],
            "payload": env["payload"],
            "signatures": [{"keyid": sig.get("keyid"), "sig": sig.get("sig")}],
        },
        "logEntry": canon_le,
    }
    if encode_bundle(canon) != data:
        raise Malformed("bundle is not in its canonical encoding (was it edited?)")
    if not isinstance(le.get("logIndex"), int) or isinstance(le.get("logIndex"), bool) or not isinstance(le.get("checkpoint"), str):
        raise Malformed("bundle is not a JSON object of the v1 form")
    if not tkeys:
        raise ValueError("verify certificate: no trusted key given")

    key = next((k for k in tkeys if k.key_id == sig.get("keyid")), None)
    if key is None:
        raise WrongKey("no signature is by a trusted key")
    st = verify_envelope(env, key)
    kid = key.key_id
    if key.retired is not None:
        issued = _parse_rfc3339(st["predicate"].get("issued_at"))
        if issued is None or not issued < key.retired:
            raise KeyRetired(f"issued after key {kid} was retired")

    cp_origin, size, root, unchecked = _check_checkpoint(le["checkpoint"], tkeys, origin)

    proof_s = le.get("inclusionProof") or []
    if not isinstance(proof_s, list) or len(proof_s) > 64:
        raise BadInclusion("proof: too many hashes")
    proof: List[bytes] = []
    for i, h in enumerate(proof_s):
        try:
            hb = _std_b64(h)
        except ValueError:
            hb = b""
        if len(hb) != 32:
            raise BadInclusion(f"proof: hash {i} is not 32 bytes of canonical base64")
        proof.append(hb)
    cid = st["predicate"]["certificate_id"]
    if "\n" in cid or "\r" in cid:
        raise BadInclusion("leaf: a field with a line break")
    leaf = ("amnesia/certificate/v1\n%s\n%s\n" % (cid, hashlib.sha256(body).hexdigest())).encode("utf-8")
    index = le["logIndex"]
    if index < 0 or index >= size:
        raise BadInclusion(f"inclusion: index {index} outside a tree of {size} leaves")
    if _inclusion_root(proof, 0, size, index, _leaf_hash(leaf)) != root:
        raise BadInclusion(f"inclusion of leaf {index} in tree {size} does not verify")

    note = "no timestamp"
    if le.get("timestamp"):
        try:
            if not _std_b64(le["timestamp"]):
                raise ValueError("empty")
        except ValueError:
            raise BadTimestamp("timestamp is not canonical base64") from None
        note = "a timestamp is present but was not checked (no TSA root given)"
    elif require_timestamp:
        raise BadTimestamp("no timestamp, and one is required")
    return Checked(st, kid, index, cp_origin, size, unchecked, note, body)
