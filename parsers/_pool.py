"""The worker processes behind :func:`~ragtools.parsers.loading.load_dir` and ``load_files``.

Kept apart from ``loading.py`` so the public module holds the API and its rules (which files
are read, skipped or refused), and this one the parallel machinery: which files go to a pool
and how big it is, splitting a long PDF by pages and a big record file into parts, the
worker entry points, and gathering the JSON answers and the workers' log records back in the
caller; and :func:`run_isolated`, one file parsed in a worker process of its own (the agents'
file tools).

Processes, because pypdf and the Office libraries are pure Python (threads would serialise
on the GIL). The pool is used only when it pays: PDF and Office files totalling
``POOL_MIN_BYTES`` (or ``workers`` given explicitly); a PDF of ``SHARD_MIN_BYTES`` or more is
split by pages over the workers. A CSV or JSON file of ``PARTS_MIN_BYTES`` or more is cut
into two parts when the caller's sink can take parts (:class:`SinkParts`): a worker sends no
documents back (a million would cost more as JSON than they save) but the state of a sink of
its own, which the caller's sink adopts. Start method: ``fork`` on Linux when the caller has a
single thread (instant, and scripts need no ``__main__`` guard), else ``spawn`` (and parts
only when the caller's ``__main__`` is not run again by a spawned child: a notebook's).
Results come back as JSON text, and the workers' log records (the scanned-page warnings) are
re-emitted in the caller's loggers.

This module imports nothing from ``loading.py``; ``loading.py`` imports from it. That keeps
the import graph acyclic, which matters because ``spawn`` and ``forkserver`` children import
:func:`_init_worker` and :func:`_work` by this module's path. For the same reason the parser
boundary :func:`run_parser`, which ``load`` and the workers share, lives here, and failures travel
as :data:`_Failure` tuples that ``loading.py`` turns into ``FileError``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, wait
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures import as_completed as _as_completed
from dataclasses import dataclass, field
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any, Protocol

from pebble import ProcessExpired, ProcessPool
from pydantic import JsonValue

from ragtools.parsers import office, pdf, records  # noqa: F401  (the formats workers parse)
from ragtools.parsers._budget import (
    BudgetExceeded,
    budget_message,
    file_budget,
    memory_message,
    time_budget,
)
from ragtools.parsers.document import Document, iter_without_surrogates, warn_replaced
from ragtools.parsers.errors import ParseError, PasswordRequiredError, RetrievalError
from ragtools.parsers.file_metadata import FILE_NAMES, with_file_metadata
from ragtools.parsers.registry import ParserSpec, get_parser

logger = logging.getLogger(__name__)

#: Total size of PDF/Office files from which a process pool is worth its start-up cost.
POOL_MIN_BYTES = 1024 * 1024
#: PDFs at least this big are split by pages over the workers: one long file would
#: otherwise keep one core busy while the other idles (117-page GeoTopo: 5 s of 6).
SHARD_MIN_BYTES = 512 * 1024
_HEAVY = frozenset({"pdf", "docx", "pptx", "xlsx"})
#: A light format's file from this size on is parsed in a worker too, whatever the batch:
#: its parser may spend minutes inside C code (lxml on an HTML of 500,000 attributes), where
#: the in-process timer cannot stop it, and only a worker can be killed.
GUARD_MIN_BYTES = 1024 * 1024
#: Light formats left in the calling process at any size: their parsers loop in Python over
#: the records (the timer stops them between two), and a worker would send a million
#: documents back as JSON, doubling the cost of a genuine large file.
_STREAMED = records.PARTED
#: A record file from this size on is parsed in parts by the workers when the caller's
#: sink can take parts (:class:`SinkParts`): each part's documents go to a sink of the
#: worker's own, so nothing travels back but what the caller's sink needs to adopt them.
PARTS_MIN_BYTES = 2 * 1024 * 1024
#: Parts a record file is cut into at most: each part's worker reads and decodes the whole
#: file (its records decide what every part makes of them), so memory grows with the parts,
#: while two already halve the time of the documents and chunks, most of the work.
MAX_PARTS = 2
#: Seconds past the time budget before the pool kills a worker: time for the worker's own
#: timer to report the file, which it can do unless the parser is stuck in C code.
_GRACE = 5.0
#: Seconds between two looks at an isolated parse's ``cancelled`` while its worker runs.
_POLL = 0.05
#: The address-space bound of this process when it is an isolated worker (else ``None``).
_MEMORY_LIMIT: int | None = None

_Failure = tuple[str, str, str]
"""A file that failed: ``(path, exception class name, message)``, the fields of FileError."""
Outcome = list[Document] | _Failure


def failure(source: str, exc: Exception) -> _Failure:
    return (source, type(exc).__name__, str(exc))


def _parsed(
    spec: ParserSpec, file: Path, source: str, password: str | None, part: tuple[int, int]
) -> Iterator[Document]:
    """The parser's documents (of share ``part = (number, parts)`` of a record file's
    records, see :func:`~parsers.records.parse_part`), one at a time, as the parser made
    them; every failure of the parser becomes a ``ParseError`` (what the consumer of the
    documents raises is its own and passes through unchanged). The loader gives them the
    file's ``source`` and metadata once, when it finishes them (:func:`finished`)."""
    number, parts = part
    try:
        made = (
            spec.fn(file, source=source, password=password)
            if parts == 1
            else records.parse_part(spec.name, file, source=source, part=number, parts=parts)
        )
        for document in made:
            if not isinstance(document, Document):
                name = type(document).__name__
                msg = f"parser {spec.name} produced a {name}, not a Document"
                raise ParseError(source, msg)
            yield document
    except (ParseError, MemoryError):
        raise
    except RetrievalError as exc:  # e.g. MissingDependencyError: keep its actionable message
        raise ParseError(source, str(exc)) from exc
    except Exception as exc:  # the boundary: no third-party exception escapes load()
        msg = f"the {spec.name} parser failed ({type(exc).__name__}: {exc})"
        raise ParseError(source, msg) from exc


