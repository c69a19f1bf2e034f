"""rag compare's engine: rows equal the statistics computed directly, Holm runs over the
systems, inputs come from reports, per-query files and TREC runs, and bad inputs are named."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from ragtools.parsers.errors import ConfigError, ParseError
from ragtools.retrieval.evaluation import (
    build_report,
    compare_systems,
    load_systems,
    per_query,
    read_per_query,
    render_comparison,
    write_comparison,
    write_report,
    write_trec_run,
)
from ragtools.retrieval.evaluation.stats import bootstrap_ci, holm, randomization_test

LATENCY = {"latency_ms": {"p50": 1.0, "p95": 2.0}}


def systems_fixture(n: int = 40) -> dict[str, dict[str, dict[str, float]]]:
    rng = np.random.default_rng(0)
    base = rng.uniform(0, 1, size=n)
    better = np.clip(base + rng.normal(0.08, 0.15, size=n), 0, 1)
    same = np.clip(base + rng.normal(0.0, 0.15, size=n), 0, 1)
    out = {}
    for name, values in (("base", base), ("better", better), ("same", same)):
        out[name] = {
            f"q{i}": {"nDCG@10": float(v), "R@100": float(min(1.0, v + 0.2))}
            for i, v in enumerate(values)
        }
    return out


def test_rows_equal_the_statistics_computed_directly() -> None:
    systems = systems_fixture()
    comparison = compare_systems(systems, baseline="base", permutations=2_000, resamples=1_000)
    assert comparison.metrics == ("nDCG@10", "R@100")  # AP@100 and RR@10 are absent
    assert comparison.num_queries == 40
    queries = list(systems["base"])
    for metric in comparison.metrics:
        base = [systems["base"][q][metric] for q in queries]
        rows = [r for r in comparison.rows if r.metric == metric]
        assert [r.system for r in rows] == ["better", "same"]
        p_t = [
            scipy_stats.ttest_rel([systems[r.system][q][metric] for q in queries], base).pvalue
            for r in rows
        ]
        p_r = [
            randomization_test(
                [systems[r.system][q][metric] for q in queries], base, permutations=2_000
            )
            for r in rows
        ]
        for row, t, rand, t_holm, r_holm in zip(rows, p_t, p_r, holm(p_t), holm(p_r), strict=True):
            test = [systems[row.system][q][metric] for q in queries]
            deltas = [a - b for a, b in zip(test, base, strict=True)]
            assert row.mean == pytest.approx(np.mean(test))
            assert row.delta == pytest.approx(np.mean(test) - np.mean(base))
            assert row.p_t == pytest.approx(t)
            assert row.p_randomization == rand
            assert row.p_t_holm == pytest.approx(t_holm)
            assert row.p_randomization_holm == pytest.approx(r_holm)
            assert (row.ci_low, row.ci_high) == bootstrap_ci(deltas, resamples=1_000)
            assert row.wins + row.ties + row.losses == 40
            assert row.wins == sum(d > 1e-9 for d in deltas)
    better = next(r for r in comparison.rows if r.system == "better" and r.metric == "nDCG@10")
    assert better.p_t < 0.01 and better.ci_low > 0


def test_one_test_only_and_markdown(tmp_path: Path) -> None:
    comparison = compare_systems(
        systems_fixture(), baseline="base", tests=["t"], metrics=["ndcg@10"], resamples=500
    )
    assert comparison.metrics == ("nDCG@10",)
    assert all(r.p_randomization is None for r in comparison.rows)
    md = render_comparison(comparison)
    assert (
        "| metric | system | mean | Δ | 95% CI of Δ | p (t) | p (t, Holm) | wins/ties/losses |"
        in md
    )
    assert "| nDCG@10 | base (baseline) |" in md
    assert "p (rand.)" not in md
    written = write_comparison(comparison, tmp_path)
    assert written["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(written["json"].read_text())
    assert data["baseline"] == "base" and data["tests"] == ["t"]
    assert data["rows"][0]["p_t"] == comparison.rows[0].p_t
    assert written["md"].read_text() == md


def test_first_system_is_the_default_baseline() -> None:
    comparison = compare_systems(systems_fixture(), tests=["t"], resamples=200)
    assert comparison.baseline == "base"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"baseline": "nope"}, "baseline 'nope' is not among"),
        ({"tests": ["z"]}, "unknown test 'z'"),
        ({"metrics": ["AP@100"]}, "AP@100 is missing from base, better, same"),
        ({"metrics": ["foo@3"]}, "unknown metric"),
    ],
)
def test_bad_options_raise(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        compare_systems(systems_fixture(), **kwargs)


def test_systems_on_different_queries_raise() -> None:
    systems = systems_fixture()
    del systems["same"]["q3"]
    with pytest.raises(ConfigError, match=r"'same' and the baseline 'base' .* \(1 missing"):
        compare_systems(systems)
    with pytest.raises(ConfigError, match="at least two systems"):
        compare_systems({"base": systems["base"]})


QRELS = {"q1": {"a": 1, "b": 2}, "q2": {"c": 1}, "q3": {"x": 1}}
RUN_A = {"q1": {"a": 3.0, "z": 2.0, "b": 1.0}, "q2": {"c": 1.0}, "q3": {"y": 1.0}}
RUN_B = {"q1": {"b": 3.0, "a": 2.0}, "q2": {"d": 2.0, "c": 1.0}}


def test_systems_load_from_reports_runs_and_per_query_files(tmp_path: Path) -> None:
    rows = {"a": per_query(QRELS, RUN_A, [1, 3]), "b": per_query(QRELS, RUN_B, [1, 3])}
    results = {
        name: {**{k: 0.5 for k in next(iter(r.values()))}, **LATENCY} for name, r in rows.items()
    }
    report = build_report("tiny", "test", 3, results, depth=3)
    write_report(report, tmp_path / "one", runs={"a": RUN_A, "b": RUN_B}, per_query=rows)
    assert read_per_query(tmp_path / "one" / "runs" / "a.per_query.jsonl") == rows["a"]

    from_report = load_systems([tmp_path / "one"])
    assert from_report == rows
    from_runs = load_systems(
        [tmp_path / "one" / "runs" / "a.trec", tmp_path / "one" / "runs" / "b.trec"], qrels=QRELS
    )
    assert from_runs["a"] == rows["a"]  # depth 3: cut-offs 1 and 3
    assert from_runs["b"] == per_query(QRELS, RUN_B, [1])  # depth 2: no metric @3
    write_trec_run(RUN_A, tmp_path / "deep.trec")
    assert set(load_systems([tmp_path / "deep.trec"], qrels=QRELS)["deep"]["q1"]) == {
        f"{m}@{k}" for m in ("nDCG", "R", "AP", "RR", "P") for k in (1, 3)
    }
    alone = load_systems([tmp_path / "one" / "runs" / "b.per_query.jsonl"])
    assert alone == {"b": rows["b"]}
    with pytest.raises(ConfigError, match="two inputs give the system name 'one/b'"):
        load_systems([tmp_path / "one" / "runs" / "b.per_query.jsonl", tmp_path / "one"])


def test_colliding_names_are_qualified_by_their_folder(tmp_path: Path) -> None:
    rows = {"keyword": per_query(QRELS, RUN_A, [1])}
    for folder in ("before", "after"):
        results = {"keyword": {"nDCG@1": 0.5, "RR@1": 0.5, **LATENCY}}
        write_report(
            build_report("tiny", "test", 3, results, depth=1), tmp_path / folder, per_query=rows
        )
    systems = load_systems([tmp_path / "before" / "report.json", tmp_path / "after"])
    assert list(systems) == ["before/keyword", "after/keyword"]


def test_bad_inputs_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="pass --dataset"):
        load_systems([tmp_path / "a.trec"])
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "report.json").write_text(json.dumps({"results": {"bm25": {}}}))
    with pytest.raises(ConfigError, match=r"lists 'bm25' but .*bm25.per_query.jsonl is missing"):
        load_systems([tmp_path / "old"])
    bad = tmp_path / "x.per_query.jsonl"
    bad.write_text('{"query_id": "q1", "nDCG@10": 0.5}\n{"nDCG@10": 1}\n')
    with pytest.raises(ParseError, match=r"x.per_query.jsonl: line 2"):
        load_systems([bad])
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ParseError, match=r"broken\.json: not a rag eval report"):
        load_systems([tmp_path / "broken.json"])
