"""Dense retrieval over an :class:`indexes.Index`'s faiss half.

Scores are cosine similarities in [-1, 1] (inner products of normalised embeddings), kept
in ``hit.scores["vector"]``. Filters are faiss ID selectors applied before ranking.
"""

from __future__ import annotations

from ragtools.indexes.index import IndexState
from ragtools.indexes.ranking import Ranking
from ragtools.retrieval.base import IndexRetriever
from ragtools.retrieval.filters import BoolArray

__all__ = ["VectorRetriever"]


class VectorRetriever(IndexRetriever):
    """Cosine-similarity search with the index's embedder."""

    stage = "vector"

    def rank_state(self, state: IndexState, query: str, k: int, allow: BoolArray | None) -> Ranking:
        return state.vector_ranking(self.index.embedder.embed_query(query), k, allow)
