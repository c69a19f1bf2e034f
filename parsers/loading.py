"""Loading files: :func:`load` (one file, strict) and :func:`load_dir` (a tree, forgiving).

:func:`load` raises nothing but :class:`ParseError` (or its subclass
:class:`PasswordRequiredError`): every failure of a parser or of the libraries under it is
wrapped at this boundary with the path in the message, so callers need one ``except``.

:func:`load_dir` never raises for a file: each failure becomes a :class:`FileError` and the
batch goes on. Hidden files and directories, ``__pycache__``, what ``.gitignore`` files
ignore, symbolic links leaving the folder (:mod:`parsers.selection`), empty files, files
over ``max_bytes``, files no parser recognises (by suffix or content), what the document
policy leaves out (stylesheets, minified scripts, lock files, images, SVG drawings without
words: :mod:`parsers.policy`) and anything but regular files (FIFOs, devices, sockets:
reading them blocks or never ends) are skipped, each with a reason: skipped is not failed.
:func:`plan_files` makes the same decisions without parsing (``rag build --dry-run``).
Sizes are bounded before anything is read: a file's ``stat`` size over ``max_bytes``
(:data:`DEFAULT_MAX_BYTES`) is refused unopened by :func:`load` (a ``ParseError`` naming the
file and the limit; the keyword raises it) and skipped with that reason by :func:`load_dir`.
The apparent size is what counts, so a sparse file of 2 GB holding one line is refused at
once, never read into memory; a line-oriented file's longest line is bounded as it is read
(:data:`parsers.text.MAX_LINE_BYTES`). Lone surrogates in what a parser returns (a JSON
record's ``"\\ud800"``) are replaced by U+FFFD here, at the boundary, in the text and
every metadata value but ``source`` and ``path`` (file names, kept exactly: see
:func:`parsers.document.json_text`); the number replaced is logged per file and counted in
:attr:`LoadResult.replaced`, so nothing downstream fails to encode the text.
Every parse runs under a per-file ``time_budget`` (:mod:`parsers._budget`);
:func:`load_isolated` is :func:`load` in a worker process of its own, bounded in time and
memory from any thread and stoppable by its caller (the agents' file tools use it); a worker
process that dies (a crash, out of memory) fails its own file only, which is never parsed
again in the caller, so one bomb cannot take the batch down.

Parallelism: **processes** (pebble's pool), for the heavy formats only (pypdf and the Office
libraries are pure Python, so threads would serialise on the GIL), used only when the batch
repays their start-up, a long PDF split by pages over the workers; light formats run in the
calling process meanwhile, except a file of ``GUARD_MIN_BYTES`` or more (CSV and JSON records
aside, whose parsers the timer stops between two records), which gets a worker that can be
killed at its budget, since its parser may be stuck inside C code (``workers=1`` keeps
everything in the calling process). A CSV or JSON file of ``PARTS_MIN_BYTES`` or more, loaded
into a :class:`PartedSink` (an index build's spill) by a caller with a single thread, is parsed
in parts: two workers each read the whole file, decide what its records are as a whole parse
decides it, and make the documents of their half of the records into a sink of their own,
which the caller's sink then adopts in order; the result is the whole parse's, and so is the
first error. A caller with threads would have to spawn the workers, which a script without a
``__main__`` guard cannot, so it takes such a file whole, in its own process. Under the
``spawn`` start method (a caller with threads) a script must call :func:`load_dir` under
``if __name__ == "__main__":`` or pass ``workers=1``.
Output is in sorted path order whatever the completion order; :mod:`ragtools.parsers._pool`
holds that machinery. :func:`load_files` can hand each file's documents to a
:class:`DocumentSink` as they are parsed instead of returning them (an index build splits
and spills them there): the records parsers yield their documents one at a time, so a
file of a million records is never a list of a million documents, and the sink's work
counts against the file's time budget (for a file parsed in a worker, a second budget of
the same size in the caller, where the timer can stop it).
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import JsonValue

from ragtools.parsers import (  # noqa: F401  (register formats)
    html,
    markdown,
    notebook,
    office,
    pdf,
    records,
    svg,
    text,
)
from ragtools.parsers._budget import DEFAULT_MEMORY_LIMIT, DEFAULT_TIME_BUDGET, file_budget
from ragtools.parsers._pool import (
    Jobs,
    Outcome,
    SinkParts,
    Task,
    execute,
    failure,
    finished,
    pool_size,
    run_isolated,
    run_parser,
    submit,
)
from ragtools.parsers.document import (
    Document,
    documents_without_surrogates,
)
from ragtools.parsers.errors import ConfigError, ParseError
from ragtools.parsers.file_metadata import (
    FILE_NAMES,
    file_metadata,
    source_name,
    with_file_metadata,
)
from ragtools.parsers.policy import content_skip, select_documents
from ragtools.parsers.progress import progress
from ragtools.parsers.registry import HEAD_BYTES, ParserSpec, resolve
from ragtools.parsers.selection import (
    Selection,
    not_regular,
    select_files,
    special_kind,
    special_path,
    walk_failure,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MEMORY_LIMIT",
    "DEFAULT_TIME_BUDGET",
    "DocumentSink",
    "FileError",
    "LoadResult",
    "PartedSink",
    "Plan",
    "load",
    "load_dir",
    "load_isolated",
    "plan_files",
]

logger = logging.getLogger(__name__)

#: Files larger than this are refused by :func:`load` and skipped by :func:`load_dir`
#: (a 100 MiB PDF is ~1 min of pypdf; text that size is some 50,000 pages).
DEFAULT_MAX_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True)
class FileError:
    """One file of a batch that could not be parsed."""

    path: str
    """The file, as :func:`load_dir` spelt it (the root joined with the relative path)."""
    error: str
    """The exception class name, e.g. ``"ParseError"`` or ``"PasswordRequiredError"``."""
    message: str
    """What failed and what to do, as the exception said it."""


@dataclass(frozen=True)
class LoadResult:
    """What :func:`load_dir` found: documents, per-file errors and skipped files."""

    documents: list[Document] = field(default_factory=list)
    """All documents, in sorted path order (then the parser's order within a file)."""
    errors: list[FileError] = field(default_factory=list)
    """One entry per file that failed, in sorted path order."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """``(path, reason)`` of every file or hidden directory not attempted."""
    replaced: int = 0
    """Lone surrogates replaced by U+FFFD in the documents' text and metadata."""


class DocumentSink(Protocol):
    """Takes the documents of a batch file by file as they are parsed, instead of
    :attr:`LoadResult.documents` (see :func:`load_files`): a file of a million records then
    never becomes a list of a million documents."""

    def take(self, file: int, documents: Iterable[Document]) -> None:
        """Consume every document of one file, in order, inside that file's time budget.

        ``file`` is the file's position in the batch; files come in any order (a worker's
        file when it is done), each file's documents together. An exception other than a
        budget or parse failure stops the batch.
        """

    def drop(self, file: int) -> None:
        """Forget what :meth:`take` kept of ``file``: it failed part-way (over its time
        budget, or its parser failed after some documents)."""


@runtime_checkable
class PartedSink(DocumentSink, Protocol):
    """A :class:`DocumentSink` that can also take a big record file in parts: each part is
    parsed by a worker process into a sink of the worker's own, opened from :attr:`parts`
    (so a million documents never travel between processes), then adopted here, in order.
    An index build's spill is one: the records of a big CSV or JSON file are then made into
    documents and chunks on every core."""

    @property
    def parts(self) -> SinkParts | None:
        """The recipe the workers open their sinks with (picklable); ``None``: this sink
        takes files whole."""

    def adopt(self, file: int, states: list[JsonValue]) -> None:
        """Take ``file`` from its parts' sinks, given the ``state`` of each, in order, as if
        :meth:`take` had taken its documents."""

    def discard(self, file: int, parts: int) -> None:
        """Forget the ``parts`` parts of ``file``: one of them failed."""


class _Sinking:
    """The loader's :class:`~parsers._pool.Delivery` into a :class:`DocumentSink`: each
    document finished as :attr:`LoadResult.documents` holds them, counting surrogates."""

    def __init__(self, sink: DocumentSink) -> None:
        self.sink = sink
        self.replaced = 0
        self.delivered: dict[int, int] = {}
        """Documents each file handed to the sink (for the loader's log line)."""

    def take(self, task: Task, documents: Iterable[Document]) -> None:
        self.sink.take(task.index, self._counted(task, finished(task, documents, self.count)))

    def drop(self, task: Task) -> None:
        self.delivered.pop(task.index, None)
        self.sink.drop(task.index)

    def _counted(self, task: Task, documents: Iterator[Document]) -> Iterator[Document]:
        for document in documents:
            self.delivered[task.index] = self.delivered.get(task.index, 0) + 1
            yield document

    def count(self, replaced: int) -> None:
        self.replaced += replaced

    @property
    def parts(self) -> SinkParts | None:
        return self.sink.parts if isinstance(self.sink, PartedSink) else None

    def adopt(self, task: Task, answers: list[dict[str, Any]]) -> None:
        if not isinstance(self.sink, PartedSink):  # (never sent in parts then)
            msg = f"{task.source}: parsed in parts for a sink that takes no parts"
            raise TypeError(msg)
        self.sink.adopt(task.index, [answer["state"] for answer in answers])
        self.replaced += sum(answer["replaced"] for answer in answers)
        self.delivered[task.index] = sum(answer["delivered"] for answer in answers)

    def discard(self, task: Task, parts: int) -> None:
        if isinstance(self.sink, PartedSink):
            self.sink.discard(task.index, parts)


def _too_large(size: int, max_bytes: int) -> str | None:
    """Why a file of ``size`` bytes is not read, or ``None``; from ``stat``, before reading."""
    if size <= max_bytes:
        return None
    return f"larger than max_bytes ({size} > {max_bytes} bytes): not read; raise max_bytes"


def _read_head(file: Path, source: str, max_bytes: int | None = None) -> bytes:
    try:
        info = file.stat()
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            msg = "is a directory; use parsers.load_dir for directories"
            raise ParseError(source, msg)
        kind = special_kind(mode)
        if kind is not None:
            raise ParseError(source, not_regular(kind))
        too_large = None if max_bytes is None else _too_large(info.st_size, max_bytes)
        if too_large is not None:
            raise ParseError(source, too_large)
        # O_NONBLOCK: should the path have become a FIFO since the stat, opening it returns
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(fd, "rb") as handle:
            kind = special_kind(os.fstat(fd).st_mode)
            if kind is not None:
                raise ParseError(source, not_regular(kind))
            head = handle.read(HEAD_BYTES)
    except FileNotFoundError as exc:
        msg = "no such file; check the path"
        raise ParseError(source, msg) from exc
    except OSError as exc:
        msg = f"cannot read the file ({exc.strerror or exc})"
        raise ParseError(source, msg) from exc
    if not head:
        msg = "empty file (0 bytes): nothing to parse"
        raise ParseError(source, msg)
    return head


def _resolve(file: Path, head: bytes, source: str) -> ParserSpec:
    spec = resolve(file, head)
    if spec is None:
        msg = (
            f"unsupported file type: {content_skip(file, head, None)} (suffix "
            f"{file.suffix or '(none)'!r}); register one with @parsers.register_parser"
        )
        raise ParseError(source, msg)
    return spec


def load(
    path: str | os.PathLike[str],
    *,
    password: str | None = None,
    time_budget: float | None = DEFAULT_TIME_BUDGET,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> list[Document]:
    """Parse one file into documents, choosing the format by suffix and content.

    Args:
        path: the file. Its string form, as given, is the ``source`` of every document
            (only the file name when the path is absolute); ``path`` is the absolute path
            (see :mod:`parsers.file_metadata` for ``file_type``, ``mtime`` and ``size``).
        password: for encrypted PDFs.
        time_budget: seconds the parse may take (``None``: no limit), plus one per
            ``BUDGET_BYTES_PER_SECOND`` of the file (plain text and Markdown aside:
            ``FLAT_BUDGET_FORMATS``), so large valid files get the time their size needs;
            enforced in the main thread on POSIX (see :mod:`parsers._budget`).
        max_bytes: a larger file (by its ``stat`` size: a sparse file's apparent size) is
            refused before it is opened.

    Returns:
        The documents (lone surrogates replaced by U+FFFD): one per page for PDF and PPTX
        (pages without text are skipped with a WARNING), one per sheet for XLSX, one per
        record for CSV/JSON/JSONL, else one.

    Raises:
        PasswordRequiredError: an encrypted file, and no password or a wrong one.
        ParseError: every other failure (missing, empty, binary, damaged, unsupported, not
            a regular file, over the time budget or a size limit).
        ConfigError: ``time_budget`` or ``max_bytes`` is not positive.

    Example:
        >>> docs = load("../shared/pdfs/tracemonkey.pdf")
        >>> len(docs), docs[0].metadata["page"]
        (14, 1)
    """
    source, file, spec, seconds = _prepare(path, time_budget, max_bytes)
    return _finish(source, file, spec, run_parser(spec, file, source, password, seconds))


def load_isolated(
    path: str | os.PathLike[str],
    *,
    password: str | None = None,
    time_budget: float | None = DEFAULT_TIME_BUDGET,
    max_bytes: int = DEFAULT_MAX_BYTES,
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
    cancelled: Callable[[], bool] | None = None,
) -> list[Document]:
    """:func:`load`, with the parse in a worker process that is killed when it overruns.

    For callers in any thread (an agent's file tool under a ``ToolsNode``, a server), where
    :func:`load`'s timer cannot run: the worker (started with ``spawn``) parses under
    ``time_budget``, is killed once that and a grace period have passed (a parser stuck in
    C code included), cannot map more than ``memory_limit`` bytes (``RLIMIT_AS``, on POSIX),
    and is stopped as soon as ``cancelled()`` returns True (checked a few times a second),
    so a caller that gives up leaves nothing running. Starting the worker costs a fraction
    of a second: cache the result (the file tools' parse cache does). A parser registered
    by the application runs in the calling process, as in :func:`load`, since a fresh
    interpreter would not know it. As with every ``spawn`` worker, the worker imports the
    caller's main script: a script keeps its work under ``if __name__ == "__main__":``
    (a call from the worker's import fails at once, but the script's other top-level code
    runs there again).

    Args:
        path: as :func:`load`.
        password: as :func:`load`.
        time_budget: as :func:`load`, enforced in every thread.
        max_bytes: as :func:`load`.
        memory_limit: bytes of address space the worker may use (``None``: no bound).
        cancelled: polled while the worker runs; True stops it.

    Returns:
        The documents, as :func:`load` returns them.

    Raises:
        PasswordRequiredError: as :func:`load`.
        ParseError: as :func:`load`, and a parse over the memory bound, a worker that died
            or a call cancelled (each named in the message).
        ConfigError: ``time_budget``, ``max_bytes`` or ``memory_limit`` is not positive.
    """
    if memory_limit is not None and memory_limit < 1:
        msg = f"memory_limit must be a positive number of bytes or None, got {memory_limit}"
        raise ConfigError(msg)
    source, file, spec, seconds = _prepare(path, time_budget, max_bytes)
    if spec.builtin:
        args = (password, seconds, memory_limit, cancelled)
        parsed = run_isolated(spec, file, source, *args)
    else:
        parsed = run_parser(spec, file, source, password, seconds)
    return _finish(source, file, spec, parsed)


def _prepare(
    path: str | os.PathLike[str], time_budget: float | None, max_bytes: int
) -> tuple[str, Path, ParserSpec, float | None]:
    """The checks before a parse: arguments, the file (kind, size, head), its parser and its
    time budget (:func:`~parsers._budget.file_budget`: it grows with the file's size)."""
    _check_budget(time_budget)
    _check_max_bytes(max_bytes)
    source = os.fspath(path)
    file = Path(source)
    head = _read_head(file, source, max_bytes)
    spec = _resolve(file, head, source)
    try:
        size = file.stat().st_size
    except OSError as exc:
        msg = f"cannot read the file ({exc.strerror or exc})"
        raise ParseError(source, msg) from exc
    return source, file, spec, file_budget(time_budget, size, spec.name)


def _finish(source: str, file: Path, spec: ParserSpec, parsed: list[Document]) -> list[Document]:
    """The documents of one file as :func:`load` returns them: surrogates replaced, the
    file's metadata added."""
    documents, _ = documents_without_surrogates(parsed, source, FILE_NAMES)
    try:
        extra = file_metadata(file, spec, file.stat())
    except OSError as exc:
        msg = f"cannot read the file ({exc.strerror or exc})"
        raise ParseError(source, msg) from exc
    name = source_name(source, None)
    return [with_file_metadata(document, name, extra) for document in documents]


def _check_max_bytes(max_bytes: int) -> None:
    if max_bytes < 1:
        msg = f"max_bytes must be >= 1, got {max_bytes}"
        raise ConfigError(msg)


def _check_budget(time_budget: float | None) -> None:
    if time_budget is not None and not time_budget > 0:
        msg = f"time_budget must be a positive number of seconds or None, got {time_budget}"
        raise ConfigError(msg)


# ---- load_dir ---------------------------------------------------------------------------


def _walk(
    root: Path, pattern: str, selection: Selection | None
) -> tuple[list[Path], list[tuple[str, str]]]:
    files, skipped = select_files(root, selection)
    if root.is_dir():
        files, left = select_documents(root, files, selection)
        skipped += left
    if pattern != "**/*" and not root.is_file():
        wanted = set(root.glob(pattern))  # the pattern narrows both: report only its matches
        files = [f for f in files if f in wanted]
        skipped = [(path, why) for path, why in skipped if Path(path) in wanted]
    return files, skipped


def _plan(
    files: list[Path],
    skipped: list[tuple[str, str]],
    max_bytes: int,
    password: str | None,
    root: Path | None,
) -> tuple[list[Task], dict[int, Outcome]]:
    tasks: list[Task] = []
    failed: dict[int, Outcome] = {}
    for index, file in enumerate(files):
        source = str(file)
        try:
            problem = walk_failure(file)
            if problem is not None:  # a folder the walk could not list, a loop
                failed[index] = failure(source, ParseError(source, problem))
                continue
            kind = special_path(file)
            if kind is not None:
                skipped.append((source, not_regular(kind)))
                continue
            if file.is_symlink() and not file.exists():
                skipped.append((source, "broken symbolic link"))
                continue
            info = file.stat()
            size = info.st_size
            too_large = _too_large(size, max_bytes)
            if too_large is not None:
                skipped.append((source, too_large))
                continue
            if size == 0:  # e.g. py.typed, __init__.py: nothing to read, nothing wrong
                skipped.append((source, "empty file"))
                continue
            head = _read_head(file, source)
            spec = resolve(file, head)
            reason = content_skip(file, head, spec)
            if spec is None or reason is not None:  # not a document: skipped, not failed
                skipped.append((source, reason or "no parser"))
                continue
            name = source_name(file, root)
            extra = file_metadata(file, spec, info)
            tasks.append(Task(index, file, source, spec, size, password, name, extra))
        except (ParseError, OSError) as exc:
            failed[index] = failure(source, exc)
    return tasks, failed


@dataclass(frozen=True)
class Plan:
    """What :func:`load_files` would do with each file, decided without parsing any."""

    parse: list[tuple[str, str]] = field(default_factory=list)
    """``(path, file_type)`` of every file a parser would read, in the order given."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """``(path, reason)`` of every file that would be skipped, sorted."""
    errors: list[FileError] = field(default_factory=list)
    """Files that would fail before parsing (unreadable), in the order given."""


def plan_files(
    files: Sequence[str | os.PathLike[str]], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> Plan:
    """Decide, as :func:`load_files` does and with the same code, which files a parser would
    read and which would be skipped (and why), reading only their first bytes.

    An SVG's words are read in full to decide it (a drawing without words is skipped). A
    file this plan parses may still fail or give no text once parsed.
    """
    paths = [Path(os.fspath(f)) for f in files]
    skipped: list[tuple[str, str]] = []
    tasks, failed = _plan(paths, skipped, max_bytes, None, None)
    return Plan(
        parse=[(task.source, str(task.metadata.get("file_type", ""))) for task in tasks],
        skipped=sorted(skipped),
        errors=[FileError(*failed[index]) for index in sorted(failed)],
    )


def load_dir(
    root: str | os.PathLike[str],
    *,
    pattern: str = "**/*",
    workers: int | None = None,
    show_progress: bool | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    selection: Selection | None = None,
    password: str | None = None,
    time_budget: float | None = DEFAULT_TIME_BUDGET,
) -> LoadResult:
    """Parse every file under ``root`` (in parallel where it pays); never stops on a bad file.

    Args:
        root: a directory (or a single file). A document's ``source`` is its file's path
            relative to ``root`` (POSIX separators; a single file: its name), ``path`` the
            absolute path; errors and skipped entries name ``root`` joined with that path.
        pattern: glob pattern relative to ``root``; ``"**/*.pdf"`` for PDFs only. Files
            of an unknown suffix are parsed by content: as plain text when they look like it.
        workers: processes for PDF/Office files; ``None`` chooses (CPU count, and only for
            batches big enough to repay the start-up), ``1`` parses everything here.
        show_progress: a progress bar on stderr; ``None``: on a terminal only, log records
            elsewhere (:mod:`parsers.progress`).
        max_bytes: larger files are skipped.
        selection: which files of the tree to read (:class:`~parsers.selection.Selection`:
            include/exclude patterns, ``.gitignore``, ``follow_links``); hidden entries and
            ``__pycache__`` are always skipped, and symbolic links leaving ``root`` unless
            ``follow_links``.
        password: for encrypted PDFs.
        time_budget: seconds one file may take to parse (``None``: no limit), plus one
            per ``BUDGET_BYTES_PER_SECOND`` of it (not for ``FLAT_BUDGET_FORMATS``); a file
            over it is stopped and becomes an entry of ``errors``.

    Returns:
        Documents, per-file errors and skipped files, each in sorted path order.

    Raises:
        ConfigError: ``root`` does not exist, or ``workers``/``max_bytes`` below 1.
    """
    base = Path(os.fspath(root))
    if not base.exists():
        msg = f"load_dir root {os.fspath(root)!r} does not exist; give a directory or a file"
        raise ConfigError(msg)
    if workers is not None and workers < 1:
        msg = f"workers must be >= 1 or None (automatic), got {workers}"
        raise ConfigError(msg)
    _check_max_bytes(max_bytes)
    _check_budget(time_budget)
    files, skipped = _walk(base, pattern, selection)
    return _load(
        files,
        skipped,
        workers=workers,
        show_progress=show_progress,
        max_bytes=max_bytes,
        password=password,
        root=base if base.is_dir() else base.parent,
        time_budget=time_budget,
    )


def load_files(
    files: Sequence[str | os.PathLike[str]],
    *,
    workers: int | None = None,
    show_progress: bool | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    password: str | None = None,
    relative_to: str | os.PathLike[str] | None = None,
    time_budget: float | None = DEFAULT_TIME_BUDGET,
    sink: DocumentSink | None = None,
) -> LoadResult:
    """Parse a list of files as :func:`load_dir` parses a tree (same parallelism and rules).

    Used by index builds and updates, which re-parse only the files that changed. Sources
    are relative to ``relative_to`` when given, else the paths as given (as :func:`load`).
    With ``sink``, each file's documents go to it as they are parsed, and what it does with
    them counts against the file's time budget (an index build splits them there); the
    result's ``documents`` is then empty.
    """
    if workers is not None and workers < 1:
        msg = f"workers must be >= 1 or None (automatic), got {workers}"
        raise ConfigError(msg)
    _check_max_bytes(max_bytes)
    _check_budget(time_budget)
    paths = [Path(os.fspath(f)) for f in files]
    root = Path(os.fspath(relative_to)) if relative_to is not None else None
    return _load(
        paths,
        [],
        workers=workers,
        show_progress=show_progress,
        max_bytes=max_bytes,
        password=password,
        root=root,
        time_budget=time_budget,
        sink=sink,
    )


def _load(
    files: list[Path],
    skipped: list[tuple[str, str]],
    *,
    workers: int | None,
    show_progress: bool | None,
    max_bytes: int,
    password: str | None,
    root: Path | None,
    time_budget: float | None,
    sink: DocumentSink | None = None,
) -> LoadResult:
    start = time.perf_counter()
    delivery = None if sink is None else _Sinking(sink)
    tasks, failed = _plan(files, skipped, max_bytes, password, root)
    results: dict[int, Outcome] = dict(failed)
    recipe = None if delivery is None else delivery.parts
    size = pool_size(tasks, workers, recipe)
    with contextlib.ExitStack() as stack:
        jobs: Jobs = {}
        if size:  # workers start now, before the progress bar's monitor thread would
            jobs = submit(tasks, size, stack, time_budget, recipe)
        steps = execute(tasks, jobs, results, time_budget, delivery)
        for _ in progress(
            steps, total=len(tasks), desc="parsing", show_progress=show_progress, unit="files"
        ):
            pass
    documents: list[Document] = []
    errors: list[FileError] = []
    totals = [0 if delivery is None else delivery.replaced]
    by_index = {task.index: task for task in tasks}
    for index in sorted(results):
        outcome = results[index]
        if isinstance(outcome, tuple):
            errors.append(FileError(*outcome))
        else:  # (empty when a sink took the documents)
            documents.extend(finished(by_index[index], outcome, totals.append))
    replaced = sum(totals)
    skipped.sort()
    logger.info(
        "loaded %d documents from %d files in %.1f s (%d errors, %d skipped)",
        len(documents) if delivery is None else sum(delivery.delivered.values()),
        len(files),
        time.perf_counter() - start,
        len(errors),
        len(skipped),
    )
    return LoadResult(documents=documents, errors=errors, skipped=skipped, replaced=replaced)
