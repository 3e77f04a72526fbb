"""LangChain Chroma (langchain-chroma over chromadb's HttpClient): documents
ingested through AmnesiaVectorStore into a Chroma server's collection, one
person erased through `amnesia serve`, and what is left checked through
LangChain and in the server's persist directory."""

from __future__ import annotations

import json
import os
import uuid
from typing import Dict, List

import pytest
from langchain_core.documents import Document

from _fw import HashEmbeddings
from amnesia_client import Conflict
from amnesia_client.langchain import AmnesiaVectorStore
from amnesia_client.offline import load_public_key, verify_bundle
from conftest import CHROMA_BIN, REQUIRED, SQLITE_FTS5, Amnesia


# The residue the store reports after a full reclaim: an amnesia built with
# -tags sqlite_fts5 merges Chroma's full-text index; one built without
# cannot, and says so (docs/chroma.md).
FTS_NOT_MERGED = "UNVERIFIED-fts-index-not-merged"


@pytest.fixture(autouse=True)
def _chroma_server() -> None:
    if not CHROMA_BIN:
        msg = "AMNESIA_TEST_CHROMA_BIN is not set (scripts/services start installs chromadb 1.5.9 and exports it)"
        if REQUIRED:
            pytest.fail(msg)
        pytest.skip(msg)


def chroma(amn: Amnesia):  # type: ignore[no-untyped-def]
    """A fresh LangChain Chroma object: the collection, fetched by name."""
    from langchain_chroma import Chroma

    return Chroma("notes", HashEmbeddings(), client=amn.chroma_client(), create_collection_if_not_exists=False)


def persisted(amn: Amnesia) -> Dict[str, bytes]:
    """Every file of the server's persist directory (chroma.sqlite3, the segment directories)."""
    out = {}
    for root, _, files in os.walk(amn.chroma_dir):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, amn.chroma_dir)] = fh.read()
    return out


def holding(files: Dict[str, bytes], needle: bytes) -> List[str]:
    return sorted(name for name, data in files.items() if needle in data)


def test_langchain_chroma_erase(amn: Amnesia) -> None:
    u = uuid.uuid4().hex[:8]
    alice, bob = f"alice-{u}@example.org", f"bob-{u}@example.org"
    texts = [
        (f"Alice {u} grows tomatoes on her balcony in Utrecht and trades seeds.", alice),
        (f"Alice {u} asked us to move her dentist appointment to Friday.", alice),
        (f"Alice {u} ordered a folding bicycle with a green frame.", alice),
        (f"Bob {u} repairs sailing boats in a yard near Rotterdam.", bob),
        (f"Bob {u} wants his newsletter in Dutch from now on.", bob),
    ]
    vs = AmnesiaVectorStore(chroma(amn), amn.capture, store="lc-chroma")
    ids = vs.add_documents([Document(t, metadata={"subject": s}) for t, s in texts])
    assert len(ids) == 5 and len(set(ids)) == 5
    alice_ids, bob_ids = ids[:3], ids[3:]

    # Before: LangChain's retrieval finds Alice, and her text and id are in the files.
    hits = vs.similarity_search(f"alice {u} tomatoes balcony utrecht seeds", k=2)
    assert hits and hits[0].metadata["subject"] == alice
    before = persisted(amn)
    assert holding(before, texts[0][0].encode()), "Alice's text is in no file of the persist directory"
    assert holding(before, alice.encode())

    # The erasure, through serve (create, preview, confirm, wait).
    assert amn.operator.trace(alice).artifacts == 3
    done = amn.operator.erase(alice, "DSR-TEST-CHROMA", timeout=300)
    assert done.state == "done", done.error
    bundle = amn.operator.certificate(done.certificate_id)
    assert alice.encode() not in bundle and f"Alice {u}".encode() not in bundle
    pred = verify_bundle(bundle, [load_public_key(k.pem) for k in amn.operator.keys()]).predicate
    arts = [a for a in pred["artifacts"] if a["store"] == "lc-chroma"]
    assert len(arts) == 3 and len(pred["artifacts"]) == 3, json.dumps(pred["artifacts"], indent=1)
    for a in arts:
        assert a["outcome"] == "VERIFIED", a
        # A byte scan of chroma.sqlite3 and every segment file of data_dir.
        assert a["level"] == "physical", a
        phys = a["measurement"]["physical"]
        assert phys["found_before"] > 0 and phys["found_after"] == 0, a
        # Every byte of the text and the vector is in some needle (l2 space:
        # the vector's bytes are those the API returns).
        assert phys["coverage"]["covered_bytes"] == phys["coverage"]["record_bytes"] > 0, a
    assert pred["counts"]["verified_physical"] == 3, pred["counts"]
    scope = [s for s in pred["declared_scope"] if s["name"] == "lc-chroma"][0]
    assert "collection rebuilt through the API" in scope["reclaim"] and "VACUUMed with secure_delete" in scope["reclaim"], scope
    if SQLITE_FTS5:
        assert scope["residue"] == "VERIFIED", scope
        assert "full-text index merged (fts5 optimize)" in scope["reclaim"], scope
        assert pred["complete"] is True, json.dumps(pred, indent=1)
    else:
        # The artifacts are measured at the physical level all the same; the
        # store's residue says what the byte scan cannot see.
        assert scope["residue"] == FTS_NOT_MERGED, scope
        assert "full-text index NOT merged" in scope["reclaim"], scope

    # After: no file of the persist directory holds Alice's texts or her id
    # (the metadata value LangChain wrote); Bob's are still there.
    after = persisted(amn)
    for t, _ in texts[:3]:
        assert holding(after, t.encode()) == [], t
    assert holding(after, alice.encode()) == []
    assert holding(after, texts[3][0].encode()) and holding(after, bob.encode())

    # The collection was rebuilt under a new id: the old LangChain object
    # fails (docs/chroma.md), a fresh one reads what amnesia left.
    from chromadb.errors import NotFoundError

    with pytest.raises(NotFoundError):
        vs.similarity_search(f"alice {u} tomatoes", k=2)
    fresh = chroma(amn)
    for q in (f"alice {u} tomatoes balcony utrecht seeds", f"alice {u} dentist friday", f"alice {u} bicycle green"):
        got = fresh.similarity_search(q, k=10)
        assert got, q
        for d in got:
            assert d.metadata.get("subject") != alice and f"Alice {u}" not in d.page_content, d
    assert fresh.get_by_ids(alice_ids) == []
    assert sorted(d.id for d in fresh.get_by_ids(bob_ids)) == sorted(bob_ids)
    assert fresh.similarity_search(f"bob {u} sailing boats rotterdam", k=1)[0].metadata["subject"] == bob
    assert fresh.get(where={"subject": alice})["ids"] == []

    # Re-ingest of an erased document is refused before anything is written.
    n = fresh._collection.count()
    with pytest.raises(Conflict):
        AmnesiaVectorStore(fresh, amn.capture, store="lc-chroma").add_documents(
            [Document(texts[0][0], metadata={"subject": alice})], ids=[alice_ids[0]])
    assert fresh._collection.count() == n and fresh.get_by_ids(alice_ids[:1]) == []
