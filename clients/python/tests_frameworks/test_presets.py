"""Point 4: the presets against tables the frameworks created themselves."""

from __future__ import annotations

from conftest import Amnesia


def test_amnesia_check_accepts_the_framework_tables(amn: Amnesia) -> None:
    # `amnesia check` ran in the fixture and exited 0; it names each store.
    for name in ("lc-kb", "lc-records", "li-notes"):
        assert name in amn.check_output, amn.check_output
    cols = {r[0] for r in amn.sql("SELECT column_name FROM information_schema.columns WHERE table_name = 'langchain_pg_embedding'")}
    assert {"id", "collection_id", "embedding", "document", "cmetadata"} <= cols
    cols = {r[0] for r in amn.sql("SELECT column_name FROM information_schema.columns WHERE table_name = 'data_notes'")}
    assert {"node_id", "text", "metadata_", "embedding"} <= cols


def test_check_and_erase_after_the_frameworks_wrote_rows(amn: Amnesia) -> None:
    """Rows written by langchain-postgres and LlamaIndex themselves; then the
    Go binary checks the presets again and erases from those tables."""
    import os
    import subprocess
    import urllib.parse
    import uuid

    from langchain_core.documents import Document
    from langchain_postgres import PGVector
    from llama_index.core import Document as LIDocument
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.vector_stores.postgres import PGVectorStore

    from _fw import HashEmbedding, HashEmbeddings
    from amnesia_client.langchain import AmnesiaVectorStore
    from amnesia_client.llamaindex import amnesia_pipeline, stable_node_id
    from conftest import DIM

    u = uuid.uuid4().hex[:8]
    carol = f"carol-{u}@example.org"
    lc = AmnesiaVectorStore(PGVector(HashEmbeddings(), connection=amn.sqlalchemy_url("psycopg"), collection_name="presets",
                                     embedding_length=DIM, use_jsonb=True), amn.capture, store="lc-kb")
    lc_ids = lc.add_documents([Document(f"Carol {u} plays the oboe in a chamber orchestra.", metadata={"subject": carol})])
    p = urllib.parse.urlsplit(amn.pg_url)
    li = PGVectorStore.from_params(host=p.hostname, port=str(p.port), database=p.path[1:], user=p.username,
                                   password=p.password or "", table_name="notes", embed_dim=DIM)
    nodes = amnesia_pipeline([SentenceSplitter(id_func=stable_node_id), HashEmbedding()], client=amn.capture, store="li-notes",
                             vector_store=li).run(documents=[LIDocument(text=f"Carol {u} repairs reeds on Sundays.", metadata={"subject": carol})])
    assert amn.sql("SELECT count(*) FROM langchain_pg_embedding WHERE id = ANY(%s)", lc_ids)[0][0] == 1
    assert amn.sql("SELECT count(*) FROM data_notes WHERE node_id = ANY(%s)", [n.node_id for n in nodes])[0][0] == 1

    env = dict(os.environ, AMNESIA_STATE=amn.state)
    r = subprocess.run([amn.bin, "check"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("lc-kb", "li-notes"):
        line = [ln for ln in r.stdout.splitlines() if ln.startswith(name + " ")][0]
        assert line.rstrip().endswith("OK"), line

    done = amn.operator.erase(carol, "DSR-TEST-4", timeout=180)
    assert done.state == "done" and done.complete is True, done.error
    assert amn.sql("SELECT count(*) FROM langchain_pg_embedding WHERE id = ANY(%s)", lc_ids)[0][0] == 0
    assert amn.sql("SELECT count(*) FROM data_notes WHERE node_id = ANY(%s)", [n.node_id for n in nodes])[0][0] == 0
