"""Helpers of the frameworks' tests: a deterministic embedding for LangChain and LlamaIndex."""

from __future__ import annotations

from typing import Any, List

from langchain_core.embeddings import Embeddings
from llama_index.core.base.embeddings.base import BaseEmbedding

from conftest import embed


class HashEmbeddings(Embeddings):
    """LangChain embeddings: conftest.embed (bag of hashed words, 64 dimensions)."""

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        return [embed(t) for t in texts]

    def embed_query(self, text: str) -> List[float]:
        return embed(text)


class HashEmbedding(BaseEmbedding):
    """LlamaIndex embedding model: the same function."""

    def _get_query_embedding(self, query: str) -> List[float]:
        return embed(query)

    async def _aget_query_embedding(self, query: str) -> List[float]:
        return embed(query)

    def _get_text_embedding(self, text: str) -> List[float]:
        return embed(text)

    def _get_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        return [embed(t) for t in texts]

    @classmethod
    def class_name(cls) -> str:
        return "HashEmbedding"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(model_name="hash-64", embed_batch_size=64, **kwargs)
