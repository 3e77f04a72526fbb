"""The HTTP client of ``amnesia serve`` (standard library only)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, Union

from . import __version__
from .errors import AmnesiaError, ConnectionFailed, RateLimited, error_from_response
from .types import (
    Preview,
    PublicKey,
    QueueStatus,
    Record,
    RecordResult,
    Request,
    TraceSummary,
    Verification,
    format_time,
)
from .webhook import Secret, sign_webhook

__all__ = ["Client", "MAX_BATCH", "MAX_BODY", "batches", "RecordLike"]

#: The most records one ``POST /v1/lineage`` takes; larger inputs are split.
MAX_BATCH = 1000

#: The server's default request body limit (serve.max_body: 1MiB); batches stay under it.
MAX_BODY = 1 << 20

# Room for {"scope": ..., "records": [...]} around the records.
_ENVELOPE = 512

RecordLike = Union[Record, Mapping[str, Any]]

CERTIFICATE_MEDIA_TYPE = "application/vnd.amnesia.certificate.v1+json"


def batches(
    records: Iterable[RecordLike], size: int = MAX_BATCH, max_bytes: int = MAX_BODY
) -> Iterator[Tuple[int, List[Record]]]:
    """Splits records into batches of at most ``size`` records whose JSON body
    stays under ``max_bytes``, as (index of the first, batch).

    Each record is validated on the way (an error names its overall index).
    """
    if size < 1 or size > MAX_BATCH:
        raise ValueError(f"batch size must be 1..{MAX_BATCH}, got {size}")
    batch: List[Record] = []
    start, used = 0, _ENVELOPE
    for i, r in enumerate(records):
        rec = r if isinstance(r, Record) else Record.from_mapping(r)
        rec.validate(i)
        n = len(_encode(rec.to_json())) + 1
        if _ENVELOPE + n > max_bytes:
            raise ValueError(
                f"records[{i}]: {n} bytes of JSON, over the request body limit of {max_bytes} bytes "
                "(raise serve.max_body in amnesia.yaml and max_bytes here, or shorten the content)"
            )
        if batch and (len(batch) == size or used + n > max_bytes):
            yield start, batch
            batch, used = [], _ENVELOPE
        if not batch:
            start = i
        batch.append(rec)
        used += n
    if batch:
        yield start, batch


class Client:
    """A client of one amnesia server.

    ``base_url`` is the server's root (``http://127.0.0.1:7468``); ``token``
    the bearer token (``amn_...``) whose role allows the calls you make:
    ``capture`` for :meth:`record_lineage`, ``operator`` for the rest,
    ``auditor`` for reading requests and certificates and verifying.
    Subjects only ever travel in request bodies, never in URLs.
    """

    def __init__(
        self,
        base_url: str,
        token: Optional[str] = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 2,
        user_agent: str = f"amnesia-client-python/{__version__}",
    ) -> None:
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.netloc:
            raise ValueError("base_url: want the server's root URL, e.g. http://127.0.0.1:7468")
        if u.query or u.fragment:
            raise ValueError("base_url: leave out the query and fragment")
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.max_retries = max_retries
        self.user_agent = user_agent

    def __repr__(self) -> str:  # never shows the token
        return f"Client({self.base_url!r})"

    # ------------------------------------------------------------ plumbing

    def url(self, path: str, query: Optional[Mapping[str, Any]] = None) -> str:
        """The absolute URL of ``path`` with ``query`` (None values left out)."""
        if not path.startswith("/"):
            raise ValueError("path must start with /")
        u = self.base_url + path
        if query:
            q = {k: _query_value(v) for k, v in query.items() if v is not None}
            if q:
                u += "?" + urllib.parse.urlencode(q)
        return u

    def build_request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        data: Optional[bytes] = None,
        content_type: str = "application/json",
        query: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, str]] = None,
        auth: bool = True,
        accept: str = "application/json, application/problem+json",
    ) -> urllib.request.Request:
        """The ``urllib`` request of one call (no network)."""
        if json_body is not None and data is not None:
            raise ValueError("give json_body or data, not both")
        if json_body is not None:
            data = _encode(json_body)
        h: Dict[str, str] = {"Accept": accept, "User-Agent": self.user_agent}
        if data is not None:
            h["Content-Type"] = content_type
        if auth:
            if not self.token:
                raise ValueError("this call needs a token: Client(base_url, token='amn_...')")
            h["Authorization"] = "Bearer " + self.token
        if headers:
            h.update(headers)
        return urllib.request.Request(self.url(path, query), data=data, headers=h, method=method)

    def _send(self, req: urllib.request.Request) -> Tuple[int, Dict[str, str], bytes]:
        attempt = 0
        while True:
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    return resp.status, dict(resp.headers.items()), resp.read()
            except urllib.error.HTTPError as e:
                body = e.read() if e.fp is not None else b""
                err = error_from_response(e.code, dict(e.headers.items()) if e.headers else {}, body)
                if isinstance(err, RateLimited) and attempt < self.max_retries:
                    attempt += 1
                    time.sleep(min(err.retry_after or 0.5 * attempt, 5.0))
                    continue
                raise err from None
            except urllib.error.URLError as e:
                raise ConnectionFailed(0, f"cannot reach {self.base_url}: {e.reason}") from None
            except (ConnectionError, TimeoutError, OSError) as e:
                raise ConnectionFailed(0, f"cannot reach {self.base_url}: {type(e).__name__}") from None

    def _json(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        status, headers, raw = self._send(self.build_request(method, path, json_body=body, **kw))
        if not raw:
            return None
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise AmnesiaError(status, "the server answered something that is not JSON") from None

    # ------------------------------------------------------------ health

    def healthz(self) -> bool:
        """Liveness (no token needed)."""
        return self._send(self.build_request("GET", "/healthz", auth=False, accept="*/*"))[0] == 200

    def readyz(self) -> bool:
        """Readiness: the ledger is reachable and, with a PostgreSQL ledger, the
        server's configuration is the installation's (no token needed). False on 503."""
        try:
            return self._send(self.build_request("GET", "/readyz", auth=False, accept="*/*"))[0] == 200
        except AmnesiaError as e:
            if e.status == 503:
                return False
            raise

    # ------------------------------------------------------------ lineage

    def record_lineage(
        self,
        records: Iterable[RecordLike],
        *,
        scope: Optional[str] = None,
        batch_size: int = MAX_BATCH,
        max_bytes: int = MAX_BODY,
    ) -> RecordResult:
        """Records artifacts (``capture`` role), split into calls of at most 1000
        records and ``max_bytes`` of JSON (the server's ``serve.max_body``).

        Recording is idempotent by (store, key) and content, so a failed call
        can be repeated whole. When a batch fails, the error's
        ``batch_start`` is the index of its first record; the batches before
        it were recorded.
        """
        total = RecordResult()
        for start, batch in batches(records, batch_size, max_bytes):
            body: Dict[str, Any] = {"records": [r.to_json() for r in batch]}
            if scope:
                body["scope"] = scope
            try:
                res = RecordResult.from_json(self._json("POST", "/v1/lineage", body) or {})
            except AmnesiaError as e:
                e.batch_start = start
                raise
            total.recorded += res.recorded
            total.unchanged += res.unchanged
            total.batches += 1
        return total

    # ------------------------------------------------------------ trace and requests

    def trace(self, subject: str, *, scope: Optional[str] = None) -> TraceSummary:
        """What an erasure of ``subject`` would touch, as counts (``operator``)."""
        return TraceSummary.from_json(self._json("POST", "/v1/trace", _scoped({"subject": subject}, scope)))

    def create_request(
        self,
        subject: str,
        reason: str,
        *,
        scope: Optional[str] = None,
        external_ref: Optional[str] = None,
        due: Optional[Union[datetime, str]] = None,
        callback_url: Optional[str] = None,
    ) -> Request:
        """Creates an erasure request (``operator``). ``reason`` is a ticket
        reference, never personal data; the server keeps the keyed subject only."""
        body: Dict[str, Any] = {"subject": subject, "reason": reason}
        if external_ref:
            body["external_ref"] = external_ref
        if due is not None:
            body["due"] = format_time(due) if isinstance(due, datetime) else due
        if callback_url:
            body["callback_url"] = callback_url
        return Request.from_json(self._json("POST", "/v1/requests", _scoped(body, scope)))

    def preview(self, request_id: str) -> Preview:
        """Traces the request and returns its counts and a single-use confirmation (valid 10 minutes)."""
        return Preview.from_json(self._json("POST", f"/v1/requests/{_seg(request_id)}/preview", {}))

    def confirm(self, request_id: str, confirmation: str) -> Request:
        """Queues the previewed request for erasure. :class:`Conflict` when the
        trace changed or the confirmation was used; :class:`Expired` when it expired."""
        return Request.from_json(
            self._json("POST", f"/v1/requests/{_seg(request_id)}/confirm", {"confirmation": confirmation})
        )

    def request(self, request_id: str) -> Request:
        """One request's status."""
        return Request.from_json(self._json("GET", f"/v1/requests/{_seg(request_id)}"))

    def requests(self, *, state: Optional[str] = None, overdue: Optional[bool] = None) -> List[Request]:
        """The requests in the token's scopes, optionally by state or overdue flag."""
        doc = self._json("GET", "/v1/requests", query={"state": state, "overdue": overdue})
        items = doc.get("requests", doc.get("items", [])) if isinstance(doc, dict) else doc
        return [Request.from_json(d) for d in items or []]

    def wait(self, request_id: str, *, timeout: float = 120.0, interval: float = 0.5) -> Request:
        """Polls a request until it is done, failed or paused."""
        deadline = time.monotonic() + timeout
        while True:
            r = self.request(request_id)
            if r.finished:
                return r
            if time.monotonic() >= deadline:
                raise TimeoutError(f"request {request_id} still {r.state} after {timeout:g}s")
            time.sleep(interval)

    def erase(self, subject: str, reason: str, *, scope: Optional[str] = None, timeout: float = 120.0) -> Request:
        """create_request → preview → confirm → wait, in one call."""
        req = self.create_request(subject, reason, scope=scope)
        pv = self.preview(req.id)
        self.confirm(req.id, pv.confirmation)
        return self.wait(req.id, timeout=timeout)

    def queue_status(self, *, limit: Optional[int] = None, all: bool = False) -> QueueStatus:
        """The erasure queue in the token's scopes (operator and auditor
        tokens): counts, open erasures with due dates, and with ``all=True``
        the finished ones (at most ``limit`` of each, 1 to 1000; the server's
        default 100). Read-only."""
        return QueueStatus.from_json(
            self._json("GET", "/v1/status", query={"limit": limit, "all": True if all else None})
        )

    # ------------------------------------------------------------ certificates and the log

    def certificate(self, certificate_id: str) -> bytes:
        """A certificate bundle's bytes (``application/vnd.amnesia.certificate.v1+json``)."""
        req = self.build_request(
            "GET", f"/v1/certificates/{_seg(certificate_id)}", accept=CERTIFICATE_MEDIA_TYPE + ", application/json"
        )
        return self._send(req)[2]

    def verify(self, bundle: bytes) -> Verification:
        """Checks a bundle against the installation's keyring (server side)."""
        req = self.build_request("POST", "/v1/verify", data=bytes(bundle), content_type=CERTIFICATE_MEDIA_TYPE)
        status, _, raw = self._send(req)
        try:
            return Verification.from_json(json.loads(raw.decode("utf-8")))
        except (UnicodeDecodeError, ValueError):
            raise AmnesiaError(status, "the server answered something that is not JSON") from None

    def checkpoint(self) -> str:
        """The transparency log's signed checkpoint (C2SP signed note)."""
        return self._send(self.build_request("GET", "/v1/log/checkpoint", accept="text/plain, */*"))[2].decode("utf-8")

    def keys(self) -> List[PublicKey]:
        """The installation's public keys."""
        doc = self._json("GET", "/v1/keys")
        items = doc.get("keys", []) if isinstance(doc, dict) else doc
        return [PublicKey.from_json(k) for k in items or []]

    # ------------------------------------------------------------ webhook intake

    def intake_webhook(self, secret: Secret, payload: Mapping[str, Any], *, timestamp: Optional[int] = None) -> str:
        """Posts a signed privacy-platform webhook (no bearer token); returns the request id."""
        data = json.dumps(payload, separators=(",", ":")).encode("utf-8")
        req = self.build_request(
            "POST", "/v1/intake/webhook", data=data, auth=False, headers=sign_webhook(secret, data, timestamp)
        )
        doc = json.loads(self._send(req)[2].decode("utf-8"))
        return str(doc.get("id", ""))


def _encode(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def _scoped(body: Dict[str, Any], scope: Optional[str]) -> Dict[str, Any]:
    if scope:
        body["scope"] = scope
    return body


def _seg(v: str) -> str:
    if not v:
        raise ValueError("empty id")
    return urllib.parse.quote(v, safe="")


def _query_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
