"""Fusion of ranked runs: reciprocal rank, relative score (min-max) and distribution-based.

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
* **Output** is a list of ``(chunk_id, fused_score)`` sorted by ``(-score, chunk_id)``, so
  ties come back in a deterministic order. Empty input or only empty runs give ``[]``.
* **Normalisation of degenerate runs.** Min-max maps a run whose scores are all equal (a
  one-element run included) to 1.0: each of them is that retriever's best. DBSF maps a run's
  mean to 0.5, and a run with zero spread has every score at its mean, so it maps to 0.5
  (Haystack returns 0.0 here, which silently erases the run; 1.0 would rank a retriever that
  found one weak match above the best hits of every retriever with a real distribution).

:func:`fuse_hits` applies the same functions to lists of :class:`~retrieval.hit.Hit`, merging
every stage's ``scores`` and adding ``"fused"``. :func:`fuse_arrays` computes the same fused
scores (bit for bit) over integer-keyed numpy runs, for a hybrid query's thousands of rows.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import Any, Literal, NoReturn, TypeAlias, get_args

import numpy as np
import numpy.typing as npt

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.hit import Hit

__all__ = [
    "DEFAULT_RRF_K",
    "FusionMethod",
    "Run",
    "distribution_based_score_fusion",
    "fuse",
    "fuse_arrays",
    "fuse_hits",
    "reciprocal_rank_fusion",
    "relative_score_fusion",
]

logger = logging.getLogger(__name__)

Run: TypeAlias = Sequence[tuple[str, float]]
"""``(chunk_id, score)`` pairs sorted best first (higher score is better)."""

FusionMethod: TypeAlias = Literal["rrf", "relative_score", "dbsf"]
"""``rrf`` (reciprocal rank), ``relative_score`` (min-max) or ``dbsf`` (mean ± 3 std)."""

DEFAULT_RRF_K = 60
"""RRF's smoothing constant, as fixed by Cormack et al. (2009) and used by pyserini; a larger
value flattens the gap between the first ranks and the rest."""

_METHODS: tuple[str, ...] = get_args(FusionMethod)


def _dedup(run: Run) -> list[tuple[str, float]]:
    """Keep the first (best) occurrence of each chunk id, in order."""
    seen: set[str] = set()
    unique: list[tuple[str, float]] = []
    for chunk_id, score in run:
        if chunk_id not in seen:
            seen.add(chunk_id)
            unique.append((chunk_id, float(score)))
    return unique


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


def _active_runs(
    runs: Sequence[Run], weights: Sequence[float] | None
) -> list[tuple[float, list[tuple[str, float]]]]:
    """Validated ``(weight, deduplicated run)`` pairs, without zero-weight or empty runs."""
    checked = _check_weights(weights, len(runs))
    active = []
    for weight, run in zip(checked, runs, strict=True):
        unique = _dedup(run)
        if weight > 0 and unique:
            active.append((weight, unique))
    return active


def _check_scores(run: list[tuple[str, float]]) -> None:
    bad = [(cid, s) for cid, s in run if not math.isfinite(s)]
    if bad:
        msg = (
            f"score fusion needs finite scores, got {bad[:3]!r}; drop those entries or "
            "use method='rrf', which only reads ranks"
        )
        raise ConfigError(msg)


def _check_rrf_k(rrf_k: float) -> None:
    if isinstance(rrf_k, bool) or not math.isfinite(rrf_k) or rrf_k < 0:
        msg = f"rrf_k must be a finite number >= 0, got {rrf_k!r}; the usual value is 60"
        raise ConfigError(msg)


def _unknown_method(method: object) -> NoReturn:
    msg = f"unknown fusion method {method!r}; choose one of {', '.join(_METHODS)}"
    raise ConfigError(msg)


def _sorted(fused: dict[str, float]) -> list[tuple[str, float]]:
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


def reciprocal_rank_fusion(
    runs: Sequence[Run],
    *,
    weights: Sequence[float] | None = None,
    rrf_k: float = DEFAULT_RRF_K,
) -> list[tuple[str, float]]:
    """Fuse runs by reciprocal rank (Cormack, Clarke and Büttcher, SIGIR 2009).

    ``score(d) = Σ_i w_i / (rrf_k + rank_i(d))`` over the runs that contain ``d``, with
    1-based ranks counted after deduplication. Scores of the input runs are ignored.

    Args:
        runs: ranked runs, each ``(chunk_id, score)`` pairs sorted best first.
        weights: one non-negative multiplier per run; ``None`` means 1.0 each; 0 drops a run.
        rrf_k: the smoothing constant, >= 0 (60 as in the paper).

    Returns:
        ``(chunk_id, fused_score)`` pairs, higher is better, sorted by ``(-score, chunk_id)``.

    Raises:
        ConfigError: bad weights or a negative ``rrf_k``.

    Example:
        >>> reciprocal_rank_fusion([[("a", 9.0), ("b", 5.0)], [("b", 0.8)]])
        [('b', 0.03252247488101534), ('a', 0.01639344262295082)]
    """
    _check_rrf_k(rrf_k)
    fused: dict[str, float] = {}
    for weight, run in _active_runs(runs, weights):
        for rank, (chunk_id, _score) in enumerate(run, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight / (rrf_k + rank)
    return _sorted(fused)


def _minmax(run: list[tuple[str, float]]) -> dict[str, float]:
    scores = [s for _, s in run]
    low, high = min(scores), max(scores)
    if high == low:
        return {cid: 1.0 for cid, _ in run}
    return {cid: (s - low) / (high - low) for cid, s in run}


def _distribution(run: list[tuple[str, float]]) -> dict[str, float]:
    scores = [s for _, s in run]
    if max(scores) == min(scores):
        return {cid: 0.5 for cid, _ in run}
    mean = math.fsum(scores) / len(scores)
    # (s - mean) * (s - mean), not ** 2: pow and numpy's square may round differently, and
    # fuse_arrays must give the same floats.
    std = math.sqrt(math.fsum((s - mean) * (s - mean) for s in scores) / len(scores))
    low = mean - 3 * std
    return {cid: min(1.0, max(0.0, (s - low) / (6 * std))) for cid, s in run}


def _score_fusion(
    runs: Sequence[Run],
    weights: Sequence[float] | None,
    normalise: Callable[[list[tuple[str, float]]], dict[str, float]],
) -> list[tuple[str, float]]:
    fused: dict[str, float] = {}
    for weight, run in _active_runs(runs, weights):
        _check_scores(run)
        for chunk_id, value in normalise(run).items():
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight * value
    return _sorted(fused)


def relative_score_fusion(
    runs: Sequence[Run], *, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Fuse runs by min-max normalised scores (Weaviate's ``relativeScoreFusion``).

    Each run is mapped to [0, 1] by ``(s - min) / (max - min)``; a run whose scores are all
    equal (one element included) maps to 1.0. The fused score is ``Σ_i w_i · norm_i(d)``, so
    with ``weights=None`` it lies in ``[0, number of runs]``.

    Args:
        runs: ranked runs, each ``(chunk_id, score)`` pairs sorted best first.
        weights: one non-negative multiplier per run; ``None`` means 1.0 each; 0 drops a run.

    Returns:
        ``(chunk_id, fused_score)`` pairs, higher is better, sorted by ``(-score, chunk_id)``.

    Raises:
        ConfigError: bad weights, or a NaN/infinite score.

    Example:
        >>> relative_score_fusion([[("a", 3.0), ("b", 1.0)], [("b", 0.9), ("c", 0.5)]])
        [('a', 1.0), ('b', 1.0), ('c', 0.0)]
    """
    return _score_fusion(runs, weights, _minmax)


