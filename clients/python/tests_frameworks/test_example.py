"""examples/langchain-rag: its demo, run as a user would, against the fixture's server."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from conftest import Amnesia

APP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "langchain-rag", "app.py"))


def test_langchain_rag_demo(amn: Amnesia) -> None:
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, APP_PG_URL=amn.pg_url, APP_STORE="lc-kb", APP_COLLECTION="rag-demo",
                   AMNESIA_URL=amn.url, AMNESIA_TOKEN_CAPTURE=amn.capture.token or "",
                   AMNESIA_TOKEN_OPERATOR=amn.operator.token or "", AMNESIA_STATE=amn.state, APP_OUT=out)
        r = subprocess.run([sys.executable, APP, "demo"], env=env, capture_output=True, text=True, timeout=300)
        print(r.stdout, r.stderr)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "demo: OK" in r.stdout
        assert "verifies: signed by sha256:" in r.stdout
        certs = os.listdir(out)
        assert len(certs) == 1
        # The certificate fails once a byte changes, with the package alone.
        path = os.path.join(out, certs[0])
        with open(path, "rb") as f:
            data = bytearray(f.read())
        data[data.index(b'"payload": "') + 40] ^= 1
        with open(path, "wb") as f:
            f.write(bytes(data))
        r = subprocess.run([sys.executable, APP, "verify", path], env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 1 and "does NOT verify" in r.stdout, r.stdout + r.stderr
