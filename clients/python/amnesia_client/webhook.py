"""Webhook signatures, as amnesia's intake endpoint checks them and as its
callbacks are signed.

``X-Webhook-Timestamp`` is the Unix time in seconds; ``X-Webhook-Signature``
is ``v1=`` followed by base64(HMAC-SHA256(secret, "<timestamp>:<body>")). A
signature is accepted within ``tolerance`` seconds (default 300) of now.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from typing import Dict, Mapping, Optional, Union

__all__ = ["TIMESTAMP_HEADER", "SIGNATURE_HEADER", "signature", "sign_webhook", "verify_webhook"]

TIMESTAMP_HEADER = "X-Webhook-Timestamp"
SIGNATURE_HEADER = "X-Webhook-Signature"

Secret = Union[str, bytes]


def _key(secret: Secret) -> bytes:
    key = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
    if not key:
        raise ValueError("webhook secret is empty: set the same secret as serve.webhook_secret in amnesia.yaml")
    return key


def signature(secret: Secret, timestamp: int, body: bytes) -> str:
    """The ``X-Webhook-Signature`` value for ``body`` sent at ``timestamp``."""
    mac = hmac.new(_key(secret), str(int(timestamp)).encode("ascii") + b":" + body, hashlib.sha256)
    return "v1=" + base64.b64encode(mac.digest()).decode("ascii")


def sign_webhook(secret: Secret, body: bytes, timestamp: Optional[int] = None) -> Dict[str, str]:
    """The headers that sign ``body`` (timestamp: now unless given)."""
    ts = int(time.time()) if timestamp is None else int(timestamp)
    return {TIMESTAMP_HEADER: str(ts), SIGNATURE_HEADER: signature(secret, ts, body)}


def verify_webhook(
    secret: Secret,
    body: bytes,
    headers: Mapping[str, str],
    tolerance: float = 300.0,
    now: Optional[float] = None,
) -> bool:
    """Whether ``headers`` sign ``body`` with ``secret`` within ``tolerance`` seconds.

    Use it on amnesia's callbacks. Header names are matched case-insensitively;
    a signature header may list several ``v1=`` values separated by commas or
    spaces (any one may match).
    """
    h = {k.lower(): v for k, v in headers.items()}
    ts_text = h.get(TIMESTAMP_HEADER.lower(), "").strip()
    sig_text = h.get(SIGNATURE_HEADER.lower(), "")
    if not ts_text.isdigit() or not sig_text:
        return False
    ts = int(ts_text)
    current = time.time() if now is None else now
    if abs(current - ts) > tolerance:
        return False
    want = signature(secret, ts, body)
    for part in sig_text.replace(",", " ").split():
        if hmac.compare_digest(part.strip().encode("ascii", "replace"), want.encode("ascii")):
            return True
    return False