def run_parser(
    spec: ParserSpec,
    file: Path,
    source: str,
    password: str | None,
    budget: float | None,
    then: Callable[[Iterator[Document]], None] | None = None,
    part: tuple[int, int] = (0, 1),
) -> list[Document]:
    """Run one parser under the time budget; every failure becomes a ``ParseError``.

    With ``then``, the documents are not collected: ``then`` consumes them as the parser
    makes them, inside the same budget (a file of a million records is never a list of a
    million documents, and what ``then`` does with them, splitting, is bounded with the
    parse), and the list returned is empty. ``part`` is ``(number, parts)`` for one share
    of a record file (:func:`~parsers.records.parse_part`), else the whole file.
    """
    try:
        with time_budget(budget):
            documents = _parsed(spec, file, source, password, part)
            if then is not None:
                then(documents)
                return []
            parsed = list(documents)
    except BudgetExceeded:
        raise ParseError(source, budget_message(budget or 0)) from None
    except MemoryError:
        raise ParseError(source, memory_message(_MEMORY_LIMIT)) from None
    logger.debug("%s: %d documents (%s)", source, len(parsed), spec.name)
    return parsed


@dataclass(frozen=True)
class Task:
    index: int
    file: Path
    source: str
    """The file as the caller spelt it: what parsers and error messages name."""
    spec: ParserSpec
    size: int
    password: str | None = None
    name: str = ""
    """The ``source`` its documents get (relative to the root); ``""``: ``source``."""
    metadata: dict[str, JsonValue] = field(default_factory=dict)
    """``path``, ``file_type``, ``mtime`` and ``size`` for its documents."""


def finished(
    task: Task, documents: Iterable[Document], counted: Callable[[int], None], *, warn: bool = True
) -> Iterator[Document]:
    """A file's documents as the loader returns them: lone surrogates replaced (counted, and
    logged once the file is read unless ``warn`` is false: a part's are logged with the
    file's total), its ``source`` relative to the root, and the file's metadata."""

    def replaced(total: int) -> None:
        if warn:
            warn_replaced(task.source, total)
        counted(total)

    name = task.name or task.source
    for document in iter_without_surrogates(documents, task.source, FILE_NAMES, replaced):
        yield with_file_metadata(document, name, task.metadata)


