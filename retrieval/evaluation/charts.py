"""PNG charts of evaluation results: the report's bars and a comparison's per-query deltas.

matplotlib's Agg canvas through the object API (no ``pyplot``, no global backend switch),
imported lazily: matplotlib is the ``eval`` extra.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragtools.parsers.optional import require
from ragtools.retrieval.evaluation._io import atomic_write

__all__ = ["write_delta_chart", "write_report_chart"]

_SERIES = (("nDCG@10", "#4C72B0"), ("R@100", "#DD8452"))


def _figure(width: float, height: float) -> Any:
    require("matplotlib", "eval")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=110)
    FigureCanvasAgg(figure)
    return figure


def _save(figure: Any, path: Path) -> Path:
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return atomic_write(path, buffer.getvalue())


def write_report_chart(report: Mapping[str, Any], path: str | Path) -> Path:
    """A grouped bar chart of nDCG@10 and R@100 per retriever, with the bootstrap 95%
    interval of each mean as an error bar where the report has one (``ci95``)."""
    names = list(report["results"])
    series = _series(list(report["results"].values()))
    figure = _figure(max(6.0, 1.2 + 1.6 * len(names)), 4.5)
    axes = figure.add_subplot()
    width = 0.8 / max(1, len(series))
    with_errors = False
    for index, (key, color) in enumerate(series):
        offsets = [i + (index - (len(series) - 1) / 2) * width for i in range(len(names))]
        entries = [report["results"][name] for name in names]
        values = [entry[key] for entry in entries]
        errors = _error_bars(entries, key)
        with_errors = with_errors or errors is not None
        bars = axes.bar(
            offsets, values, width, label=key, color=color, yerr=errors, capsize=3 if errors else 0
        )
        if errors:  # inside the bar, clear of the error bar above it
            axes.bar_label(bars, fmt="%.3f", label_type="center", color="white", fontsize=8)
        else:
            axes.bar_label(bars, fmt="%.3f", padding=2, fontsize=8)
    axes.set_xticks(range(len(names)), names)
    pad = 0.6 + max(0, 3 - len(names)) * 0.5  # keep bars narrow when few retrievers
    axes.set_xlim(-pad, len(names) - 1 + pad)
    axes.set_ylim(0.0, 1.08)
    axes.set_ylabel("score (error bars: bootstrap 95% CI)" if with_errors else "score")
    axes.set_title(
        f"{report['dataset']} ({report['split']}, {report['num_queries']} queries)", loc="left"
    )
    axes.grid(axis="y", alpha=0.3)
    axes.set_axisbelow(True)
    # Above the plot area, so it never hides a bar close to 1.0.
    if series:
        axes.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=2, frameon=False)
    return _save(figure, Path(path))


def _series(entries: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """nDCG@10 and R@100, or for runs too shallow for them the deepest nDCG and R cut-off
    every retriever has."""
    chosen = []
    for preferred, color in _SERIES:
        measure = preferred.partition("@")[0] + "@"
        shared = [
            key
            for key in entries[0]
            if key.startswith(measure) and key[len(measure) :].isdigit()
            and all(key in entry for entry in entries)
        ]  # fmt: skip
        if preferred in shared:
            chosen.append((preferred, color))
        elif shared:
            chosen.append((max(shared, key=lambda key: int(key.partition("@")[2])), color))
    return chosen


def _error_bars(entries: Sequence[Mapping[str, Any]], key: str) -> list[list[float]] | None:
    """matplotlib's asymmetric ``yerr`` (distances below and above each mean), or ``None``
    unless every entry has an interval for ``key``."""
    intervals = [entry.get("ci95", {}).get(key) for entry in entries]
    if any(interval is None for interval in intervals):
        return None
    below = [max(0.0, e[key] - lo) for e, (lo, _) in zip(entries, intervals, strict=True)]
    above = [max(0.0, hi - e[key]) for e, (_, hi) in zip(entries, intervals, strict=True)]
    return [below, above]


def write_delta_chart(
    deltas: Mapping[str, Sequence[float]], baseline: str, metric: str, path: str | Path
) -> Path:
    """One panel per system: its per-query ``metric`` minus the baseline's, sorted, so the
    share of queries won, tied and lost and the size of each change are visible at once.

    Args:
        deltas: ``{system: per-query differences}``.
        baseline: the baseline's name, for the titles.
        metric: the metric's name, for the axis label.
        path: the PNG to write.
    """
    names = list(deltas) or ["(no other system)"]
    figure = _figure(8.0, 1.0 + 2.4 * len(names))
    for row, name in enumerate(names, start=1):
        axes = figure.add_subplot(len(names), 1, row)
        values = sorted(deltas.get(name, ()), reverse=True)
        colors = ["#55A868" if v > 0 else "#C44E52" if v < 0 else "#999999" for v in values]
        axes.bar(range(len(values)), values, width=1.0, color=colors)
        axes.axhline(0.0, color="black", linewidth=0.6)
        wins = sum(v > 0 for v in values)
        losses = sum(v < 0 for v in values)
        axes.set_title(
            f"{name} − {baseline}: {wins} better, {len(values) - wins - losses} equal, "
            f"{losses} worse",
            loc="left",
            fontsize=9,
        )
        axes.set_ylabel(f"Δ {metric}")
        axes.set_xlim(-0.5, max(len(values), 1) - 0.5)
        axes.set_xticks([])
    figure.axes[-1].set_xlabel("queries, sorted by difference")
    return _save(figure, Path(path))
