"""The frameworks' tests: a real `amnesia serve` over tables the frameworks create.

The session fixture ``amn`` makes a database of its own on the test
PostgreSQL (AMNESIA_TEST_PG_DSN, with pgvector), lets langchain-postgres
(PGVector), LangChain's SQLRecordManager and LlamaIndex's PGVectorStore create
their tables there (nothing is copied DDL), writes an amnesia.yaml whose
stores are those tables (presets langchain and llamaindex, a mapping onto the
record manager's table), runs `amnesia init` and `amnesia check` (which must
pass), creates tokens and starts `amnesia serve` on a loopback port. The
database is dropped and the server stopped at the end.

With AMNESIA_TEST_CHROMA_BIN (chromadb 1.5.9's `chroma` command, which
scripts/services installs) it also starts a Chroma server of its own on a
loopback port, with a fresh persist directory (amnesia's physical probe scans
the whole directory, and a collection of another test on a shared server could
hold fragments of this one's records in its index files: docs/chroma.md), lets
langchain-chroma create the collection ``notes`` there, and configures it as the
store ``lc-chroma`` with that directory as ``data_dir``.

Needs AMNESIA_BIN (an amnesia binary), AMNESIA_TEST_PG_DSN and
AMNESIA_TEST_PG_DATADIR (scripts/services env); without them the tests skip,
unless AMNESIA_FRAMEWORKS_REQUIRED=1 (scripts/test-frameworks), when they fail.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List

import pytest

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
# chromadb's client reads this when it is made: no product telemetry.
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from amnesia_client import Client  # noqa: E402

DIM = 64
BIN = os.environ.get("AMNESIA_BIN", "")
DSN = os.environ.get("AMNESIA_TEST_PG_DSN", "")
DATADIR = os.environ.get("AMNESIA_TEST_PG_DATADIR", "")
REQUIRED = os.environ.get("AMNESIA_FRAMEWORKS_REQUIRED", "") not in ("", "0")
# Set by scripts/test-frameworks when AMNESIA_BIN was built with the faiss tag.
FAISS = os.environ.get("AMNESIA_TEST_FAISS", "") not in ("", "0")
# chromadb 1.5.9's `chroma` command (scripts/services env).
CHROMA_BIN = os.environ.get("AMNESIA_TEST_CHROMA_BIN", "")
# Set by scripts/test-frameworks when AMNESIA_BIN was built with the
# sqlite_fts5 tag (its SQLite can merge Chroma's full-text index).
SQLITE_FTS5 = os.environ.get("AMNESIA_TEST_SQLITE_FTS5", "") not in ("", "0")


def embed(text: str) -> List[float]:
    """A deterministic embedding, no model downloaded: each lower-cased word
    adds its own pseudo-random dense vector (from SHA-512 of the word), and the
    sum is L2-normalised, so texts that share words are near. Dense, so that
    every 32-byte window of a stored vector is distinct (a sparse one would give
    the physical probe nothing to look for)."""
    v = [0.0] * DIM
    for w in re.findall(r"[a-z0-9]+", text.lower()):
        raw = b"".join(hashlib.sha512(f"{w}/{i}".encode()).digest() for i in range(DIM // 64 + 1))
        for i in range(DIM):
            v[i] += raw[i] / 127.5 - 1.0
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


@dataclass
class Amnesia:
    url: str
    capture: Client
    operator: Client
    bin: str
    state: str
    db: str
    pg_url: str  # postgresql://... of the test database (no driver)
    check_output: str
    faiss_dir: str = ""  # the AmnesiaFAISS files' folder (stores lc-faiss, lc-faiss-texts), when FAISS
    chroma_url: str = ""  # the private Chroma server (store lc-chroma, collection notes), when CHROMA_BIN
    chroma_dir: str = ""  # its persist directory (the store's data_dir)

    def chroma_client(self) -> Any:
        import chromadb

        u = urllib.parse.urlsplit(self.chroma_url)
        return chromadb.HttpClient(host=u.hostname, port=u.port)

    def sqlalchemy_url(self, driver: str) -> str:
        return self.pg_url.replace("postgresql://", f"postgresql+{driver}://", 1)

    def sql(self, query: str, *args: Any) -> List[tuple]:
        import psycopg

        with psycopg.connect(self.pg_url, autocommit=True) as con:
            cur = con.execute(query, args)
            return list(cur.fetchall()) if cur.description else []


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _run(args: List[str], env: Dict[str, str]) -> str:
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(args[1:3])} exited {r.returncode}:\n{re.sub(r'amn_[A-Za-z0-9_-]+', 'amn_...', out)}")
    return out


@pytest.fixture(scope="session")
def amn() -> Iterator[Amnesia]:
    missing = [k for k, v in {"AMNESIA_BIN": BIN, "AMNESIA_TEST_PG_DSN": DSN, "AMNESIA_TEST_PG_DATADIR": DATADIR}.items() if not v]
    if missing:
        msg = ", ".join(missing) + " not set (scripts/test-frameworks sets them)"
        if REQUIRED:
            pytest.fail(msg)
        pytest.skip(msg)
    import psycopg

    u = urllib.parse.urlsplit(DSN)
    db = "amnesia_fw_" + secrets.token_hex(4)
    base = urllib.parse.urlunsplit(("postgresql", u.netloc, "/postgres", "", ""))
    pg_url = urllib.parse.urlunsplit(("postgresql", u.netloc, "/" + db, "", ""))
    amnesia_dsn = urllib.parse.urlunsplit(("postgres", u.netloc, "/" + db, "sslmode=disable", ""))
    with psycopg.connect(base, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{db}"')
    tmp = tempfile.mkdtemp(prefix="amnesia-fw-")
    server = chroma = None
    try:
        with psycopg.connect(pg_url, autocommit=True) as con:
            con.execute("CREATE EXTENSION IF NOT EXISTS vector")
        _create_framework_tables(pg_url)
        faiss_dir = ""
        if FAISS:
            from amnesia_client.langchain_faiss import AmnesiaFAISS
            from _fw import HashEmbeddings

            faiss_dir = os.path.join(tmp, "faiss")
            AmnesiaFAISS.new(HashEmbeddings(), DIM).save_local(faiss_dir)

        chroma_url = chroma_dir = ""
        if CHROMA_BIN:
            chroma_dir = os.path.join(tmp, "chroma")
            chroma, chroma_url = _start_chroma(chroma_dir, tmp)
            _create_chroma_collection(chroma_url)

        port = _free_port()
        env = dict(os.environ)
        env["AMNESIA_STATE"] = state = os.path.join(tmp, "state")
        _run([BIN, "init"], env)
        with open(os.path.join(state, "amnesia.yaml"), "w") as f:
            f.write(_config(amnesia_dsn, port, faiss_dir, chroma_url, chroma_dir))
        check = _run([BIN, "check"], env)

        def token(role: str) -> str:
            out = _run([BIN, "tokens", "create", "--role", role, "--scope", "default", "--name", "fw-" + role], env)
            m = re.search(r"amn_[A-Za-z0-9_-]{20,}", out)
            assert m, "no token in the output of amnesia tokens create"
            return m.group(0)

        cap, op = token("capture"), token("operator")
        log = open(os.path.join(tmp, "serve.log"), "w")
        server = subprocess.Popen([BIN, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        for _ in range(150):
            assert server.poll() is None, "amnesia serve exited before it was ready"
            try:
                urllib.request.urlopen(url + "/readyz", timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        else:
            raise AssertionError("amnesia serve was not ready within 30s")
        yield Amnesia(url, Client(url, cap), Client(url, op), BIN, state, db, pg_url, check, faiss_dir, chroma_url, chroma_dir)
    finally:
        if chroma is not None:
            chroma.terminate()
            try:
                chroma.wait(10)
            except subprocess.TimeoutExpired:
                chroma.kill()
        if server is not None:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
            with open(os.path.join(tmp, "serve.log")) as f:
                served = f.read()
            assert "@example.org" not in served, "amnesia serve's log holds a subject id"
        with psycopg.connect(base, autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        if not os.environ.get("AMNESIA_FRAMEWORKS_KEEP"):
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)


def _start_chroma(path: str, tmp: str) -> "tuple[subprocess.Popen, str]":
    """`chroma run` on a free loopback port with a fresh persist directory."""
    os.makedirs(path)
    port = _free_port()
    log = open(os.path.join(tmp, "chroma.log"), "w")
    proc = subprocess.Popen([CHROMA_BIN, "run", "--host", "127.0.0.1", "--port", str(port), "--path", path],
                            env=dict(os.environ, ANONYMIZED_TELEMETRY="False"), stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        if proc.poll() is not None:
            raise AssertionError(f"chroma run exited {proc.returncode} before it answered (log: {log.name})")
        try:
            urllib.request.urlopen(url + "/api/v2/heartbeat", timeout=2)
            return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("chroma run did not answer within 60s")


def _create_chroma_collection(url: str) -> None:
    """langchain-chroma creates its collection (its default configuration: l2 space)."""
    import chromadb
    from langchain_chroma import Chroma

    from _fw import HashEmbeddings

    u = urllib.parse.urlsplit(url)
    Chroma("notes", HashEmbeddings(), client=chromadb.HttpClient(host=u.hostname, port=u.port))


def _create_framework_tables(pg_url: str) -> None:
    """The frameworks create their own tables: what amnesia then checks and erases from."""
    from langchain_classic.indexes import SQLRecordManager
    from langchain_postgres import PGVector
    from llama_index.vector_stores.postgres import PGVectorStore

    from _fw import HashEmbeddings

    lc = PGVector(HashEmbeddings(), connection=pg_url.replace("postgresql://", "postgresql+psycopg://"),
                  collection_name="kb", embedding_length=DIM, use_jsonb=True)
    rm = SQLRecordManager("pgvector/kb", db_url=pg_url.replace("postgresql://", "postgresql+psycopg://"))
    rm.create_schema()
    u = urllib.parse.urlsplit(pg_url)
    li = PGVectorStore.from_params(host=u.hostname, port=str(u.port), database=u.path[1:], user=u.username,
                                   password=u.password or "", table_name="notes", embed_dim=DIM)
    li._initialize()


def _config(dsn: str, port: int, faiss_dir: str, chroma_url: str = "", chroma_dir: str = "") -> str:
    chroma = ""
    if chroma_url:
        chroma = f"""  - name: lc-chroma
    type: chroma
    dsn: {chroma_url}
    collection: notes
    subject: subject
    dimensions: {DIM}
    data_dir: {chroma_dir}
"""
    faiss = ""
    if faiss_dir:
        faiss = f"""  - name: lc-faiss
    type: faiss
    path: {faiss_dir}/index.faiss
    dimensions: {DIM}
    docstore: lc-faiss-texts
  - name: lc-faiss-texts
    type: file
    path: {faiss_dir}/index.docstore.jsonl
    format: jsonl
    key: id
    content: [text]
"""
    return f"""version: 1
scope: default
certificate_validity: 8760h
stores:
  - name: lc-kb
    type: pgvector
    dsn: "{dsn}"
    preset: langchain
    table: langchain_pg_embedding
    dimensions: {DIM}
    data_dir: {DATADIR}
  - name: lc-records
    type: postgres
    dsn: "{dsn}"
    data_dir: {DATADIR}
    mapping:
      table: upsertion_record
      key: key
      subject: {{column: namespace}}
      content: [group_id]
  - name: li-notes
    type: pgvector
    dsn: "{dsn}"
    preset: llamaindex
    table: data_notes
    dimensions: {DIM}
    data_dir: {DATADIR}
{faiss}{chroma}serve:
  listen: 127.0.0.1:{port}
"""