def distribution_based_score_fusion(
    runs: Sequence[Run], *, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Fuse runs by distribution-based score fusion (DBSF, as in Qdrant and Haystack).

    Each run is normalised with the bounds ``mean ± 3·std`` (population std):
    ``(s - (mean - 3·std)) / (6·std)``, clipped to [0, 1], so the run's mean maps to 0.5 and
    an outlier cannot stretch the scale as it does under min-max. A run with zero spread
    (all scores equal, one element included) maps to 0.5. The fused score is
    ``Σ_i w_i · norm_i(d)``.

    Args:
        runs: ranked runs, each ``(chunk_id, score)`` pairs sorted best first.
        weights: one non-negative multiplier per run; ``None`` means 1.0 each; 0 drops a run.

    Returns:
        ``(chunk_id, fused_score)`` pairs, higher is better, sorted by ``(-score, chunk_id)``.

    Raises:
        ConfigError: bad weights, or a NaN/infinite score.
    """
    return _score_fusion(runs, weights, _distribution)


def fuse(
    method: FusionMethod,
    runs: Sequence[Run],
    *,
    weights: Sequence[float] | None = None,
    rrf_k: float = DEFAULT_RRF_K,
) -> list[tuple[str, float]]:
    """Fuse ranked runs with the named method.

    Args:
        method: ``"rrf"``, ``"relative_score"`` or ``"dbsf"``.
        runs: ranked runs, each ``(chunk_id, score)`` pairs sorted best first.
        weights: one non-negative multiplier per run; ``None`` means 1.0 each; 0 drops a run.
        rrf_k: RRF's constant; only read by ``"rrf"``.

    Returns:
        ``(chunk_id, fused_score)`` pairs, higher is better, sorted by ``(-score, chunk_id)``.

    Raises:
        ConfigError: unknown method or bad arguments.
    """
    if method == "rrf":
        return reciprocal_rank_fusion(runs, weights=weights, rrf_k=rrf_k)
    if method == "relative_score":
        return relative_score_fusion(runs, weights=weights)
    if method == "dbsf":
        return distribution_based_score_fusion(runs, weights=weights)
    _unknown_method(method)


def _stage_scores(hit: Hit, fallback: str) -> dict[str, float]:
    """``hit.scores``, plus ``hit.score`` under ``fallback`` if no stage holds it."""
    if hit.score in hit.scores.values():
        return dict(hit.scores)
    return {**hit.scores, fallback: hit.score}


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
    list that has a key wins; a hit whose ``score`` is under no key adds it as ``"run_<i>"``,
    ``i`` its list's position) and adds ``"fused"``; ``score`` is the fused score and ``rank``
    runs 1, 2, ... Lists of weight 0 contribute neither hits nor scores.

    Args:
        method: ``"rrf"``, ``"relative_score"`` or ``"dbsf"``.
        hit_lists: one list of hits per retriever, each best first.
        weights: one non-negative multiplier per list; ``None`` means 1.0 each.
        rrf_k: RRF's constant; only read by ``"rrf"``.
        k: keep at most this many hits (``None`` keeps all).

    Returns:
        Hits sorted by ``(-fused score, chunk_id)``.

    Raises:
        ConfigError: unknown method, bad weights or ``k < 1``.
    """
    if k is not None and k < 1:
        msg = f"k must be >= 1 or None, got {k!r}"
        raise ConfigError(msg)
    runs = [[(hit.chunk.id, hit.score) for hit in hits] for hits in hit_lists]
    fused = fuse(method, runs, weights=weights, rrf_k=rrf_k)
    if k is not None:
        fused = fused[:k]
    wanted = {chunk_id for chunk_id, _ in fused}
    first: dict[str, Hit] = {}
    merged: dict[str, dict[str, float]] = {}
    checked = _check_weights(weights, len(runs))
    for index, (weight, hits) in enumerate(zip(checked, hit_lists, strict=True)):
        if weight == 0:
            continue
        for hit in hits:
            if hit.chunk.id not in wanted:
                continue
            first.setdefault(hit.chunk_id, hit)
            stage_scores = merged.setdefault(hit.chunk_id, {})
            for name, value in _stage_scores(hit, f"run_{index}").items():
                stage_scores.setdefault(name, value)
    result = [
        Hit(
            chunk=first[chunk_id].chunk,
            score=score,
            rank=rank,
            scores={**merged[chunk_id], "fused": score},
        )
        for rank, (chunk_id, score) in enumerate(fused, start=1)
    ]
    logger.debug("fused %d lists with %s into %d hits", len(hit_lists), method, len(result))
    return result


def fuse_arrays(
    method: FusionMethod,
    runs: Sequence[tuple[npt.NDArray[np.int64], npt.NDArray[np.floating[Any]]]],
    *,
    weights: Sequence[float] | None = None,
    rrf_k: float = DEFAULT_RRF_K,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """:func:`fuse` over runs given as ``(keys, scores)`` arrays of *distinct* integer keys.

    The fused scores equal :func:`fuse`'s exactly (same operations in the same order, summed
    run by run); only the output differs: every fused key in ascending order with its score,
    unsorted by score, so the caller ranks just the top it needs.

    Raises:
        ConfigError: as :func:`fuse`: unknown method, bad weights or ``rrf_k``, or a NaN or
            infinite score for a score-based method.
    """
    if method not in _METHODS:
        _unknown_method(method)
    if method == "rrf":
        _check_rrf_k(rrf_k)
    checked = _check_weights(weights, len(runs))
    keys: list[npt.NDArray[np.int64]] = []
    values: list[npt.NDArray[np.float64]] = []
    for weight, (run_keys, run_scores) in zip(checked, runs, strict=True):
        if weight <= 0 or len(run_keys) == 0:
            continue
        scores = np.asarray(run_scores, dtype=np.float64)
        if method == "rrf":
            values.append(weight / (rrf_k + np.arange(1, len(scores) + 1, dtype=np.float64)))
        else:
            if not np.isfinite(scores).all():
                msg = (
                    "score fusion needs finite scores; drop those entries or use "
                    "method='rrf', which only reads ranks"
                )
                raise ConfigError(msg)
            normalise = _minmax_array if method == "relative_score" else _distribution_array
            values.append(weight * normalise(scores))
        keys.append(np.asarray(run_keys, dtype=np.int64))
    if not keys:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    unique, inverse = np.unique(np.concatenate(keys), return_inverse=True)
    # bincount adds in input order, run after run: the same sums as fuse()'s dict.
    sums = np.bincount(inverse, weights=np.concatenate(values), minlength=len(unique))
    fused: npt.NDArray[np.float64] = np.asarray(sums, dtype=np.float64)
    return unique, fused


def _minmax_array(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    low, high = float(scores.min()), float(scores.max())
    if high == low:
        return np.ones_like(scores)
    return (scores - low) / (high - low)


def _distribution_array(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    if float(scores.max()) == float(scores.min()):
        return np.full_like(scores, 0.5)
    mean = math.fsum(scores.tolist()) / len(scores)
    deviations = scores - mean
    std = math.sqrt(math.fsum((deviations * deviations).tolist()) / len(scores))
    low = mean - 3 * std
    return np.clip((scores - low) / (6 * std), 0.0, 1.0)
