"""Regression checks: compare a report's figures with stored expected ones.

As Pyserini's reproductions check their runs against stored scores, ``rag eval --verify
EXPECTED`` fails when a figure drifts. ``EXPECTED`` is YAML (``.yaml``/``.yml``, read with
PyYAML, in the ``eval`` extra) or JSON: a list of figures, or ``{"figures": [...]}``::

    - {dataset: scifact, split: test, retriever: keyword, metric: nDCG@10,
       value: 0.6929, tolerance: 0.0005}

``split`` is optional; ``retriever`` and ``metric`` accept their aliases (``bm25``,
``ndcg@10``). Figures for another dataset or split than the report's are not checked, so
one file can hold several datasets; a file with no figure for the report's is an error, as
is a figure whose retriever or metric the report does not have (a check that silently checks
nothing would pass forever).

Hostile files end in a ``ParseError`` naming the file, fast: objects and lists nested past
:data:`~parsers.nesting.MAX_NESTING` (measured before parsing), and a YAML alias bomb (a
1 kB file whose aliases expand to billions of items): fields must hold single values, and a
value of another kind is named by its type, never printed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from ragtools.parsers.errors import ConfigError, ParseError
from ragtools.parsers.nesting import nesting_problem, text_too_deep
from ragtools.parsers.optional import require
from ragtools.retrieval.evaluation.metrics import canonical_metric
from ragtools.retrieval.names import canonical_retriever

__all__ = ["ExpectedFigure", "load_expected", "verify_report"]

_FIELDS = ("dataset", "retriever", "metric", "value", "tolerance")
_SCALARS = (str, int, float, bool, type(None), date)
"""What a field may hold (YAML reads an unquoted date as one). Anything else is refused by
its type: never turned into text, since a YAML alias bomb is a list of lists that shares
its items (cheap to load) and expands to billions of items when printed."""


@dataclass(frozen=True)
class ExpectedFigure:
    """One stored figure: ``metric`` of ``retriever`` on ``dataset`` is ``value`` within
    ``tolerance`` (absolute)."""

    dataset: str
    retriever: str
    metric: str
    value: float
    tolerance: float
    split: str | None = None

    def label(self) -> str:
        """``scifact/test keyword nDCG@10``."""
        where = self.dataset if self.split is None else f"{self.dataset}/{self.split}"
        return f"{where} {self.retriever} {self.metric}"


def load_expected(path: str | Path) -> list[ExpectedFigure]:
    """Read an expected-figures file (see the module docstring).

    Raises:
        ParseError: the file is missing, not valid YAML/JSON, or a figure lacks a field or
            has a bad value; the message names the figure by its position.
        MissingDependencyError: a YAML file without PyYAML installed.
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise ParseError(
            source, f"cannot read the expected figures ({exc.strerror or exc})"
        ) from exc
    if text_too_deep(text):  # flow brackets, counted before a recursive parser sees them
        raise ParseError(source, nesting_problem())
    if source.suffix.lower() in (".yaml", ".yml"):
        yaml = require("yaml", "eval", "pyyaml")
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ParseError(source, f"not valid YAML ({exc})") from exc
        except RecursionError:  # block nesting (indentation), which no bracket shows
            raise ParseError(source, nesting_problem()) from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ParseError(source, f"not valid JSON ({exc.msg}, line {exc.lineno})") from exc
    if isinstance(data, Mapping):
        data = data.get("figures")
    if not isinstance(data, list) or not data:
        msg = "expected a non-empty list of figures (or {figures: [...]}) with " + ", ".join(
            _FIELDS
        )
        raise ParseError(source, msg)
    return [_figure(source, number, entry) for number, entry in enumerate(data, start=1)]


def _figure(source: Path, number: int, entry: Any) -> ExpectedFigure:
    if not isinstance(entry, Mapping):
        kind = type(entry).__name__
        raise ParseError(source, f"figure {number}: expected a mapping, got a {kind}")
    missing = [name for name in _FIELDS if name not in entry]
    if missing:
        raise ParseError(source, f"figure {number}: missing {', '.join(missing)}")
    for name in (*_FIELDS, "split"):
        if not isinstance(entry.get(name), _SCALARS):
            kind = type(entry[name]).__name__
            msg = f"figure {number}: {name} must be one value (text or number), got a {kind}"
            raise ParseError(source, msg)
    try:
        value = _finite(entry["value"], "value")
        tolerance = _finite(entry["tolerance"], "tolerance")
        if tolerance < 0:
            msg = f"tolerance must be >= 0, got {tolerance!r}"
            raise ValueError(msg)
        metric = canonical_metric(str(entry["metric"]))
    except (ValueError, ConfigError) as exc:
        raise ParseError(source, f"figure {number}: {exc}") from None
    split = entry.get("split")
    return ExpectedFigure(
        dataset=str(entry["dataset"]),
        retriever=canonical_retriever(str(entry["retriever"])),
        metric=metric,
        value=value,
        tolerance=tolerance,
        split=None if split is None else str(split),
    )


def _finite(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        msg = f"{name} must be a finite number, got {value!r}"
        raise ValueError(msg)
    return float(value)


def verify_report(report: Mapping[str, Any], expected: Sequence[ExpectedFigure]) -> list[str]:
    """Check a report against expected figures.

    Returns:
        One message per figure that drifted beyond its tolerance or could not be checked;
        empty when every figure for the report's dataset holds.

    Raises:
        ConfigError: no expected figure is for the report's dataset and split.
    """
    dataset, split = str(report["dataset"]), str(report["split"])
    relevant = [
        figure
        for figure in expected
        if figure.dataset.lower() == dataset.lower() and figure.split in (None, split)
    ]
    if not relevant:
        msg = f"no expected figure is for {dataset} ({split}); nothing would be verified"
        raise ConfigError(msg)
    results = {canonical_retriever(name): entry for name, entry in report["results"].items()}
    problems = []
    for figure in relevant:
        entry = results.get(figure.retriever)
        if entry is None:
            problems.append(f"{figure.label()}: {figure.retriever} was not evaluated")
            continue
        actual = _report_value(entry, figure.metric)
        if actual is None:
            problems.append(f"{figure.label()}: the report has no {figure.metric}")
        elif abs(actual - figure.value) > figure.tolerance:
            problems.append(
                f"{figure.label()} drifted: {actual:.4f}, expected {figure.value:.4f} "
                f"± {figure.tolerance:g} (off by {actual - figure.value:+.4f})"
            )
    return problems


def _report_value(entry: Mapping[str, Any], metric: str) -> float | None:
    for key, value in entry.items():
        try:
            if canonical_metric(key) == metric and isinstance(value, (int, float)):
                return float(value)
        except ConfigError:
            continue
    return None
