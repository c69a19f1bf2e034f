"""rag compare against ranx's ``compare`` (a dev dependency): the same per-query scores, the
same t-test p-values and win/tie/loss counts, and randomisation p-values within Monte-Carlo
error (ranx draws with numba's generator and divides by the draws alone)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragtools.retrieval.evaluation import compare_systems, per_query

ranx = pytest.importorskip("ranx")  # in the dev extra, so this runs wherever tests run

METRICS = {"nDCG@10": "ndcg@10", "R@100": "recall@100", "RR@10": "mrr@10"}


def generated(seed: int, queries: int = 60) -> tuple[dict, dict[str, dict]]:
    """Binary qrels and three runs of distinct scores (no ties for the two tools to order
    differently), the second and third better than the first by construction."""
    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(150)]
    qrels = {}
    runs: dict[str, dict] = {"first": {}, "second": {}, "third": {}}
    for q in range(queries):
        qid = f"q{q}"
        relevant = list(rng.choice(docs, size=int(rng.integers(1, 4)), replace=False))
        qrels[qid] = {doc: 1 for doc in relevant}
        for boost, name in ((0.0, "first"), (0.3, "second"), (0.35, "third")):
            scores = rng.uniform(0, 1, size=len(docs))
            for doc in relevant:
                scores[docs.index(doc)] += boost + rng.uniform(0, 0.4)
            order = np.argsort(-scores)[:100]
            runs[name][qid] = {docs[i]: float(scores[i]) for i in order}
    return qrels, runs


def ranx_report(qrels: dict, runs: dict[str, dict], stat_test: str) -> dict:
    ranx_runs = [ranx.Run(run, name=name) for name, run in runs.items()]
    report = ranx.compare(
        ranx.Qrels(qrels),
        ranx_runs,
        metrics=list(METRICS.values()),
        stat_test=stat_test,
        n_permutations=10_000,
        rounding_digits=12,
    )
    return report.to_dict()  # type: ignore[no-any-return]


def ours(qrels: dict, runs: dict[str, dict]):  # type: ignore[no-untyped-def]
    systems = {name: per_query(qrels, run, [10, 100]) for name, run in runs.items()}
    return compare_systems(systems, baseline="first", metrics=list(METRICS))


def test_t_test_p_values_means_and_wins_equal_ranx() -> None:
    qrels, runs = generated(0)
    comparison = ours(qrels, runs)
    theirs = ranx_report(qrels, runs, "student")
    for row in comparison.rows:
        name = METRICS[row.metric]
        assert row.mean == pytest.approx(theirs[row.system]["scores"][name], abs=1e-9)
        p_value = theirs[row.system]["comparisons"]["first"][name]
        assert row.p_t == pytest.approx(p_value, rel=1e-9)
        assert row.p_t < 0.05  # better by construction
        counts = theirs[row.system]["win_tie_loss"]["first"][name]
        assert (row.wins, row.ties, row.losses) == (counts["W"], counts["T"], counts["L"])


def test_randomization_p_values_agree_with_ranx_within_sampling_error() -> None:
    qrels, runs = generated(1, queries=40)
    runs = {"first": runs["second"], "second": runs["third"]}  # close: informative p-values
    comparison = ours(qrels, runs)
    theirs = ranx_report(qrels, runs, "fisher")
    informative = 0
    for row in comparison.rows:
        p_ranx = theirs[row.system]["comparisons"]["first"][METRICS[row.metric]]
        assert row.p_randomization is not None
        # Both p-values are estimates from 10,000 random permutations each, drawn apart:
        # their difference has twice the variance of one.
        error = math.sqrt(2 * max(p_ranx * (1 - p_ranx), 1e-4) / 10_000)
        assert abs(row.p_randomization - p_ranx) <= 5 * error + 2 / 10_001, row
        informative += 0.01 < p_ranx < 0.99
    assert informative >= 1
