"""Typed values of the amnesia HTTP API (``/v1``)."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

__all__ = [
    "KINDS",
    "Ref",
    "Record",
    "RecordResult",
    "StoreCount",
    "TraceSummary",
    "Request",
    "Preview",
    "Verification",
    "PublicKey",
    "TERMINAL_STATES",
    "parse_time",
    "format_time",
]

#: Artifact kinds the lineage endpoint accepts.
KINDS = ("source", "chunk", "embedding", "cache", "train", "log")

#: Request states after which nothing more happens without an operator.
TERMINAL_STATES = ("done", "failed", "paused")


@dataclass(frozen=True)
class Ref:
    """An artifact: a key in a configured store."""

    store: str
    key: str

    def to_json(self) -> Dict[str, str]:
        return {"store": self.store, "key": self.key}


RefLike = Union[Ref, Tuple[str, str], Mapping[str, str]]


def _ref(v: RefLike) -> Ref:
    if isinstance(v, Ref):
        return v
    if isinstance(v, tuple) and len(v) == 2:
        return Ref(str(v[0]), str(v[1]))
    if isinstance(v, Mapping):
        return Ref(str(v["store"]), str(v["key"]))
    raise TypeError("parent: want Ref(store, key), a (store, key) tuple or a {store, key} mapping")


@dataclass
class Record:
    """One artifact to record (``POST /v1/lineage``).

    A root (a record without ``parent``) needs ``subject``: the raw subject id,
    which the server keys and never stores. ``content`` (UTF-8 text) and
    ``vector`` (float32 values) are digested by the server and dropped.
    ``mentions`` are raw ids of third parties the record names.
    """

    store: str
    key: str
    kind: str
    subject: Optional[str] = None
    parent: Optional[RefLike] = None
    content: Optional[str] = None
    vector: Optional[Sequence[float]] = None
    mentions: Optional[Sequence[str]] = None

    def validate(self, index: int) -> None:
        """Checks what the client can check, naming the record's index (never its values)."""
        where = f"records[{index}]"
        if not isinstance(self.store, str) or not self.store:
            raise ValueError(f"{where}.store: name a store configured in amnesia.yaml")
        if not isinstance(self.key, str) or not self.key:
            raise ValueError(f"{where}.key: give the record's key in its store")
        if self.kind not in KINDS:
            raise ValueError(f"{where}.kind: want one of {', '.join(KINDS)}")
        if self.parent is None and not self.subject:
            raise ValueError(f"{where}.subject: a record without a parent needs the subject it belongs to")
        if self.vector is not None:
            for x in self.vector:
                if not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x):
                    raise ValueError(f"{where}.vector: want finite numbers")

    def to_json(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"store": self.store, "key": self.key, "kind": self.kind}
        if self.subject:
            d["subject"] = self.subject
        if self.parent is not None:
            d["parent"] = _ref(self.parent).to_json()
        if self.content is not None:
            d["content"] = self.content
        if self.vector is not None:
            d["vector"] = [float(x) for x in self.vector]
        if self.mentions:
            d["mentions"] = list(self.mentions)
        return d

    @classmethod
    def from_mapping(cls, m: Mapping[str, Any]) -> "Record":
        known = {"store", "key", "kind", "subject", "parent", "content", "vector", "mentions"}
        extra = sorted(set(m) - known)
        if extra:
            raise ValueError(f"record: unknown field(s) {', '.join(extra)} (known: {', '.join(sorted(known))})")
        return cls(**{k: m[k] for k in m})


@dataclass
class RecordResult:
    recorded: int = 0
    unchanged: int = 0
    batches: int = 0

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "RecordResult":
        return cls(recorded=int(d.get("recorded", 0)), unchanged=int(d.get("unchanged", 0)))


@dataclass
class StoreCount:
    store: str
    kinds: Dict[str, int]
    records: int

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "StoreCount":
        return cls(store=str(d.get("store", "")), kinds=dict(d.get("kinds") or {}), records=int(d.get("records", 0)))


@dataclass
class TraceSummary:
    """What an erasure would touch: counts only, never content."""

    trace_id: str
    subject_ref: str
    scope: str
    artifacts: int
    mentions: int
    already_erased: int
    stores: List[StoreCount]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "TraceSummary":
        return cls(
            trace_id=str(d.get("trace_id", "")),
            subject_ref=str(d.get("subject_ref", "")),
            scope=str(d.get("scope", "")),
            artifacts=int(d.get("artifacts", 0)),
            mentions=int(d.get("mentions", 0)),
            already_erased=int(d.get("already_erased", 0)),
            stores=[StoreCount.from_json(s) for s in d.get("stores") or []],
            raw=dict(d),
        )


@dataclass
class QueueJob:
    """One erasure of the queue, as ``GET /v1/status`` lists it: keyed
    references and states only, never a raw subject id."""

    erasure: str
    trace: str
    subject_ref: str
    scope: str
    state: str
    queue_state: str
    due_at: Optional[datetime]
    due_in_s: Optional[float]
    overdue: bool
    enqueued_at: Optional[datetime]
    attempts: int
    worker: str = ""
    lease_until: Optional[datetime] = None
    finished_at: Optional[datetime] = None
    certificate: str = ""
    error: str = ""
    followed_by: str = ""
    continued_as: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "QueueJob":
        due_in = d.get("due_in_s")
        return cls(
            erasure=str(d.get("erasure", "")),
            trace=str(d.get("trace", "")),
            subject_ref=str(d.get("subject_ref", "")),
            scope=str(d.get("scope", "")),
            state=str(d.get("state", "")),
            queue_state=str(d.get("queue_state", "")),
            due_at=parse_time(d.get("due_at")),
            due_in_s=None if due_in is None else float(due_in),
            overdue=bool(d.get("overdue", False)),
            enqueued_at=parse_time(d.get("enqueued_at")),
            attempts=int(d.get("attempts", 0)),
            worker=str(d.get("worker") or ""),
            lease_until=parse_time(d.get("lease_until")),
            finished_at=parse_time(d.get("finished_at")),
            certificate=str(d.get("certificate") or ""),
            error=str(d.get("error") or ""),
            followed_by=str(d.get("followed_by") or ""),
            continued_as=str(d.get("continued_as") or ""),
            raw=dict(d),
        )


