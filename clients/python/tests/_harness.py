"""Test harness: puts amnesia_client on sys.path and reads the server settings
that scripts/test-clients exports.

AMNESIA_URL                the server's root URL (loopback)
AMNESIA_TOKEN_CAPTURE      a token with role capture
AMNESIA_TOKEN_OPERATOR     a token with role operator
AMNESIA_TOKEN_AUDITOR      a token with role auditor (optional: its tests skip)
AMNESIA_WEBHOOK_SECRET     serve.webhook_secret (optional: the intake tests skip)
AMNESIA_TEST_DOCS_DB       the file of a sqlite-doc store configured in amnesia.yaml
AMNESIA_TEST_DOCS_STORE    that store's name (default test-docs)
"""

from __future__ import annotations

import os
import sys
from typing import Optional

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

URL = os.environ.get("AMNESIA_URL", "")
CAPTURE = os.environ.get("AMNESIA_TOKEN_CAPTURE", "")
OPERATOR = os.environ.get("AMNESIA_TOKEN_OPERATOR", "")
AUDITOR = os.environ.get("AMNESIA_TOKEN_AUDITOR", "")
WEBHOOK_SECRET = os.environ.get("AMNESIA_WEBHOOK_SECRET", "")
DOCS_DB = os.environ.get("AMNESIA_TEST_DOCS_DB", "")
DOCS_STORE = os.environ.get("AMNESIA_TEST_DOCS_STORE", "test-docs")


def missing() -> Optional[str]:
    """Why the server tests cannot run, or None."""
    need = {
        "AMNESIA_URL": URL,
        "AMNESIA_TOKEN_CAPTURE": CAPTURE,
        "AMNESIA_TOKEN_OPERATOR": OPERATOR,
        "AMNESIA_TEST_DOCS_DB": DOCS_DB,
    }
    unset = [k for k, v in need.items() if not v]
    if unset:
        return (
            "no amnesia server to test against: " + ", ".join(unset) + " not set "
            "(scripts/test-clients starts `amnesia serve` and sets them)"
        )
    return None
