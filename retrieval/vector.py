"""Dense retrieval over an :class:`indexes.Index`'s faiss half, optionally with vector PRF.

Scores are cosine similarities in [-1, 1] (inner products of normalised embeddings), kept
in ``hit.scores["vector"]``. Filters are faiss ID selectors applied before ranking.

``prf=`` adds vector pseudo-relevance feedback (:class:`~indexes.dense.prf.Rocchio`, as
Pyserini's dense searcher runs it): a first pass ranks the query's best ``depth`` chunks
under the same filter, in hit order (score, then chunk key); each feeds back the vector of
its best window for the query (the vector that gave it its score), read through the index's
embedder, whose embedding cache holds the vectors the build stored (a text missing from it
is embedded again by the same model); the second pass searches ``alpha * q + beta *
mean(feedback)``, and its cosines are what the retriever returns.

PRF is off by default: see ``eval/measure_defaults.py`` for its measurement (SciFact train
by two-fold cross-validation, and two hand-judged local sets).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtools.indexes.dense.prf import Rocchio
from ragtools.indexes.dense.windows import embedded_windows
from ragtools.indexes.index import Index, IndexState
from ragtools.indexes.ranking import Ranking
from ragtools.retrieval.base import IndexRetriever
from ragtools.retrieval.filters import BoolArray
from ragtools.retrieval.hit import top_by_key

__all__ = ["VectorRetriever"]


class VectorRetriever(IndexRetriever):
    """Cosine-similarity search with the index's embedder.

    Args:
        index: the index to search.
        prf: vector pseudo-relevance feedback: ``True`` for Pyserini's Rocchio row
            (``depth=5, alpha=0.4, beta=0.6``), a mapping of those settings, a
            :class:`~indexes.dense.prf.Rocchio`, or ``None``/``False`` (none, the default).
        k: default number of hits.
        **options: ``expand=`` and ``min_score=`` (see :class:`~retrieval.base.BaseRetriever`).

    Raises:
        ConfigError: an invalid ``prf`` setting, naming it.
    """

    stage = "vector"

    def __init__(
        self,
        index: Index,
        *,
        prf: Rocchio | Mapping[str, Any] | bool | None = None,
        k: int = 10,
        **options: Any,
    ) -> None:
        super().__init__(index, k=k, **options)
        self.prf = Rocchio.of(prf)

    def rank_state(self, state: IndexState, query: str, k: int, allow: BoolArray | None) -> Ranking:
        return state.vector_ranking(self.index.embedder.embed_query(query), k, allow)

    def ranker(
        self, state: IndexState, query: str, allow: BoolArray | None
    ) -> Callable[[int], Ranking]:
        if self.prf is None:
            return super().ranker(state, query, allow)
        vector = self.feedback_query(state, query, allow)
        return lambda depth: state.vector_ranking(vector, depth, allow)

    def feedback_query(
        self, state: IndexState, query: str, allow: BoolArray | None
    ) -> npt.NDArray[np.float32]:
        """The query vector :attr:`prf` makes of ``query`` over ``state``, or the query's
        embedding when feedback is off or the first pass finds nothing."""
        embedder = self.index.embedder
        q = np.asarray(embedder.embed_query(query), dtype=np.float32)
        if self.prf is None:
            return q
        first = top_by_key(
            lambda depth: state.vector_ranking(q, depth, allow), self.prf.depth, state.chunk_keys
        )
        if not len(first.rows):
            return q
        return self.rocchio_query(state, q, first.rows.tolist(), self.prf)

    def rocchio_query(
        self, state: IndexState, query: npt.ArrayLike, rows: Sequence[int], rocchio: Rocchio
    ) -> npt.NDArray[np.float32]:
        """``rocchio``'s move of the embedded ``query`` towards the chunks of ``rows`` of
        ``state`` (each by its window most similar to ``query``), whatever ranked them: the
        vector first pass here, or e.g. a fused ranking."""
        q = np.asarray(query, dtype=np.float32)
        if not rows:
            return q
        chunks = [state.chunks[row] for row in rows]
        settings = state.settings
        windows, owners = embedded_windows(
            [c.text for c in chunks],
            settings.vector_window,
            settings.vector_window_overlap,
            [settings.vector_header(c) for c in chunks],
        )
        vectors = np.asarray(self.index.embedder.embed_documents(windows), dtype=np.float64)
        norms = np.linalg.norm(vectors, axis=1)
        cosines = vectors @ q.astype(np.float64) / np.where(norms == 0, 1.0, norms)
        best = [
            int(np.flatnonzero(owners == i)[np.argmax(cosines[owners == i])])
            for i in range(len(chunks))
        ]
        return rocchio.expand(q, vectors[best])
