"""LangChain: ingest through AmnesiaVectorStore(PGVector) and the indexing API,
erase one person through `amnesia serve`, and check what is left."""

from __future__ import annotations

import json
import uuid
from typing import List, Tuple

import pytest
from langchain_classic.indexes import SQLRecordManager
from langchain_core.documents import Document
from langchain_core.indexing import index
from langchain_postgres import PGVector

from _fw import HashEmbeddings
from amnesia_client import Conflict, InvalidInput
from amnesia_client.langchain import AmnesiaRecordManager, AmnesiaVectorStore
from amnesia_client.offline import load_public_key, verify_bundle
from conftest import DIM, Amnesia


def people() -> Tuple[str, str, str]:
    u = uuid.uuid4().hex[:8]
    return u, f"alice-{u}@example.org", f"bob-{u}@example.org"


def notes(u: str, alice: str, bob: str) -> List[Document]:
    return [
        Document(f"Alice {u} moved to Lyon in May and works at the observatory.", metadata={"subject": alice, "source": f"crm/{u}/a1"}),
        Document(f"Alice {u} asked to be called on Tuesdays about her telescope order.", metadata={"subject": alice, "source": f"crm/{u}/a1"}),
        Document(f"Alice {u} renewed her astronomy magazine subscription.", metadata={"subject": alice, "source": f"crm/{u}/a2"}),
        Document(f"Bob {u} prefers email and lives in Porto near the river.", metadata={"subject": bob, "source": f"crm/{u}/b1"}),
        Document(f"Bob {u} renewed his cycling club plan in March.", metadata={"subject": bob, "source": f"crm/{u}/b1"}),
    ]


def pgvector(amn: Amnesia) -> PGVector:
    return PGVector(HashEmbeddings(), connection=amn.sqlalchemy_url("psycopg"), collection_name="kb",
                    embedding_length=DIM, use_jsonb=True)


def erase_and_check(amn: Amnesia, subject: str, store: str, expect_artifacts: int) -> dict:
    tr = amn.operator.trace(subject)
    assert tr.artifacts == expect_artifacts
    done = amn.operator.erase(subject, "DSR-TEST-1", timeout=180)
    assert done.state == "done", done.error
    bundle = amn.operator.certificate(done.certificate_id)
    assert subject.encode() not in bundle
    checked = verify_bundle(bundle, [load_public_key(k.pem) for k in amn.operator.keys()])
    assert checked.certificate_id == done.certificate_id
    return checked.predicate


def test_vector_store_wrapper_pgvector(amn: Amnesia) -> None:
    u, alice, bob = people()
    vs = AmnesiaVectorStore(pgvector(amn), amn.capture, store="lc-kb")
    ids = vs.add_documents(notes(u, alice, bob))
    assert len(ids) == 5 and len(set(ids)) == 5
    alice_ids, bob_ids = ids[:3], ids[3:]

    # The framework's own retrieval finds Alice before.
    hits = vs.similarity_search(f"where does alice {u} live lyon observatory", k=3)
    assert any(alice in d.metadata["subject"] for d in hits)

    pred = erase_and_check(amn, alice, "lc-kb", 3)
    assert pred["complete"] is True, json.dumps(pred["artifacts"], indent=1)
    arts = [a for a in pred["artifacts"] if a["store"] == "lc-kb"]
    assert len(arts) == 3
    for a in arts:
        assert a["outcome"] == "VERIFIED", a
        assert a["level"] == "physical", a  # byte scan of the table's files (data_dir)
        assert a["measurement"]["physical"]["found_before"] > 0 and a["measurement"]["physical"]["found_after"] == 0

    # The rows are gone; Bob's are not.
    left = {r[0] for r in amn.sql("SELECT id FROM langchain_pg_embedding WHERE id = ANY(%s)", ids)}
    assert left == set(bob_ids)
    # LangChain's retrieval (a fresh store object) no longer returns Alice.
    fresh = pgvector(amn)
    for q in (f"where does alice {u} live lyon observatory", f"alice {u} telescope tuesdays", f"alice {u} astronomy"):
        for d in fresh.similarity_search(q, k=10):
            assert d.metadata.get("subject") != alice
            assert f"Alice {u}" not in d.page_content
    assert fresh.get_by_ids(alice_ids) == []
    assert len(fresh.get_by_ids(bob_ids)) == 2

    # Re-ingest of an erased document is refused before anything is written.
    n_before = amn.sql("SELECT count(*) FROM langchain_pg_embedding")[0][0]
    with pytest.raises(Conflict):
        vs.add_documents([Document("Alice again", metadata={"subject": alice})], ids=[alice_ids[0]])
    assert amn.sql("SELECT count(*) FROM langchain_pg_embedding")[0][0] == n_before


def test_missing_subject_is_refused_before_writing(amn: Amnesia) -> None:
    vs = AmnesiaVectorStore(pgvector(amn), amn.capture, store="lc-kb", subject_key="owner")
    n_before = amn.sql("SELECT count(*) FROM langchain_pg_embedding")[0][0]
    with pytest.raises(ValueError) as e:
        vs.add_texts(["a text about someone"], metadatas=[{"subject": "x@example.org"}])
    assert "documents[0]" in str(e.value) and "'owner'" in str(e.value) and "x@example.org" not in str(e.value)
    # A key that holds the subject id is refused by the server; nothing written.
    with pytest.raises(InvalidInput):
        vs.add_texts(["text"], metadatas=[{"owner": "carol@example.org"}], ids=["carol@example.org-1"])
    assert amn.sql("SELECT count(*) FROM langchain_pg_embedding")[0][0] == n_before


