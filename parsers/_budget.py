"""The per-file budgets: a parse that runs longer than its time, or produces more text than
:data:`MAX_TEXT_CHARS`, is stopped and becomes a ``ParseError``.

A crafted file can keep a parser busy for minutes (a PDF whose one big content stream is
shared by every page, a deeply nested document), so no single file may hold a batch up.
The budget covers the whole per-file work: the parse, and what the consumer of a file's
documents does with them when it takes them as they come (an index build splits them into
chunks there: :class:`~parsers.loading.DocumentSink`); a file whose split overruns fails
like one whose parse does, and what it had produced is dropped. Two mechanisms enforce one
budget:

* in a worker process (:mod:`parsers._pool`), the pool kills the worker once the budget and
  a grace period have passed: that stops even a parser stuck in C code, and the file is
  reported as a failure, never parsed again in the caller (its documents then reach the
  consumer in the caller, under a budget of the same size there);
* in the calling process, which cannot be killed, an interval timer (``SIGALRM``) raises
  :class:`BudgetExceeded` in the parser's Python code when the budget is spent. That is
  available on POSIX in the main thread only; elsewhere (Windows, another thread) an
  in-process parse runs without a time budget, bounded by the size limits alone (zip
  members, text produced). Callers that run in threads (the agents' file tools, under a
  ``ToolsNode``) therefore use :func:`~ragtools.parsers.loading.load_isolated`, which
  parses in a worker process of its own under both the time budget and a memory bound
  (:data:`DEFAULT_MEMORY_LIMIT`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType

from ragtools.parsers.errors import ParseError

DEFAULT_TIME_BUDGET = 30.0
"""Seconds one file may take to parse; the longest real file seen (a 117-page PDF) takes
a fraction of that."""


BUDGET_BYTES_PER_SECOND = 256 * 1024
"""Bytes of a file that earn it one second more than the time budget: a large valid file
(a JSON of a million records, a CSV of half a million rows) takes time in proportion to its
size, while a small crafted one that blows up (a bomb) does not earn any."""


FLAT_BUDGET_FORMATS = frozenset({"text", "markdown"})
"""Formats whose budget does not grow with the file: their parse is a linear pass (decode,
normalise, find headings) at several megabytes a second, so a file of ``max_bytes`` (100
MiB) fits the flat budget, and a hostile one reaches its named error within it instead of
after 30 s + 400 s. Every other format scales: records (a Python step per record: the JSON
of 10^6 records genuinely needs minutes on a busy machine), HTML (trafilatura's pass over a
9 MB page of paragraphs takes several seconds a megabyte), PDF and Office files (work per
page, slide, sheet or paragraph: a DOCX of 300,000 headings); a hostile file of those may
take up to its scaled budget."""


def file_budget(seconds: float | None, size: int, parser: str) -> float | None:
    """The time budget of one file of ``size`` bytes read by ``parser`` (a format's name):
    ``seconds`` (``None``: no limit), plus a second per :data:`BUDGET_BYTES_PER_SECOND` unless
    the format is in :data:`FLAT_BUDGET_FORMATS`, so the budget scales with the work a
    genuine file of that size needs (a 39 MB JSON of 10^6 records: 30 s + 149 s)."""
    if seconds is None or parser in FLAT_BUDGET_FORMATS:
        return seconds
    return seconds + size / BUDGET_BYTES_PER_SECOND


MAX_TEXT_CHARS = 20_000_000
"""Characters of text one file may produce (some 10,000 pages): a small file that repeats
one string or drawing (shared cells, one content stream drawn by every page) cannot grow
into gigabytes of text."""


DEFAULT_MEMORY_LIMIT = 1024 * 1024 * 1024
"""Bytes of address space (``RLIMIT_AS``) a worker process parsing one file in isolation may
use: parsing the largest file ``max_bytes`` admits takes a few hundred MiB (the bytes, the
decoded text, its normal form), and a decompression or cell-range bomb is stopped here long
before it can press on the machine."""


class TextLimit:
    """Counts the characters one file produces and stops it past :data:`MAX_TEXT_CHARS`."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.used = 0

    def add(self, text: str) -> str:
        self.count(len(text))
        return text

    def count(self, characters: int) -> None:
        """Raises: ParseError: past the limit."""
        self.used += characters
        if self.used > MAX_TEXT_CHARS:
            msg = (
                f"produced more than {MAX_TEXT_CHARS} characters of text, the limit per "
                "file (the same content repeated many times?); parsing was stopped"
            )
            raise ParseError(self.source, msg)


class BudgetExceeded(BaseException):
    """Raised inside a parser when its time is up.

    A ``BaseException`` so that the broad ``except Exception`` of library code (pypdf
    retries damaged objects that way) does not swallow it.
    """


def budget_message(seconds: float) -> str:
    """The failure message of a file that ran out of time."""
    return (
        f"parsing took longer than the time budget of {round(seconds, 1):g} s (time_budget, "
        f"and for most formats a second per {BUDGET_BYTES_PER_SECOND // 1024} KiB of the "
        "file) and was stopped; raise time_budget if the file is genuine"
    )


def memory_message(limit: int | None) -> str:
    """The failure message of a file whose parse ran out of memory."""
    bound = "the memory available" if limit is None else f"the memory limit of {limit} bytes"
    return (
        f"parsing needed more than {bound} and was stopped (a file that expands "
        "enormously?); raise memory_limit if the file is genuine"
    )


def _usable(seconds: float | None) -> bool:
    return (
        seconds is not None
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )


_REPEAT = 0.1
"""Seconds after which an expired budget raises again: Python drops an exception raised
where it cannot propagate (a garbage-collector callback, a ``__del__``, a weakref callback,
any of which a signal can interrupt), so one raise is not enough to stop the block."""


@contextlib.contextmanager
def time_budget(seconds: float | None) -> Iterator[None]:
    """Raise :class:`BudgetExceeded` in this block once ``seconds`` have passed, and again
    every :data:`_REPEAT` seconds until the block is left.

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
    signal.setitimer(signal.ITIMER_REAL, seconds, _REPEAT)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_delay > 0:
            left = max(outer_delay - (time.monotonic() - started), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, outer_interval)