class PartSink(Protocol):
    """Where a worker puts the documents of its part of a file (:class:`SinkParts`)."""

    def take(self, file: int, documents: Iterable[Document]) -> None:
        """Consume the part's documents, in order."""

    def state(self, file: int) -> JsonValue:
        """What the caller's sink needs to adopt the part, once it is taken (JSON)."""

    def close(self) -> None:
        """Release what the sink holds open (its files stay, for the caller to adopt)."""


class SinkParts(Protocol):
    """The recipe of a caller's sink for the parts of its files: it travels to the workers
    (picklable), each of which opens a sink of its own with it."""

    def open(self, file: int, part: int) -> PartSink:
        """A new sink for part ``part`` of the batch's file ``file``."""


class _Collector(logging.Handler):
    """Keeps a worker's WARNING+ records so the parent can re-emit them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[tuple[str, int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.name, record.levelno, record.getMessage()))


_COLLECTOR: _Collector | None = None


def _init_worker() -> None:
    """Route a worker's log records to the collector only (a forked worker inherits the
    caller's handlers, which would print every warning twice)."""
    global _COLLECTOR
    _COLLECTOR = _Collector()
    for other in logging.Logger.manager.loggerDict.values():
        if isinstance(other, logging.Logger):
            other.handlers.clear()
    logging.getLogger().handlers[:] = [_COLLECTOR]


def _work(
    path: str,
    source: str,
    parser: str,
    shard: int,
    shards: int,
    password: str | None,
    budget: float | None,
) -> str:
    """Worker process entry: parse one file (or one shard of a PDF's pages); JSON answer."""
    if _COLLECTOR is not None:
        _COLLECTOR.records.clear()
    answer: dict[str, Any] = {"documents": [], "error": None, "pages": None}
    try:
        if shards > 1:
            with time_budget(budget):
                pages = pdf.extract_pages(Path(path), source, password, shard=shard, shards=shards)
            answer["pages"] = [
                pages.n_pages,
                pages.no_text,
                pages.failed,
                pages.blank,
                pages.garbled,
                sorted(pages.limited.items()),
            ]
            documents = pages.documents
        else:
            documents = run_parser(get_parser(parser), Path(path), source, password, budget)
        answer["documents"] = [d.model_dump(mode="json") for d in documents]
    except BudgetExceeded:
        answer["error"] = ["ParseError", f"{source}: {budget_message(budget or 0)}"]
    except ParseError as exc:
        answer["error"] = [type(exc).__name__, str(exc)]
    except Exception as exc:  # extract_pages outside run_parser's boundary: wrap the same way
        message = f"{source}: the {parser} parser failed ({type(exc).__name__}: {exc})"
        answer["error"] = ["ParseError", message]
    answer["logs"] = list(_COLLECTOR.records) if _COLLECTOR is not None else []
    return json.dumps(answer, ensure_ascii=False)