def test_indexing_api_with_record_manager(amn: Amnesia) -> None:
    u, alice, bob = people()
    vs = AmnesiaVectorStore(pgvector(amn), amn.capture, store="lc-kb")
    inner_rm = SQLRecordManager("pgvector/kb", db_url=amn.sqlalchemy_url("psycopg"))
    rm = AmnesiaRecordManager(inner_rm, amn.capture, vector_store="lc-kb", record_store="lc-records")
    docs = notes(u, alice, bob)
    res = index(docs, rm, vs, cleanup="incremental", source_id_key="source", key_encoder="sha256")
    assert res["num_added"] == 5
    keys = inner_rm.list_keys(group_ids=[f"crm/{u}/a1", f"crm/{u}/a2"])
    assert len(keys) == 3
    # Indexing again changes nothing (the record manager knows the documents).
    assert index(docs, rm, vs, cleanup="incremental", source_id_key="source", key_encoder="sha256")["num_skipped"] == 5

    pred = erase_and_check(amn, alice, "lc-kb", 6)  # 3 vector rows + 3 record-manager rows
    assert pred["complete"] is True, json.dumps(pred["artifacts"], indent=1)
    by_store = {}
    for a in pred["artifacts"]:
        by_store.setdefault(a["store"], []).append(a)
    assert len(by_store["lc-kb"]) == 3 and len(by_store["lc-records"]) == 3
    assert all(a["outcome"] == "VERIFIED" for a in pred["artifacts"])
    assert all(a["level"] == "physical" for a in by_store["lc-kb"])
    # A record-manager row's searched text (group_id, the source) is shorter
    # than the probe's 32-byte window: no needle, so the certificate says
    # logical, not physical, and the store's residue says it was not measured.
    assert all(a["level"] == "logical" for a in by_store["lc-records"])
    rec_state = [s for s in pred["declared_scope"] if s["name"] == "lc-records"][0]
    assert rec_state["residue"].startswith("UNVERIFIED"), rec_state

    # Gone from the vector table and from the record manager's table (group_id is the source).
    assert amn.sql("SELECT count(*) FROM langchain_pg_embedding WHERE id = ANY(%s)", keys)[0][0] == 0
    assert amn.sql("SELECT count(*) FROM upsertion_record WHERE key = ANY(%s)", keys)[0][0] == 0
    assert amn.sql("SELECT count(*) FROM upsertion_record WHERE group_id LIKE %s", f"crm/{u}/a%")[0][0] == 0
    assert inner_rm.list_keys(group_ids=[f"crm/{u}/b1"]) != []
    for d in pgvector(amn).similarity_search(f"alice {u} lyon telescope astronomy", k=10):
        assert d.metadata.get("subject") != alice

    # The application indexes its sources again: Bob's are unchanged; Alice's,
    # still in the source, are refused by amnesia and nothing is written.
    assert index(docs[3:], rm, vs, cleanup="incremental", source_id_key="source", key_encoder="sha256")["num_skipped"] == 2
    with pytest.raises(Conflict):
        index(docs[:3], rm, vs, cleanup="incremental", source_id_key="source", key_encoder="sha256")
    assert amn.sql("SELECT count(*) FROM langchain_pg_embedding WHERE id = ANY(%s)", keys)[0][0] == 0


def test_async_writes_record_lineage_first(amn: Amnesia) -> None:
    import asyncio

    u, alice, bob = people()
    inner = PGVector(HashEmbeddings(), connection=amn.sqlalchemy_url("psycopg"), collection_name="kb-async",
                     embedding_length=DIM, use_jsonb=True, async_mode=True)
    vs = AmnesiaVectorStore(inner, amn.capture, store="lc-kb")

    async def go() -> list:
        return await vs.aadd_texts([f"Alice {u} ordered a kite.", f"Bob {u} ordered a sled."],
                                   metadatas=[{"subject": alice}, {"subject": bob}])

    ids = asyncio.run(go())
    assert amn.operator.trace(alice).artifacts == 1
    assert {r[0] for r in amn.sql("SELECT id FROM langchain_pg_embedding WHERE id = ANY(%s)", ids)} == set(ids)


def test_a_store_that_ignores_ids_is_refused(amn: Amnesia) -> None:
    from langchain_core.vectorstores import InMemoryVectorStore

    class Renaming(InMemoryVectorStore):
        def add_documents(self, documents, **kwargs):  # type: ignore[no-untyped-def]
            kwargs.pop("ids", None)
            return super().add_documents([Document(d.page_content, metadata=d.metadata) for d in documents])

    u, alice, _ = people()
    vs = AmnesiaVectorStore(Renaming(HashEmbeddings()), amn.capture, store="lc-kb")
    with pytest.raises(RuntimeError) as e:
        vs.add_texts([f"Alice {u} likes tea."], metadatas=[{"subject": alice}])
    assert "honours ids" in str(e.value)
