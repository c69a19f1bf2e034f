"""Dense retrieval over an :class:`indexes.Index`'s faiss half.

Scores are cosine similarities in [-1, 1] (inner products of normalised embeddings), kept
in ``hit.scores["vector"]``. Filters are faiss ID selectors applied before ranking.
"""

from __future__ import annotations

from retrieval.base import Filter, RowRetriever
from retrieval.filters import filter_mask

__all__ = ["VectorRetriever"]


class VectorRetriever(RowRetriever):
    """Cosine-similarity search with the index's embedder."""

    stage = "vector"

    def search_rows(self, query: str, k: int, filter: Filter | None) -> list[tuple[int, float]]:
        allow = filter_mask(filter, self.index.chunks) if filter else None
        return self.index.vector_search(query, k, allow=allow)