def _work_part(task: Task, part: int, parts: int, budget: float | None, recipe: SinkParts) -> str:
    """Worker process entry: parse part ``part`` of ``parts`` of a record file into a sink
    opened from ``recipe``, finished as the loader finishes documents; JSON answer with the
    sink's state (an ``OSError``, a full disk, travels back as ``[errno, message]``)."""
    if _COLLECTOR is not None:
        _COLLECTOR.records.clear()
    answer: dict[str, Any] = {"error": None, "oserror": None, "state": None}
    replaced: list[int] = []
    delivered = 0

    def counted(documents: Iterable[Document]) -> Iterator[Document]:
        nonlocal delivered
        for document in documents:
            delivered += 1
            yield document

    sink: PartSink | None = None
    try:
        sink = taker = recipe.open(task.index, part)
        run_parser(
            task.spec,
            task.file,
            task.source,
            task.password,
            budget,
            lambda documents: taker.take(
                task.index, counted(finished(task, documents, replaced.append, warn=False))
            ),
            (part, parts),
        )
        answer["state"] = sink.state(task.index)
    except ParseError as exc:
        answer["error"] = [type(exc).__name__, str(exc)]
    except OSError as exc:
        answer["oserror"] = [exc.errno, exc.strerror or str(exc), exc.filename]
    except Exception as exc:  # the sink's own failure: this file fails, with its cause
        cause = f"{type(exc).__name__}: {exc}"
        message = f"{task.source}: taking part {part + 1} of {parts} failed ({cause})"
        answer["error"] = ["ParseError", message]
    finally:
        if sink is not None:
            sink.close()
    answer["replaced"] = sum(replaced)
    answer["delivered"] = delivered
    answer["logs"] = list(_COLLECTOR.records) if _COLLECTOR is not None else []
    return json.dumps(answer, ensure_ascii=False)


def _replay_logs(answer: dict[str, Any]) -> None:
    """Emit a worker's log records in this process's loggers."""
    for name, level, message in answer["logs"]:
        logging.getLogger(name).log(level, "%s", message)


def _merge(task: Task, answers: list[dict[str, Any]]) -> Outcome:
    """Combine the answers of a file's shards (one answer when it was not sharded)."""
    for answer in answers:
        if answer["error"] is not None:
            return (task.source, answer["error"][0], answer["error"][1])
    documents = [Document.model_validate(d) for a in answers for d in a["documents"]]
    if answers[0]["pages"] is None:
        return documents
    pages = pdf.PdfPages(
        n_pages=answers[0]["pages"][0],
        documents=documents,
        no_text=sorted(p for a in answers for p in a["pages"][1]),
        failed=sorted(p for a in answers for p in a["pages"][2]),
        blank=sorted(p for a in answers for p in a["pages"][3]),
        garbled=sorted(p for a in answers for p in a["pages"][4]),
        limited=dict(sorted((page, why) for a in answers for page, why in a["pages"][5])),
    )
    try:
        return pdf.finish_pages(task.source, pages)
    except ParseError as exc:
        return failure(task.source, exc)


class Delivery(Protocol):
    """Where the documents of each file go when they are not collected (``load_files``'s
    ``sink``): :meth:`take` runs inside the file's time budget."""

    def take(self, task: Task, documents: Iterable[Document]) -> None:
        """Consume the documents of ``task``'s file, in the parser's order."""

    def drop(self, task: Task) -> None:
        """Forget what :meth:`take` kept of ``task``'s file: it failed part-way."""

    @property
    def parts(self) -> SinkParts | None:
        """The recipe of sinks for parts of a file, or ``None``: files are taken whole."""

    def adopt(self, task: Task, answers: list[dict[str, Any]]) -> None:
        """Take ``task``'s file from the answers of its parts, in order (each has the part
        sink's ``state``, and the ``replaced`` and ``delivered`` counts)."""

    def discard(self, task: Task, parts: int) -> None:
        """Forget the parts of ``task``'s file: one of them failed."""


def _attempt(task: Task, budget: float | None, delivery: Delivery | None) -> Outcome:
    then = None if delivery is None else functools.partial(delivery.take, task)
    try:
        seconds = file_budget(budget, task.size, task.spec.name)
        return run_parser(task.spec, task.file, task.source, task.password, seconds, then)
    except ParseError as exc:
        if delivery is not None:
            delivery.drop(task)
        return failure(task.source, exc)


def _deliver(
    task: Task, documents: list[Document], budget: float | None, delivery: Delivery
) -> Outcome:
    """Hand a worker's documents to ``delivery`` under the file's time budget (a second
    budget: the worker spent its own on the parse, and this runs where the timer works)."""
    seconds = file_budget(budget, task.size, task.spec.name)
    try:
        with time_budget(seconds):
            delivery.take(task, documents)
    except BudgetExceeded:
        delivery.drop(task)
        return failure(task.source, ParseError(task.source, budget_message(seconds or 0)))
    return []


