"""Retrieval evaluation: BEIR loading, trec_eval-exact metrics, timed runs and reports.

Typical use::

    dataset = load_beir("../shared/data/scifact", "test")
    result = run_retriever(retriever, dataset, k=100)
    metrics = evaluate_run(dataset.qrels, result.run)
    report = build_report(dataset.name, dataset.split, len(dataset.queries),
                          {"bm25": {**metrics, "latency_ms": result.latency_summary()}})
    write_report(report, "out/", runs={"bm25": result.run})
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
from ragtools.retrieval.evaluation.metrics import (
    DEFAULT_K_VALUES,
    MEASURES,
    MissingQueries,
    Qrels,
    Run,
    evaluate_run,
    per_query,
    trec_order,
)
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

__all__ = [
    "DEFAULT_K_VALUES",
    "MEASURES",
    "REQUIRED_METRICS",
    "SCIFACT_REFERENCE",
    "BeirDataset",
    "MissingQueries",
    "Qrels",
    "Run",
    "RunResult",
    "available_splits",
    "build_report",
    "corpus_documents",
    "evaluate_run",
    "latency_summary",
    "load_beir",
    "load_qrels",
    "load_queries",
    "per_query",
    "read_trec_run",
    "render_markdown",
    "run_retriever",
    "trec_order",
    "write_report",
    "write_trec_run",
]
