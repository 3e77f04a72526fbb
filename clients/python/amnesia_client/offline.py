"""Offline verification of amnesia certificates, standard library only.

The same checks, in the same order, as ``amnesia verify --public-key KEY``
(certificate.VerifyBundle of the Go module): the bundle's canonical form, the
DSSE envelope, the Ed25519 signature by a trusted key, the v1 schema (steps 4
to 12 of the certificate package documentation, on the payload as Go reads it: its
JSON types, its RFC 3339 times), the key's retirement, the
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
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
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
        return self.predicate.get("complete") is True

    @property
    def counts(self) -> Dict[str, int]:
        return dict(self.predicate.get("counts") or {})

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


# An RFC 3339 time as Go's time.Parse(time.RFC3339, ...) reads it (amnesia
# verify's reader): "T" and "Z" in capitals only, a four-digit year, an hour of
# one or two digits, a fraction after "." or ",", and an offset up to 24:60 (Go's
# parser admits these, go.dev/issue/54580); the ranges are checked in _go_time.
_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{1,2}):([0-9]{2}):([0-9]{2})"
    r"(?:[.,]([0-9]+))?(?:Z|([+-])([0-9]{2}):([0-9]{2}))"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _days_in(month: int, year: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days from 1970-01-01 to y-m-d, proleptic Gregorian (year 0 included)."""
    if m <= 2:
        y -= 1
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m - 3 if m > 2 else m + 9) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _go_time(v: Any) -> Optional[int]:
    """Nanoseconds since 1970-01-01T00:00:00Z of v read as Go's
    time.Parse(time.RFC3339, v) reads it, or None where Go refuses v."""
    m = _RFC3339.fullmatch(v) if isinstance(v, str) else None
    if m is None:
        return None
    year, month, day, hour, minute, sec = (int(m.group(i)) for i in range(1, 7))
    if not (1 <= month <= 12 and 1 <= day <= _days_in(month, year) and hour <= 23 and minute <= 59 and sec <= 59):
        return None
    nsec = int((m.group(7) or "")[:9].ljust(9, "0"))
    offset = 0
    if m.group(8):
        oh, om = int(m.group(9)), int(m.group(10))
        if oh > 24 or om > 60:
            return None
        offset = (oh * 60 + om) * 60 * (-1 if m.group(8) == "-" else 1)
    secs = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + sec - offset
    return secs * 1_000_000_000 + nsec


