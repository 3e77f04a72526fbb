"""LangChain integration: record lineage for what a LangChain vector store writes.

Needs ``langchain-core`` (the rest of ``amnesia_client`` needs only the
standard library). Two wrappers:

* :class:`AmnesiaVectorStore` wraps any LangChain ``VectorStore`` (PGVector,
  FAISS, Chroma, Redis, ...). Every document written through it gets an id
  (its own, or a new uuid4) and is recorded with amnesia (``POST /v1/lineage``,
  in batches) **before** the inner store writes it: one artifact per row,
  ``(store, id)``, kind ``embedding`` by default, owned by the subject named
  in the document's metadata (``metadata["subject"]``, or the key given as
  ``subject_key``), with the text as content (the server keeps a keyed digest,
  never the text). A refused record (the re-ingest of an erased document, a
  key that holds the subject id) raises :class:`amnesia_client.Conflict` or
  :class:`amnesia_client.InvalidInput`, and the inner store writes nothing.
  Reads and deletes go to the inner store unchanged.
* :class:`AmnesiaRecordManager` wraps the indexing API's ``RecordManager``
  (``langchain_core.indexing.index``). With ``record_store`` set (the name of
  an amnesia ``postgres`` store mapped onto the record manager's table, see
  docs/python.md), each record-manager row is recorded as a child of the
  vector-store row with the same key, so an erasure deletes the person's
  record-manager rows (whose ``group_id`` is the document's source) with
  their vectors. Without it, it only delegates.

``store`` is the name ``amnesia.yaml`` gives the store the rows land in; the
wrappers never see the configuration.

>>> from amnesia_client import Client
>>> from amnesia_client.langchain import AmnesiaVectorStore
>>> vs = AmnesiaVectorStore(PGVector(...), Client(url, token=capture_token), store="kb")
>>> vs.add_documents([Document("Alice moved to Lyon.", metadata={"subject": "alice@example.org"})])
"""

from __future__ import annotations

import uuid
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.indexing import RecordManager
from langchain_core.vectorstores import VectorStore

from ._lineage import check_kind, record, subject_of
from .client import Client
from .types import Record

__all__ = ["AmnesiaVectorStore", "AmnesiaRecordManager"]


