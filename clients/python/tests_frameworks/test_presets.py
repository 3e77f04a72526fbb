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
