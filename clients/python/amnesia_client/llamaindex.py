"""LlamaIndex integration: record lineage for the nodes an ingestion pipeline writes.

Needs ``llama-index-core`` (the rest of ``amnesia_client`` needs only the
standard library). :class:`AmnesiaLineage` is a transformation: put it
**last** in an ``IngestionPipeline`` (after the splitter and the embedding
model). It records every node with amnesia (``POST /v1/lineage``, in
batches) before the pipeline writes the nodes to its vector store: one
artifact per node, ``(store, node_id)``, kind ``embedding``, owned by the
subject in the node's metadata (inherited from its document;
``metadata["subject"]`` or the key given as ``subject_key``), with the
node's vector (or its text when it has no vector yet) as content; the server
keeps a keyed digest of it, never the value. A refused record (the
re-ingest of an erased node, a node id that holds the subject id) raises
and the pipeline writes nothing. Nodes pass through unchanged.

>>> pipeline = IngestionPipeline(
...     transformations=[SentenceSplitter(), embed_model, AmnesiaLineage(client=c, store="kb")],
...     vector_store=PGVectorStore.from_params(..., table_name="docs"),   # amnesia: preset llamaindex, table data_docs
... )
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from llama_index.core.schema import BaseNode, TransformComponent
from pydantic import ConfigDict, Field, PrivateAttr

from ._lineage import check_kind, record, subject_of
from .client import Client
from .types import Record

__all__ = ["AmnesiaLineage", "amnesia_pipeline", "stable_node_id"]


class AmnesiaLineage(TransformComponent):
    """Records lineage for the nodes passing through (an ``IngestionPipeline`` transformation)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: str = Field(description="the name amnesia.yaml gives the vector store the pipeline writes")
    subject_key: str = Field(default="subject", description="the metadata key that holds the person's id")
    kind: str = Field(default="embedding")
    scope: Optional[str] = Field(default=None)
    _client: Client = PrivateAttr()

    def __init__(self, *, client: Client, store: str, **kwargs: Any) -> None:
        if not store:
            raise ValueError("store: the name amnesia.yaml gives this vector store")
        super().__init__(store=store, **kwargs)
        check_kind(self.kind)
        self._client = client

    @classmethod
    def class_name(cls) -> str:
        return "AmnesiaLineage"

    def lineage(self, nodes: Sequence[BaseNode]) -> List[Record]:
        """The records of nodes (no network)."""
        out: List[Record] = []
        for n, node in enumerate(nodes):
            subject = subject_of(node.metadata, self.subject_key, n, "nodes")
            emb = node.embedding
            if emb is not None:
                out.append(Record(self.store, node.node_id, self.kind, subject=subject, vector=list(emb)))
            else:
                out.append(Record(self.store, node.node_id, self.kind, subject=subject, content=node.get_content()))
        return out

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        record(self._client, self.lineage(nodes), self.scope)
        return nodes


def amnesia_pipeline(transformations: Sequence[TransformComponent], *, client: Client, store: str, **kwargs: Any) -> Any:
    """An ``IngestionPipeline`` with :class:`AmnesiaLineage` appended to
    ``transformations`` and its transformation cache disabled.

    The cache matters: a pipeline that caches replays the transformations'
    output for inputs it has seen, without calling them, so the lineage step
    would not run (and a re-ingest of an erased person would not be refused).
    Other keyword arguments (``vector_store=``, ``docstore=``, ...) go to
    ``IngestionPipeline``; ``disable_cache=False`` is refused.
    """
    from llama_index.core.ingestion import IngestionPipeline

    if kwargs.get("disable_cache") is False:
        raise ValueError("disable_cache=False: the cache would skip the lineage step on inputs seen before")
    kwargs["disable_cache"] = True
    lineage_kw = {k: kwargs.pop(k) for k in ("subject_key", "kind", "scope") if k in kwargs}
    steps = list(transformations) + [AmnesiaLineage(client=client, store=store, **lineage_kw)]
    return IngestionPipeline(transformations=steps, **kwargs)


def stable_node_id(i: int, doc: Any) -> str:
    """An ``id_func`` for LlamaIndex node parsers (``SentenceSplitter(id_func=stable_node_id)``):
    the node id is the SHA-256 (hex, 32 digits) of the document's id and the
    node's position, instead of a random uuid4.

    amnesia refuses to record an erased artifact again by its (store, key). With
    random node ids, a second ingest of an erased person's document makes new
    ids, which amnesia records (and the pipeline writes) as new artifacts; with
    stable ids the same document gives the same ids and the pipeline is refused
    (:class:`amnesia_client.Conflict`) before it writes. The id holds no text of
    the document, only a digest of its id.
    """
    import hashlib

    ref = getattr(doc, "ref_doc_id", None) or getattr(doc, "node_id", None) or getattr(doc, "doc_id", "")
    return hashlib.sha256(f"{ref}\n{i}".encode("utf-8")).hexdigest()[:32]
