#!/usr/bin/env python3
"""A small RAG-style application that keeps its documents, chunks and
embeddings in two SQLite files, records their lineage in amnesia at ingest,
and erases a person through amnesia's HTTP API.

The two files are the application's own stores *and* stores configured in
amnesia.yaml, so amnesia deletes, reclaims and probes exactly what the app
wrote:

  documents  sqlite-doc layout: documents(id, kind, subject, parent, text)
  vectors    sqlite-vec layout: vec0 table vectors(id, embedding float[64], subject)

The embedding is local and deterministic (hashed character trigrams, 64
dimensions): no model download.

    python3 app.py demo      # setup, ingest two people, erase one, show the result
    python3 app.py setup     # create the two files (before `amnesia init`)
    python3 app.py ingest    # write the documents and record their lineage
    python3 app.py erase alice@example.com
    python3 app.py search "renewal of the contract"

Settings come from flags or the environment: AMNESIA_URL, AMNESIA_TOKEN_CAPTURE,
AMNESIA_TOKEN_OPERATOR, APP_DOCS_DB, APP_VECTORS_DB, APP_DOCS_STORE,
APP_VECTORS_STORE, APP_OUT.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import re
import sqlite3
import struct
import sys
import uuid
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple, TypedDict

try:
    import amnesia_client
except ImportError:  # run from a checkout: use the client next door
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
    import amnesia_client

from amnesia_client import AmnesiaError, Client, Record

DIM = 64

# Two people and their documents. The raw subject id sent to amnesia is the
# e-mail address; the app's own rows carry its user id as their subject tag.
class Person(TypedDict):
    user: str  # the app's user id: the subject tag of its rows
    docs: List[str]


PEOPLE: Dict[str, Person] = {
    "alice@example.com": {
        "user": "u-1001",
        "docs": [
            "Alice Martin asked support to move her delivery to the Lyon office. "
            "She mentioned that the parcel holds the prototype sensor boards. "
            "The courier confirmed pickup for Thursday morning.",
            "Call summary with Alice Martin: she wants the annual plan renewed in March. "
            "Her team grew to twelve people and needs three more seats. "
            "Discount code SPRING-ALICE was offered and accepted.",
        ],
    },
    "bob@example.com": {
        "user": "u-2002",
        "docs": [
            "Bob Okafor reported that exports to CSV time out after five minutes. "
            "The workaround is to export one quarter at a time. "
            "Engineering ticket ENG-5521 tracks the fix.",
        ],
    },
}


# ---------------------------------------------------------------- embeddings


def embed(text: str, dim: int = DIM) -> List[float]:
    """Hashed character trigrams, signed, L2-normalised, rounded to float32."""
    v = [0.0] * dim
    t = " " + re.sub(r"\s+", " ", text.lower()).strip() + " "
    for i in range(len(t) - 2):
        h = hashlib.sha256(t[i : i + 3].encode("utf-8")).digest()
        v[int.from_bytes(h[:4], "little") % dim] += -1.0 if h[4] & 1 else 1.0
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    # Round through float32 so the values recorded in amnesia are the bytes stored.
    return list(struct.unpack(f"<{dim}f", struct.pack(f"<{dim}f", *(x / n for x in v))))


def f32le(v: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(v)}f", *v)


def chunks(text: str) -> List[str]:
    """One chunk per sentence (enough for a demo)."""
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


# ---------------------------------------------------------------- the app's stores


@dataclass
class Settings:
    url: str
    capture_token: str
    operator_token: str
    docs_db: str
    vectors_db: str
    docs_store: str
    vectors_store: str
    out: str


def open_docs(path: str) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=30)
    # The sqlite-doc layout (store/sqlitedoc): amnesia's adapter reads these columns.
    con.executescript(
        """
        CREATE TABLE IF NOT EXISTS documents (
            id      TEXT PRIMARY KEY,
            kind    TEXT NOT NULL,
            subject TEXT NOT NULL DEFAULT '',
            parent  TEXT NOT NULL DEFAULT '',
            text    TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS documents_subject ON documents (subject);
        """
    )
    return con


def open_vectors(path: str) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=30)
    load_sqlite_vec(con)
    # The sqlite-vec layout (store/sqlitevec) with dimensions: 64 in amnesia.yaml.
    con.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS vectors USING vec0(id TEXT PRIMARY KEY, embedding float[{DIM}], subject TEXT)")
    return con


def load_sqlite_vec(con: sqlite3.Connection) -> None:
    try:
        import sqlite_vec
    except ImportError:
        sys.exit(
            "app: the vectors file needs the sqlite-vec extension: pip install sqlite-vec==0.1.6 "
            "(the version amnesia is built with)"
        )
    if not hasattr(con, "enable_load_extension"):
        sys.exit(
            f"app: this Python ({sys.executable}) was built without loadable SQLite extensions; "
            "run the app with a Python whose sqlite3 has enable_load_extension (e.g. Debian's /usr/bin/python3)"
        )
    con.enable_load_extension(True)
    sqlite_vec.load(con)
    con.enable_load_extension(False)


def counts(s: Settings, user: str) -> Tuple[int, int]:
    d = open_docs(s.docs_db)
    v = open_vectors(s.vectors_db)
    try:
        nd = d.execute("SELECT count(*) FROM documents WHERE subject = ?", (user,)).fetchone()[0]
        nv = v.execute("SELECT count(*) FROM vectors WHERE subject = ?", (user,)).fetchone()[0]
        return nd, nv
    finally:
        d.close()
        v.close()


def search(s: Settings, query: str, k: int = 3) -> List[Tuple[str, str, float]]:
    d = open_docs(s.docs_db)
    v = open_vectors(s.vectors_db)
    try:
        hits = v.execute(
            "SELECT id, distance FROM vectors WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (f32le(embed(query)), k),
        ).fetchall()
        out = []
        for cid, dist in hits:
            row = d.execute("SELECT text FROM documents WHERE id = ?", (cid,)).fetchone()
            out.append((cid, row[0] if row else "?", float(dist)))
        return out
    finally:
        d.close()
        v.close()


# ---------------------------------------------------------------- ingest with lineage


def ingest(s: Settings, people: Dict[str, Person], run: str) -> int:
    """Writes documents, chunks and embeddings and records their lineage.

    The rows are written first, then the lineage, in the same order the app
    would write them in production; recording is idempotent, so a crash in
    between is repaired by recording again.
    """
    capture = Client(s.url, s.capture_token)
    records: List[Record] = []
    d = open_docs(s.docs_db)
    v = open_vectors(s.vectors_db)
    try:
        with d, v:
            for email, p in people.items():
                for n, text in enumerate(p["docs"]):
                    doc_id = f"doc-{run}-{p['user']}-{n}"
                    d.execute(
                        "INSERT OR REPLACE INTO documents (id, kind, subject, parent, text) VALUES (?, 'document', ?, '', ?)",
                        (doc_id, p["user"], text),
                    )
                    records.append(Record(s.docs_store, doc_id, "source", subject=email, content=text))
                    for i, chunk in enumerate(chunks(text)):
                        cid = f"{doc_id}#{i}"
                        vec = embed(chunk)
                        d.execute(
                            "INSERT OR REPLACE INTO documents (id, kind, subject, parent, text) VALUES (?, 'chunk', ?, ?, ?)",
                            (cid, p["user"], doc_id, chunk),
                        )
                        v.execute("DELETE FROM vectors WHERE id = ?", (cid,))
                        v.execute("INSERT INTO vectors (id, embedding, subject) VALUES (?, ?, ?)", (cid, f32le(vec), p["user"]))
                        records.append(Record(s.docs_store, cid, "chunk", parent=(s.docs_store, doc_id), content=chunk))
                        records.append(Record(s.vectors_store, cid, "embedding", parent=(s.docs_store, cid), vector=vec))
    finally:
        d.close()
        v.close()
    res = capture.record_lineage(records)
    print(f"ingest: {len(records)} artifacts written; lineage recorded {res.recorded}, unchanged {res.unchanged} ({res.batches} call(s))")
    return len(records)


# ---------------------------------------------------------------- erasure through the API


def erase(s: Settings, email: str, ticket: str) -> bool:
    op = Client(s.url, s.operator_token)
    req = op.create_request(email, reason=ticket)
    print(f"erase: request {req.id} {req.state}, due {req.due_at:%Y-%m-%d}")
    pv = op.preview(req.id)
    per_store = ", ".join(f"{st.store}: {st.records} ({', '.join(f'{k} {n}' for k, n in sorted(st.kinds.items()))})" for st in pv.counts.stores)
    print(f"erase: preview {pv.counts.artifacts} artifacts, {pv.counts.mentions} mentions — {per_store}")
    op.confirm(req.id, pv.confirmation)
    done = op.wait(req.id, timeout=180)
    print(f"erase: request {done.id} {done.state}, complete={done.complete}" + (f", error: {done.error}" if done.error else ""))
    if done.state != "done" or not done.certificate_id:
        return False
    bundle = op.certificate(done.certificate_id)
    os.makedirs(s.out, exist_ok=True)
    path = os.path.join(s.out, f"{done.certificate_id}.json")
    with open(path, "wb") as f:
        f.write(bundle)
    sha = hashlib.sha256(bundle).hexdigest()
    matches = done.matches_certificate(bundle)
    v = op.verify(bundle)
    print(f"erase: certificate {path} (sha256 {sha[:16]}…, the one the request names: {matches}); "
          f"server verify: valid={v.valid}, key {v.key_id[:23]}…, log index {v.log_index}")
    return bool(v.valid and done.complete and matches)


# ---------------------------------------------------------------- demo


def demo(s: Settings) -> int:
    run = uuid.uuid4().hex[:8]
    ingest(s, PEOPLE, run)
    ok = True
    alice, bob = PEOPLE["alice@example.com"]["user"], PEOPLE["bob@example.com"]["user"]
    before_a, before_b = counts(s, alice), counts(s, bob)
    print(f"before: alice has {before_a[0]} document rows and {before_a[1]} vectors; bob {before_b[0]} and {before_b[1]}")
    q = "renew the annual plan in March with more seats"
    top = search(s, q, k=1)
    print(f"search {q!r} before: {top[0][0]} ({top[0][2]:.3f})")
    if not erase(s, "alice@example.com", ticket="DSR-2026-0042"):
        print("demo: the erasure did not finish with a valid, complete certificate")
        ok = False
    after_a, after_b = counts(s, alice), counts(s, bob)
    print(f"after:  alice has {after_a[0]} document rows and {after_a[1]} vectors; bob {after_b[0]} and {after_b[1]}")
    top = search(s, q, k=1)
    print(f"search {q!r} after:  {top[0][0] if top else 'nothing'}")
    if after_a != (0, 0):
        print("demo: FAIL: alice's rows are still in the app's files")
        ok = False
    if after_b != before_b:
        print("demo: FAIL: bob's rows changed")
        ok = False
    if any(alice in cid for cid, _, _ in search(s, q, k=10)):
        print("demo: FAIL: a search still returns alice's chunks")
        ok = False
    print("demo: " + ("OK: alice erased through the API, bob untouched" if ok else "FAILED"))
    return 0 if ok else 1


def settings(a: argparse.Namespace) -> Settings:
    need = {"--url/AMNESIA_URL": a.url, "--docs-db/APP_DOCS_DB": a.docs_db, "--vectors-db/APP_VECTORS_DB": a.vectors_db}
    if a.cmd in ("demo", "ingest"):
        need["--capture-token/AMNESIA_TOKEN_CAPTURE"] = a.capture_token
    if a.cmd in ("demo", "erase"):
        need["--operator-token/AMNESIA_TOKEN_OPERATOR"] = a.operator_token
    if a.cmd in ("setup", "search"):
        need.pop("--url/AMNESIA_URL")
    unset = [k for k, v in need.items() if not v]
    if unset:
        sys.exit("app: set " + ", ".join(unset))
    return Settings(a.url, a.capture_token, a.operator_token, a.docs_db, a.vectors_db, a.docs_store, a.vectors_store, a.out)


def main(argv: Optional[List[str]] = None) -> int:
    e = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default=e("AMNESIA_URL", ""))
    p.add_argument("--capture-token", default=e("AMNESIA_TOKEN_CAPTURE", ""))
    p.add_argument("--operator-token", default=e("AMNESIA_TOKEN_OPERATOR", ""))
    p.add_argument("--docs-db", default=e("APP_DOCS_DB", ""))
    p.add_argument("--vectors-db", default=e("APP_VECTORS_DB", ""))
    p.add_argument("--docs-store", default=e("APP_DOCS_STORE", "app-docs"), help="its name in amnesia.yaml")
    p.add_argument("--vectors-store", default=e("APP_VECTORS_STORE", "app-vectors"), help="its name in amnesia.yaml")
    p.add_argument("--out", default=e("APP_OUT", "certificates"), help="where certificates are saved")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("setup")
    sub.add_parser("ingest")
    sub.add_parser("demo")
    pe = sub.add_parser("erase")
    pe.add_argument("email")
    pe.add_argument("--ticket", default="DSR-manual")
    ps = sub.add_parser("search")
    ps.add_argument("query")
    a = p.parse_args(argv)
    s = settings(a)
    try:
        if a.cmd == "setup":
            open_docs(s.docs_db).close()
            open_vectors(s.vectors_db).close()
            print(f"setup: {s.docs_db} (sqlite-doc) and {s.vectors_db} (sqlite-vec, {DIM} dimensions) ready")
            return 0
        if a.cmd == "ingest":
            ingest(s, PEOPLE, uuid.uuid4().hex[:8])
            return 0
        if a.cmd == "erase":
            return 0 if erase(s, a.email, a.ticket) else 1
        if a.cmd == "search":
            for cid, text, dist in search(s, a.query):
                print(f"{dist:.3f}  {cid}  {text}")
            return 0
        return demo(s)
    except AmnesiaError as err:
        print(f"app: amnesia answered: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
