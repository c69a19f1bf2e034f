"""Dense retrieval over an :class:`indexes.Index`'s faiss half.

Scores are cosine similarities in [-1, 1] (inner products of normalised embeddings), kept
in ``hit.scores["vector"]``. Filters are faiss ID selectors applied before ranking.
"""

from __future__ import annotations

from indexes.bundle import Index
from retrieval.base import BaseRetriever, Filter, hits_from_rows
from retrieval.filters import filter_mask
from retrieval.hit import Hit

__all__ = ["VectorRetriever"]


class VectorRetriever(BaseRetriever):
    """Cosine-similarity search with the index's embedder."""

    stage = "vector"

    def __init__(self, index: Index, *, k: int = 10) -> None:
        super().__init__(k=k)
        self.index = index

    def _retrieve(self, query: str, k: int, filter: Filter | None) -> list[Hit]:
        allow = filter_mask(filter, self.index.chunks) if filter else None
        pairs = self.index.vector_search(query, k, allow=allow)
        return hits_from_rows(self.index.chunks, pairs, self.stage)
