"""Progress of long work: a bar per phase on a terminal, a log line every 30 s when piped.

A build has three phases that can each take minutes: parsing files, indexing chunks (BM25
tokenising) and embedding chunks; an evaluation adds its queries. On a terminal each phase
gets one tqdm bar with its rate and ETA, gone when the phase ends (``leave=False``), as
pip's and huggingface_hub's are. A pipe (CI logs, ``nohup``, ``| tee``) cannot redraw a bar:
tqdm's carriage returns would fill the log, and printing nothing for 23 minutes (what a
piped build did) looks like a hang. So there the same tqdm counter reports through logging
instead: an INFO record of the ``ragtools.progress`` logger about every :data:`LOG_INTERVAL`
seconds (``embedding: 1200/9732 chunks (12%), 45.1 chunks/s, ETA 03:08``) and one closing
record for a phase that logged any; work shorter than the interval logs nothing. Library
code prints nothing itself: the records reach a user only where logging is configured (the
``rag`` command shows them unless ``--quiet``; an application sees them at INFO).

``show_progress`` is the switch everywhere: ``True`` a bar even when not on a terminal,
``False`` nothing, ``None`` (the default) whatever :func:`default_progress` set for this
context, else a bar on a terminal and log records elsewhere. Phases advanced in uneven steps
(batches of texts) use :func:`counter`, so rate and ETA are in chunks, not batches.
"""

from __future__ import annotations

import functools
import io
import logging
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

logger = logging.getLogger("ragtools.progress")

LOG_INTERVAL = 30.0
"""Seconds between two progress records when stderr is not a terminal (tests lower it)."""

_DEFAULT: ContextVar[bool | None] = ContextVar("ragtools_show_progress", default=None)


@contextmanager
def default_progress(show_progress: bool | None) -> Iterator[None]:
    """Within the block, ``show_progress=None`` anywhere means ``show_progress``.

    The ``rag`` command runs ``--quiet`` commands under ``default_progress(False)``, so the
    phases its calls do not reach with an argument (the index's embedder) stay silent too.
    """
    token = _DEFAULT.set(show_progress)
    try:
        yield
    finally:
        _DEFAULT.reset(token)


def _resolved(show_progress: bool | None) -> bool | None:
    return _DEFAULT.get() if show_progress is None else show_progress


def should_show(show_progress: bool | None) -> bool:
    """Whether a bar is drawn: ``None`` (after :func:`default_progress`) means only when
    stderr is an interactive terminal."""
    resolved = _resolved(show_progress)
    if resolved is None:
        return sys.stderr.isatty()
    return resolved


def _bar(total: int | None, desc: str, unit: str, show_progress: bool | None) -> Any:
    """A tqdm counter for one phase: a bar, a logging one, or ``None`` for nothing."""
    resolved = _resolved(show_progress)
    if resolved is False:
        return None
    if resolved or sys.stderr.isatty():
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False)
    if not logger.isEnabledFor(logging.INFO):
        return None
    return _logging_bar()(
        total=total,
        desc=desc,
        unit=unit,
        file=io.StringIO(),  # never written: display() logs instead
        leave=False,
        mininterval=LOG_INTERVAL,
        delay=LOG_INTERVAL,
        miniters=1,  # check the clock at every update, so a slow phase still logs
    )


def progress(
    items: Iterable[T],
    *,
    total: int | None = None,
    desc: str = "",
    show_progress: bool | None = None,
    unit: str = "it",
) -> Iterator[T]:
    """Yield ``items``, counted by one phase's bar (or log records; see the module)."""
    bar = _bar(total, desc, unit, show_progress)
    if bar is None:
        yield from items
        return
    with bar:
        for item in items:
            yield item
            bar.update(1)


@contextmanager
def counter(
    total: int, *, desc: str = "", unit: str = "it", show_progress: bool | None = None
) -> Iterator[Callable[[int], object]]:
    """A phase of ``total`` units advanced by the callable it yields (``advance(n)``), for
    work done in uneven steps (batches of texts): its rate and ETA are in units, not steps."""
    bar = _bar(total, desc, unit, show_progress)
    if bar is None:
        yield lambda n: None
        return
    with bar:
        yield bar.update


def progress_line(
    desc: str, n: float, total: float | None, elapsed: float, rate: float | None, unit: str
) -> str:
    """One phase's state as a log line: ``parsing: 120/403 files (30%), 4.0 files/s, ETA
    01:10``; ``rate`` (units a second) is the elapsed average when ``None``."""
    from tqdm import tqdm

    if rate is None:
        rate = n / elapsed if elapsed > 0 else 0.0
    done = f"{n:g}/{total:g} {unit} ({100 * n / total:.0f}%)" if total else f"{n:g} {unit}"
    line = f"{desc}: {done}, {rate:.1f} {unit}/s"
    if total and rate > 0:
        line += f", ETA {tqdm.format_interval(max(total - n, 0) / rate)}"
    return line


@functools.cache
def _logging_bar() -> type[Any]:
    """tqdm, with its display turned into log records (tqdm's documented way to show
    progress elsewhere, as its ``contrib.telegram`` does)."""
    from tqdm import tqdm

    class LoggingBar(tqdm):  # type: ignore[misc]
        monitor_interval = 0  # no monitor thread: each update checks the clock itself

        def display(self, msg: str | None = None, pos: int | None = None) -> bool:
            info = self.format_dict
            if msg == "":  # close(): the phase is over; say so once if it said anything
                elapsed = info["elapsed"]
                rate = info["n"] / elapsed if elapsed > 0 else 0.0
                logger.info(
                    "%s: done, %g %s in %s, %.1f %s/s",
                    self.desc,
                    info["n"],
                    self.unit,
                    tqdm.format_interval(elapsed),
                    rate,
                    self.unit,
                )
                return False  # nothing was drawn, so close() writes no "\r"
            logger.info(
                "%s",
                progress_line(
                    self.desc, info["n"], info["total"], info["elapsed"], info["rate"], self.unit
                ),
            )
            return False

    return LoggingBar
