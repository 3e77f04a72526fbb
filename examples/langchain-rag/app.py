#!/usr/bin/env python3
"""A LangChain RAG app whose memory amnesia can erase and certify.

The app keeps its knowledge in PostgreSQL through langchain-postgres's
PGVector (tables langchain_pg_collection and langchain_pg_embedding, created
by LangChain itself). It writes through amnesia_client.langchain's
AmnesiaVectorStore, which records each document's lineage with `amnesia
serve` (the person it is about comes from metadata["subject"]) before
PGVector stores it. The embedding is local and deterministic (hashed words,
64 dimensions): no model is downloaded. "Asking" is retrieval: the app prints
the passages a question retrieves (a language model would be given these).

    python3 app.py setup                 # let LangChain create its tables (before `amnesia check`)
    python3 app.py ingest                # two customers' notes
    python3 app.py ask "Where does Alice live?"
    python3 app.py erase alice@example.org
    python3 app.py verify certificates/<id>.json
    python3 app.py demo                  # all of it: ingest, ask, erase Alice, ask again, verify

Settings (environment): APP_PG_URL (postgresql://user@host:port/db),
APP_COLLECTION (default rag-demo), APP_STORE (the store's name in
amnesia.yaml, default rag-vectors), AMNESIA_URL, AMNESIA_TOKEN_CAPTURE,
AMNESIA_TOKEN_OPERATOR, AMNESIA_PUBLIC_KEY (the issuer's PEM public key,
default $AMNESIA_STATE/signing-key.pub.pem), APP_OUT (default ./certificates).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import re
import sys
import uuid
from typing import Dict, List

try:
    import amnesia_client  # noqa: F401
except ImportError:  # run from a checkout: use the package next door
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_postgres import PGVector

from amnesia_client import AmnesiaError, Client
from amnesia_client.langchain import AmnesiaVectorStore
from amnesia_client.offline import CertificateInvalid, load_public_key, verify_bundle

DIM = 64


class HashedWords(Embeddings):
    """Each lower-cased word adds 1 to the dimension its SHA-256 picks; L2-normalised."""

    def embed_query(self, text: str) -> List[float]:
        v = [0.0] * DIM
        for w in re.findall(r"[a-z0-9]+", text.lower()):
            v[int.from_bytes(hashlib.sha256(w.encode()).digest()[:4], "big") % DIM] += 1.0
        n = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / n for x in v]

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        return [self.embed_query(t) for t in texts]


NOTES: Dict[str, List[str]] = {
    "alice@example.org": [
        "Alice moved to Lyon in May; she lives near the old observatory.",
        "Alice asked to be called on Tuesdays about her telescope order.",
        "Alice's invoice for the telescope mount was paid late in June.",
    ],
    "bob@example.org": [
        "Bob lives in Porto and prefers e-mail over phone calls.",
        "Bob renewed his cycling club plan in March.",
    ],
}


def env(name: str, default: str = "") -> str:
    v = os.environ.get(name, default)
    if not v:
        sys.exit(f"app: set {name} (see the README)")
    return v


def vector_store() -> PGVector:
    url = env("APP_PG_URL").replace("postgresql://", "postgresql+psycopg://", 1)
    return PGVector(HashedWords(), connection=url, collection_name=os.environ.get("APP_COLLECTION", "rag-demo"),
                    embedding_length=DIM, use_jsonb=True)


def memory() -> AmnesiaVectorStore:
    capture = Client(env("AMNESIA_URL"), token=env("AMNESIA_TOKEN_CAPTURE"))
    return AmnesiaVectorStore(vector_store(), capture, store=os.environ.get("APP_STORE", "rag-vectors"))


def ingest() -> Dict[str, List[str]]:
    mem = memory()
    ids: Dict[str, List[str]] = {}
    for person, texts in NOTES.items():
        docs = [Document(t, metadata={"subject": person, "source": "crm"}) for t in texts]
        ids[person] = mem.add_documents(docs, ids=[str(uuid.uuid4()) for _ in docs])
    print(f"ingested {sum(len(v) for v in ids.values())} notes about {len(ids)} people")
    return ids


def ask(question: str, k: int = 3) -> List[Document]:
    hits = vector_store().similarity_search(question, k=k)
    print(f"Q: {question}")
    for d in hits:
        print(f"   - {d.page_content}")
    return hits


def erase(person: str, reason: str = "DSR-2026-0042") -> str:
    op = Client(env("AMNESIA_URL"), token=env("AMNESIA_TOKEN_OPERATOR"))
    trace = op.trace(person)
    print(f"amnesia traced {trace.artifacts} artifacts in {', '.join(s.store for s in trace.stores)}")
    done = op.erase(person, reason)
    if done.state != "done":
        sys.exit(f"app: the erasure ended {done.state}: {done.error}")
    out = os.environ.get("APP_OUT", "certificates")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, done.certificate_id + ".json")
    with open(path, "wb") as f:
        f.write(op.certificate(done.certificate_id))
    print(f"erased: certificate {path} (complete: {done.complete})")
    return path


def verify(path: str) -> bool:
    """Offline, with the package alone: the bundle and the issuer's public key."""
    key_path = os.environ.get("AMNESIA_PUBLIC_KEY") or os.path.join(env("AMNESIA_STATE"), "signing-key.pub.pem")
    with open(key_path) as f:
        key = load_public_key(f.read())
    with open(path, "rb") as f:
        bundle = f.read()
    try:
        c = verify_bundle(bundle, [key])
    except CertificateInvalid as e:
        print(f"certificate does NOT verify ({type(e).__name__}, exit code {e.exit_code}): {e}")
        return False
    counts = c.counts
    print(f"certificate {c.certificate_id} verifies: signed by {c.key_id}, leaf {c.log_index} of the log {c.log_origin}")
    print(f"   {counts['artifacts']} artifacts, {counts['verified']} verified "
          f"({counts['verified_physical']} physical, {counts['verified_logical']} logical); complete: {c.complete}")
    return True


