"""The per-file time budget: a parse that runs longer is stopped and becomes a ``ParseError``.

A crafted file can keep a parser busy for minutes (a PDF whose one big content stream is
shared by every page, a deeply nested document), so no single file may hold a batch up.
Two mechanisms enforce one budget:

* in a worker process (:mod:`parsers._pool`), the pool kills the worker once the budget and
  a grace period have passed: that stops even a parser stuck in C code, and the file is
  reported as a failure, never parsed again in the caller;
* in the calling process, which cannot be killed, an interval timer (``SIGALRM``) raises
  :class:`BudgetExceeded` in the parser's Python code when the budget is spent. That is
  available on POSIX in the main thread only; elsewhere (Windows, another thread) an
  in-process parse runs without a time budget, bounded by the size limits alone (zip
  members, text produced).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType

DEFAULT_TIME_BUDGET = 30.0
"""Seconds one file may take to parse; the longest real file seen (a 117-page PDF) takes
a fraction of that."""


class BudgetExceeded(BaseException):
    """Raised inside a parser when its time is up.

    A ``BaseException`` so that the broad ``except Exception`` of library code (pypdf
    retries damaged objects that way) does not swallow it.
    """


def budget_message(seconds: float) -> str:
    """The failure message of a file that ran out of time."""
    return (
        f"parsing took longer than the time budget of {seconds:g} s and was stopped; "
        "raise time_budget if the file is genuine"
    )


def _usable(seconds: float | None) -> bool:
    return (
        seconds is not None
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )


@contextlib.contextmanager
def time_budget(seconds: float | None) -> Iterator[None]:
    """Raise :class:`BudgetExceeded` in this block once ``seconds`` have passed.

    ``None`` disables it. An outer timer that expires sooner (pytest-timeout's, say) is left
    in charge; a later one is restored, with its remaining time, when the block ends.
    """
    if seconds is None or not _usable(seconds):
        yield
        return
    outer_delay, outer_interval = signal.getitimer(signal.ITIMER_REAL)
    if 0 < outer_delay <= seconds:
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise BudgetExceeded

    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_delay > 0:
            left = max(outer_delay - (time.monotonic() - started), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, outer_interval)
