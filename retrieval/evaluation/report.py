"""Evaluation reports: ``report.json``, a Markdown table, a PNG chart, runs, per-query files.

The JSON shape is part of the public contract (``rag eval`` writes it, CI reads it)::

    {"dataset": str, "split": str, "num_queries": int,
     "results": {RETRIEVER: {"nDCG@10": float, "R@100": float, "AP@100": float,
                             "RR@10": float, "latency_ms": {"p50": float, "p95": float}}}}

Metric names are ir_measures' (``nDCG@10``, ``R@100``, ``AP@100``, ``RR@10``, ``P@10``);
format version 1 used ``ndcg@10``, ``recall@100``, ``map@100``, ``mrr@10``, ``p@10``, which
every reader here still accepts. Every other metric given (``P@10``, ``nDCG@100``,
``latency_ms.mean``, ...) is kept beside the required ones, and ``format``/``format_version``
are added so the shape can evolve. Version 2 adds ``depth`` (documents per query in the runs:
no metric is reported at a deeper cut-off), ``ci95`` per retriever (bootstrap 95% interval of
each mean, drawn as error bars), ``provenance`` (how to reproduce the figures, see
:mod:`.provenance`), and a per-query file beside each run, ``runs/NAME.per_query.jsonl``,
which ``rag compare`` reads.

For SciFact the report also lists the published reference figures of
``shared/data/README.md`` (BEIR paper, Pyserini regressions, MTEB and runs measured on this
exact data). They are hard-coded here with their sources, stored under ``reference`` in the
JSON, and always labelled as published figures, never as results of the run.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.evaluation._io import atomic_write
from ragtools.retrieval.evaluation.charts import write_report_chart
from ragtools.retrieval.evaluation.metrics import Run, canonical_metric, metric_cutoff
from ragtools.retrieval.evaluation.perquery import PerQuery, per_query_path, write_per_query
from ragtools.retrieval.evaluation.runner import write_trec_run

__all__ = [
    "REQUIRED_METRICS",
    "SCIFACT_REFERENCE",
    "build_report",
    "render_markdown",
    "write_report",
]

logger = logging.getLogger(__name__)

REQUIRED_METRICS: tuple[str, ...] = ("nDCG@10", "R@100", "AP@100", "RR@10")
"""Metrics every retriever entry of a report must have."""

SCIFACT_REFERENCE: tuple[dict[str, Any], ...] = tuple(
    {"system": system, "nDCG@10": ndcg, "R@100": recall, "source": source}
    for system, ndcg, recall, source in (
        ("BM25, Elasticsearch (BEIR paper)", 0.665, None, "Thakur et al. 2021"),
        ("BM25 flat, k1=0.9 b=0.4 (Pyserini regression)", 0.679, 0.925, "pyserini 2cr/beir.yaml"),
        ("BM25 multifield (Pyserini regression)", 0.665, 0.908, "pyserini 2cr/beir.yaml"),
        (
            "rank-bm25 BM25Okapi, English stopwords + Snowball stemmer",
            0.684,
            0.913,
            "measured on this data (shared/data/README.md)",
        ),
        (
            'bm25s "lucene" variant, same tokenization',
            0.686,
            0.913,
            "measured on this data (shared/data/README.md)",
        ),
        (
            "all-MiniLM-L6-v2, exact cosine search",
            0.645,
            0.925,
            "measured on this data (shared/data/README.md); MTEB: 0.645",
        ),
        ("bge-small-en-v1.5", 0.713, None, "MTEB results"),
        (
            "RRF (k=60) of the bm25s and MiniLM runs above",
            0.717,
            0.948,
            "measured on this data (shared/data/README.md)",
        ),
        (
            "min-max fusion, equal weights, same two runs",
            0.728,
            0.948,
            "measured on this data (shared/data/README.md)",
        ),
        (
            "Pyserini min-max fusion, BM25 + bge-base",
            0.747,
            0.970,
            "pyserini docs/experiments-beir-fusion.md",
        ),
    )
)
"""Published SciFact test-split figures (title and text indexed together); not our results."""

_REPORT_FORMAT = "ragtools-eval-report"
_REPORT_VERSION = 2
"""2: ir_measures metric names, ``depth``, ``ci95``, ``provenance`` and per-query files."""
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def build_report(
    dataset_name: str,
    split: str,
    num_queries: int,
    results: Mapping[str, Mapping[str, Any]],
    *,
    depth: int | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Assemble the report dictionary (see the module docstring for its shape).

    Args:
        dataset_name: e.g. ``"scifact"``.
        split: the qrels split evaluated, e.g. ``"test"``.
        num_queries: the number of queries evaluated.
        results: per retriever, its metrics (``evaluate_run`` output) plus ``latency_ms``
            (``latency_summary`` output: ``p50``, ``p95``, optionally ``mean``). Other number
            or string fields (e.g. ``queries_per_second``) are kept, and ``ci95``, a
            ``{metric: [low, high]}`` bootstrap interval of each mean. Metric names may be
            aliases (``ndcg@10``); the report uses the canonical ones (``nDCG@10``).
        depth: documents per query in the runs; a required metric with a deeper cut-off
            is not required (it would not be reported).
        provenance: how the figures were made (:func:`collect_provenance`), stored as is.

    Returns:
        The JSON-ready report.

    Raises:
        ConfigError: no retrievers, a required metric or latency missing, or a value that
            is not a finite number.
    """
    if not results:
        msg = "no retriever results to report; evaluate at least one retriever"
        raise ConfigError(msg)
    report: dict[str, Any] = {
        "format": _REPORT_FORMAT,
        "format_version": _REPORT_VERSION,
        "dataset": dataset_name,
        "split": split,
        "num_queries": int(num_queries),
        "results": {name: _retriever_entry(name, dict(m), depth) for name, m in results.items()},
    }
    if depth is not None:
        report["depth"] = int(depth)
    if provenance is not None:
        report["provenance"] = dict(provenance)
    if _is_scifact(dataset_name):
        report["reference"] = {
            "note": "published figures on the SciFact test split, not results of this run",
            "split": "test",
            "rows": [dict(row) for row in SCIFACT_REFERENCE],
        }
    return report


