"""A client of the ``amnesia serve`` HTTP API, standard library only.

>>> from amnesia_client import Client, Record
>>> c = Client("http://127.0.0.1:7468", token="amn_...")
>>> c.record_lineage([Record("docs", "d1", "source", subject="user-42", content="...")])
"""

__version__ = "0.1.0"

from .client import MAX_BATCH, Client, batches  # noqa: E402
from .errors import (  # noqa: E402
    AmnesiaError,
    Conflict,
    ConnectionFailed,
    Expired,
    Forbidden,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServerError,
    Unauthorized,
    error_from_response,
)
from .types import (  # noqa: E402
    KINDS,
    Preview,
    PublicKey,
    QueueJob,
    QueueStatus,
    Record,
    RecordResult,
    Ref,
    Request,
    StoreCount,
    TraceSummary,
    Verification,
)
from .webhook import sign_webhook, signature, verify_webhook  # noqa: E402

__all__ = [
    "__version__",
    "Client",
    "MAX_BATCH",
    "batches",
    "AmnesiaError",
    "Conflict",
    "ConnectionFailed",
    "Expired",
    "Forbidden",
    "InvalidInput",
    "NotFound",
    "PayloadTooLarge",
    "RateLimited",
    "ServerError",
    "Unauthorized",
    "error_from_response",
    "KINDS",
    "Preview",
    "PublicKey",
    "QueueJob",
    "QueueStatus",
    "Record",
    "RecordResult",
    "Ref",
    "Request",
    "StoreCount",
    "TraceSummary",
    "Verification",
    "sign_webhook",
    "signature",
    "verify_webhook",
]
