"""BM25 keyword retrieval over an :class:`indexes.Index`.

Scores are BM25 scores (unbounded, higher is better), kept in ``hit.scores["bm25"]``.
A filter is compiled to a row mask and applied *before* ranking, so ``k`` hits come back
whenever ``k`` matching chunks contain a query term.
"""

from __future__ import annotations

from ragtools.indexes.index import IndexState
from ragtools.indexes.ranking import Ranking
from ragtools.retrieval.base import IndexRetriever
from ragtools.retrieval.filters import BoolArray

__all__ = ["KeywordRetriever"]


class KeywordRetriever(IndexRetriever):
    """BM25 search over an index's keyword half."""

    stage = "bm25"

    def rank_state(self, state: IndexState, query: str, k: int, allow: BoolArray | None) -> Ranking:
        return state.keyword_ranking(query, k, allow)