def write_report(
    report: Mapping[str, Any],
    out_dir: str | Path,
    *,
    runs: Mapping[str, Run] | None = None,
    per_query: Mapping[str, PerQuery] | None = None,
) -> dict[str, Path]:
    """Write ``report.json``, ``report.md``, ``report.png``, ``runs/RETRIEVER.trec`` and
    ``runs/RETRIEVER.per_query.jsonl``.

    Args:
        report: a dictionary from :func:`build_report`.
        out_dir: the output directory (created if missing).
        runs: optional ``{retriever: run}`` to save as TREC files, tagged with the name.
        per_query: optional ``{retriever: {query_id: {metric: value}}}`` to save beside them.

    Returns:
        The written paths keyed ``"json"``, ``"md"``, ``"png"``, ``"run:RETRIEVER"`` and
        ``"per_query:RETRIEVER"``.

    Raises:
        ConfigError: a run's retriever name is not usable as a file name.
        MissingDependencyError: matplotlib (the ``eval`` extra) is not installed.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = {
        "json": atomic_write(out / "report.json", json.dumps(report, indent=2, allow_nan=False)),
        "md": atomic_write(out / "report.md", render_markdown(report)),
        "png": write_report_chart(report, out / "report.png"),
    }
    for name, run in (runs or {}).items():
        _check_file_name(name)
        written[f"run:{name}"] = write_trec_run(run, out / "runs" / f"{name}.trec", tag=name)
    for name, rows in (per_query or {}).items():
        _check_file_name(name)
        written[f"per_query:{name}"] = write_per_query(rows, per_query_path(out, name))
    logger.info("wrote evaluation report to %s (%d files)", out, len(written))
    return written


def render_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown: one table row per retriever, then SciFact reference figures."""
    lines = [
        f"# Retrieval evaluation: {report['dataset']} ({report['split']})",
        "",
        f"{report['num_queries']} queries. Metrics as trec_eval computes them (nDCG with "
        "graded gains); latency is wall time per single-query `invoke`, in milliseconds.",
        "",
        "| retriever | nDCG@10 | Recall@100 | MAP@100 | MRR@10 | p50 ms | p95 ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, entry in report["results"].items():
        cells = [f"{entry[key]:.4f}" if key in entry else "—" for key in REQUIRED_METRICS]
        cells += [f"{entry['latency_ms'][key]:.2f}" for key in ("p50", "p95")]
        lines.append(f"| {_md_escape(name)} | " + " | ".join(cells) + " |")
    reference = report.get("reference")
    if reference:
        lines += [
            "",
            "## Published reference figures (SciFact test split; not results of this run)",
            "",
        ]
        if report["split"] != reference["split"]:
            lines += [
                f"These figures are for the {reference['split']} split; this report is on "
                f"{report['split']}, so do not compare them directly.",
                "",
            ]
        lines += ["| system | nDCG@10 | Recall@100 | source |", "|---|---:|---:|---|"]
        for row in reference["rows"]:
            cells = [_fmt_ref(row["nDCG@10"]), _fmt_ref(row["R@100"])]
            lines.append(f"| {_md_escape(row['system'])} | {' | '.join(cells)} | {row['source']} |")
    return "\n".join(lines) + "\n"


def _check_file_name(name: str) -> None:
    if not _SAFE_NAME.match(name):
        msg = f"retriever name {name!r} cannot be a file name; use letters, digits, . _ + -"
        raise ConfigError(msg)


def _canonical_key(key: str) -> str:
    try:
        return canonical_metric(key)
    except ConfigError:
        return key  # not a metric: latency_ms, queries_per_second, ...


def _retriever_entry(name: str, given: dict[str, Any], depth: int | None) -> dict[str, Any]:
    metrics = {_canonical_key(key): value for key, value in given.items()}
    required = [k for k in REQUIRED_METRICS if depth is None or metric_cutoff(k) <= depth]
    need = [key for key in required if key not in metrics]
    latency = metrics.get("latency_ms")
    if not isinstance(latency, Mapping):
        need.append("latency_ms")
    elif not {"p50", "p95"} <= set(latency):
        need.append("latency_ms p50/p95")
    if need or not isinstance(latency, Mapping):
        msg = (
            f"retriever {name!r}: missing {', '.join(need)}; evaluate with k_values including "
            "10 and 100 and pass latency_ms=latency_summary(...)"
        )
        raise ConfigError(msg)
    entry: dict[str, Any] = {key: _number(name, key, metrics[key]) for key in required}
    entry["latency_ms"] = {key: _number(name, f"latency_ms.{key}", v) for key, v in latency.items()}
    if "ci95" in metrics:
        entry["ci95"] = _intervals(name, metrics["ci95"])
    for key, value in metrics.items():
        if key in entry:
            continue
        entry[key] = value if isinstance(value, str) or value is None else _number(name, key, value)
    return entry


def _number(name: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        msg = f"retriever {name!r}: {key} must be a finite number, got {value!r}"
        raise ConfigError(msg)
    return float(value)


def _intervals(name: str, given: Any) -> dict[str, list[float]]:
    if not isinstance(given, Mapping):
        msg = f"retriever {name!r}: ci95 must map metrics to [low, high], got {given!r}"
        raise ConfigError(msg)
    intervals = {}
    for key, pair in given.items():
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            msg = f"retriever {name!r}: ci95 {key} must be [low, high], got {pair!r}"
            raise ConfigError(msg)
        metric = canonical_metric(key)
        intervals[metric] = [_number(name, f"ci95.{metric}", value) for value in pair]
    return intervals


def _is_scifact(dataset_name: str) -> bool:
    return dataset_name.strip().lower() in {"scifact", "beir/scifact", "beir-scifact"}


def _fmt_ref(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")
