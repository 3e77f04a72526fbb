"""LangChain's FAISS vector store in files amnesia can erase from and certify.

Needs ``langchain-community`` and ``faiss-cpu`` (pinned to 1.15.1 in
requirements-frameworks.txt: for the index types below it writes files
byte-identical to those of FAISS 1.7.3, which amnesia's ``faiss`` adapter
links; tested in tests_frameworks/test_faiss.py).

LangChain's own ``FAISS`` keeps an ``IndexFlatL2`` whose ids are positions
(they shift when a vector is removed) and pickles the texts with the
position map into ``index.pkl``. amnesia refuses such an index (an erasure
by position would hit the wrong vectors) and does not read or rewrite
pickles, so that ``index.pkl`` would be neither erased nor scanned.

:class:`AmnesiaFAISS` is LangChain's ``FAISS`` with the same reads, over an
``IndexIDMap2`` whose int64 ids never shift, saved as three files that
amnesia's adapters read:

* ``NAME.faiss`` (``faiss.write_index``): the vectors, under their int64 ids.
  amnesia: a ``faiss`` store, ``path: .../NAME.faiss``.
* ``NAME.faiss.ids.json``: the document id → int64 id map, which amnesia's
  faiss adapter reads to find a key and rewrites after an erasure.
* ``NAME.docstore.jsonl``: one JSON line per document, ``{"id", "text",
  "metadata"}``. amnesia: a ``file`` store (``key: id``, ``content: [text]``),
  named as the faiss store's ``docstore:``; an erasure deletes the lines and
  byte-scans the file.

No ``.pkl`` is written: :meth:`AmnesiaFAISS.load_local` rebuilds the store
from the three files, so after an erasure a reload holds exactly what amnesia
left. Reload after every erasure (a process that keeps the old index in memory
and saves it again would write the erased vectors back). Record lineage by
wrapping it: ``AmnesiaVectorStore(AmnesiaFAISS.new(emb, dim), client,
store="rag-faiss", text_store="rag-texts")`` records each document's text
row (kind ``chunk``) and its vector (kind ``embedding``, the text row as
parent).
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from typing import Any, Dict, Iterable, List, Optional

import numpy as np
from langchain_community.docstore.in_memory import InMemoryDocstore
from langchain_community.vectorstores import FAISS
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

__all__ = ["AmnesiaFAISS"]


def _atomic_write(path: str, data: bytes) -> None:
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".tmp-", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dfd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


class AmnesiaFAISS(FAISS):
    """LangChain's FAISS over ``IndexIDMap2(IndexFlatL2)`` (or inner product), saved without pickles."""

    @classmethod
    def new(cls, embedding: Embeddings, dimensions: int, *, inner_product: bool = False, **kwargs: Any) -> "AmnesiaFAISS":
        """An empty store of ``dimensions`` (``IDMap2,Flat``, L2 unless ``inner_product``)."""
        import faiss

        flat = faiss.IndexFlatIP(dimensions) if inner_product else faiss.IndexFlatL2(dimensions)
        return cls(embedding, faiss.IndexIDMap2(flat), InMemoryDocstore(), {}, **kwargs)

    # LangChain's FAISS keeps positions; here index_to_docstore_id maps the
    # IDMap2's int64 ids, which never shift.
    def _FAISS__add(  # noqa: N802 (overrides FAISS.__add, name-mangled)
        self,
        texts: Iterable[str],
        embeddings: Iterable[List[float]],
        metadatas: Optional[Iterable[dict]] = None,
        ids: Optional[List[str]] = None,
    ) -> List[str]:
        import faiss

        texts = list(texts)
        ids = list(ids) if ids else [str(uuid.uuid4()) for _ in texts]
        metas = list(metadatas) if metadatas is not None else [{} for _ in texts]
        if not (len(ids) == len(texts) == len(metas)):
            raise ValueError("texts, metadatas and ids differ in length")
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate ids")
        if set(ids) & set(self.index_to_docstore_id.values()):
            raise ValueError("an id is already in the store: delete it first")
        vector = np.array(list(embeddings), dtype=np.float32)
        if self._normalize_L2:
            faiss.normalize_L2(vector)
        start = max(self.index_to_docstore_id, default=-1) + 1
        labels = np.arange(start, start + len(ids), dtype=np.int64)
        self.index.add_with_ids(vector, labels)
        self.docstore.add({i: Document(id=i, page_content=t, metadata=m) for i, t, m in zip(ids, texts, metas)})
        self.index_to_docstore_id.update({int(n): i for n, i in zip(labels, ids)})
        return ids

    def delete(self, ids: Optional[List[str]] = None, **kwargs: Any) -> Optional[bool]:
        if ids is None:
            raise ValueError("No ids provided to delete.")
        rev = {v: k for k, v in self.index_to_docstore_id.items()}
        missing = [i for i in ids if i not in rev]
        if missing:
            raise ValueError(f"{len(missing)} of the ids are not in the store")
        labels = np.array([rev[i] for i in ids], dtype=np.int64)
        self.index.remove_ids(labels)
        self.docstore.delete(ids)
        for n in labels:
            del self.index_to_docstore_id[int(n)]
        return True

    @classmethod
    def from_texts(  # type: ignore[override]
        cls,
        texts: List[str],
        embedding: Embeddings,
        metadatas: Optional[List[dict]] = None,
        ids: Optional[List[str]] = None,
        **kwargs: Any,
    ) -> "AmnesiaFAISS":
        """A new store holding texts (the dimension is the embedding's). Writes
        no lineage: wrap the store in AmnesiaVectorStore and add_texts through
        it to record the lineage of what it holds."""
        texts = list(texts)
        if not texts:
            raise ValueError("from_texts: no texts (use AmnesiaFAISS.new(embedding, dimensions) for an empty store)")
        vectors = embedding.embed_documents(texts)
        store = cls.new(embedding, len(vectors[0]), **kwargs)
        store.add_embeddings(list(zip(texts, vectors)), metadatas=metadatas, ids=ids)
        return store

    def merge_from(self, target: FAISS) -> None:
        raise NotImplementedError("AmnesiaFAISS: add the other store's documents with add_documents")

    # ------------------------------------------------------------ files

    @staticmethod
    def paths(folder_path: str, index_name: str = "index") -> Dict[str, str]:
        """The three files: ``index`` (NAME.faiss), ``ids`` (NAME.faiss.ids.json), ``docstore`` (NAME.docstore.jsonl)."""
        base = os.path.join(folder_path, index_name)
        return {"index": base + ".faiss", "ids": base + ".faiss.ids.json", "docstore": base + ".docstore.jsonl"}

    def save_local(self, folder_path: str, index_name: str = "index") -> None:
        """Writes the three files, each atomically (a temporary file renamed over it). No pickle."""
        import faiss

        os.makedirs(folder_path, exist_ok=True)
        p = self.paths(folder_path, index_name)
        lines = []
        for n, i in sorted(self.index_to_docstore_id.items()):
            d = self.docstore.search(i)
            if not isinstance(d, Document):
                raise ValueError("the docstore lacks a document the index holds")
            lines.append(json.dumps({"id": i, "text": d.page_content, "metadata": d.metadata}, ensure_ascii=False, sort_keys=True))
        _atomic_write(p["docstore"], ("".join(line + "\n" for line in lines)).encode("utf-8"))
        ids = {i: n for n, i in sorted(self.index_to_docstore_id.items())}
        _atomic_write(p["ids"], json.dumps(ids, sort_keys=True).encode("utf-8"))
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(p["index"]) + ".tmp-", dir=folder_path)
        os.close(fd)
        try:
            faiss.write_index(self.index, tmp)
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
            os.replace(tmp, p["index"])
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    @classmethod
    def load_local(  # type: ignore[override]
        cls, folder_path: str, embeddings: Embeddings, index_name: str = "index", **kwargs: Any
    ) -> "AmnesiaFAISS":
        """Rebuilds the store from the three files (no pickle is read). A document
        whose vector is gone from the index, or a vector whose document is gone
        from the docstore file (one erased before the other), is left out."""
        import faiss

        kwargs.pop("allow_dangerous_deserialization", None)
        p = cls.paths(folder_path, index_name)
        index = faiss.read_index(p["index"])
        if not isinstance(index, faiss.IndexIDMap2):
            index = faiss.downcast_index(index)
        if not isinstance(index, (faiss.IndexIDMap2, faiss.IndexIDMap)):
            raise ValueError(f"{p['index']}: not an IDMap index (written by AmnesiaFAISS?)")
        present = set(int(x) for x in faiss.vector_to_array(index.id_map))
        with open(p["ids"]) as f:
            ids: Dict[str, int] = json.load(f)
        docs: Dict[str, Document] = {}
        with open(p["docstore"], encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError:
                    raise ValueError(f"{p['docstore']}: line {n} is not JSON") from None
                docs[row["id"]] = Document(id=row["id"], page_content=row["text"], metadata=row.get("metadata") or {})
        mapping = {int(n): i for i, n in ids.items() if int(n) in present and i in docs}
        orphans = np.array(sorted(present - set(mapping)), dtype=np.int64)
        if len(orphans):
            index.remove_ids(orphans)  # vectors whose text was erased first
        store = InMemoryDocstore({i: docs[i] for i in mapping.values()})
        return cls(embeddings, index, store, mapping, **kwargs)
