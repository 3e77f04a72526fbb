"""LlamaIndex: an IngestionPipeline writing to llama-index-vector-stores-postgres,
with AmnesiaLineage as its last step; one person erased through `amnesia serve`."""

from __future__ import annotations

import json
import urllib.parse
import uuid

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.node_parser import SentenceSplitter
from llama_index.vector_stores.postgres import PGVectorStore

from _fw import HashEmbedding
from amnesia_client import Conflict
from amnesia_client.llamaindex import AmnesiaLineage, amnesia_pipeline, stable_node_id
from amnesia_client.offline import load_public_key, verify_bundle
from conftest import DIM, Amnesia


def store(amn: Amnesia) -> PGVectorStore:
    u = urllib.parse.urlsplit(amn.pg_url)
    return PGVectorStore.from_params(host=u.hostname, port=str(u.port), database=u.path[1:], user=u.username,
                                     password=u.password or "", table_name="notes", embed_dim=DIM)


def texts_of(amn: Amnesia, question: str, k: int = 10) -> list:
    idx = VectorStoreIndex.from_vector_store(store(amn), embed_model=HashEmbedding())
    return [(n.node.get_content(), n.node.metadata) for n in idx.as_retriever(similarity_top_k=k).retrieve(question)]


def test_ingestion_pipeline_pgvector(amn: Amnesia) -> None:
    u = uuid.uuid4().hex[:8]
    alice, bob = f"alice-{u}@example.org", f"bob-{u}@example.org"
    long_alice = " ".join(f"Alice {u} wrote entry {i} of her travel diary about the night trains to Vienna." for i in range(12))
    docs = [
        Document(text=long_alice, metadata={"subject": alice}, id_=f"diary-{u}"),
        Document(text=f"Alice {u} ordered a red bicycle with a basket.", metadata={"subject": alice}, id_=f"order-{u}"),
        Document(text=f"Bob {u} booked a kayak tour on the Douro river.", metadata={"subject": bob}, id_=f"booking-{u}"),
    ]
    splitter = SentenceSplitter(chunk_size=64, chunk_overlap=0, id_func=stable_node_id)
    pipe = amnesia_pipeline([splitter, HashEmbedding()], client=amn.capture, store="li-notes", vector_store=store(amn))
    nodes = pipe.run(documents=docs)
    alice_nodes = [n.node_id for n in nodes if n.metadata["subject"] == alice]
    bob_nodes = [n.node_id for n in nodes if n.metadata["subject"] == bob]
    assert len(alice_nodes) >= 3, "the diary is split into several chunks"
    assert any(m["subject"] == alice for _, m in texts_of(amn, f"alice {u} night trains vienna diary"))

    assert amn.operator.trace(alice).artifacts == len(alice_nodes)
    done = amn.operator.erase(alice, "DSR-TEST-2", timeout=180)
    assert done.state == "done", done.error
    bundle = amn.operator.certificate(done.certificate_id)
    pred = verify_bundle(bundle, [load_public_key(k.pem) for k in amn.operator.keys()]).predicate
    assert pred["complete"] is True, json.dumps(pred["artifacts"], indent=1)
    assert {a["store"] for a in pred["artifacts"]} == {"li-notes"}
    assert len(pred["artifacts"]) == len(alice_nodes)
    for a in pred["artifacts"]:
        assert a["outcome"] == "VERIFIED" and a["level"] == "physical", a

    left = {r[0] for r in amn.sql("SELECT node_id FROM data_notes WHERE node_id = ANY(%s)", alice_nodes + bob_nodes)}
    assert left == set(bob_nodes)
    for q in (f"alice {u} night trains vienna diary", f"alice {u} red bicycle basket"):
        for text, meta in texts_of(amn, q):
            assert meta.get("subject") != alice and f"Alice {u}" not in text
    assert any(m["subject"] == bob for _, m in texts_of(amn, f"bob {u} kayak douro"))

    # The application ingests its documents again. With stable node ids the
    # erased person's nodes get the same ids, amnesia refuses them, and the
    # pipeline writes nothing (with LlamaIndex's default uuid4 node ids they
    # would be new artifacts: see stable_node_id).
    n_before = amn.sql("SELECT count(*) FROM data_notes")[0][0]
    with pytest.raises(Conflict):
        amnesia_pipeline([splitter, HashEmbedding()], client=amn.capture, store="li-notes", vector_store=store(amn)).run(documents=docs[:2])
    assert amn.sql("SELECT count(*) FROM data_notes")[0][0] == n_before


def test_cache_cannot_skip_the_lineage_step(amn: Amnesia) -> None:
    with pytest.raises(ValueError):
        amnesia_pipeline([HashEmbedding()], client=amn.capture, store="li-notes", disable_cache=False)
    step = AmnesiaLineage(client=amn.capture, store="li-notes", subject_key="owner")
    with pytest.raises(ValueError) as e:
        step(SentenceSplitter().get_nodes_from_documents([Document(text="x", metadata={"subject": "s@example.org"})]))
    assert "nodes[0]" in str(e.value) and "s@example.org" not in str(e.value)
