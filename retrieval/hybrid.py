"""Hybrid retrieval: run several retrievers concurrently, fuse by chunk id, optionally rerank.

Each retriever is asked for its ``candidate_k`` best rows with the same filter (the
:class:`~retrieval.base.Ranker` protocol: a ranking plus the chunks of its rows); the rankings
are fused by :func:`retrieval.fusion.fuse_rankings` keyed by chunk id (a 64-bit key of the id,
never the text; weights really apply; a weight of 0 removes a retriever), and hits are built
for the ``k`` returned only (:func:`retrieval.hit.fused_hits`). One path, whether the
retrievers share an index or not; every run and the fused result are in hit order (score
descending, then chunk key ascending, :mod:`retrieval.hit`), so ties and reciprocal ranks do
not depend on the rows an index happened to give its chunks. Every
stage's score survives in ``hit.scores``: ``bm25``, ``vector``, ..., then ``fused`` and, with a
reranker, ``rerank``.

Defaults (``relative_score`` fusion, weights 0.6 for BM25 and 0.4 for vectors, 1,000
candidates per retriever when built with :meth:`HybridRetriever.from_index`) were chosen on
the SciFact *train* split with ``eval/beir.py --tune`` over an index with title boost and
vector windows (train nDCG@10 0.7417, Recall@100 0.953; 0.4 / 0.6 gives 0.7413, equal weights
0.7408; RRF at best 0.7247): min-max normalisation over a deep candidate list is less sensitive
to where a run's tail happens to end. The top weights differ by less than the noise of 809
queries; before BM25 saturated repeated query terms (``k3``), 0.4 / 0.6 was on top.

Checked again against six families of changes (vector PRF, RM3, BM25 parameters, title
boost, the fusion points of the literature and candidate depth) by two-fold
cross-validation on SciFact train and on two hand-judged local sets
(``eval/measure_defaults.py``, ``eval/results/``): no family qualified, so the defaults
stand. One fixed setting, ``zscore`` at 0.5 / 0.5, gained on both folds and both sets without
significance, but a run of one candidate (the one document holding a rare term) has no
spread, so its z-score is 0 and a sole exact BM25 match sinks among average vector
candidates, where min-max gives it 1 (README, quality section).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

from ragtools.indexes.index import Index
from ragtools.indexes.ranking import Ranking, check_k
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.base import BaseRetriever, Filter, QueryFilter, RankedChunks, Ranker
from ragtools.retrieval.fusion import DEFAULT_RRF_K, FusionMethod, check_method, fuse_rankings
from ragtools.retrieval.hit import Hit, KeyRun, fused_hits
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.rerank import Reranker
from ragtools.retrieval.vector import VectorRetriever

__all__ = ["DEFAULT_CANDIDATE_K", "DEFAULT_FUSION", "DEFAULT_WEIGHTS", "HybridRetriever"]

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

DEFAULT_FUSION: FusionMethod = "relative_score"
DEFAULT_WEIGHTS = (0.6, 0.4)
"""BM25 and vector weights for :meth:`HybridRetriever.from_index` (tuned on SciFact train)."""
DEFAULT_CANDIDATE_K = 1000
"""Hits each retriever contributes before fusion (tuned on SciFact train)."""


class _Unset:
    """The type of :data:`_UNSET`: an argument not given (``None`` means something)."""


_UNSET = _Unset()


class HybridRetriever(BaseRetriever):
    """Fuse the rankings of several retrievers.

    Args:
        retrievers: the retrievers to run (concurrently, in threads); each follows the
            :class:`~retrieval.base.Ranker` protocol (every retriever of this package does).
        weights: one non-negative weight per retriever (default: equal).
        fusion: ``"rrf"`` (reciprocal rank fusion), ``"relative_score"`` (min-max),
            ``"dbsf"`` (distribution-based score fusion) or ``"zscore"`` (z-scores).
        rrf_k: the RRF constant (60, after Cormack et al. 2009).
        candidate_k: how many rows each retriever contributes before fusion.
        reranker: reranks the fused candidates (e.g. a cross-encoder), optional.
        k: default number of hits returned.
        **options: ``expand=`` and ``min_score=`` (see :class:`~retrieval.base.BaseRetriever`).
    """

    def __init__(
        self,
        retrievers: Sequence[Ranker],
        *,
        weights: Sequence[float] | None = None,
        fusion: FusionMethod = DEFAULT_FUSION,
        rrf_k: float = DEFAULT_RRF_K,
        candidate_k: int = DEFAULT_CANDIDATE_K,
        reranker: Reranker | None = None,
        k: int = 10,
        **options: Any,
    ) -> None:
        super().__init__(k=k, **options)
        if not retrievers:
            msg = "HybridRetriever needs at least one retriever"
            raise ConfigError(msg)
        for retriever in retrievers:
            if not isinstance(retriever, Ranker):
                msg = (
                    f"{type(retriever).__name__} cannot be fused: a hybrid's retrievers need "
                    "rank(query, k, filter) -> RankedChunks and a stage (see retrieval.Ranker)"
                )
                raise ConfigError(msg)
        if weights is not None and len(weights) != len(retrievers):
            msg = f"got {len(weights)} weights for {len(retrievers)} retrievers"
            raise ConfigError(msg)
        if weights is not None and (min(weights) < 0 or sum(weights) <= 0):
            msg = f"weights must be non-negative and not all zero, got {list(weights)}"
            raise ConfigError(msg)
        check_method(fusion, rrf_k)
        self.retrievers = list(retrievers)
        self.weights = list(weights) if weights is not None else None
        self.fusion: FusionMethod = fusion
        self.rrf_k = rrf_k
        self.candidate_k = check_k(candidate_k, "candidate_k")
        self.reranker = reranker
        self._pool = ThreadPoolExecutor(max_workers=len(self.retrievers))

    @classmethod
    def from_index(
        cls,
        index: Index,
        *,
        weights: Sequence[float] | _Unset | None = _UNSET,
        fusion: FusionMethod | _Unset = _UNSET,
        **options: object,
    ) -> HybridRetriever:
        """BM25 + vector over one index with tuned defaults: the fusion ``rag tune`` wrote
        into the index (``index.settings.fusion``) when it has one, else
        :data:`DEFAULT_FUSION`, :data:`DEFAULT_WEIGHTS` and :data:`DEFAULT_CANDIDATE_K`.
        Arguments given win over both (``weights=None``: equal weights).

        An index with one half (built with ``vector=False``) gets that half alone and a
        warning, so a hybrid search that is really a keyword search is never silent; ask
        for ``KeywordRetriever`` to have it without one.
        """
        tuned = index.settings.fusion
        if tuned is not None:
            options = {"candidate_k": tuned.candidate_k, "rrf_k": tuned.rrf_k, **options}
        if isinstance(weights, _Unset):
            weights = DEFAULT_WEIGHTS if tuned is None else tuned.weights
        if isinstance(fusion, _Unset):
            fusion = DEFAULT_FUSION if tuned is None else tuned.method
        retrievers: list[Ranker] = []
        if index.bm25 is not None:
            retrievers.append(KeywordRetriever(index))
        if index.vector is not None:
            retrievers.append(VectorRetriever(index))
        if len(retrievers) == 1:
            weights = None
            has, lacks = ("keyword", "vector") if index.bm25 is not None else ("vector", "keyword")
            logger.warning(
                "hybrid search on %s is %s search only: the index has no %s half%s",
                index.path,
                has,
                lacks,
                " (built with vector=False)" if lacks == "vector" else "",
            )
        return cls(retrievers, weights=weights, fusion=fusion, **options)  # type: ignore[arg-type]

    def _retrieve(self, query: str, k: int, filter: Filter | None) -> list[Hit]:
        depth = max(k, self.candidate_k)
        weights = self.weights or [1.0] * len(self.retrievers)
        active = [(r, w) for r, w in zip(self.retrievers, weights, strict=True) if w > 0]
        shared = QueryFilter.of(filter)  # one mask per index, whichever retriever asks first
        ranked = self._concurrently(
            [lambda r=r: r.rank(query, depth, shared) for r, _ in active]  # type: ignore[misc]
        )
        runs = [_by_key(one) for one in ranked]
        fused = fuse_rankings(
            self.fusion, [run for run, _ in runs], weights=[w for _, w in active], rrf_k=self.rrf_k
        )
        keep = depth if self.reranker is not None else k
        hits = _hits(fused, keep, ranked, runs)
        if self.reranker is not None:
            hits = self.reranker.rerank(query, hits, k=k)
        return hits[:k]

    def _concurrently(self, calls: Sequence[Callable[[], _T]]) -> list[_T]:
        """Results of ``calls`` in order. The others run in the pool while this thread runs
        the first: concurrent, without a thread hand-off for the call we would wait on anyway."""
        futures = [self._pool.submit(call) for call in calls[1:]]
        first = calls[0]()
        return [first, *(future.result() for future in futures)]


def _by_key(ranked: RankedChunks) -> tuple[Ranking, np.ndarray]:
    """The ranking over chunk keys (a chunk on two rows keeps its best), and its rows."""
    keys = ranked.keys[ranked.ranking.rows]
    _, first = np.unique(keys, return_index=True)
    first.sort()
    rows = ranked.ranking.rows[first]
    return Ranking(keys[first], ranked.ranking.scores[first]), rows


def _hits(
    fused: Ranking,
    keep: int,
    ranked: Sequence[RankedChunks],
    runs: Sequence[tuple[Ranking, np.ndarray]],
) -> list[Hit]:
    """The best ``keep`` fused keys as hits: each one's chunk from the first retriever that
    ranked it, and the score every retriever gave it."""
    wanted = fused.rows[:keep]
    candidates: list[KeyRun] = []
    for source, (run, rows) in zip(ranked, runs, strict=True):
        where = np.flatnonzero(np.isin(run.rows, wanted))
        candidates.append(
            {
                key: (source.chunks[row], {source.stage: score})
                for key, row, score in zip(
                    run.rows[where].tolist(),
                    rows[where].tolist(),
                    run.scores[where].tolist(),
                    strict=True,
                )
            }
        )
    return fused_hits(fused, keep, candidates)
