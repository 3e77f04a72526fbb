"""Errors of the amnesia client.

The server answers every error as RFC 9457 problem details
(``application/problem+json``). :func:`error_from_response` maps them to
:class:`AmnesiaError` subclasses by status. An error never carries the
request body, and the ``value`` member some problem details put on an
invalid field is dropped: an error message must never echo a subject.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Type

__all__ = [
    "AmnesiaError",
    "ConnectionFailed",
    "InvalidInput",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "Conflict",
    "Expired",
    "PayloadTooLarge",
    "RateLimited",
    "ServerError",
    "error_from_response",
]

# The most of a non-JSON error body an exception keeps (it is the server's
# text, never the request's).
_MAX_TEXT = 300


class AmnesiaError(Exception):
    """An error answered by amnesia (or the failure to reach it).

    Attributes:
        status: the HTTP status (0 when the server could not be reached).
        title: the problem's short summary (RFC 9457 ``title``).
        type: the problem type URI (RFC 9457 ``type``; ``about:blank`` when absent).
        detail: the problem's explanation, when the server gave one.
        errors: per-field problems as ``{"location": ..., "message": ...}``
            (the field's path, e.g. ``body.records[3].kind``; never its value).
        batch_start: for :meth:`Client.record_lineage`, the index of the first
            record of the batch that failed (batches before it were recorded).
    """

    def __init__(
        self,
        status: int,
        title: str,
        type: str = "about:blank",
        detail: str = "",
        errors: Optional[List[Dict[str, str]]] = None,
        instance: str = "",
    ) -> None:
        self.status = status
        self.title = title
        self.type = type
        self.detail = detail
        self.errors: List[Dict[str, str]] = list(errors or [])
        self.instance = instance
        self.batch_start: Optional[int] = None
        super().__init__(self._message())

    def _message(self) -> str:
        msg = f"{self.status} {self.title}" if self.status else self.title
        if self.detail and self.detail != self.title:
            msg += f": {self.detail}"
        for e in self.errors:
            loc, m = e.get("location", ""), e.get("message", "")
            msg += f"; {loc}: {m}" if loc else f"; {m}"
        return msg

    def __str__(self) -> str:
        msg = self._message()
        if self.batch_start is not None:
            msg += f" (in the batch starting at record {self.batch_start}; earlier batches were recorded)"
        return msg


class ConnectionFailed(AmnesiaError):
    """The server could not be reached (status 0)."""


class InvalidInput(AmnesiaError):
    """400 or 422: the request was malformed; ``errors`` names the fields."""


class Unauthorized(AmnesiaError):
    """401: no token, an unknown or revoked token, or a bad webhook signature."""


class Forbidden(AmnesiaError):
    """403: the token's role or scopes do not allow this."""


class NotFound(AmnesiaError):
    """404: no such request, certificate or lineage."""


class Conflict(AmnesiaError):
    """409: the trace changed since the preview, or a confirmation was reused."""


class Expired(AmnesiaError):
    """410: the confirmation expired; preview the request again."""


class PayloadTooLarge(AmnesiaError):
    """413: the body is over the server's ``max_body``."""


class RateLimited(AmnesiaError):
    """429: over the token's rate; ``retry_after`` is in seconds when the server said."""

    retry_after: Optional[float] = None


class ServerError(AmnesiaError):
    """5xx: the server failed (or is not ready)."""


_BY_STATUS: Dict[int, Type[AmnesiaError]] = {
    400: InvalidInput,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Expired,
    413: PayloadTooLarge,
    422: InvalidInput,
    429: RateLimited,
}


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def error_from_response(status: int, headers: Mapping[str, str], body: bytes) -> AmnesiaError:
    """Map an error response to an :class:`AmnesiaError`.

    ``headers`` is looked up case-insensitively for ``Content-Type`` and
    ``Retry-After``. Problem details are read from a JSON body of any content
    type; another body becomes the title (cut short).
    """
    h = {k.lower(): v for k, v in headers.items()}
    title, ptype, detail, instance = "", "about:blank", "", ""
    errors: List[Dict[str, str]] = []
    doc: Any = None
    is_json = False
    try:
        doc = json.loads(body.decode("utf-8")) if body else None
        is_json = body != b""
    except (UnicodeDecodeError, ValueError):
        doc = None
    if isinstance(doc, dict):
        title = _str(doc.get("title"))
        ptype = _str(doc.get("type")) or "about:blank"
        detail = _str(doc.get("detail"))
        instance = _str(doc.get("instance"))
        raw = doc.get("errors")
        if isinstance(raw, list):
            for e in raw:
                if isinstance(e, dict):
                    # "value" is deliberately not kept: it may be the input.
                    errors.append({"location": _str(e.get("location")), "message": _str(e.get("message"))})
    elif body and not is_json:
        title = body[:_MAX_TEXT].decode("utf-8", "replace").strip()
    if not title:
        title = _reason(status)
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else AmnesiaError)
    err = cls(status, title, ptype, detail, errors, instance)
    if isinstance(err, RateLimited):
        ra = h.get("retry-after", "")
        try:
            err.retry_after = float(ra) if ra else None
        except ValueError:
            err.retry_after = None
    return err


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"