def demo() -> int:
    ids = ingest()
    before = ask("Where does Alice live?")
    if not any(d.metadata.get("subject") == "alice@example.org" for d in before):
        print("app: FAIL: Alice's notes are not retrieved before the erasure")
        return 1
    path = erase("alice@example.org")
    after = ask("Where does Alice live?") + ask("Alice telescope invoice", k=10)
    ok = True
    if any(d.metadata.get("subject") == "alice@example.org" or "Alice" in d.page_content for d in after):
        print("app: FAIL: Alice is still retrieved")
        ok = False
    left = vector_store().get_by_ids(ids["alice@example.org"])
    if left:
        print(f"app: FAIL: {len(left)} of Alice's rows are still in PGVector")
        ok = False
    if len(vector_store().get_by_ids(ids["bob@example.org"])) != len(ids["bob@example.org"]):
        print("app: FAIL: Bob's rows changed")
        ok = False
    ok = verify(path) and ok
    try:
        memory().add_documents([Document(NOTES["alice@example.org"][0], metadata={"subject": "alice@example.org"})],
                               ids=[ids["alice@example.org"][0]])
        print("app: FAIL: re-ingesting an erased note was accepted")
        ok = False
    except AmnesiaError as e:
        print(f"re-ingest of an erased note refused by amnesia ({e.status}); nothing written")
    print("demo: OK" if ok else "demo: FAILED")
    return 0 if ok else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("setup")
    sub.add_parser("ingest")
    a = sub.add_parser("ask")
    a.add_argument("question")
    e = sub.add_parser("erase")
    e.add_argument("person")
    v = sub.add_parser("verify")
    v.add_argument("certificate")
    sub.add_parser("demo")
    args = p.parse_args()
    if args.cmd == "setup":
        vector_store()
        print("LangChain created its tables (langchain_pg_collection, langchain_pg_embedding)")
    elif args.cmd == "ingest":
        ingest()
    elif args.cmd == "ask":
        ask(args.question)
    elif args.cmd == "erase":
        erase(args.person)
    elif args.cmd == "verify":
        return 0 if verify(args.certificate) else 1
    elif args.cmd == "demo":
        return demo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
