"""Paired significance tests, bootstrap confidence intervals and Holm's correction.

Every function takes two systems' per-query scores on the *same* queries, in the same order
(``test``, ``baseline``), and works on the paired differences ``test - baseline``. These are
the tests IR papers report and ranx's ``compare`` offers; the choices where they differ:

* **Paired t-test**: :func:`scipy.stats.ttest_rel`, two-sided (ranx calls the same function).
  When every difference is 0 the t statistic is undefined (0/0) and scipy returns NaN; the
  systems are then indistinguishable and the p-value is 1.
* **Randomisation test** (Fisher's, as in Smucker et al., CIKM 2007): under the null the sign
  of each query's difference is a coin flip; the p-value is the share of sign assignments whose
  mean difference is at least as far from 0 as the observed one. This is
  :func:`scipy.stats.permutation_test` with ``permutation_type="samples"`` (swapping a pair's
  two scores flips the sign of its difference), two-sided. With ``2**n <= permutations`` it
  enumerates every assignment (exact); otherwise it draws ``permutations`` of them from a
  seeded generator and counts the observed assignment too, ``(hits + 1) / (draws + 1)``,
  so a p-value is never 0. ranx divides by the draws alone and seeds numba's generator, so its
  p-values agree with these within Monte-Carlo error, not digit for digit.
* **Bootstrap interval** of the mean difference: the queries are resampled with replacement
  (scipy's :func:`~scipy.stats.bootstrap`, percentile method). Percentile rather than BCa,
  because IR differences are mostly exact zeros (both systems rank the same relevant document
  first), where BCa's acceleration estimate degenerates.
* **Holm's step-down correction** over a family of p-values (Holm 1979): scipy has none, and
  statsmodels is too large a dependency for ten lines; the tests compare with a hand-worked
  example and with statsmodels.

Seeds make every randomised figure reproducible: the same scores and seed give the same
p-value and interval, whatever else was computed before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from ragtools.parsers.errors import ConfigError

__all__ = [
    "DEFAULT_PERMUTATIONS",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "WinsTiesLosses",
    "bootstrap_ci",
    "holm",
    "mean",
    "paired_t_test",
    "randomization_test",
    "wins_ties_losses",
]

DEFAULT_PERMUTATIONS = 10_000
DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 42


@dataclass(frozen=True)
class WinsTiesLosses:
    """How many queries the test system scores higher on, equal, and lower than the baseline."""

    wins: int
    ties: int
    losses: int


def _paired(test: Sequence[float], baseline: Sequence[float]) -> np.ndarray:
    """The differences ``test - baseline`` as float64, after checking the pairs."""
    a = np.asarray(test, dtype=np.float64)
    b = np.asarray(baseline, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        msg = (
            f"paired scores must be two flat sequences of one length, got {a.shape} and "
            f"{b.shape}; score both systems on the same queries"
        )
        raise ConfigError(msg)
    if a.size < 2:
        msg = f"a paired test needs at least 2 queries, got {a.size}"
        raise ConfigError(msg)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        msg = "per-query scores must be finite numbers (found NaN or infinity)"
        raise ConfigError(msg)
    return a - b


def paired_t_test(test: Sequence[float], baseline: Sequence[float]) -> float:
    """Two-sided p-value of the paired Student's t-test (scipy's ``ttest_rel``).

    Raises:
        ConfigError: the sequences differ in length, have fewer than 2 queries, or hold NaN.
    """
    deltas = _paired(test, baseline)
    if not deltas.any():
        return 1.0
    result = scipy_stats.ttest_rel(np.asarray(test, np.float64), np.asarray(baseline, np.float64))
    return float(result.pvalue)


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
    return np.mean(x - y, axis=axis)  # type: ignore[no-any-return]


def randomization_test(
    test: Sequence[float],
    baseline: Sequence[float],
    *,
    permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = DEFAULT_SEED,
) -> float:
    """Two-sided p-value of Fisher's paired randomisation test on the mean difference.

    Args:
        test: the test system's per-query scores.
        baseline: the baseline's scores on the same queries, in the same order.
        permutations: sign assignments drawn; when ``2**n`` is no more, all are enumerated.
        seed: seeds the generator of the drawn assignments.

    Raises:
        ConfigError: bad pairs (see :func:`paired_t_test`) or ``permutations`` < 1.
    """
    deltas = _paired(test, baseline)
    if isinstance(permutations, bool) or not isinstance(permutations, int) or permutations < 1:
        msg = f"permutations must be an integer >= 1, got {permutations!r}"
        raise ConfigError(msg)
    if not deltas.any():
        return 1.0
    result = scipy_stats.permutation_test(
        (np.asarray(test, np.float64), np.asarray(baseline, np.float64)),
        _mean_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=permutations,
        alternative="two-sided",
        random_state=np.random.default_rng(seed),
    )
    return float(result.pvalue)


def bootstrap_ci(
    values: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (queries resampled).

    Pass per-query differences for the interval of a mean difference, or one system's
    per-query scores for the interval of its mean.

    Args:
        values: per-query numbers.
        confidence: the interval's coverage, in (0, 1).
        resamples: bootstrap resamples drawn.
        seed: seeds the resampling.

    Returns:
        ``(low, high)``; both equal the value when all values are equal.

    Raises:
        ConfigError: fewer than 2 values, a non-finite value, or a bad confidence/resamples.
    """
    data = np.asarray(values, dtype=np.float64)
    if data.ndim != 1 or data.size < 2 or not np.isfinite(data).all():
        msg = f"a bootstrap interval needs at least 2 finite per-query values, got {data.size}"
        raise ConfigError(msg)
    if not 0.0 < confidence < 1.0:
        msg = f"confidence must be in (0, 1), got {confidence!r}"
        raise ConfigError(msg)
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        msg = f"resamples must be an integer >= 1, got {resamples!r}"
        raise ConfigError(msg)
    if np.all(data == data[0]):
        return float(data[0]), float(data[0])
    result = scipy_stats.bootstrap(
        (data,),
        np.mean,
        confidence_level=confidence,
        n_resamples=resamples,
        method="percentile",
        vectorized=True,
        random_state=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given.

    The i-th smallest p-value (from 0) is multiplied by ``m - i``; adjusted values are then
    made non-decreasing in that order and capped at 1. Rejecting where the adjusted value is
    <= alpha controls the family-wise error rate at alpha.

    Raises:
        ConfigError: a p-value outside [0, 1] or NaN.
    """
    values = [float(p) for p in p_values]
    if any(not (0.0 <= p <= 1.0) for p in values):  # also rejects NaN
        msg = f"p-values must lie in [0, 1], got {values!r}"
        raise ConfigError(msg)
    order = sorted(range(len(values)), key=lambda i: values[i])
    adjusted = [0.0] * len(values)
    running = 0.0
    for step, index in enumerate(order):
        running = max(running, min(1.0, (len(values) - step) * values[index]))
        adjusted[index] = running
    return adjusted


def wins_ties_losses(
    test: Sequence[float], baseline: Sequence[float], *, tolerance: float = 1e-9
) -> WinsTiesLosses:
    """Queries where ``test`` beats, ties (within ``tolerance``) or loses to ``baseline``."""
    deltas = _paired(test, baseline)
    wins = int(np.count_nonzero(deltas > tolerance))
    losses = int(np.count_nonzero(deltas < -tolerance))
    return WinsTiesLosses(wins=wins, ties=int(deltas.size) - wins - losses, losses=losses)


def mean(values: Sequence[float]) -> float:
    """The exactly rounded mean (``math.fsum``), as ``evaluate_run`` averages."""
    return math.fsum(values) / len(values)