def _adopt(task: Task, answers: list[dict[str, Any]], delivery: Delivery) -> Outcome:
    """Hand the parts of a record file, parsed by the workers into sinks of their own, to
    ``delivery``: the file fails with its first failed part's error, the one a whole parse
    reports (see :func:`~parsers.records.parse_part`), and a full disk stops the batch as it
    does in this process."""
    for answer in answers:
        if answer["oserror"] is not None:
            delivery.discard(task, len(answers))
            number, message, filename = answer["oserror"]
            raise OSError(number, message, filename)
    for answer in answers:
        if answer["error"] is not None:
            delivery.discard(task, len(answers))
            return (task.source, answer["error"][0], answer["error"][1])
    delivery.adopt(task, answers)
    warn_replaced(task.source, sum(answer["replaced"] for answer in answers))
    return []


def _lost(task: Task, exc: BaseException, budget: float | None) -> _Failure:
    """The failure of a file whose worker did not answer: killed at the time budget, or
    dead (a crash, or out of memory). It is never parsed again here: a file that can kill
    a worker would take the caller down with it."""
    seconds = file_budget(budget, task.size, task.spec.name)
    return failure(task.source, ParseError(task.source, _lost_message(exc, seconds, None)))


def _lost_message(exc: BaseException, budget: float | None, memory_limit: int | None) -> str:
    if isinstance(exc, FutureTimeout):
        return budget_message(budget or 0)
    if isinstance(exc, MemoryError):
        return memory_message(memory_limit)
    if isinstance(exc, ProcessExpired):
        bound = "" if memory_limit is None else f", at its memory limit of {memory_limit} bytes?"
        return f"the worker process parsing it died ({exc}{bound}); the file was not parsed"
    return f"the worker process parsing it failed ({type(exc).__name__}: {exc})"


def _heavy(task: Task) -> bool:
    return task.spec.builtin and task.spec.name in _HEAVY


def _guarded(task: Task) -> bool:
    """A large file of a light format whose parser could be stuck in C code (see
    :data:`GUARD_MIN_BYTES`)."""
    light = task.spec.name not in _HEAVY | _STREAMED
    return task.spec.builtin and light and task.size >= GUARD_MIN_BYTES


def _parted(task: Task, size: int, recipe: SinkParts | None) -> bool:
    """A record file big enough to be parsed in parts, for a sink that takes parts, by
    more than one worker, started by ``fork``, or by ``spawn`` from a caller whose
    ``__main__`` a spawned child does not run again (:func:`_main_runs_again`)."""
    streamed = task.spec.builtin and task.spec.name in _STREAMED
    startable = _mp_context().get_start_method() == "fork" or not _main_runs_again()
    big = task.size >= PARTS_MIN_BYTES
    return recipe is not None and size > 1 and streamed and big and startable


def _main_runs_again() -> bool:
    """Whether a spawned child would run the caller's ``__main__`` again, as
    :mod:`multiprocessing` prepares one: a script's or a ``-m`` module's, which would start
    its work over unless it is behind a ``__main__`` guard (this module cannot tell). A
    notebook's, the REPL's or ``python -c``'s has neither a file nor a module name, so a
    caller with threads there (a Jupyter kernel always has some) still gets parts; a
    script with threads takes the file whole in its own process, which always works."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return getattr(spec, "name", None) is not None or getattr(main, "__file__", None) is not None


def _pooled(task: Task, size: int, recipe: SinkParts | None) -> bool:
    return _heavy(task) or _guarded(task) or _parted(task, size, recipe)


def _shards(task: Task, size: int, recipe: SinkParts | None = None) -> int:
    """The jobs ``task``'s file is cut into for ``size`` workers: a long PDF's page shards,
    a big record file's parts."""
    if _parted(task, size, recipe):
        return min(size, MAX_PARTS)
    return size if task.spec.name == "pdf" and task.size >= SHARD_MIN_BYTES else 1


