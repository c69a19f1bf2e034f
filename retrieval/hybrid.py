"""Hybrid retrieval: run several retrievers concurrently, fuse by chunk id, optionally rerank.

Each retriever is asked for ``candidate_k`` hits with the same filter; their ranked runs are
fused by :func:`retrieval.fusion.fuse` (weights really apply; a weight of 0 removes a
retriever), keyed by chunk id, never by text. Every stage's score survives in
``hit.scores``: ``bm25``, ``vector``, ..., then ``fused`` and, with a reranker, ``rerank``.

Defaults (``relative_score`` fusion, weights 0.6 for BM25 and 0.4 for vectors, 1,000
candidates per retriever when built with :meth:`HybridRetriever.from_index`) were chosen on
the SciFact *train* split with ``eval/beir.py --tune`` over an index with title boost and
vector windows (train nDCG@10 0.7417, Recall@100 0.953; 0.4 / 0.6 gives 0.7413, equal weights
0.7408; RRF at best 0.7247): min-max normalisation over a deep candidate list is less sensitive
to where a run's tail happens to end. The top weights differ by less than the noise of 809
queries; before BM25 saturated repeated query terms (``k3``), 0.4 / 0.6 was on top.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, TypeVar

import numpy as np

from ragtools.indexes.bundle import Index
from ragtools.parsers.document import Chunk
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.base import BaseRetriever, Filter, Retriever, RowRetriever, RowRun, _check_k
from ragtools.retrieval.fusion import fuse_arrays, fuse_hits
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.rerank import Reranker
from ragtools.retrieval.vector import VectorRetriever

__all__ = [
    "DEFAULT_CANDIDATE_K",
    "DEFAULT_FUSION",
    "DEFAULT_WEIGHTS",
    "FusionMethod",
    "HybridRetriever",
]

FusionMethod = Literal["rrf", "relative_score", "dbsf"]
_T = TypeVar("_T")

DEFAULT_FUSION: FusionMethod = "relative_score"
DEFAULT_WEIGHTS = (0.6, 0.4)
"""BM25 and vector weights for :meth:`HybridRetriever.from_index` (tuned on SciFact train)."""
DEFAULT_CANDIDATE_K = 1000
"""Hits each retriever contributes before fusion (tuned on SciFact train)."""


class HybridRetriever(BaseRetriever):
    """Fuse the results of several retrievers.

    Args:
        retrievers: the retrievers to run (concurrently, in threads).
        weights: one non-negative weight per retriever (default: equal).
        fusion: ``"rrf"`` (reciprocal rank fusion), ``"relative_score"`` (min-max) or
            ``"dbsf"`` (distribution-based score fusion).
        rrf_k: the RRF constant (60, after Cormack et al. 2009).
        candidate_k: how many hits each retriever contributes before fusion.
        reranker: reranks the fused candidates (e.g. a cross-encoder), optional.
        k: default number of hits returned.
    """

    def __init__(
        self,
        retrievers: Sequence[Retriever],
        *,
        weights: Sequence[float] | None = None,
        fusion: FusionMethod = DEFAULT_FUSION,
        rrf_k: int = 60,
        candidate_k: int = DEFAULT_CANDIDATE_K,
        reranker: Reranker | None = None,
        k: int = 10,
    ) -> None:
        super().__init__(k=k)
        if not retrievers:
            msg = "HybridRetriever needs at least one retriever"
            raise ConfigError(msg)
        if weights is not None and len(weights) != len(retrievers):
            msg = f"got {len(weights)} weights for {len(retrievers)} retrievers"
            raise ConfigError(msg)
        if weights is not None and (min(weights) < 0 or sum(weights) <= 0):
            msg = f"weights must be non-negative and not all zero, got {list(weights)}"
            raise ConfigError(msg)
        if fusion not in ("rrf", "relative_score", "dbsf"):
            msg = f"unknown fusion {fusion!r}; use 'rrf', 'relative_score' or 'dbsf'"
            raise ConfigError(msg)
        self.retrievers = list(retrievers)
        self.weights = list(weights) if weights is not None else None
        self.fusion: FusionMethod = fusion
        self.rrf_k = rrf_k
        self.candidate_k = _check_k(candidate_k, "candidate_k")
        self.reranker = reranker
        self._pool = ThreadPoolExecutor(max_workers=len(self.retrievers))

    @classmethod
    def from_index(
        cls,
        index: Index,
        *,
        weights: Sequence[float] | None = DEFAULT_WEIGHTS,
        fusion: FusionMethod = DEFAULT_FUSION,
        **options: object,
    ) -> HybridRetriever:
        """BM25 + vector over one index (or whichever half it has) with tuned defaults."""
        retrievers: list[Retriever] = []
        if index.bm25 is not None:
            retrievers.append(KeywordRetriever(index))
        if index.vector is not None:
            retrievers.append(VectorRetriever(index))
        if len(retrievers) == 1:
            weights = None
        return cls(retrievers, weights=weights, fusion=fusion, **options)  # type: ignore[arg-type]

    def _retrieve(self, query: str, k: int, filter: Filter | None) -> list[Hit]:
        depth = max(k, self.candidate_k)
        weights = self.weights or [1.0] * len(self.retrievers)
        active = [(r, w) for r, w in zip(self.retrievers, weights, strict=True) if w > 0]
        if self.reranker is None and all(isinstance(r, RowRetriever) for r, _ in active):
            row_retrievers = [(r, w) for r, w in active if isinstance(r, RowRetriever)]
            return self._fuse_rows(query, k, depth, filter, row_retrievers)
        hit_lists = self._concurrently(
            [functools.partial(r.invoke, query, k=depth, filter=filter) for r, _ in active]
        )
        keep = depth if self.reranker is not None else k
        hits = fuse_hits(
            self.fusion, hit_lists, weights=[w for _, w in active], rrf_k=self.rrf_k, k=keep
        )
        if self.reranker is not None:
            hits = self.reranker.rerank(query, hits, k=k)
        return hits[:k]

    def _concurrently(self, calls: Sequence[Callable[[], _T]]) -> list[_T]:
        """Results of ``calls`` in order. The others run in the pool while this thread runs
        the first: concurrent, without a thread hand-off for the call we would wait on anyway."""
        futures = [self._pool.submit(call) for call in calls[1:]]
        first = calls[0]()
        return [first, *(future.result() for future in futures)]

    def _fuse_rows(
        self,
        query: str,
        k: int,
        depth: int,
        filter: Filter | None,
        active: Sequence[tuple[RowRetriever, float]],
    ) -> list[Hit]:
        """The same fusion over ``(rows, scores)`` arrays, with hits built for the top k only.

        Equal to fusing the retrievers' hit lists (tested), without building and discarding
        ``depth`` hits (or ``(row, score)`` pairs) per retriever, which was most of a hybrid
        query's time.
        """
        index = active[0][0].index
        weights = [w for _, w in active]
        if all(r.index is index for r, _ in active):
            allow = active[0][0].allowed_rows(filter)  # one filter mask for all of them
            runs = self._concurrently(
                [functools.partial(r.rank_rows, query, depth, allow) for r, _ in active]
            )
            if index.chunk_ids_unique():
                top = self._fuse_one_index(index.chunks, runs, weights, k)
                return [
                    Hit(
                        chunk=index.chunks[row],
                        score=score,
                        rank=rank,
                        scores={**_stage_scores(row, active, runs), "fused": score},
                    )
                    for rank, (row, score) in enumerate(top, start=1)
                ]
        else:
            runs = self._concurrently(
                [functools.partial(r.search_rows, query, depth, filter) for r, _ in active]
            )
        # Several indexes, or a chunk id on several rows: fuse hits keyed by chunk id.
        hit_lists = [r.hits(run) for (r, _), run in zip(active, runs, strict=True)]
        return fuse_hits(self.fusion, hit_lists, weights=weights, rrf_k=self.rrf_k, k=k)

    def _fuse_one_index(
        self,
        chunks: Sequence[Chunk],
        runs: Sequence[RowRun],
        weights: Sequence[float],
        k: int,
    ) -> list[tuple[int, float]]:
        """Top ``k`` ``(row, fused)`` by numpy fusion keyed by row (every row a chunk id of
        its own), ranked as the chunk-id fusion ranks them."""
        rows, scores = fuse_arrays(self.fusion, runs, weights=weights, rrf_k=self.rrf_k)
        if len(scores) > k:  # everything tied with the k-th score competes on chunk id
            neg = -scores
            keep = np.flatnonzero(neg <= np.partition(neg, k - 1)[k - 1])
        else:
            keep = np.arange(len(scores))
        ranked = sorted(
            ((chunks[int(rows[i])].id, int(rows[i]), float(scores[i])) for i in keep),
            key=lambda t: (-t[2], t[0]),
        )
        return [(row, score) for _, row, score in ranked[:k]]


def _stage_scores(
    row: int, active: Sequence[tuple[RowRetriever, float]], runs: Sequence[RowRun]
) -> dict[str, float]:
    """Each retriever's own score for ``row``, for those that ranked it."""
    stages: dict[str, float] = {}
    for (retriever, _), (rows, scores) in zip(active, runs, strict=True):
        where = np.flatnonzero(rows == row)
        if len(where):
            stages.setdefault(retriever.stage, float(scores[where[0]]))
    return stages
