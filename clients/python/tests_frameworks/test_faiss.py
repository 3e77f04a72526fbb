"""LangChain FAISS (langchain-community, faiss-cpu) through AmnesiaFAISS: files
amnesia's faiss and file adapters erase from, one person erased through serve."""

from __future__ import annotations

import json
import os
import subprocess
import uuid

import faiss
import numpy as np
import pytest
from langchain_community.vectorstores import FAISS
from langchain_core.documents import Document

from _fw import HashEmbeddings
from amnesia_client import Conflict
from amnesia_client.langchain import AmnesiaVectorStore
from amnesia_client.langchain_faiss import AmnesiaFAISS
from amnesia_client.offline import load_public_key, verify_bundle
from conftest import DIM, FAISS as HAVE_FAISS, Amnesia

needs_faiss_binary = pytest.mark.skipif(not HAVE_FAISS, reason="AMNESIA_BIN was not built with the faiss tag (scripts/test-frameworks builds it so when FAISS's C API is installed; scripts/test-faiss installs it)")


def test_ids_never_shift(tmp_path) -> None:
    """Deleting through LangChain keeps the other documents' int64 ids, and
    from_texts / save_local / load_local round-trip without a pickle."""
    emb = HashEmbeddings()
    s = AmnesiaFAISS.from_texts(["alpha one", "beta two", "gamma three"], emb, ids=["a", "b", "c"])
    before = dict(s.index_to_docstore_id)
    s.delete(["a"])
    assert s.index_to_docstore_id == {k: v for k, v in before.items() if v != "a"}
    s.add_texts(["delta four"], ids=["d"])
    assert len(set(s.index_to_docstore_id)) == 3 and max(s.index_to_docstore_id) == 3
    s.save_local(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["index.docstore.jsonl", "index.faiss", "index.faiss.ids.json"]
    r = AmnesiaFAISS.load_local(str(tmp_path), emb)
    assert r.index_to_docstore_id == s.index_to_docstore_id
    assert r.similarity_search("gamma three", k=1)[0].id == "c"
    assert r.max_marginal_relevance_search("beta two", k=1, fetch_k=3)[0].id == "b"
    # A vector whose text was erased first (the file store before the index) is left out on load.
    lines = [ln for ln in (tmp_path / "index.docstore.jsonl").read_text().splitlines() if '"id": "b"' not in ln]
    (tmp_path / "index.docstore.jsonl").write_text("".join(ln + "\n" for ln in lines))
    r = AmnesiaFAISS.load_local(str(tmp_path), emb)
    assert sorted(r.index_to_docstore_id.values()) == ["c", "d"] and r.index.ntotal == 2


def test_faiss_cpu_writes_what_faiss_1_7_3_reads(tmp_path) -> None:
    """The pinned faiss-cpu writes IDMap/IDMap2 over Flat files byte-for-byte as
    Debian's FAISS 1.7.3 (python3-faiss, the library amnesia links) does, and
    1.7.3 reads its HNSW files."""
    deb = "/usr/bin/python3"
    if subprocess.run([deb, "-c", "import faiss"], capture_output=True).returncode != 0:
        pytest.skip("Debian's python3-faiss (FAISS 1.7.3) is not installed (scripts/test-faiss installs it)")
    x = np.random.RandomState(7).rand(20, 16).astype("float32")
    np.save(tmp_path / "x.npy", x)
    script = """
import faiss, numpy as np, sys
x = np.load(sys.argv[1]); out = sys.argv[2]
for name, idx in [("idmap2", faiss.IndexIDMap2(faiss.IndexFlatL2(16))), ("idmap", faiss.IndexIDMap(faiss.IndexFlatIP(16))),
                  ("hnsw", faiss.IndexIDMap2(faiss.IndexHNSWFlat(16, 8)))]:
    idx.add_with_ids(x, np.arange(500, 520).astype("int64"))
    faiss.write_index(idx, out + "/" + name + "." + sys.argv[3])
"""
    (tmp_path / "w.py").write_text(script)
    subprocess.run([deb, str(tmp_path / "w.py"), str(tmp_path / "x.npy"), str(tmp_path), "deb"], check=True)
    import sys

    subprocess.run([sys.executable, str(tmp_path / "w.py"), str(tmp_path / "x.npy"), str(tmp_path), "pip"], check=True)
    for name in ("idmap2", "idmap"):
        assert (tmp_path / f"{name}.pip").read_bytes() == (tmp_path / f"{name}.deb").read_bytes(), name
    # HNSW: the graph may differ between versions (not byte-identical), but
    # FAISS 1.7.3 reads faiss-cpu's file and finds every vector under its id.
    check = (
        "import faiss, numpy as np, sys; i = faiss.read_index(sys.argv[1]); x = np.load(sys.argv[2]);"
        "ids = faiss.vector_to_array(i.id_map); s = faiss.downcast_index(i.index).storage;"
        "v = faiss.vector_to_array(faiss.downcast_index(s).codes).view('float32').reshape(-1, 16);"
        "print(i.ntotal, sorted(ids.tolist()) == list(range(500, 520)), bool((v == x).all()))"
    )
    r = subprocess.run([deb, "-c", check, str(tmp_path / "hnsw.pip"), str(tmp_path / "x.npy")], capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["20", "True", "True"], r.stdout + r.stderr
    # ...and 1.7.3 reads what AmnesiaFAISS saves.
    s = AmnesiaFAISS.new(HashEmbeddings(), DIM)
    s.add_texts(["one text", "another text"], ids=["a", "b"])
    s.save_local(str(tmp_path / "s"))
    r = subprocess.run([deb, "-c", "import faiss,sys; i=faiss.read_index(sys.argv[1]); print(i.ntotal)", str(tmp_path / "s" / "index.faiss")],
                       capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "2"


@needs_faiss_binary
def test_langchain_faiss_default_index_is_not_erasable(amn: Amnesia, tmp_path) -> None:
    """LangChain's own FAISS (IndexFlatL2, texts pickled in index.pkl) is refused by `amnesia check`."""
    FAISS.from_texts(["a text"], HashEmbeddings()).save_local(str(tmp_path))
    cfg = tmp_path / "amnesia.yaml"
    cfg.write_text(f"version: 1\nscope: default\nstores:\n  - name: plain\n    type: faiss\n    path: {tmp_path}/index.faiss\n    dimensions: {DIM}\n")
    env = dict(os.environ, AMNESIA_STATE=str(tmp_path / "state"))
    subprocess.run([amn.bin, "init", "--config", str(cfg)], env=env, capture_output=True, check=True)
    r = subprocess.run([amn.bin, "check"], env=env, capture_output=True, text=True)
    assert r.returncode != 0, r.stdout + r.stderr
    assert "IDMap" in (r.stdout + r.stderr), r.stdout + r.stderr


@needs_faiss_binary
def test_amnesia_faiss_erase(amn: Amnesia) -> None:
    u = uuid.uuid4().hex[:8]
    alice, bob = f"alice-{u}@example.org", f"bob-{u}@example.org"
    emb = HashEmbeddings()
    folder = amn.faiss_dir
    vs = AmnesiaVectorStore(AmnesiaFAISS.load_local(folder, emb), amn.capture, store="lc-faiss", text_store="lc-faiss-texts")
    texts = [
        (f"Alice {u} keeps bees on her roof in Ghent and sells the honey.", alice),
        (f"Alice {u} asked for her invoices to be sent by post to Ghent.", alice),
        (f"Bob {u} restores old pianos in a workshop in Leuven.", bob),
    ]
    ids = vs.add_documents([Document(t, metadata={"subject": s}) for t, s in texts])
    vs.inner.save_local(folder)
    paths = AmnesiaFAISS.paths(folder)
    assert not os.path.exists(os.path.join(folder, "index.pkl"))
    with open(paths["docstore"], "rb") as f:
        assert f"Alice {u}".encode() in f.read()
    hits = AmnesiaFAISS.load_local(folder, emb).similarity_search(f"alice {u} bees honey ghent", k=2)
    assert hits and hits[0].metadata["subject"] == alice

    assert amn.operator.trace(alice).artifacts == 4  # 2 texts + 2 vectors
    done = amn.operator.erase(alice, "DSR-TEST-3", timeout=180)
    assert done.state == "done", done.error
    pred = verify_bundle(amn.operator.certificate(done.certificate_id), [load_public_key(k.pem) for k in amn.operator.keys()]).predicate
    arts = {(a["store"], a["kind"]): a for a in pred["artifacts"]}
    by_store = {}
    for a in pred["artifacts"]:
        by_store.setdefault(a["store"], []).append(a)
    assert len(by_store["lc-faiss"]) == 2 and len(by_store["lc-faiss-texts"]) == 2, json.dumps(pred["artifacts"], indent=1)
    for a in pred["artifacts"]:
        assert a["outcome"] == "VERIFIED" and a["level"] == "physical", a
    assert pred["complete"] is True
    faiss_state = [s for s in pred["declared_scope"] if s["name"] == "lc-faiss"][0]
    # Honest about the texts: they are in the configured file store, not in a pickle nobody scans.
    assert "lc-faiss-texts" in faiss_state["reclaim"] and "NOT covered" not in faiss_state["reclaim"], faiss_state

    # The files: the vectors and the id map no longer hold Alice's ids, nor the docstore her texts.
    with open(paths["docstore"], "rb") as f:
        data = f.read()
    assert f"Alice {u}".encode() not in data and alice.encode() not in data and f"Bob {u}".encode() in data
    with open(paths["ids"]) as f:
        assert set(json.load(f)) == {ids[2]}
    idx = faiss.read_index(paths["index"])
    assert idx.ntotal == 1
    # LangChain's retrieval, reloaded from the files, no longer returns Alice.
    fresh = AmnesiaFAISS.load_local(folder, emb)
    for q in (f"alice {u} bees honey ghent", f"alice {u} invoices post"):
        for d in fresh.similarity_search(q, k=5):
            assert d.metadata.get("subject") != alice
    assert fresh.get_by_ids(ids[:2]) == [] and len(fresh.get_by_ids(ids[2:])) == 1

    # Re-ingest refused before anything is written.
    with pytest.raises(Conflict):
        AmnesiaVectorStore(fresh, amn.capture, store="lc-faiss", text_store="lc-faiss-texts").add_documents(
            [Document(texts[0][0], metadata={"subject": alice})], ids=[ids[0]])
    assert fresh.index.ntotal == 1