def _in_parts(task: Task, jobs: int) -> bool:
    """Whether ``task``'s file went to the workers in parts (:func:`_parted`), given the
    number of its jobs."""
    return jobs > 1 and task.spec.builtin and task.spec.name in _STREAMED


def pool_size(tasks: list[Task], workers: int | None, recipe: SinkParts | None = None) -> int:
    """Workers to start: none for a batch that does not repay them, at least one for a
    :func:`_guarded` file (unless ``workers`` is 1: everything in the calling process), and
    one per part (:data:`MAX_PARTS`) for a record file parsed in parts."""
    if multiprocessing.current_process().daemon:
        return 0  # daemonic processes, e.g. pool workers, may not start processes
    available = workers or os.cpu_count() or 1
    parted = available > 1 and any(_parted(t, available, recipe) for t in tasks)
    parts = min(available, MAX_PARTS) if parted else 0
    return max(parts, _format_workers(tasks, workers, available))


def _format_workers(tasks: list[Task], workers: int | None, available: int) -> int:
    """:func:`pool_size` for the heavy and guarded formats (``available``: ``workers``, or
    the machine's cores)."""
    heavy = [t for t in tasks if _heavy(t)]
    big = any(_shards(t, 2) > 1 for t in heavy)
    guarded = workers != 1 and any(_guarded(t) for t in tasks)
    if not guarded and (not heavy or (len(heavy) < 2 and not big)):
        return 0
    if workers is None and not guarded and sum(t.size for t in heavy) < POOL_MIN_BYTES:
        return 0
    size = available if big else min(available, len([t for t in tasks if _pooled(t, 1, None)]))
    return size if size > 1 or guarded else 0


def _mp_context() -> BaseContext:
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


Jobs = dict[Future[str], tuple[Task, int, int]]  # future -> (task, shard, shards)


def submit(
    tasks: list[Task],
    size: int,
    stack: contextlib.ExitStack,
    budget: float | None,
    recipe: SinkParts | None = None,
) -> Jobs:
    """Start ``size`` workers (stopped with ``stack``) and send them the heavy files, big PDFs
    split in ``size`` page shards, and big record files in up to :data:`MAX_PARTS` parts,
    each parsed into a sink opened from ``recipe``.

    pebble's pool, unlike the standard library's, survives a worker's death: only that
    worker's file fails (``ProcessExpired``), and a file past its time budget has its worker
    killed and replaced.
    """
    jobs = [  # (decided before the pool's threads start: they make the context spawn's)
        (t, n, _shards(t, size, recipe))
        for t in tasks
        if _pooled(t, size, recipe)
        for n in range(_shards(t, size, recipe))
    ]
    pool = ProcessPool(size, initializer=_init_worker, context=_mp_context())
    stack.callback(pool.join)
    stack.callback(pool.stop)  # runs first: kills what is left when the caller gives up
    jobs.sort(key=lambda job: -job[0].size / job[2])  # longest first: no lone straggler
    logger.debug("parsing in %d processes: %d jobs", size, len(jobs))
    futures: Jobs = {}
    for task, shard, shards in jobs:
        # a shard or a part has a share of the work and all the time: the file's
        seconds = file_budget(budget, task.size, task.spec.name)
        timeout = None if seconds is None else seconds + _GRACE
        if recipe is not None and _in_parts(task, shards):
            future = pool.schedule(
                _work_part, args=(task, shard, shards, seconds, recipe), timeout=timeout
            )
        else:
            args = (str(task.file), task.source, task.spec.name, shard, shards, task.password)
            future = pool.schedule(_work, args=(*args, seconds), timeout=timeout)
        futures[future] = (task, shard, shards)
    return futures


