"""BM25 keyword retrieval over an :class:`indexes.Index`.

Scores are BM25 scores (unbounded, higher is better), kept in ``hit.scores["bm25"]``.
A filter is compiled to a row mask and applied *before* ranking, so ``k`` hits come back
whenever ``k`` matching chunks contain a query term.
"""

from __future__ import annotations

from ragtools.retrieval.base import RowRetriever, RowRun
from ragtools.retrieval.filters import BoolArray

__all__ = ["KeywordRetriever"]


class KeywordRetriever(RowRetriever):
    """BM25 search over an index's keyword half."""

    stage = "bm25"

    def rank_rows(self, query: str, k: int, allow: BoolArray | None) -> RowRun:
        return self.index.keyword_rows(query, k, allow=allow)
