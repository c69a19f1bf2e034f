"""Compare systems query by query: each against a baseline, per metric, with significance.

The model is ranx's ``compare`` (a table of systems by metrics, paired tests against each
other); this one answers the question a retrieval paper asks of each system and metric,
"is it better than the baseline, by how much, and how sure are we":

* the system's mean, the baseline's, and the difference;
* a paired bootstrap 95% interval of the difference (queries resampled);
* the two-sided p-value of the paired t-test and of Fisher's randomisation test (10,000
  seeded sign assignments), each also Holm-corrected;
* wins, ties and losses: queries the system scores higher, equal and lower on.

**Holm's family** is one metric and one test: the comparisons of every system with the
baseline on that metric (with one system there is nothing to correct, so the corrected value
equals the raw one). Correcting over metrics too would punish reporting more metrics, and the
metrics are far from independent.

Every system must have been scored on the same queries (the per-query files of ``rag eval``
hold every judged query, absent ones as 0); otherwise the pairs are not pairs, and
:func:`compare_systems` says which system lacks which queries.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.evaluation._io import atomic_write
from ragtools.retrieval.evaluation.charts import write_delta_chart
from ragtools.retrieval.evaluation.metrics import canonical_metric
from ragtools.retrieval.evaluation.perquery import PerQuery
from ragtools.retrieval.evaluation.stats import (
    DEFAULT_PERMUTATIONS,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    bootstrap_ci,
    holm,
    mean,
    paired_t_test,
    randomization_test,
    wins_ties_losses,
)

__all__ = [
    "DEFAULT_COMPARE_METRICS",
    "Comparison",
    "ComparisonRow",
    "TestName",
    "compare_systems",
    "render_comparison",
    "write_comparison",
]

logger = logging.getLogger(__name__)

TestName = Literal["t", "randomization"]

DEFAULT_COMPARE_METRICS: tuple[str, ...] = ("nDCG@10", "R@100", "AP@100", "RR@10")
"""Compared when no metrics are named (those every system has)."""


@dataclass(frozen=True)
class ComparisonRow:
    """One system against the baseline on one metric. ``None`` p-values: test not run."""

    metric: str
    system: str
    mean: float
    baseline_mean: float
    delta: float
    ci_low: float
    ci_high: float
    p_t: float | None
    p_t_holm: float | None
    p_randomization: float | None
    p_randomization_holm: float | None
    wins: int
    ties: int
    losses: int


@dataclass(frozen=True)
class Comparison:
    """The outcome of :func:`compare_systems`; ``to_dict`` is what ``compare.json`` holds."""

    baseline: str
    systems: tuple[str, ...]
    metrics: tuple[str, ...]
    num_queries: int
    tests: tuple[TestName, ...]
    permutations: int
    resamples: int
    seed: int
    baseline_means: dict[str, float]
    rows: tuple[ComparisonRow, ...]
    deltas: dict[str, dict[str, list[float]]]
    """``{metric: {system: per-query differences}}`` in query order, for the chart."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the settings, baseline means and rows (not the per-query deltas)."""
        data = asdict(self)
        data.pop("deltas")
        data["confidence"] = 0.95
        data["holm_family"] = "per metric and test, over the systems compared"
        return data


