"""Evaluation reports: ``report.json``, a Markdown table, a PNG bar chart and TREC run files.

The JSON shape is part of the public contract (``rag eval`` writes it, CI reads it)::

    {"dataset": str, "split": str, "num_queries": int,
     "results": {RETRIEVER: {"ndcg@10": float, "recall@100": float, "map@100": float,
                             "mrr@10": float, "latency_ms": {"p50": float, "p95": float}}}}

Every other metric given (``p@10``, ``ndcg@100``, ``latency_ms.mean``, ...) is kept beside
the required ones, and ``format``/``format_version`` are added so the shape can evolve.

For SciFact the report also lists the published reference figures of
``shared/data/README.md`` (BEIR paper, Pyserini regressions, MTEB and runs measured on this
exact data). They are hard-coded here with their sources, stored under ``reference`` in the
JSON, and always labelled as published figures, never as results of the run.

The chart uses matplotlib's Agg canvas through the object API (no ``pyplot``, no global
backend switch), imported lazily: matplotlib is the ``eval`` extra.
"""

from __future__ import annotations

import io
import json
import logging
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragtools.parsers._optional import require
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.evaluation._io import atomic_write
from ragtools.retrieval.evaluation.metrics import Run
from ragtools.retrieval.evaluation.runner import write_trec_run

__all__ = [
    "REQUIRED_METRICS",
    "SCIFACT_REFERENCE",
    "build_report",
    "render_markdown",
    "write_report",
]

logger = logging.getLogger(__name__)

REQUIRED_METRICS: tuple[str, ...] = ("ndcg@10", "recall@100", "map@100", "mrr@10")
"""Metrics every retriever entry of a report must have."""

SCIFACT_REFERENCE: tuple[dict[str, Any], ...] = tuple(
    {"system": system, "ndcg@10": ndcg, "recall@100": recall, "source": source}
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
_REPORT_VERSION = 1
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def build_report(
    dataset_name: str,
    split: str,
    num_queries: int,
    results: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """Assemble the report dictionary (see the module docstring for its shape).

    Args:
        dataset_name: e.g. ``"scifact"``.
        split: the qrels split evaluated, e.g. ``"test"``.
        num_queries: the number of queries evaluated.
        results: per retriever, its metrics (``evaluate_run`` output) plus ``latency_ms``
            (``latency_summary`` output: ``p50``, ``p95``, optionally ``mean``). Other number
            or string fields (e.g. ``queries_per_second``) are kept.

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
        "results": {name: _retriever_entry(name, dict(m)) for name, m in results.items()},
    }
    if _is_scifact(dataset_name):
        report["reference"] = {
            "note": "published figures on the SciFact test split, not results of this run",
            "split": "test",
            "rows": [dict(row) for row in SCIFACT_REFERENCE],
        }
    return report


def write_report(
    report: Mapping[str, Any], out_dir: str | Path, *, runs: Mapping[str, Run] | None = None
) -> dict[str, Path]:
    """Write ``report.json``, ``report.md``, ``report.png`` and ``runs/RETRIEVER.trec``.

    Args:
        report: a dictionary from :func:`build_report`.
        out_dir: the output directory (created if missing).
        runs: optional ``{retriever: run}`` to save as TREC files, tagged with the name.

    Returns:
        The written paths keyed ``"json"``, ``"md"``, ``"png"`` and ``"run:RETRIEVER"``.

    Raises:
        ConfigError: a run's retriever name is not usable as a file name.
        MissingDependencyError: matplotlib (the ``eval`` extra) is not installed.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = {
        "json": atomic_write(out / "report.json", json.dumps(report, indent=2, allow_nan=False)),
        "md": atomic_write(out / "report.md", render_markdown(report)),
        "png": _write_chart(report, out / "report.png"),
    }
    for name, run in (runs or {}).items():
        if not _SAFE_NAME.match(name):
            msg = f"retriever name {name!r} cannot be a file name; use letters, digits, . _ + -"
            raise ConfigError(msg)
        written[f"run:{name}"] = write_trec_run(run, out / "runs" / f"{name}.trec", tag=name)
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
        cells = [f"{entry[key]:.4f}" for key in REQUIRED_METRICS]
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
            cells = [_fmt_ref(row["ndcg@10"]), _fmt_ref(row["recall@100"])]
            lines.append(f"| {_md_escape(row['system'])} | {' | '.join(cells)} | {row['source']} |")
    return "\n".join(lines) + "\n"


def _retriever_entry(name: str, metrics: dict[str, Any]) -> dict[str, Any]:
    need = [key for key in REQUIRED_METRICS if key not in metrics]
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
    entry: dict[str, Any] = {key: _number(name, key, metrics[key]) for key in REQUIRED_METRICS}
    entry["latency_ms"] = {key: _number(name, f"latency_ms.{key}", v) for key, v in latency.items()}
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


def _is_scifact(dataset_name: str) -> bool:
    return dataset_name.strip().lower() in {"scifact", "beir/scifact", "beir-scifact"}


def _fmt_ref(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def _write_chart(report: Mapping[str, Any], path: Path) -> Path:
    """A grouped bar chart of nDCG@10 and Recall@100 per retriever."""
    require("matplotlib", "eval")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names = list(report["results"])
    series = (("ndcg@10", "nDCG@10", "#4C72B0"), ("recall@100", "Recall@100", "#DD8452"))
    figure = Figure(figsize=(max(6.0, 1.2 + 1.6 * len(names)), 4.5), dpi=110)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    width = 0.38
    for index, (key, label, color) in enumerate(series):
        offsets = [i + (index - 0.5) * width for i in range(len(names))]
        values = [report["results"][name][key] for name in names]
        bars = axes.bar(offsets, values, width, label=label, color=color)
        axes.bar_label(bars, fmt="%.3f", padding=2, fontsize=8)
    axes.set_xticks(range(len(names)), names)
    pad = 0.6 + max(0, 3 - len(names)) * 0.5  # keep bars narrow when few retrievers
    axes.set_xlim(-pad, len(names) - 1 + pad)
    axes.set_ylim(0.0, 1.08)
    axes.set_ylabel("score")
    axes.set_title(
        f"{report['dataset']} ({report['split']}, {report['num_queries']} queries)",
        loc="left",
    )
    axes.grid(axis="y", alpha=0.3)
    axes.set_axisbelow(True)
    # Above the plot area, so it never hides a bar close to 1.0.
    axes.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=2, frameon=False)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return atomic_write(path, buffer.getvalue())