class AmnesiaVectorStore(VectorStore):
    """A LangChain ``VectorStore`` that records lineage before its inner store writes.

    ``inner``: the store that holds the rows; ``client``: an amnesia
    :class:`~amnesia_client.Client` with a ``capture`` token; ``store``: the
    store's name in ``amnesia.yaml``; ``subject_key``: the metadata key that
    holds the person's id; ``kind``: the lineage kind of a row (``embedding``:
    a row holds a chunk's text and its vector); ``scope``: the amnesia scope
    (default: the token's); ``new_id``: makes the id of a document that has
    none (must not contain the subject id: ids are kept in clear in the ledger);
    ``text_store``: for a store that keeps its texts in another amnesia store
    under the same ids (:class:`~amnesia_client.langchain_faiss.AmnesiaFAISS`'s
    docstore file), that store's name: each document is then recorded as a
    ``chunk`` there (with the subject) and as ``kind`` in ``store`` (its parent).
    """

    def __init__(
        self,
        inner: VectorStore,
        client: Client,
        store: str,
        *,
        subject_key: str = "subject",
        kind: str = "embedding",
        scope: Optional[str] = None,
        new_id: Callable[[], str] = lambda: str(uuid.uuid4()),
        text_store: Optional[str] = None,
    ) -> None:
        if not isinstance(inner, VectorStore):
            raise TypeError("inner: want a LangChain VectorStore")
        if not store:
            raise ValueError("store: the name amnesia.yaml gives this vector store")
        self.inner = inner
        self.client = client
        self.store = store
        self.subject_key = subject_key
        self.kind = check_kind(kind)
        self.scope = scope
        self.new_id = new_id
        self.text_store = text_store

    # ------------------------------------------------------------ writes

    def lineage(self, documents: Sequence[Document], ids: Sequence[str]) -> List[Record]:
        """The records of documents about to be written under ids (no network)."""
        out: List[Record] = []
        for n, (d, i) in enumerate(zip(documents, ids)):
            subject = subject_of(d.metadata, self.subject_key, n, "documents")
            if self.text_store:
                out.append(Record(self.text_store, i, "chunk", subject=subject, content=d.page_content))
                out.append(Record(self.store, i, self.kind, parent=(self.text_store, i), content=d.page_content))
            else:
                out.append(Record(self.store, i, self.kind, subject=subject, content=d.page_content))
        return out

    def _prepare(self, documents: Sequence[Document], ids: Optional[Sequence[Optional[str]]]) -> Tuple[List[Document], List[str]]:
        docs = list(documents)
        if ids is not None and len(ids) != len(docs):
            raise ValueError(f"ids: {len(ids)} ids for {len(docs)} documents")
        out_ids = [str((ids[n] if ids is not None else None) or d.id or self.new_id()) for n, d in enumerate(docs)]
        out = [Document(page_content=d.page_content, metadata=dict(d.metadata), id=i) for d, i in zip(docs, out_ids)]
        record(self.client, self.lineage(out, out_ids), self.scope)
        return out, out_ids

    def add_documents(self, documents: List[Document], **kwargs: Any) -> List[str]:
        docs, ids = self._prepare(documents, kwargs.pop("ids", None))
        return self._same_ids(ids, self.inner.add_documents(docs, ids=ids, **kwargs))

    def _same_ids(self, want: List[str], got: Any) -> List[str]:
        # Lineage names the rows by the ids given; a store that keeps others
        # would leave rows amnesia cannot find.
        if got is not None and list(got) != want:
            raise RuntimeError(
                f"{type(self.inner).__name__} stored the documents under other ids than the ones given "
                "(they are written, but amnesia's lineage names the given ids, so an erasure would not find "
                "those rows): delete them and use a vector store that honours ids="
            )
        return want

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: Optional[List[dict]] = None,
        *,
        ids: Optional[List[str]] = None,
        **kwargs: Any,
    ) -> List[str]:
        texts = list(texts)
        if metadatas is not None and len(metadatas) != len(texts):
            raise ValueError(f"metadatas: {len(metadatas)} for {len(texts)} texts")
        docs = [Document(page_content=t, metadata=dict(metadatas[n]) if metadatas else {}) for n, t in enumerate(texts)]
        return self.add_documents(docs, ids=ids, **kwargs)

    async def aadd_documents(self, documents: List[Document], **kwargs: Any) -> List[str]:
        docs, ids = self._prepare(documents, kwargs.pop("ids", None))
        return self._same_ids(ids, await self.inner.aadd_documents(docs, ids=ids, **kwargs))

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: Optional[List[dict]] = None,
        *,
        ids: Optional[List[str]] = None,
        **kwargs: Any,
    ) -> List[str]:
        texts = list(texts)
        docs = [Document(page_content=t, metadata=dict(metadatas[n]) if metadatas else {}) for n, t in enumerate(texts)]
        return await self.aadd_documents(docs, ids=ids, **kwargs)

    @classmethod
    def from_texts(cls, texts: List[str], embedding: Embeddings, metadatas: Optional[List[dict]] = None, **kwargs: Any) -> "AmnesiaVectorStore":
        raise NotImplementedError(
            "build the inner store first, wrap it (AmnesiaVectorStore(inner, client, store=...)), then add_texts"
        )

    # ------------------------------------------------------------ the rest goes to the inner store

    @property
    def embeddings(self) -> Optional[Embeddings]:
        return self.inner.embeddings

    def delete(self, ids: Optional[List[str]] = None, **kwargs: Any) -> Optional[bool]:
        return self.inner.delete(ids, **kwargs)

    async def adelete(self, ids: Optional[List[str]] = None, **kwargs: Any) -> Optional[bool]:
        return await self.inner.adelete(ids, **kwargs)

    def get_by_ids(self, ids: Sequence[str], /) -> List[Document]:
        return self.inner.get_by_ids(ids)

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> List[Document]:
        return self.inner.similarity_search(query, k=k, **kwargs)

    def similarity_search_with_score(self, *args: Any, **kwargs: Any) -> List[Tuple[Document, float]]:
        return self.inner.similarity_search_with_score(*args, **kwargs)

    def similarity_search_by_vector(self, embedding: List[float], k: int = 4, **kwargs: Any) -> List[Document]:
        return self.inner.similarity_search_by_vector(embedding, k=k, **kwargs)

    def max_marginal_relevance_search(self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5, **kwargs: Any) -> List[Document]:
        return self.inner.max_marginal_relevance_search(query, k=k, fetch_k=fetch_k, lambda_mult=lambda_mult, **kwargs)

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return self.inner._select_relevance_score_fn()

    def _similarity_search_with_relevance_scores(self, query: str, k: int = 4, **kwargs: Any) -> List[Tuple[Document, float]]:
        return self.inner._similarity_search_with_relevance_scores(query, k=k, **kwargs)

    async def asimilarity_search(self, query: str, k: int = 4, **kwargs: Any) -> List[Document]:
        return await self.inner.asimilarity_search(query, k=k, **kwargs)

    def _get_retriever_tags(self) -> List[str]:
        return ["AmnesiaVectorStore", *self.inner._get_retriever_tags()]