def execute(
    tasks: list[Task],
    jobs: Jobs,
    results: dict[int, Outcome],
    budget: float | None,
    delivery: Delivery | None = None,
) -> Iterator[None]:
    """Parse the files not sent to the pool here, then collect the pool's answers; with
    ``delivery``, each file's documents go there (its outcome is then an empty list)."""
    pooled = {task.index for task, _, _ in jobs.values()}
    for task in tasks:
        if task.index not in pooled:
            results[task.index] = _attempt(task, budget, delivery)
            yield
    answers: dict[int, list[dict[str, Any] | None]] = {}
    for future in _as_completed(jobs):
        task, shard, shards = jobs[future]
        if task.index in results:  # another shard of the file failed already
            continue
        try:
            answer = json.loads(future.result())
        except Exception as exc:  # killed at the budget, or died: that file fails alone
            logger.warning("%s: worker process failed (%s)", task.source, type(exc).__name__)
            results[task.index] = _lost(task, exc, budget)
            for other, (sibling, _, _) in jobs.items():
                if sibling.index == task.index:
                    other.cancel()  # the file's other shards: a running one is killed
            if delivery is not None and _in_parts(task, shards):
                delivery.discard(task, shards)
            yield
            continue
        _replay_logs(answer)
        slots = answers.setdefault(task.index, [None] * shards)
        slots[shard] = answer
        if all(slot is not None for slot in slots):
            done = [a for a in slots if a is not None]
            if delivery is not None and _in_parts(task, shards):
                outcome = _adopt(task, done, delivery)
            else:
                outcome = _merge(task, done)
                if delivery is not None and not isinstance(outcome, tuple):
                    outcome = _deliver(task, outcome, budget, delivery)
            results[task.index] = outcome
            yield


# ---- one file in a worker process of its own ------------------------------------------------


ABANDONED = "the caller gave up waiting (a tool call past its timeout?); its worker was stopped"
"""The message of an isolated parse stopped because its caller no longer waits for it."""


def _init_isolated(memory_limit: int | None) -> None:
    """Worker set-up: the log collector, and ``RLIMIT_AS`` lowered to ``memory_limit`` (the
    hard limit stays, so the bound can only be made stricter from outside)."""
    global _MEMORY_LIMIT
    _init_worker()
    if memory_limit is None or sys.platform == "win32":  # (Windows: no resource limits)
        return
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = memory_limit if hard == resource.RLIM_INFINITY else min(memory_limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    _MEMORY_LIMIT = soft


def _answer_error(source: str, error: list[str]) -> ParseError:
    """The exception of a worker's ``[class name, message]`` error, its class kept."""
    kind = PasswordRequiredError if error[0] == PasswordRequiredError.__name__ else ParseError
    return kind(source, error[1].removeprefix(f"{source}: "))


def run_isolated(
    spec: ParserSpec,
    file: Path,
    source: str,
    password: str | None,
    budget: float | None,
    memory_limit: int | None,
    cancelled: Callable[[], bool] | None,
) -> list[Document]:
    """Run one parser in a worker process started for it (``spawn``: a clean interpreter,
    whatever threads the caller has), killed when the budget and its grace have passed, when
    ``cancelled()`` turns true, or when it outgrows ``memory_limit``. The worker is gone
    when this returns, whichever way it returns.

    Raises:
        ParseError: the parser's failures, and the budget, the memory bound, a dead worker
            or a cancelled call (each named in the message).
    """
    pool = ProcessPool(
        1,
        initializer=_init_isolated,
        initargs=(memory_limit,),
        context=multiprocessing.get_context("spawn"),
    )
    with contextlib.ExitStack() as stack:
        stack.callback(pool.join)
        stack.callback(pool.stop)  # runs first: kills the worker, whatever happened
        args = (str(file), source, spec.name, 0, 1, password, budget)
        timeout = None if budget is None else budget + _GRACE
        future = pool.schedule(_work, args=args, timeout=timeout)
        while not wait([future], timeout=_POLL).done:
            if cancelled is not None and cancelled():
                raise ParseError(source, ABANDONED)
        try:
            answer = json.loads(future.result())
        except Exception as exc:  # killed at the budget, died, or out of memory at the end
            raise ParseError(source, _lost_message(exc, budget, memory_limit)) from None
    _replay_logs(answer)
    if answer["error"] is not None:
        raise _answer_error(source, answer["error"])
    return [Document.model_validate(d) for d in answer["documents"]]
