"""Progress bars for long work: shown on a terminal, silent when piped or when asked."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def should_show(show_progress: bool | None) -> bool:
    """``None`` means: show only when stderr is an interactive terminal."""
    if show_progress is None:
        return sys.stderr.isatty()
    return show_progress


def progress(
    items: Iterable[T],
    *,
    total: int | None = None,
    desc: str = "",
    show_progress: bool | None = None,
    unit: str = "it",
) -> Iterator[T]:
    """Wrap ``items`` in a tqdm bar on stderr when :func:`should_show` says so."""
    if not should_show(show_progress):
        yield from items
        return
    from tqdm.auto import tqdm

    yield from tqdm(items, total=total, desc=desc, unit=unit, file=sys.stderr, leave=False)
