"""BM25 keyword retrieval over an :class:`indexes.Index`.

Scores are BM25 scores (unbounded, higher is better), kept in ``hit.scores["bm25"]``.
A filter is compiled to a row mask and applied *before* ranking, so ``k`` hits come back
whenever ``k`` matching chunks contain a query term.
"""

from __future__ import annotations

from indexes.bundle import Index
from retrieval.base import BaseRetriever, Filter, hits_from_rows
from retrieval.filters import filter_mask
from retrieval.hit import Hit

__all__ = ["KeywordRetriever"]


class KeywordRetriever(BaseRetriever):
    """BM25 search over an index's keyword half."""

    stage = "bm25"

    def __init__(self, index: Index, *, k: int = 10) -> None:
        super().__init__(k=k)
        self.index = index

    def _retrieve(self, query: str, k: int, filter: Filter | None) -> list[Hit]:
        allow = filter_mask(filter, self.index.chunks) if filter else None
        pairs = self.index.keyword_search(query, k, allow=allow)
        return hits_from_rows(self.index.chunks, pairs, self.stage)