def compare_systems(
    systems: Mapping[str, PerQuery],
    *,
    baseline: str | None = None,
    metrics: Sequence[str] | None = None,
    tests: Sequence[str] = ("t", "randomization"),
    permutations: int = DEFAULT_PERMUTATIONS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Comparison:
    """Compare every system with ``baseline`` on every metric.

    Args:
        systems: ``{name: {query_id: {metric: value}}}``, e.g. from :func:`load_systems`.
        baseline: the system the others are compared with; the first one by default.
        metrics: metric names (aliases accepted); by default those of
            :data:`DEFAULT_COMPARE_METRICS` every system has.
        tests: ``"t"``, ``"randomization"`` or both.
        permutations: sign assignments of the randomisation test.
        resamples: bootstrap resamples of the interval.
        seed: seeds the randomisation test and the bootstrap (same inputs, same figures).

    Raises:
        ConfigError: fewer than two systems, an unknown baseline, test or metric, a metric
            a system lacks, or systems scored on different queries.
    """
    if len(systems) < 2:
        msg = f"compare needs at least two systems, got {len(systems)}: {', '.join(systems)}"
        raise ConfigError(msg)
    names = list(systems)
    base = names[0] if baseline is None else baseline
    if base not in systems:
        msg = f"baseline {base!r} is not among the systems: {', '.join(names)}"
        raise ConfigError(msg)
    chosen_tests = _check_tests(tests)
    queries = _common_queries(systems, base)
    chosen = _choose_metrics(systems, queries[0], metrics)
    others = [name for name in names if name != base]
    rows: list[ComparisonRow] = []
    deltas: dict[str, dict[str, list[float]]] = {}
    for metric in chosen:
        column = {name: [systems[name][q][metric] for q in queries] for name in names}
        base_scores = column[base]
        deltas[metric] = {
            name: [a - b for a, b in zip(column[name], base_scores, strict=True)] for name in others
        }
        p_t = [
            paired_t_test(column[n], base_scores) if "t" in chosen_tests else None for n in others
        ]
        p_r = [
            randomization_test(column[n], base_scores, permutations=permutations, seed=seed)
            if "randomization" in chosen_tests
            else None
            for n in others
        ]
        holm_t = _holm_or_none(p_t)
        holm_r = _holm_or_none(p_r)
        for i, name in enumerate(others):
            low, high = bootstrap_ci(deltas[metric][name], resamples=resamples, seed=seed)
            counts = wins_ties_losses(column[name], base_scores)
            rows.append(
                ComparisonRow(
                    metric=metric,
                    system=name,
                    mean=mean(column[name]),
                    baseline_mean=mean(base_scores),
                    delta=mean(column[name]) - mean(base_scores),
                    ci_low=low,
                    ci_high=high,
                    p_t=p_t[i],
                    p_t_holm=holm_t[i],
                    p_randomization=p_r[i],
                    p_randomization_holm=holm_r[i],
                    wins=counts.wins,
                    ties=counts.ties,
                    losses=counts.losses,
                )
            )
    return Comparison(
        baseline=base,
        systems=tuple(names),
        metrics=tuple(chosen),
        num_queries=len(queries),
        tests=chosen_tests,
        permutations=permutations,
        resamples=resamples,
        seed=seed,
        baseline_means={m: mean([systems[base][q][m] for q in queries]) for m in chosen},
        rows=tuple(rows),
        deltas=deltas,
    )


def _check_tests(tests: Sequence[str]) -> tuple[TestName, ...]:
    chosen: list[TestName] = []
    for test in tests:
        if test == "t":
            chosen.append("t")
        elif test == "randomization":
            chosen.append("randomization")
        else:
            msg = f"unknown test {test!r}; use t, randomization or both"
            raise ConfigError(msg)
    if not chosen:
        msg = "no test chosen; use t, randomization or both"
        raise ConfigError(msg)
    return tuple(dict.fromkeys(chosen))


def _common_queries(systems: Mapping[str, PerQuery], base: str) -> list[str]:
    queries = list(systems[base])
    wanted = set(queries)
    for name, rows in systems.items():
        have = set(rows)
        if have != wanted:
            lacking, extra = sorted(wanted - have), sorted(have - wanted)
            msg = (
                f"{name!r} and the baseline {base!r} were scored on different queries "
                f"({len(lacking)} missing, e.g. {lacking[:3]}; {len(extra)} extra, e.g. "
                f"{extra[:3]}); evaluate both on the same dataset split"
            )
            raise ConfigError(msg)
    if len(queries) < 2:
        msg = f"paired tests need at least 2 queries; the systems share {len(queries)}"
        raise ConfigError(msg)
    return queries


def _choose_metrics(
    systems: Mapping[str, PerQuery], first_query: str, metrics: Sequence[str] | None
) -> list[str]:
    available = [set(rows[first_query]) for rows in systems.values()]
    shared = set.intersection(*available)
    if metrics is None:
        chosen = [m for m in DEFAULT_COMPARE_METRICS if m in shared]
        if not chosen:
            msg = f"the systems share none of {', '.join(DEFAULT_COMPARE_METRICS)}; name --metrics"
            raise ConfigError(msg)
        return chosen
    chosen = list(dict.fromkeys(canonical_metric(m) for m in metrics))
    for metric in chosen:
        lacking = [
            name for name, have in zip(systems, available, strict=True) if metric not in have
        ]
        if lacking:
            msg = f"metric {metric} is missing from {', '.join(lacking)} (runs too shallow?)"
            raise ConfigError(msg)
    return chosen


def _holm_or_none(p_values: list[float | None]) -> list[float | None]:
    if any(p is None for p in p_values):
        return [None] * len(p_values)
    return list(holm([p for p in p_values if p is not None]))


def _fmt_p(value: float | None) -> str:
    if value is None:
        return "—"
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"


def render_comparison(comparison: Comparison) -> str:
    """The comparison as a Markdown table, one block of rows per metric."""
    header = ["metric", "system", "mean", "Δ", "95% CI of Δ"]
    if "t" in comparison.tests:
        header += ["p (t)", "p (t, Holm)"]
    if "randomization" in comparison.tests:
        header += ["p (rand.)", "p (rand., Holm)"]
    header.append("wins/ties/losses")
    lines = [
        f"# {', '.join(s for s in comparison.systems if s != comparison.baseline)} against "
        f"{comparison.baseline}",
        "",
        f"{comparison.num_queries} queries; paired tests, two-sided; randomisation test with "
        f"{comparison.permutations:,} sign assignments and the bootstrap interval with "
        f"{comparison.resamples:,} resamples, seed {comparison.seed}; Holm over the systems "
        "per metric and test.",
        "",
        "| " + " | ".join(header) + " |",
        "|---|---|" + "---:|" * (len(header) - 2),
    ]
    for metric in comparison.metrics:
        base_mean = comparison.baseline_means[metric]
        blank = ["—"] * (len(header) - 4)
        lines.append(
            f"| {metric} | {comparison.baseline} (baseline) | {base_mean:.4f} | "
            + " | ".join(blank)
            + " |"
        )
        for row in (r for r in comparison.rows if r.metric == metric):
            cells = [metric, row.system, f"{row.mean:.4f}", f"{row.delta:+.4f}"]
            cells.append(f"[{row.ci_low:+.4f}, {row.ci_high:+.4f}]")
            if "t" in comparison.tests:
                cells += [_fmt_p(row.p_t), _fmt_p(row.p_t_holm)]
            if "randomization" in comparison.tests:
                cells += [_fmt_p(row.p_randomization), _fmt_p(row.p_randomization_holm)]
            cells.append(f"{row.wins}/{row.ties}/{row.losses}")
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def write_comparison(comparison: Comparison, out_dir: str | Path) -> dict[str, Path]:
    """Write ``compare.json``, ``compare.md`` and ``compare.png`` (the sorted per-query
    differences of the first metric) into ``out_dir``.

    Raises:
        MissingDependencyError: matplotlib (the ``eval`` extra) is not installed.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data = json.dumps(comparison.to_dict(), indent=2, allow_nan=False)
    first = comparison.metrics[0]
    written = {
        "json": atomic_write(out / "compare.json", data),
        "md": atomic_write(out / "compare.md", render_comparison(comparison)),
        "png": write_delta_chart(
            comparison.deltas[first], comparison.baseline, first, out / "compare.png"
        ),
    }
    logger.info("wrote the comparison to %s", out)
    return written