class AmnesiaRecordManager(RecordManager):
    """The indexing API's ``RecordManager`` with lineage for its rows.

    ``vector_store``: the amnesia store name of the vector store ``index()``
    writes (the record manager's keys are that store's row ids);
    ``record_store``: the amnesia store mapped onto the record manager's table
    (``key`` as its key column). Each key ``update()`` writes is recorded as a
    ``log`` artifact of ``record_store`` whose parent is the vector row
    ``(vector_store, key)``, before the inner manager writes it.
    """

    def __init__(
        self,
        inner: RecordManager,
        client: Client,
        *,
        vector_store: str,
        record_store: Optional[str] = None,
        scope: Optional[str] = None,
    ) -> None:
        super().__init__(inner.namespace)
        self.inner = inner
        self.client = client
        self.vector_store = vector_store
        self.record_store = record_store
        self.scope = scope

    def _record(self, keys: Sequence[str]) -> None:
        if self.record_store:
            record(
                self.client,
                [Record(self.record_store, k, "log", parent=(self.vector_store, k)) for k in keys],
                self.scope,
            )

    def create_schema(self) -> None:
        self.inner.create_schema()

    async def acreate_schema(self) -> None:
        await self.inner.acreate_schema()

    def get_time(self) -> float:
        return self.inner.get_time()

    async def aget_time(self) -> float:
        return await self.inner.aget_time()

    def update(self, keys: Sequence[str], *, group_ids: Optional[Sequence[Optional[str]]] = None, time_at_least: Optional[float] = None) -> None:
        self._record(keys)
        self.inner.update(keys, group_ids=group_ids, time_at_least=time_at_least)

    async def aupdate(self, keys: Sequence[str], *, group_ids: Optional[Sequence[Optional[str]]] = None, time_at_least: Optional[float] = None) -> None:
        self._record(keys)
        await self.inner.aupdate(keys, group_ids=group_ids, time_at_least=time_at_least)

    def exists(self, keys: Sequence[str]) -> List[bool]:
        return self.inner.exists(keys)

    async def aexists(self, keys: Sequence[str]) -> List[bool]:
        return await self.inner.aexists(keys)

    def list_keys(self, **kwargs: Any) -> List[str]:
        return self.inner.list_keys(**kwargs)

    async def alist_keys(self, **kwargs: Any) -> List[str]:
        return await self.inner.alist_keys(**kwargs)

    def delete_keys(self, keys: Sequence[str]) -> None:
        self.inner.delete_keys(keys)

    async def adelete_keys(self, keys: Sequence[str]) -> None:
        await self.inner.adelete_keys(keys)
