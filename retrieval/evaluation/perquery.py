"""Per-query metric files, and the systems ``rag compare`` reads from reports and runs.

A per-query file sits beside its run file, ``runs/NAME.per_query.jsonl``: one JSON object a
line, ``{"query_id": "1", "nDCG@10": 0.63, "R@100": 1.0, ...}``, in qrels order. Paired
tests need every system's score on every query, so the file holds all judged queries (a query
the run lacks scores 0, as ``evaluate_run`` averages it).

:func:`load_systems` turns what a user passes to ``rag compare`` into per-query tables:

* a ``report.json`` (or the directory holding one): every retriever it lists, read from the
  per-query files beside it;
* a ``*.per_query.jsonl`` file: one system named after the file;
* a TREC run file: one system named after the file, scored against ``qrels`` at the given
  cut-offs, or by default at every cut-off of :data:`DEFAULT_K_VALUES` no deeper than the
  run's deepest query (a file does not say how deep it was asked to be, so a run over a
  corpus smaller than a cut-off needs the cut-off named).

Names that collide (two reports both with ``keyword``) are prefixed with their report's
directory name, ``before/keyword`` and ``after/keyword``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from ragtools.parsers.errors import ConfigError, ParseError
from ragtools.retrieval.evaluation._io import atomic_write
from ragtools.retrieval.evaluation.metrics import (
    DEFAULT_K_VALUES,
    Qrels,
    canonical_metric,
    per_query,
)
from ragtools.retrieval.evaluation.runner import read_trec_run

__all__ = [
    "PER_QUERY_SUFFIX",
    "PerQuery",
    "load_systems",
    "per_query_path",
    "read_per_query",
    "run_depth",
    "write_per_query",
]

PerQuery = Mapping[str, Mapping[str, float]]
"""``{query_id: {metric: value}}``: one system's score on every query."""

PER_QUERY_SUFFIX = ".per_query.jsonl"


def per_query_path(out_dir: str | Path, name: str) -> Path:
    """Where ``write_report`` puts a retriever's per-query file: ``runs/NAME.per_query.jsonl``."""
    return Path(out_dir) / "runs" / f"{name}{PER_QUERY_SUFFIX}"


def write_per_query(rows: PerQuery, path: str | Path) -> Path:
    """Write ``{query_id: {metric: value}}`` as JSON Lines (atomically)."""
    lines = [
        json.dumps({"query_id": qid, **row}, allow_nan=False) + "\n" for qid, row in rows.items()
    ]
    return atomic_write(path, "".join(lines))


def read_per_query(path: str | Path) -> dict[str, dict[str, float]]:
    """Read a per-query file; metric names are made canonical (``ndcg@10`` -> ``nDCG@10``).

    Raises:
        ParseError: the file is missing, a line is not a JSON object with a ``query_id`` and
            finite numbers, or a query appears twice; the message names the line.
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise ParseError(source, f"cannot read the per-query file ({exc.strerror or exc})") from exc
    rows: dict[str, dict[str, float]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            qid = str(record.pop("query_id"))
            row = {canonical_metric(key): float(value) for key, value in record.items()}
        except (ValueError, TypeError, KeyError, AttributeError, ConfigError) as exc:
            msg = f"line {number}: expected {{'query_id': ..., 'nDCG@10': number, ...}} ({exc})"
            raise ParseError(source, msg) from None
        if qid in rows or not all(math.isfinite(v) for v in row.values()):
            msg = f"line {number}: query {qid!r} repeats or has a non-finite value"
            raise ParseError(source, msg)
        rows[qid] = row
    if not rows:
        raise ParseError(source, "no queries in the per-query file")
    return rows


def run_depth(run: Mapping[str, Mapping[str, float]]) -> int:
    """The most documents any query of ``run`` has (0 for an empty run)."""
    return max((len(docs) for docs in run.values()), default=0)


def load_systems(
    paths: Sequence[str | Path],
    *,
    qrels: Qrels | None = None,
    cutoffs: Sequence[int] | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
    """Per-query tables ``{system: {query_id: {metric: value}}}`` from reports, per-query
    files and TREC runs (see the module docstring).

    Raises:
        ConfigError: no paths, a run given without ``qrels``, or a report without its
            per-query files.
        ParseError: an unreadable report, per-query or run file.
    """
    if not paths:
        msg = "nothing to compare: give report.json files, per-query files or TREC runs"
        raise ConfigError(msg)
    found: list[tuple[str, Path, dict[str, dict[str, float]]]] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir() or path.name.endswith(".json"):
            found.extend(_report_systems(path / "report.json" if path.is_dir() else path))
        elif path.name.endswith(PER_QUERY_SUFFIX):
            found.append((path.name[: -len(PER_QUERY_SUFFIX)], path.parent, read_per_query(path)))
        else:
            found.append((path.stem, path.parent, _score_run(path, qrels, cutoffs)))
    counts: dict[str, int] = {}
    for name, _, _ in found:
        counts[name] = counts.get(name, 0) + 1
    systems: dict[str, dict[str, dict[str, float]]] = {}
    for name, where, rows in found:
        label = name if counts[name] == 1 else f"{_where_label(where)}/{name}"
        if label in systems:
            msg = f"two inputs give the system name {label!r}; rename one of the files"
            raise ConfigError(msg)
        systems[label] = rows
    return systems


def _where_label(where: Path) -> str:
    parts = where.resolve().parts
    return parts[-2] if parts[-1] == "runs" and len(parts) > 1 else parts[-1]


def _report_systems(path: Path) -> list[tuple[str, Path, dict[str, dict[str, float]]]]:
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        names = list(report["results"])
    except OSError as exc:
        raise ParseError(path, f"cannot read the report ({exc.strerror or exc})") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise ParseError(path, f"not a rag eval report.json ({exc})") from exc
    systems = []
    for name in names:
        file = per_query_path(path.parent, name)
        if not file.is_file():
            msg = (
                f"{path} lists {name!r} but {file} is missing; re-run rag eval (reports "
                "before per-query files cannot be compared query by query)"
            )
            raise ConfigError(msg)
        systems.append((name, path.parent, read_per_query(file)))
    return systems


def _score_run(
    path: Path, qrels: Qrels | None, cutoffs: Sequence[int] | None
) -> dict[str, dict[str, float]]:
    if qrels is None:
        msg = f"{path} is a run file: pass --dataset (and --split) so it can be scored"
        raise ConfigError(msg)
    run = read_trec_run(path)
    if cutoffs is None:
        depth = run_depth(run)
        cutoffs = [k for k in DEFAULT_K_VALUES if k <= depth] or [1]
    return per_query(qrels, run, cutoffs)