def _parse_rfc3339(v: Any) -> Optional[datetime]:
    """v as _go_time reads it, in UTC, to the microsecond (rounded down); None
    where Go refuses v or a datetime cannot hold it (before year 1)."""
    ns = _go_time(v)
    if ns is None:
        return None
    try:
        return _EPOCH + timedelta(microseconds=ns // 1000)
    except OverflowError:
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


# The Go type of every field of the statement (certificate/predicate.go and
# certificate/model.go), as encoding/json decodes a payload into
# certificate.Statement: "string", "bool", "int" (int and int64), "float"
# (float64), "[]T", "*T", "map[string]string", or a struct of this table.
# certificate's TestPythonGoTypesMatch compares it with the Go structs.
_GO_TYPES: Dict[str, Dict[str, str]] = {
    "Statement": {"_type": "string", "subject": "[]ResourceDescriptor", "predicateType": "string", "predicate": "Predicate"},
    "ResourceDescriptor": {"name": "string", "digest": "map[string]string"},
    "Predicate": {
        "schema_version": "string", "certificate_id": "string", "key_id": "string", "subject_ref": "string",
        "scope": "string", "reason": "string", "issued_at": "string", "valid_until": "string", "trace": "TraceRef",
        "complete": "bool", "declared_scope": "[]StoreState", "artifacts": "[]Artifact", "counts": "Counts",
        "out_of_scope": "[]Exclusion", "journal": "JournalRef", "reverifiable": "bool", "reverify_note": "string",
        "reverifies": "*ReverifyLink", "follows": "*ReverifyLink", "crypto_shredding": "*Shredding",
        "models": "[]ModelOutcome", "semantic": "*Semantic",
    },
    "ReverifyLink": {"certificate_id": "string", "payload_sha256": "string", "log_index": "int"},
    "TraceRef": {"id": "string", "artifacts": "int"},
    "StoreState": {
        "name": "string", "type": "string", "capabilities": "[]string", "touched": "bool", "artifacts": "int",
        "residue": "string", "evidence": "string", "reclaim": "string",
    },
    "Artifact": {
        "id": "string", "kind": "string", "store": "string", "outcome": "string", "level": "string",
        "reason": "string", "method": "string", "measurement": "*Measurement", "sealed": "bool", "via": "string",
    },
    "Shredding": {
        "key_destroyed": "bool", "level": "string", "evidence": "string", "sealed_artifacts": "int",
        "covers": "string", "does_not_cover": "string",
    },
    "Measurement": {
        "deleted": "bool", "logical": "*Logical", "physical": "*Physical", "copies": "[]Copy",
        "copies_unlisted": "int", "near": "*Near",
    },
    "Logical": {"by_id": "bool", "by_filter": "bool", "by_similarity": "bool", "methods": "[]string"},
    "Physical": {
        "needles": "int", "shared": "int", "found_before": "int", "found_after": "int", "files_scanned": "int",
        "bytes_scanned": "int", "coverage": "*Coverage",
    },
    "Coverage": {"record_bytes": "int", "covered_bytes": "int", "window_bytes": "int", "fragment_bytes": "int"},
    "Copy": {"store": "string", "record": "string", "windows": "int"},
    "Near": {"method": "string", "of": "string", "similarity": "float", "windows": "int", "of_windows": "int"},
    "Semantic": {"level": "string", "note": "string", "searches": "[]NearSearch", "drift": "[]Drift"},
    "NearSearch": {
        "store": "string", "methods": "[]string", "records": "int", "not_searched": "int", "neighbours": "int",
        "similarity": "float", "quote_fraction": "float", "candidates": "int", "note": "string",
    },
    "Drift": {
        "store": "string", "queries": "int", "k": "int", "overlap_at_k": "float", "min_overlap_at_k": "float",
        "erased_neighbours": "int", "overlap_unerased_at_k": "float", "method": "string",
    },
    "Counts": {
        "artifacts": "int", "verified": "int", "verified_physical": "int", "verified_logical": "int",
        "unverified": "int", "residual": "int", "out_of_scope": "int", "needs_human": "int",
    },
    "Exclusion": {"what": "string", "reason": "string"},
    "JournalRef": {"head": "string", "steps": "int"},
    "ModelOutcome": {
        "model": "string", "sharded": "bool", "level": "string", "outcome": "string", "reason": "string",
        "choices": "[]string", "method": "string", "shards": "[]ModelShard", "probe_before": "*ModelProbe",
        "probe_after": "*ModelProbe",
    },
    "ModelShard": {
        "shard": "int", "tainted": "[]ModelArtifact", "retrain": "string", "retrained": "*ModelArtifact",
        "trained_without": "bool", "served": "string", "tainted_files_left": "int", "retrain_millis": "int",
    },
    "ModelArtifact": {"run": "string", "sha256": "string", "rows": "int", "subject_rows": "int"},
    "ModelProbe": {
        "error": "string", "endpoint": "string", "canaries": "int", "references": "int", "extracted": "int",
        "flagged": "int", "exposure": "[]float", "fpr_per_canary": "float", "fpr_any": "float", "requests": "int",
        "millis": "int",
    },
}

_INT64 = 1 << 63


def _finite(v: Any) -> bool:
    """Whether the JSON number v fits a float64 (Go's strconv refuses one beyond it)."""
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _go_decode(v: Any, typ: str, where: str) -> Any:
    """v as encoding/json decodes it into a Go value of type typ (_GO_TYPES):
    a null or absent member is the zero value (None for a pointer, [] for a
    slice), members the struct does not have are dropped, and a value of
    another JSON type (a string for a bool, 2.0 or true for an int, a number
    beyond float64 or int64) is refused, as certificate.Verify refuses it
    ("payload field ... has the wrong JSON type")."""

    def wrong() -> BadSchema:
        return BadSchema(f"payload field {where} has the wrong JSON type")

    if typ.startswith("*"):
        return None if v is None else _go_decode(v, typ[1:], where)
    if typ.startswith("[]"):
        if v is None:
            return []
        if not isinstance(v, list):
            raise wrong()
        return [_go_decode(x, typ[2:], f"{where}[{i}]") for i, x in enumerate(v)]
    if typ == "map[string]string":
        if v is None:
            return {}
        if not isinstance(v, dict):
            raise wrong()
        return {k: _go_decode(x, "string", where) for k, x in v.items()}
    if typ == "string":
        if v is None:
            return ""
        if not isinstance(v, str):
            raise wrong()
        return v
    if typ == "bool":
        if v is None:
            return False
        if not isinstance(v, bool):
            raise wrong()
        return v
    if typ == "int":
        if v is None:
            return 0
        if isinstance(v, bool) or not isinstance(v, int) or not -_INT64 <= v < _INT64:
            raise wrong()
        return v
    if typ == "float":
        if v is None:
            return 0.0
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not _finite(v):
            raise wrong()
        return float(v)
    fields = _GO_TYPES[typ]
    if v is None:
        v = {}
    if not isinstance(v, dict):
        raise wrong()
    return {k: _go_decode(v.get(k), t, f"{where}.{k}" if where else k) for k, t in fields.items()}


# Digest sizes in bytes of the algorithms the in-toto attestation library
# checks (HashAlgorithm.HexLength of github.com/in-toto/attestation/go/v1);
# it leaves the digests of other algorithms unchecked.
_DIGEST_BYTES = {
    "md5": 16, "sha1": 20, "gitBlob": 20, "gitCommit": 20, "gitTag": 20, "gitTree": 20,
    "sha224": 28, "sha512_224": 28, "sha3_224": 28, "sha256": 32, "sha512_256": 32, "sha3_256": 32,
    "dirHash": 32, "sha384": 48, "sha3_384": 48, "sha512": 64, "sha3_512": 64,
}

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _no_constant(name: str) -> Any:
    """json.loads reads NaN, Infinity and -Infinity; JSON (and Go) does not."""
    raise ValueError("not JSON: " + name)


def _proto_bytes_ok(v: Any) -> bool:
    """Whether protojson reads v as a bytes field: standard base64, or URL-safe
    when it holds "-" or "_", padded when its length is a multiple of 4 and
    unpadded otherwise; Go's decoder skips line breaks."""
    if not isinstance(v, str):
        return False
    c = "A-Za-z0-9_-" if ("-" in v or "_" in v) else "A-Za-z0-9+/"
    t = v.replace("\r", "").replace("\n", "")
    if len(v) % 4 == 0:
        return re.fullmatch(f"(?:[{c}]{{4}})*(?:[{c}]{{2}}==|[{c}]{{3}}=)?", t) is not None
    return re.fullmatch(f"[{c}]*", t) is not None and len(t) % 4 != 1


def _check_proto_subject(s: Dict[str, Any]) -> None:
    """What protojson refuses in a subject (an in-toto ResourceDescriptor): a
    field given under both its JSON and its proto name, or a field of the
    wrong type. null is an unset field."""
    bad = BadSchema("payload is not an in-toto statement")
    if ("downloadLocation" in s and "download_location" in s) or ("mediaType" in s and "media_type" in s):
        raise bad
    for f in ("name", "uri", "downloadLocation", "download_location", "mediaType", "media_type"):
        if s.get(f) is not None and not isinstance(s[f], str):
            raise bad
    d = s.get("digest")
    if d is not None and (not isinstance(d, dict) or not all(isinstance(x, str) for x in d.values())):
        raise bad
    if s.get("content") is not None and not _proto_bytes_ok(s["content"]):
        raise bad
    if s.get("annotations") is not None and not isinstance(s["annotations"], dict):
        raise bad


def _proto_values_problem(st: Dict[str, Any]) -> str:
    """What protojson refuses among the values json.loads read, or "": a
    string (or member name) holding an unpaired UTF-16 surrogate escape,
    anywhere (protojson reads unknown members to skip them), and a number
    beyond float64 in the predicate or a subject's annotations
    (google.protobuf.Struct, whose numbers are float64)."""
    # ctx: "statement", "subjects", "subject", "struct" (inside a Struct) or "other".
    stack: List[Tuple[Any, str]] = [(st, "statement")]
    while stack:
        node, ctx = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return "a string holds an unpaired UTF-16 surrogate"
        elif isinstance(node, dict):
            for k, v in node.items():
                stack.append((k, "other"))
                if ctx == "statement":
                    c = "struct" if k == "predicate" else "subjects" if k == "subject" else "other"
                elif ctx == "subject":
                    c = "struct" if k == "annotations" else "other"
                else:
                    c = "struct" if ctx == "struct" else "other"
                stack.append((v, c))
        elif isinstance(node, list):
            c = "subject" if ctx == "subjects" else "struct" if ctx == "struct" else "other"
            stack.extend((x, c) for x in node)
        elif ctx == "struct" and isinstance(node, (int, float)) and not isinstance(node, bool) and not _finite(node):
            return "a number of the predicate is beyond float64"
    return ""


def _model_verified(m: Dict[str, Any]) -> bool:
    """certificate.ModelVerified: every shard retrained without the subject's
    rows and switched in, no tainted file left, and a probe after that (when
    one ran) that found nothing and did not fail."""
    after = m["probe_after"]
    if not m["sharded"] or not m["shards"]:
        return False
    if after is not None and (after["extracted"] > 0 or after["flagged"] > 0 or after["error"] != ""):
        return False
    for s in m["shards"]:
        r = s["retrained"]
        if r is None or not s["trained_without"] or r["subject_rows"] != 0 or s["served"] != "switched" or s["tainted_files_left"] != 0:
            return False
    return True


def _check_models(p: Dict[str, Any]) -> None:
    """The model outcomes (certificate/model.go checkModels)."""
    for i, m in enumerate(p["models"]):
        if m["level"] != "model":
            raise BadSchema(f"predicate.models[{i}].level is not model")
        outcome = m["outcome"]
        if outcome == "VERIFIED":
            if not _model_verified(m):
                raise BadSchema(f"predicate.models[{i}] is VERIFIED but its shards or probe do not show it")
        elif outcome in ("TAINTED", "UNVERIFIED", "RESIDUAL", "NEEDS_HUMAN"):
            if not m["reason"]:
                raise BadSchema(f"predicate.models[{i}].reason is empty")
            if p["complete"]:
                raise BadSchema(f"predicate.complete is true but predicate.models[{i}] is {outcome}")
        else:
            raise BadSchema(f"predicate.models[{i}].outcome is not a known outcome")


def _check_declared_scope(p: Dict[str, Any]) -> None:
    """complete is not true next to a configured store that was not erased or
    not checked: one that is RESIDUAL or UNVERIFIED-store-failed, or one that
    is UNREACHABLE while no out_of_scope entry's what is "store NAME" or
    "store NAME (unreachable)" (certificate/check.go checkDeclaredScope).
    Errors name the declared_scope index, never the store."""
    if not p["complete"]:
        return
    for i, s in enumerate(p["declared_scope"]):
        residue = s["residue"]
        if residue in ("RESIDUAL", "UNVERIFIED-store-failed"):
            raise BadSchema(f"predicate.complete is true but predicate.declared_scope[{i}].residue is {residue}")
        if residue == "UNREACHABLE":
            names = ("store " + s["name"], "store " + s["name"] + " (unreachable)")
            if not any(x["what"] in names for x in p["out_of_scope"]):
                raise BadSchema(f"predicate.complete is true but predicate.declared_scope[{i}].residue is UNREACHABLE and no predicate.out_of_scope entry names that store")


def _check_payload(body: bytes, kid: str) -> Dict[str, Any]:
    try:
        st = json.loads(body.decode("utf-8"), object_pairs_hook=_strict_pairs, parse_constant=_no_constant)
    except BadSchema:
        raise
    except RecursionError:
        # Python's json reader stops at about 1000 levels, Go's thousands deeper.
        raise BadSchema("payload nests deeper than this verifier reads") from None
    except (UnicodeDecodeError, ValueError):
        raise BadSchema("payload is not an in-toto statement") from None
    if not isinstance(st, dict):
        raise BadSchema("payload is not an in-toto statement")
    # The in-toto parse (protojson, unknown members discarded): a field
    # given under both its JSON and its proto name, or of the wrong type, an
    # unpaired surrogate escape, a number of the predicate beyond float64.
    if ("_type" in st and "type" in st) or ("predicateType" in st and "predicate_type" in st):
        raise BadSchema("payload is not an in-toto statement")
    for f in ("_type", "type", "predicateType", "predicate_type"):
        if st.get(f) is not None and not isinstance(st[f], str):
            raise BadSchema("payload is not an in-toto statement")
    subjects = st.get("subject")
    if subjects is not None and not isinstance(subjects, list):
        raise BadSchema("payload is not an in-toto statement")
    for s in subjects or []:
        if not isinstance(s, dict):
            raise BadSchema("payload is not an in-toto statement")
        _check_proto_subject(s)
    if st.get("predicate") is not None and not isinstance(st["predicate"], dict):
        raise BadSchema("payload is not an in-toto statement")
    problem = _proto_values_problem(st)
    if problem:
        raise BadSchema(f"payload is not an in-toto statement: {problem}")
    # In-toto Statement v1 (what the attestation library's Validate checks).
    if st.get("_type") != STATEMENT_TYPE:
        raise BadSchema("payload is not a valid in-toto v1 statement: wrong statement type")
    if not subjects:
        raise BadSchema("payload is not a valid in-toto v1 statement: at least one subject required")
    for s in subjects:
        d = s.get("digest") or {}
        if not s.get("name") and not s.get("uri") and not d:
            raise BadSchema("payload is not a valid in-toto v1 statement: at least one of name, URI, or digest are required")
        for alg, val in d.items():
            size = _DIGEST_BYTES.get(alg)
            if size is None:
                continue
            if len(val) % 2 or not re.fullmatch(r"[0-9a-fA-F]*", val):
                raise BadSchema("payload is not a valid in-toto v1 statement: digest is not hex")
            if len(val) != 2 * size:
                raise BadSchema("payload is not a valid in-toto v1 statement: digest has the wrong length")
        if not d:
            raise BadSchema("payload is not a valid in-toto v1 statement: at least one digest required")
    if not st.get("predicateType"):
        raise BadSchema("payload is not a valid in-toto v1 statement: predicate type required")
    if st.get("predicate") is None:
        raise BadSchema("payload is not a valid in-toto v1 statement: predicate required")

    # Decoded as certificate.Verify decodes it (encoding/json into
    # certificate.Statement): every field of its Go type, null and absent
    # members their zero value. The checks below read g; st is returned.
    g = _go_decode(st, "Statement", "")
    p = g["predicate"]
    subjects = g["subject"]

    # Steps 5 to 12 (certificate/check.go checkStatement), in its order.
    if g["predicateType"] != PREDICATE_TYPE:
        raise BadSchema(f"predicateType is not {PREDICATE_TYPE}")
    if p["schema_version"] != SCHEMA_VERSION:
        raise BadSchema(f"predicate.schema_version is not {SCHEMA_VERSION}")
    if p["key_id"] != kid:
        raise BadSchema("predicate.key_id does not match the signing key")
    cid = p["certificate_id"]
    if not cid:
        raise BadSchema("predicate.certificate_id is empty")
    if len(subjects) != 1:
        raise BadSchema("subject does not hold exactly one entry")
    if subjects[0]["name"] != SUBJECT_PREFIX + cid:
        raise BadSchema(f"subject[0].name is not {SUBJECT_PREFIX} followed by predicate.certificate_id")
    digest = subjects[0]["digest"].get("sha256", "")
    if not _is_sha256_hex(digest):
        raise BadSchema("subject[0].digest.sha256 is not 64 lowercase hex digits")
    if p["trace"]["id"] != digest:
        raise BadSchema("predicate.trace.id does not equal subject[0].digest.sha256")
    issued = _go_time(p["issued_at"])
    if issued is None:
        raise BadSchema("predicate.issued_at is not an RFC 3339 time")
    until = _go_time(p["valid_until"])
    if until is None:
        raise BadSchema("predicate.valid_until is not an RFC 3339 time")
    if not until > issued:
        raise BadSchema("predicate.valid_until is not after predicate.issued_at")

    arts = p["artifacts"]
    counts = {k: 0 for k in ("artifacts", "verified", "verified_physical", "verified_logical",
                             "unverified", "residual", "out_of_scope", "needs_human")}
    counts["artifacts"] = len(arts)
    for i, a in enumerate(arts):
        outcome, level, m = a["outcome"], a["level"], a["measurement"]
        if a["via"] not in ("", "reconcile"):
            raise BadSchema(f'predicate.artifacts[{i}].via is not "reconcile"')
        _check_near(i, a, m or {})
        if outcome == "VERIFIED":
            if level not in ("physical", "logical"):
                raise BadSchema(f"predicate.artifacts[{i}].level is not physical or logical")
            if m is not None and (m["copies"] or m["copies_unlisted"] > 0):
                raise BadSchema(f"predicate.artifacts[{i}] is VERIFIED but measurement.copies lists records outside the lineage")
            lg = m["logical"] if m is not None else None
            if lg is not None and (lg["by_id"] or lg["by_filter"] or lg["by_similarity"]):
                raise BadSchema(f"predicate.artifacts[{i}] is VERIFIED but measurement.logical says a query still returns it")
            ph = m["physical"] if m is not None else None
            if ph is not None and ph["found_after"] != 0:
                raise BadSchema(f"predicate.artifacts[{i}] is VERIFIED but measurement.physical.found_after is not 0")
            if level == "physical":
                if ph is None:
                    raise BadSchema(f"predicate.artifacts[{i}].level is physical but it has no measurement.physical")
                if ph["needles"] <= 0 or ph["found_before"] <= 0:
                    raise BadSchema(f"predicate.artifacts[{i}].level is physical but measurement.physical found none of its needles before deletion (the probe had no power)")
                cov = ph["coverage"]
                if cov is not None and cov["covered_bytes"] < cov["record_bytes"]:
                    raise BadSchema(f"predicate.artifacts[{i}].level is physical but measurement.physical.coverage.covered_bytes is less than record_bytes")
            counts["verified"] += 1
            counts["verified_" + level] += 1
        elif outcome in OUTCOMES:
            if not a["reason"]:
                raise BadSchema(f"predicate.artifacts[{i}].reason is empty")
            counts[outcome.lower()] += 1
        else:
            raise BadSchema(f"predicate.artifacts[{i}].outcome is not a known outcome")
    sh = p["crypto_shredding"]
    if sh is not None:
        if sh["level"] not in ("physical", "logical"):
            raise BadSchema("predicate.crypto_shredding.level is not physical or logical")
        if not sh["evidence"] or not sh["covers"] or not sh["does_not_cover"]:
            raise BadSchema("predicate.crypto_shredding needs evidence, covers and does_not_cover")
        if not sh["key_destroyed"] and sh["level"] == "physical":
            raise BadSchema("predicate.crypto_shredding.level is physical but key_destroyed is false")
    _check_semantic(p["semantic"])
    if not p["out_of_scope"]:
        raise BadSchema("predicate.out_of_scope is empty")
    for i, x in enumerate(p["out_of_scope"]):
        if not x["what"]:
            raise BadSchema(f"predicate.out_of_scope[{i}].what is empty")
    got = p["counts"]
    for k, want in counts.items():
        if got[k] != want:
            raise BadSchema(f"predicate.counts.{k} does not match the artifacts")
    if p["complete"] and counts["unverified"] + counts["residual"] + counts["out_of_scope"] > 0:
        raise BadSchema("predicate.complete is true but an artifact is UNVERIFIED, RESIDUAL or OUT_OF_SCOPE")
    _check_declared_scope(p)

    def link(name: str) -> None:
        ln = p[name]
        if ln is None:
            return
        if not ln["certificate_id"]:
            raise BadSchema(f"predicate.{name}.certificate_id is empty")
        if ln["certificate_id"] == cid:
            raise BadSchema(f"predicate.{name}.certificate_id is the certificate's own id")
        if not _is_sha256_hex(ln["payload_sha256"]):
            raise BadSchema(f"predicate.{name}.payload_sha256 is not 64 lowercase hex digits")
        if ln["log_index"] < 0:
            raise BadSchema(f"predicate.{name}.log_index is negative")

    link("follows")
    _check_models(p)
    if p["reverifies"] is not None:
        if p["follows"] is not None:
            raise BadSchema("predicate.follows is set on a re-verification: only erasure certificates continue an earlier erasure")
        link("reverifies")
        for i, a in enumerate(arts):
            if a["level"] == "physical":
                raise BadSchema(f"predicate.artifacts[{i}].level is physical in a re-verification")
            if a["measurement"] is not None and a["measurement"]["physical"] is not None:
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
