"""Fusion of ranked runs: reciprocal rank, relative score (min-max), distribution-based and
z-score.

Pure functions, keyed by chunk id (never by text: LangChain's EnsembleRetriever dedups by
``page_content`` and so merges two different chunks that happen to share text).

A **run** is a sequence of ``(chunk_id, score)`` pairs sorted best first, as one retriever
returns them. Choices made here, all tested against hand-computed numbers:

* **Dedup.** Within one run a repeated chunk id keeps its first (best) position and score;
  later copies are dropped and the ranks that follow close up (``[a, b, a, c]`` ranks ``c``
  third). Across runs, contributions for the same id add up.
* **Weights** are plain multipliers, one per run; ``None`` means 1.0 each, so unweighted RRF
  is exactly Cormack et al.'s formula. Only their ratios matter for the order. A weight of 0
  removes its run entirely: ids found only there do not appear in the output. Weights must
  match the runs in number, be finite and non-negative, and not all be zero
  (:class:`~parsers.errors.ConfigError` otherwise).
* **Missing** from a run contributes 0 to an id's fused score.
* **Output** is a list of ``(chunk_id, fused_score)`` in hit order: score descending, then
  the chunk id's 64-bit key ascending (:mod:`retrieval.hit`, the one rule for every result),
  so ties come back in a deterministic order that does not depend on the runs' order or on
  index rows. Empty input or only empty runs give ``[]``.
* **Normalisation of degenerate runs.** Min-max maps a run whose scores are all equal (a
  one-element run included) to 1.0: each of them is that retriever's best. DBSF maps a run's
  mean to 0.5, and a run with zero spread has every score at its mean, so it maps to 0.5
  (Haystack returns 0.0 here, which silently erases the run; 1.0 would rank a retriever that
  found one weak match above the best hits of every retriever with a real distribution).
  Z-score maps a run with zero spread to 0.0, its mean, for the same reason.
* **Z-score** (``zscore``) is ``(s - mean) / std`` (population std), unclipped: ranx's
  ``fuse(norm="zmuv", method="wsum")`` and OpenSearch's ``z_score`` normalisation. It orders
  the documents both runs hold as DBSF does (DBSF is the same line, divided by 6 and shifted),
  but DBSF clips beyond ``mean ± 3 std``, which flattens the top of a long-tailed BM25 run
  (its best hits are often far above ``mean + 3 std``) into ties at 1.0; and an id missing
  from a run gets 0 from it, which here is that run's mean, not its floor.

One implementation: :func:`fuse_rankings` fuses :class:`~indexes.ranking.Ranking` objects (integer
keys), composing a **normalisation** of each run (:data:`NORMALISERS`: reciprocal rank, min-max,
distribution, z-score) with one **combination**, the weighted sum, as ranx's ``fuse(runs, norm=...,
method=...)`` composes them. The chunk-id functions (:func:`fuse`,
:func:`reciprocal_rank_fusion`, ...) and :func:`fuse_hits` are thin adapters over it: chunk ids
become their 64-bit keys (:func:`retrieval.hit.chunk_keys`), so ties come back by key.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import Literal, NoReturn, TypeAlias, get_args

import numpy as np
import numpy.typing as npt

from ragtools.indexes.ranking import Ranking, check_k
from ragtools.parsers.document import Chunk
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.hit import Hit, KeyRun, chunk_keys, fused_hits

__all__ = [
    "DEFAULT_RRF_K",
    "NORMALISERS",
    "FusionMethod",
    "Run",
    "check_method",
    "distribution_based_score_fusion",
    "fuse",
    "fuse_hits",
    "fuse_rankings",
    "reciprocal_rank_fusion",
    "relative_score_fusion",
]

logger = logging.getLogger(__name__)

Run: TypeAlias = Sequence[tuple[str, float]]
"""``(chunk_id, score)`` pairs sorted best first (higher score is better)."""

FusionMethod: TypeAlias = Literal["rrf", "relative_score", "dbsf", "zscore"]
"""``rrf`` (reciprocal rank), ``relative_score`` (min-max), ``dbsf`` (mean ± 3 std, clipped) or
``zscore`` (mean 0, std 1, unclipped)."""

DEFAULT_RRF_K = 60
"""RRF's smoothing constant, as fixed by Cormack et al. (2009) and used by pyserini; a larger
value flattens the gap between the first ranks and the rest."""

_METHODS: tuple[str, ...] = get_args(FusionMethod)
Floats = npt.NDArray[np.float64]


def _reciprocal_ranks(scores: Floats, rrf_k: float) -> Floats:
    out: Floats = 1.0 / (rrf_k + np.arange(1, len(scores) + 1, dtype=np.float64))
    return out


def _min_max(scores: Floats, rrf_k: float) -> Floats:
    low, high = float(scores.min()), float(scores.max())
    if high == low:
        return np.ones_like(scores)
    out: Floats = (scores - low) / (high - low)
    return out


def _standardised(scores: Floats) -> Floats | None:
    """``(s - mean) / std`` (population std), or ``None`` when every score is equal."""
    if float(scores.max()) == float(scores.min()):
        return None
    mean = math.fsum(scores.tolist()) / len(scores)
    deviations = scores - mean
    std = math.sqrt(math.fsum((deviations * deviations).tolist()) / len(scores))
    out: Floats = deviations / std
    return out


def _distribution(scores: Floats, rrf_k: float) -> Floats:
    z = _standardised(scores)
    if z is None:
        return np.full_like(scores, 0.5)
    out: Floats = np.clip((z + 3) / 6, 0.0, 1.0)
    return out


def _z_scores(scores: Floats, rrf_k: float) -> Floats:
    z = _standardised(scores)
    return np.zeros_like(scores) if z is None else z


NORMALISERS: dict[str, Callable[[Floats, float], Floats]] = {
    "rrf": _reciprocal_ranks,
    "relative_score": _min_max,
    "dbsf": _distribution,
    "zscore": _z_scores,
}
"""Each method's normalisation of one run's scores (best first); ``rrf`` reads only ranks."""


def _check_weights(weights: Sequence[float] | None, n_runs: int) -> list[float]:
    """Return one float weight per run, or raise ConfigError naming the problem."""
    if weights is None:
        return [1.0] * n_runs
    values = [float(w) for w in weights]
    if len(values) != n_runs:
        msg = (
            f"fusion got {len(values)} weights for {n_runs} runs ({values!r}); "
            "give exactly one weight per run, or weights=None for equal weights"
        )
        raise ConfigError(msg)
    bad = [w for w in values if not math.isfinite(w) or w < 0]
    if bad:
        msg = f"fusion weights must be finite and >= 0, got {values!r}; fix the value(s) {bad!r}"
        raise ConfigError(msg)
    if n_runs and not any(values):
        msg = (
            f"fusion weights are all zero ({values!r}), which would drop every run; "
            "give at least one positive weight"
        )
        raise ConfigError(msg)
    return values


def check_method(method: object, rrf_k: float) -> None:
    """Refuse an unknown fusion method, or an ``rrf_k`` RRF cannot use (ConfigError)."""
    if method not in _METHODS:
        _unknown_method(method)
    if method == "rrf" and (isinstance(rrf_k, bool) or not math.isfinite(rrf_k) or rrf_k < 0):
        msg = f"rrf_k must be a finite number >= 0, got {rrf_k!r}; the usual value is 60"
        raise ConfigError(msg)


def _unknown_method(method: object) -> NoReturn:
    msg = f"unknown fusion method {method!r}; choose one of {', '.join(_METHODS)}"
    raise ConfigError(msg)


def fuse_rankings(
    method: FusionMethod,
    rankings: Sequence[Ranking],
    *,
    weights: Sequence[float] | None = None,
    rrf_k: float = DEFAULT_RRF_K,
) -> Ranking:
    """Fuse rankings of distinct keys: ``Σ_i w_i · normalise(run_i)(key)``, best first.

    A key missing from a run gets 0 from it; a run of weight 0 contributes neither scores
    nor keys. Ties come back by key ascending (every :class:`Ranking` does).

    Raises:
        ConfigError: unknown method, bad weights or ``rrf_k``, or a NaN or infinite score
            for a score-based method.
    """
    check_method(method, rrf_k)
    normalise = NORMALISERS[method]
    keys: list[npt.NDArray[np.int64]] = []
    values: list[Floats] = []
    for weight, ranking in zip(_check_weights(weights, len(rankings)), rankings, strict=True):
        if weight <= 0 or len(ranking.rows) == 0:
            continue
        scores = np.asarray(ranking.scores, dtype=np.float64)
        if method != "rrf" and not np.isfinite(scores).all():
            msg = (
                "score fusion needs finite scores; drop those entries or use "
                "method='rrf', which only reads ranks"
            )
            raise ConfigError(msg)
        keys.append(ranking.rows)
        values.append(weight * normalise(scores, rrf_k))
    if not keys:
        return Ranking.empty()
    unique, inverse = np.unique(np.concatenate(keys), return_inverse=True)
    sums = np.bincount(inverse, weights=np.concatenate(values), minlength=len(unique))
    return Ranking.top(sums, len(unique), unique)


def _keyed(runs: Sequence[Run]) -> tuple[dict[int, str], list[Ranking]]:
    """Chunk-id runs as rankings of chunk keys, each run deduplicated, and the id of each
    key."""
    ids: dict[int, str] = {}
    rankings = []
    for run in runs:
        first: dict[str, float] = {}
        for chunk_id, score in run:
            first.setdefault(chunk_id, float(score))
        keys = chunk_keys(first)
        ids.update(zip(keys.tolist(), first, strict=True))
        rankings.append(Ranking(keys, np.fromiter(first.values(), np.float64, count=len(first))))
    return ids, rankings


def fuse(
    method: FusionMethod,
    runs: Sequence[Run],
    *,
    weights: Sequence[float] | None = None,
    rrf_k: float = DEFAULT_RRF_K,
) -> list[tuple[str, float]]:
    """Fuse ranked runs with the named method.

    Args:
        method: ``"rrf"``, ``"relative_score"``, ``"dbsf"`` or ``"zscore"``.
        runs: ranked runs, each ``(chunk_id, score)`` pairs sorted best first.
        weights: one non-negative multiplier per run; ``None`` means 1.0 each; 0 drops a run.
        rrf_k: RRF's constant; only read by ``"rrf"``.

    Returns:
        ``(chunk_id, fused_score)`` pairs, higher is better, in hit order (score
        descending, then chunk key ascending; see :mod:`retrieval.hit`).

    Raises:
        ConfigError: unknown method or bad arguments.
    """
    ids, rankings = _keyed(runs)
    fused = fuse_rankings(method, rankings, weights=weights, rrf_k=rrf_k)
    return [(ids[key], score) for key, score in fused.pairs()]


def reciprocal_rank_fusion(
    runs: Sequence[Run],
    *,
    weights: Sequence[float] | None = None,
    rrf_k: float = DEFAULT_RRF_K,
) -> list[tuple[str, float]]:
    """Fuse runs by reciprocal rank (Cormack, Clarke and Büttcher, SIGIR 2009).

    ``score(d) = Σ_i w_i / (rrf_k + rank_i(d))`` over the runs that contain ``d``, with
    1-based ranks counted after deduplication. Scores of the input runs are ignored.

    Arguments, result and errors are :func:`fuse`'s; ``rrf_k`` must be >= 0 (60 as in the
    paper).

    Example:
        >>> reciprocal_rank_fusion([[("a", 9.0), ("b", 5.0)], [("b", 0.8)]])
        [('b', 0.03252247488101534), ('a', 0.01639344262295082)]
    """
    return fuse("rrf", runs, weights=weights, rrf_k=rrf_k)


def relative_score_fusion(
    runs: Sequence[Run], *, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Fuse runs by min-max normalised scores (Weaviate's ``relativeScoreFusion``).

    Each run is mapped to [0, 1] by ``(s - min) / (max - min)``; a run whose scores are all
    equal (one element included) maps to 1.0. The fused score is ``Σ_i w_i · norm_i(d)``, so
    with ``weights=None`` it lies in ``[0, number of runs]``.

    Arguments, result and errors are :func:`fuse`'s.

    Example:
        >>> relative_score_fusion([[("a", 3.0), ("b", 1.0)], [("b", 0.9), ("c", 0.5)]])
        [('a', 1.0), ('b', 1.0), ('c', 0.0)]
    """
    return fuse("relative_score", runs, weights=weights)


