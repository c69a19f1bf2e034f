"""Retrieval evaluation: BEIR loading, trec_eval-exact metrics, timed runs, reports,
per-query comparisons with significance tests, provenance and regression checks.

Typical use::

    dataset = load_beir("../shared/data/scifact", "test")
    result = run_retriever(retriever, dataset, k=100)
    metrics = evaluate_run(dataset.qrels, result.run)
    report = build_report(dataset.name, dataset.split, len(dataset.queries),
                          {"keyword": {**metrics, "latency_ms": result.latency_summary()}})
    write_report(report, "out/", runs={"keyword": result.run},
                 per_query={"keyword": per_query(dataset.qrels, result.run)})
    comparison = compare_systems(load_systems(["out/report.json", "other/report.json"]))
"""

from __future__ import annotations

from ragtools.retrieval.evaluation.beir import (
    BeirDataset,
    available_splits,
    corpus_documents,
    load_beir,
    load_qrels,
    load_queries,
)
from ragtools.retrieval.evaluation.compare import (
    Comparison,
    ComparisonRow,
    compare_systems,
    render_comparison,
    write_comparison,
)
from ragtools.retrieval.evaluation.metrics import (
    DEFAULT_K_VALUES,
    MEASURES,
    MissingQueries,
    Qrels,
    Run,
    canonical_metric,
    evaluate_run,
    per_query,
    trec_order,
)
from ragtools.retrieval.evaluation.perquery import load_systems, read_per_query, write_per_query
from ragtools.retrieval.evaluation.report import (
    REQUIRED_METRICS,
    SCIFACT_REFERENCE,
    build_report,
    render_markdown,
    write_report,
)
from ragtools.retrieval.evaluation.runner import (
    RunResult,
    latency_summary,
    read_trec_run,
    run_retriever,
    write_trec_run,
)
from ragtools.retrieval.evaluation.stats import (
    bootstrap_ci,
    holm,
    paired_t_test,
    randomization_test,
    wins_ties_losses,
)
from ragtools.retrieval.evaluation.verify import ExpectedFigure, load_expected, verify_report

__all__ = [
    "DEFAULT_K_VALUES",
    "MEASURES",
    "REQUIRED_METRICS",
    "SCIFACT_REFERENCE",
    "BeirDataset",
    "Comparison",
    "ComparisonRow",
    "ExpectedFigure",
    "MissingQueries",
    "Qrels",
    "Run",
    "RunResult",
    "available_splits",
    "bootstrap_ci",
    "build_report",
    "canonical_metric",
    "compare_systems",
    "corpus_documents",
    "evaluate_run",
    "holm",
    "latency_summary",
    "load_beir",
    "load_expected",
    "load_qrels",
    "load_queries",
    "load_systems",
    "paired_t_test",
    "per_query",
    "randomization_test",
    "read_per_query",
    "read_trec_run",
    "render_comparison",
    "render_markdown",
    "run_retriever",
    "trec_order",
    "verify_report",
    "wins_ties_losses",
    "write_comparison",
    "write_per_query",
    "write_report",
    "write_trec_run",
]