@dataclass
class QueueStatus:
    """The erasure queue at a glance (``GET /v1/status``, as ``amnesia
    status --json``): counts, open erasures in claim order, with
    ``all=True`` the finished ones, and the latest delete persistence
    latency per store. ``attention`` is what makes ``amnesia status`` exit
    25: an erasure overdue, or failed and not followed by another."""

    now: Optional[datetime]
    counts: Dict[str, int]
    attention: bool
    open: List[QueueJob]
    history: List[QueueJob]
    latency: List[Dict[str, Any]]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "QueueStatus":
        return cls(
            now=parse_time(d.get("now")),
            counts={str(k): int(v) for k, v in (d.get("counts") or {}).items()},
            attention=bool(d.get("attention", False)),
            open=[QueueJob.from_json(j) for j in d.get("open") or []],
            history=[QueueJob.from_json(j) for j in d.get("history") or []],
            latency=[dict(x) for x in d.get("delete_persistence_latency") or []],
            raw=dict(d),
        )


def parse_time(v: Any) -> Optional[datetime]:
    """An RFC 3339 time as an aware datetime (None when absent or zero)."""
    if not isinstance(v, str) or not v or v.startswith("0001-01-01"):
        return None
    s = v.replace("Z", "+00:00")
    # Go writes up to nine fractional digits; Python reads six.
    if "." in s:
        head, rest = s.split(".", 1)
        digits = "".join(itertools.takewhile(str.isdigit, rest))
        tz = rest[len(digits):]
        s = f"{head}.{digits[:6].ljust(6, '0')}{tz}"
    return datetime.fromisoformat(s)


def format_time(t: datetime) -> str:
    """An RFC 3339 time in UTC (a naive datetime is taken as UTC)."""
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


@dataclass
class Request:
    """An erasure request. The server keeps the keyed subject only."""

    id: str
    state: str
    overdue: bool
    received_at: Optional[datetime]
    due_at: Optional[datetime]
    reason: str
    subject_ref: str
    scope: str
    external_ref: str = ""
    trace_id: str = ""
    erasure_id: str = ""
    certificate_id: str = ""
    certificate_sha256: str = ""
    complete: Optional[bool] = None
    error: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL_STATES

    def matches_certificate(self, bundle: bytes) -> bool:
        """Whether ``bundle`` is the certificate this request names
        (``certificate_sha256``, as ``sha256:<hex>`` or bare hex)."""
        want = self.certificate_sha256
        if want.startswith("sha256:"):
            want = want[len("sha256:"):]
        return bool(want) and hmac.compare_digest(hashlib.sha256(bundle).hexdigest(), want.lower())

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Request":
        c = d.get("complete")
        return cls(
            id=str(d.get("id", "")),
            state=str(d.get("state", "")),
            overdue=bool(d.get("overdue", False)),
            received_at=parse_time(d.get("received_at")),
            due_at=parse_time(d.get("due_at")),
            reason=str(d.get("reason", "")),
            subject_ref=str(d.get("subject_ref", "")),
            scope=str(d.get("scope", "")),
            external_ref=str(d.get("external_ref") or ""),
            trace_id=str(d.get("trace_id") or ""),
            erasure_id=str(d.get("erasure_id") or ""),
            certificate_id=str(d.get("certificate_id") or ""),
            certificate_sha256=str(d.get("certificate_sha256") or ""),
            complete=c if isinstance(c, bool) else None,
            error=str(d.get("error") or ""),
            raw=dict(d),
        )


@dataclass
class Preview:
    """A previewed request: its trace's counts and a single-use confirmation."""

    trace_id: str
    counts: TraceSummary
    confirmation: str
    expires_at: Optional[datetime]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Preview":
        return cls(
            trace_id=str(d.get("trace_id", "")),
            counts=TraceSummary.from_json(d.get("counts") or {}),
            confirmation=str(d.get("confirmation", "")),
            expires_at=parse_time(d.get("expires_at")),
        )


@dataclass
class Verification:
    """The server's check of a certificate bundle against its keyring."""

    valid: bool
    key_id: str = ""
    certificate_id: str = ""
    log_index: int = 0
    complete: bool = False
    error_kind: str = ""
    error: str = ""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Verification":
        return cls(
            valid=bool(d.get("valid", False)),
            key_id=str(d.get("key_id") or ""),
            certificate_id=str(d.get("certificate_id") or ""),
            log_index=int(d.get("log_index") or 0),
            complete=bool(d.get("complete", False)),
            error_kind=str(d.get("error_kind") or ""),
            error=str(d.get("error") or ""),
        )


@dataclass
class PublicKey:
    key_id: str
    pem: str

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "PublicKey":
        return cls(key_id=str(d.get("key_id", "")), pem=str(d.get("pem", "")))
