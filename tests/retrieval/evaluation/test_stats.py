"""Significance tests against their references: scipy's t-test, a brute-force exact
randomisation test, Holm by hand and statsmodels, seeded bootstrap intervals, and ranx."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats
from statsmodels.stats.multitest import multipletests

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.evaluation.stats import (
    bootstrap_ci,
    holm,
    paired_t_test,
    randomization_test,
    wins_ties_losses,
)


def ir_scores(rng: np.random.Generator, n: int, shift: float = 0.0) -> tuple[list, list]:
    """Per-query scores as IR metrics give them: bounded, many ties and exact zeros."""
    base = rng.choice([0.0, 0.0, 0.25, 0.5, 1 / 3, 0.63, 1.0], size=n)
    change = rng.choice([0.0, 0.0, 0.0, 0.1, -0.1, 0.37, -0.25], size=n) + shift
    return list(np.clip(base + change, 0.0, 1.0)), list(base)


def brute_force_p(test: list[float], baseline: list[float]) -> float:
    """Every one of the 2**n sign assignments of the paired differences (the exact test)."""
    deltas = np.asarray(test) - np.asarray(baseline)
    observed = abs(deltas.mean())
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(deltas))))
    means = np.abs((signs * deltas).mean(axis=1))
    return float(np.mean(means >= observed - 1e-12))


@pytest.mark.parametrize("seed", range(8))
def test_t_test_equals_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    test, baseline = ir_scores(rng, int(rng.integers(3, 300)), shift=0.02 * seed)
    expected = scipy_stats.ttest_rel(test, baseline).pvalue
    assert paired_t_test(test, baseline) == pytest.approx(expected, rel=1e-12, abs=0)


def test_t_test_of_identical_systems_is_one() -> None:
    assert paired_t_test([0.2, 0.5, 1.0], [0.2, 0.5, 1.0]) == 1.0


@pytest.mark.parametrize("n", [2, 3, 5, 8, 11, 13])
@pytest.mark.parametrize("seed", range(4))
def test_randomization_equals_the_brute_force_exact_test(n: int, seed: int) -> None:
    rng = np.random.default_rng(100 * n + seed)
    test, baseline = ir_scores(rng, n, shift=0.05)
    if test == baseline:
        test[0] = min(1.0, test[0] + 0.5)
    assert randomization_test(test, baseline) == pytest.approx(brute_force_p(test, baseline))


def test_randomization_also_equals_scipy_permutation_test_exactly() -> None:
    rng = np.random.default_rng(7)
    test, baseline = ir_scores(rng, 10, shift=0.1)
    reference = scipy_stats.permutation_test(
        (test, baseline),
        lambda x, y: np.mean(x - y),
        permutation_type="samples",
        n_resamples=np.inf,
    ).pvalue
    assert randomization_test(test, baseline) == pytest.approx(reference)


def test_sampled_randomization_is_within_monte_carlo_error_of_the_exact_p() -> None:
    """16 queries: 65,536 assignments, more than the 10,000 drawn, so the test samples."""
    rng = np.random.default_rng(3)
    test, baseline = ir_scores(rng, 16, shift=0.08)
    exact = brute_force_p(test, baseline)
    sampled = randomization_test(test, baseline, permutations=10_000, seed=1)
    error = math.sqrt(exact * (1 - exact) / 10_000)
    assert abs(sampled - exact) <= 4 * error + 1e-4
    assert 0.0 < exact < 1.0  # a case where the p-value is informative


def test_randomization_is_reproducible_with_a_seed() -> None:
    rng = np.random.default_rng(11)
    test, baseline = ir_scores(rng, 60)
    first = randomization_test(test, baseline, seed=5)
    assert randomization_test(test, baseline, seed=5) == first
    assert 0.05 < first < 0.95  # a p-value that sampling error shows in
    assert randomization_test([1.0] * 30, [0.0] * 30) == pytest.approx(2 / 10_001)  # never 0
    draws = {randomization_test(test, baseline, permutations=2_000, seed=s) for s in range(4)}
    assert len(draws) > 1  # the seed is really used


def test_holm_equals_a_hand_computation() -> None:
    # Sorted: 0.005 x4 = 0.02; 0.01 x3 = 0.03; 0.03 x2 = 0.06; 0.04 x1 = 0.04 -> 0.06
    # (adjusted values never decrease along the sorted order).
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm([0.02]) == [0.02]
    assert holm([]) == []


@pytest.mark.parametrize("seed", range(5))
def test_holm_equals_statsmodels(seed: int) -> None:
    p_values = list(np.random.default_rng(seed).uniform(0, 0.2, size=7))
    expected = multipletests(p_values, method="holm")[1]
    assert holm(p_values) == pytest.approx(list(expected))


def test_bootstrap_ci_is_reproducible_with_a_seed() -> None:
    rng = np.random.default_rng(2)
    test, baseline = ir_scores(rng, 300, shift=0.03)
    deltas = list(np.asarray(test) - np.asarray(baseline))
    low, high = bootstrap_ci(deltas, seed=9)
    assert (low, high) == bootstrap_ci(deltas, seed=9)
    assert bootstrap_ci(deltas, seed=10) != (low, high)
    assert low < float(np.mean(deltas)) < high
    # About a normal interval's width: the mean's standard error times 1.96 either side.
    half = 1.96 * np.std(deltas, ddof=1) / math.sqrt(len(deltas))
    assert (high - low) / 2 == pytest.approx(half, rel=0.1)


def test_bootstrap_ci_matches_scipy_percentile_bootstrap() -> None:
    data = list(np.random.default_rng(4).normal(0.1, 0.3, size=50))
    reference = scipy_stats.bootstrap(
        (np.asarray(data),),
        np.mean,
        n_resamples=10_000,
        method="percentile",
        random_state=np.random.default_rng(42),
    ).confidence_interval
    assert bootstrap_ci(data, seed=42) == pytest.approx((reference.low, reference.high))


def test_bootstrap_ci_of_constant_values_is_a_point() -> None:
    assert bootstrap_ci([0.0, 0.0, 0.0]) == (0.0, 0.0)


def test_wins_ties_losses() -> None:
    counts = wins_ties_losses([1.0, 0.5, 0.2, 0.3], [0.5, 0.5, 0.4, 0.3 + 1e-12])
    assert (counts.wins, counts.ties, counts.losses) == (1, 2, 1)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: paired_t_test([1.0, 2.0], [1.0]), "same queries"),
        (lambda: paired_t_test([1.0], [2.0]), "at least 2 queries"),
        (lambda: randomization_test([1.0, float("nan")], [1.0, 2.0]), "finite"),
        (lambda: randomization_test([1.0, 0.0], [0.0, 1.0], permutations=0), "permutations"),
        (lambda: bootstrap_ci([0.5]), "at least 2"),
        (lambda: bootstrap_ci([0.5, 0.2], confidence=1.5), "confidence"),
        (lambda: holm([0.2, 1.5]), r"\[0, 1\]"),
        (lambda: holm([float("nan")]), r"\[0, 1\]"),
    ],
)
def test_bad_input_raises(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match=message):
        call()
