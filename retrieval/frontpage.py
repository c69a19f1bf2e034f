"""Qwen-Agent's front-page search: the first chunks of each document, whatever the query.

The opening of a document (title, abstract, first page) often answers "what is this file
about?" questions that share no words with it. Used alone it ranks documents by their
order in the index; inside a :class:`~retrieval.hybrid.HybridRetriever` it adds a small
prior towards document openings. Score: ``1 / position`` of the chunk within its document
(1.0 for the first chunk), kept in ``hit.scores["front_page"]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ragtools.indexes.index import Index, IndexState
from ragtools.indexes.ranking import Ranking
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.base import IndexRetriever
from ragtools.retrieval.filters import BoolArray

__all__ = ["FrontPageRetriever"]


class FrontPageRetriever(IndexRetriever):
    """Return the first ``chunks_per_doc`` chunks of each document."""

    stage = "front_page"

    def __init__(
        self, index: Index, *, k: int = 10, chunks_per_doc: int = 1, **options: Any
    ) -> None:
        super().__init__(index, k=k, **options)
        if chunks_per_doc < 1:
            msg = f"chunks_per_doc must be at least 1, got {chunks_per_doc}"
            raise ConfigError(msg)
        self.chunks_per_doc = chunks_per_doc

    def rank_state(self, state: IndexState, query: str, k: int, allow: BoolArray | None) -> Ranking:
        rows: list[int] = []
        scores: list[float] = []
        seen: dict[str, int] = {}
        for row, chunk in enumerate(state.chunks):
            position = seen.get(chunk.doc_id, 0) + 1
            seen[chunk.doc_id] = position
            if position <= self.chunks_per_doc and (allow is None or allow[row]):
                rows.append(row)
                scores.append(1.0 / position)
        return Ranking.top(scores, k, np.asarray(rows, dtype=np.int64))
