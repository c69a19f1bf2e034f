"""Dense retrieval over an :class:`indexes.Index`'s faiss half.

Scores are cosine similarities in [-1, 1] (inner products of normalised embeddings), kept
in ``hit.scores["vector"]``. Filters are faiss ID selectors applied before ranking.
"""

from __future__ import annotations

from ragtools.retrieval.base import RowRetriever, RowRun
from ragtools.retrieval.filters import BoolArray

__all__ = ["VectorRetriever"]


class VectorRetriever(RowRetriever):
    """Cosine-similarity search with the index's embedder."""

    stage = "vector"

    def rank_rows(self, query: str, k: int, allow: BoolArray | None) -> RowRun:
        return self.index.vector_rows(query, k, allow=allow)