def distribution_based_score_fusion(
    runs: Sequence[Run], *, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Fuse runs by distribution-based score fusion (DBSF, as in Qdrant and Haystack).

    Each run is normalised with the bounds ``mean ± 3·std`` (population std):
    ``(s - (mean - 3·std)) / (6·std)``, clipped to [0, 1], so the run's mean maps to 0.5 and
    an outlier cannot stretch the scale as it does under min-max. A run with zero spread
    (all scores equal, one element included) maps to 0.5. The fused score is
    ``Σ_i w_i · norm_i(d)``.

    Arguments, result and errors are :func:`fuse`'s.
    """
    return fuse("dbsf", runs, weights=weights)


def fuse_hits(
    method: FusionMethod,
    hit_lists: Sequence[Sequence[Hit]],
    *,
    weights: Sequence[float] | None = None,
    rrf_k: float = DEFAULT_RRF_K,
    k: int | None = None,
) -> list[Hit]:
    """Fuse the hit lists of several retrievers into one ranked list of hits.

    Each list is read as a run of ``(hit.chunk_id, hit.score)``. The result keeps every
    stage's score: a fused hit's ``scores`` merges the ``scores`` of its input hits (the first
    list that has a key wins; each hit's own ``score`` counts under its ``stage``) and adds
    ``"fused"``, its ``stage``; ``score`` is the fused score and ``rank`` runs 1, 2, ... Lists
    of weight 0 contribute neither hits nor scores.

    Args:
        method: ``"rrf"``, ``"relative_score"``, ``"dbsf"`` or ``"zscore"``.
        hit_lists: one list of hits per retriever, each best first.
        weights: one non-negative multiplier per list; ``None`` means 1.0 each.
        rrf_k: RRF's constant; only read by ``"rrf"``.
        k: keep at most this many hits (``None`` keeps all).

    Returns:
        Hits in hit order: fused score descending, then chunk key ascending.

    Raises:
        ConfigError: unknown method, bad weights or ``k < 1``.
    """
    if k is not None:
        check_k(k)
    checked = _check_weights(weights, len(hit_lists))
    _, rankings = _keyed([[(hit.chunk.id, hit.score) for hit in hits] for hits in hit_lists])
    fused = fuse_rankings(method, rankings, weights=checked, rrf_k=rrf_k)
    keep = len(fused.rows) if k is None else k
    wanted = set(fused.rows[:keep].tolist())
    runs: list[KeyRun] = []
    for weight, hits in zip(checked, hit_lists, strict=True):
        run: dict[int, tuple[Chunk, dict[str, float]]] = {}
        live = hits if weight > 0 else ()
        for key, hit in zip(chunk_keys(hit.chunk.id for hit in live).tolist(), live, strict=True):
            if key in wanted:
                stages = run.setdefault(key, (hit.chunk, {}))[1]
                for name, value in {hit.stage: hit.score, **hit.scores}.items():
                    stages.setdefault(name, value)
        runs.append(run)
    logger.debug("fused %d lists with %s into %d hits", len(hit_lists), method, keep)
    return fused_hits(fused, keep, runs)
