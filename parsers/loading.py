"""Loading files: :func:`load` (one file, strict) and :func:`load_dir` (a tree, forgiving).

:func:`load` raises nothing but :class:`ParseError` (or its subclass
:class:`PasswordRequiredError`): every failure of a parser or of the libraries under it is
wrapped at this boundary with the path in the message, so callers need one ``except``.

:func:`load_dir` never raises for a file: each failure becomes a :class:`FileError` and the
batch goes on. Hidden files and directories, files over ``max_bytes`` and binary files of
unknown type (NUL bytes, no parser sniffs them) are skipped, each with a reason.

Parallelism: **processes**, for the heavy formats only. pypdf, python-docx, python-pptx and
openpyxl are pure Python, so threads would serialise on the GIL; processes give a real
speed-up on two cores. Start-up is the cost, so the pool is used only when it pays: PDF and
Office files totalling :data:`POOL_MIN_BYTES` (or ``workers`` given explicitly), and a PDF of
:data:`SHARD_MIN_BYTES` or more is split by pages over the workers, so that one long book
does not leave the other cores idle. Light formats (text, Markdown, HTML, records) and
user-registered parsers run in the calling process meanwhile. Start method: ``fork`` on
Linux when the caller has a single thread (instant, and scripts need no ``__main__``
guard), else ``spawn`` (safe with threads; as with any multiprocessing code, a script must
then call :func:`load_dir` under ``if __name__ == "__main__":``, or pass ``workers=1``).
Results come back as JSON text, and the workers' log records (the scanned-page warnings)
are re-emitted in the caller's loggers. Output is in sorted path order whatever the
completion order.
"""

from __future__ import annotations

import contextlib
import json
import logging
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import as_completed as _as_completed
from dataclasses import dataclass, field
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any

from ragtools.parsers import html, markdown, office, pdf, records, text  # noqa: F401  (register formats)
from ragtools.parsers._progress import progress
from ragtools.parsers.document import Document, stable_id
from ragtools.parsers.errors import ConfigError, ParseError, RetrievalError
from ragtools.parsers.registry import HEAD_BYTES, ParserSpec, get_parser, resolve

__all__ = [
    "DEFAULT_MAX_BYTES",
    "POOL_MIN_BYTES",
    "SHARD_MIN_BYTES",
    "FileError",
    "LoadResult",
    "load",
    "load_dir",
]

logger = logging.getLogger(__name__)

#: Files larger than this are skipped by :func:`load_dir` (a 100 MiB PDF is ~1 min of pypdf).
DEFAULT_MAX_BYTES = 100 * 1024 * 1024
#: Total size of PDF/Office files from which a process pool is worth its start-up cost.
POOL_MIN_BYTES = 1024 * 1024
#: PDFs at least this big are split by pages over the workers: one long file would
#: otherwise keep one core busy while the other idles (117-page GeoTopo: 5 s of 6).
SHARD_MIN_BYTES = 512 * 1024
_HEAVY = frozenset({"pdf", "docx", "pptx", "xlsx"})


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


def _read_head(file: Path, source: str) -> bytes:
    try:
        if file.is_dir():
            msg = "is a directory; use parsers.load_dir for directories"
            raise ParseError(source, msg)
        with open(file, "rb") as handle:
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
            f"unsupported file type: no parser for suffix {file.suffix or '(none)'!r} and the "
            "content is not recognised; register one with @parsers.register_parser"
        )
        raise ParseError(source, msg)
    return spec


def _with_source(document: Document, source: str) -> Document:
    if document.metadata.get("source") == source:
        return document
    old = document.metadata.get("source")
    auto_id = stable_id("doc", old, document.metadata.get("page"), document.text)
    metadata = {**document.metadata, "source": source}
    if document.id == auto_id:  # the id was derived from the old source: derive it again
        return Document(text=document.text, metadata=metadata)
    return Document(id=document.id, text=document.text, metadata=metadata)


def _run(spec: ParserSpec, file: Path, source: str, password: str | None) -> list[Document]:
    try:
        documents = []
        for document in spec.fn(file, source=source, password=password):
            if not isinstance(document, Document):
                msg = f"parser {spec.name} produced a {type(document).__name__}, not a Document"
                raise ParseError(source, msg)
            documents.append(_with_source(document, source))
    except ParseError:
        raise
    except RetrievalError as exc:  # e.g. MissingDependencyError: keep its actionable message
        raise ParseError(source, str(exc)) from exc
    except Exception as exc:  # the boundary: no third-party exception escapes load()
        msg = f"the {spec.name} parser failed ({type(exc).__name__}: {exc})"
        raise ParseError(source, msg) from exc
    logger.debug("%s: %d documents (%s)", source, len(documents), spec.name)
    return documents


def load(path: str | os.PathLike[str], *, password: str | None = None) -> list[Document]:
    """Parse one file into documents, choosing the format by suffix and content.

    Args:
        path: the file. Its string form, as given, is the ``source`` of every document.
        password: for encrypted PDFs.

    Returns:
        The documents: one per page for PDF and PPTX (pages without text are skipped with a
        WARNING), one per sheet for XLSX, one per record for CSV/JSON/JSONL, else one.

    Raises:
        PasswordRequiredError: an encrypted file, and no password or a wrong one.
        ParseError: every other failure (missing, empty, binary, damaged, unsupported).

    Example:
        >>> docs = load("../shared/pdfs/tracemonkey.pdf")
        >>> len(docs), docs[0].metadata["page"]
        (14, 1)
    """
    source = os.fspath(path)
    file = Path(source)
    head = _read_head(file, source)
    return _run(_resolve(file, head, source), file, source, password)


# ---- load_dir ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Task:
    index: int
    file: Path
    source: str
    spec: ParserSpec
    size: int


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


def _work(path: str, source: str, parser: str, shard: int, shards: int) -> str:
    """Worker process entry: parse one file (or one shard of a PDF's pages); JSON answer."""
    if _COLLECTOR is not None:
        _COLLECTOR.records.clear()
    answer: dict[str, Any] = {"documents": [], "error": None, "pages": None}
    try:
        if shards > 1:
            pages = pdf.extract_pages(Path(path), source, None, shard=shard, shards=shards)
            answer["pages"] = [pages.n_pages, pages.no_text, pages.failed]
            documents = pages.documents
        else:
            documents = _run(get_parser(parser), Path(path), source, None)
        answer["documents"] = [d.model_dump(mode="json") for d in documents]
    except ParseError as exc:
        answer["error"] = [type(exc).__name__, str(exc)]
    except Exception as exc:  # extract_pages outside _run's boundary: wrap the same way
        message = f"{source}: the {parser} parser failed ({type(exc).__name__}: {exc})"
        answer["error"] = ["ParseError", message]
    answer["logs"] = list(_COLLECTOR.records) if _COLLECTOR is not None else []
    return json.dumps(answer, ensure_ascii=False)


def _merge(task: _Task, answers: list[dict[str, Any]]) -> list[Document] | FileError:
    """Combine the answers of a file's shards (one answer when it was not sharded)."""
    for answer in answers:
        if answer["error"] is not None:
            return FileError(task.source, answer["error"][0], answer["error"][1])
    documents = [Document.model_validate(d) for a in answers for d in a["documents"]]
    if answers[0]["pages"] is None:
        return documents
    pages = pdf.PdfPages(
        n_pages=answers[0]["pages"][0],
        documents=documents,
        no_text=sorted(p for a in answers for p in a["pages"][1]),
        failed=sorted(p for a in answers for p in a["pages"][2]),
    )
    try:
        return pdf.finish_pages(task.source, pages)
    except ParseError as exc:
        return FileError(task.source, type(exc).__name__, str(exc))


def _attempt(task: _Task) -> list[Document] | FileError:
    try:
        return _run(task.spec, task.file, task.source, None)
    except ParseError as exc:
        return FileError(task.source, type(exc).__name__, str(exc))


def _walk(root: Path, pattern: str) -> tuple[list[Path], list[tuple[str, str]]]:
    if root.is_file():
        return [root], []
    files: list[Path] = []
    skipped: list[tuple[str, str]] = []
    hidden_dirs: set[Path] = set()
    for path in sorted(root.glob(pattern), key=lambda p: p.relative_to(root).as_posix()):
        relative = path.relative_to(root)
        hidden = next((i for i, part in enumerate(relative.parts) if part.startswith(".")), None)
        if hidden is None:
            if path.is_file():
                files.append(path)
            elif path.is_symlink() and not path.exists():
                skipped.append((str(path), "broken symbolic link"))
        elif hidden == len(relative.parts) - 1 and not path.is_dir():
            skipped.append((str(path), "hidden file"))
        else:
            directory = root.joinpath(*relative.parts[: hidden + 1])
            if directory not in hidden_dirs:
                hidden_dirs.add(directory)
                skipped.append((str(directory), "hidden directory"))
    return files, skipped


def _plan(
    files: list[Path], skipped: list[tuple[str, str]], max_bytes: int
) -> tuple[list[_Task], dict[int, FileError]]:
    tasks: list[_Task] = []
    failed: dict[int, FileError] = {}
    for index, file in enumerate(files):
        source = str(file)
        try:
            size = file.stat().st_size
            if size > max_bytes:
                skipped.append((source, f"larger than max_bytes ({size} > {max_bytes} bytes)"))
                continue
            head = _read_head(file, source)
            if resolve(file, head) is None and b"\x00" in head:
                kind = file.suffix or "no suffix"
                skipped.append((source, f"binary file of unknown type ({kind})"))
                continue
            tasks.append(_Task(index, file, source, _resolve(file, head, source), size))
        except (ParseError, OSError) as exc:
            failed[index] = FileError(source, type(exc).__name__, str(exc))
    return tasks, failed


def _heavy(task: _Task) -> bool:
    return task.spec.builtin and task.spec.name in _HEAVY


def _shards(task: _Task, size: int) -> int:
    return size if task.spec.name == "pdf" and task.size >= SHARD_MIN_BYTES else 1


def _pool_size(tasks: list[_Task], workers: int | None) -> int:
    heavy = [t for t in tasks if _heavy(t)]
    big = any(_shards(t, 2) > 1 for t in heavy)
    if not heavy or (len(heavy) < 2 and not big) or multiprocessing.current_process().daemon:
        return 0  # (daemonic processes, e.g. pool workers, may not start processes)
    if workers is None:
        if sum(t.size for t in heavy) < POOL_MIN_BYTES:
            return 0
        workers = os.cpu_count() or 1
    size = workers if big else min(workers, len(heavy))
    return size if size > 1 else 0


def _mp_context() -> BaseContext:
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


_Jobs = dict[Future[str], tuple[_Task, int, int]]  # future -> (task, shard, shards)


def _submit(tasks: list[_Task], size: int, pool: ProcessPoolExecutor) -> _Jobs:
    """Send the heavy files to the pool, big PDFs split in ``size`` page shards."""
    jobs = [(t, n, _shards(t, size)) for t in tasks if _heavy(t) for n in range(_shards(t, size))]
    jobs.sort(key=lambda job: -job[0].size / job[2])  # longest first: no lone straggler
    logger.debug("parsing in %d processes: %d jobs", size, len(jobs))
    futures: _Jobs = {}
    for task, shard, shards in jobs:
        args = (str(task.file), task.source, task.spec.name, shard, shards)
        futures[pool.submit(_work, *args)] = (task, shard, shards)
    return futures


def _execute(
    tasks: list[_Task], jobs: _Jobs, results: dict[int, list[Document] | FileError]
) -> Iterator[None]:
    """Parse the files not sent to the pool here, then collect the pool's answers."""
    pooled = {task.index for task, _, _ in jobs.values()}
    for task in tasks:
        if task.index not in pooled:
            results[task.index] = _attempt(task)
            yield
    answers: dict[int, list[dict[str, Any] | None]] = {}
    for future in _as_completed(jobs):
        task, shard, shards = jobs[future]
        if task.index in results:  # already re-parsed here after a worker failure
            continue
        try:
            answer = json.loads(future.result())
        except Exception:  # a worker died (killed, out of memory): parse the file here
            logger.warning("%s: worker process failed; parsing it here", task.source)
            results[task.index] = _attempt(task)
            yield
            continue
        for name, level, message in answer["logs"]:
            logging.getLogger(name).log(level, "%s", message)
        slots = answers.setdefault(task.index, [None] * shards)
        slots[shard] = answer
        if all(slot is not None for slot in slots):
            results[task.index] = _merge(task, [a for a in slots if a is not None])
            yield


def load_dir(
    root: str | os.PathLike[str],
    *,
    pattern: str = "**/*",
    workers: int | None = None,
    show_progress: bool | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> LoadResult:
    """Parse every file under ``root`` (in parallel where it pays); never stops on a bad file.

    Args:
        root: a directory (or a single file). Document sources are ``root`` joined with the
            path relative to it.
        pattern: glob pattern relative to ``root``; ``"**/*.pdf"`` for PDFs only. Files
            of an unknown suffix are parsed by content: as plain text when they look like it.
        workers: processes for PDF/Office files; ``None`` chooses (CPU count, and only for
            batches big enough to repay the start-up), ``1`` parses everything here.
        show_progress: a progress bar on stderr; ``None`` shows it only on a terminal.
        max_bytes: larger files are skipped.

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
    if max_bytes < 1:
        msg = f"max_bytes must be >= 1, got {max_bytes}"
        raise ConfigError(msg)
    files, skipped = _walk(base, pattern)
    return _load(files, skipped, workers=workers, show_progress=show_progress, max_bytes=max_bytes)


def load_files(
    files: Sequence[str | os.PathLike[str]],
    *,
    workers: int | None = None,
    show_progress: bool | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> LoadResult:
    """Parse a list of files as :func:`load_dir` parses a tree (same parallelism and rules).

    Used by index updates, which re-parse only the files that changed.
    """
    if workers is not None and workers < 1:
        msg = f"workers must be >= 1 or None (automatic), got {workers}"
        raise ConfigError(msg)
    paths = [Path(os.fspath(f)) for f in files]
    return _load(paths, [], workers=workers, show_progress=show_progress, max_bytes=max_bytes)


def _load(
    files: list[Path],
    skipped: list[tuple[str, str]],
    *,
    workers: int | None,
    show_progress: bool | None,
    max_bytes: int,
) -> LoadResult:
    start = time.perf_counter()
    tasks, failed = _plan(files, skipped, max_bytes)
    results: dict[int, list[Document] | FileError] = dict(failed)
    size = _pool_size(tasks, workers)
    with contextlib.ExitStack() as stack:
        jobs: _Jobs = {}
        if size:  # workers start now, before the progress bar's monitor thread would
            context = _mp_context()
            pool = ProcessPoolExecutor(size, mp_context=context, initializer=_init_worker)
            jobs = _submit(tasks, size, stack.enter_context(pool))
        steps = _execute(tasks, jobs, results)
        for _ in progress(steps, total=len(tasks), desc="Parsing", show_progress=show_progress):
            pass
    documents: list[Document] = []
    errors: list[FileError] = []
    for index in sorted(results):
        outcome = results[index]
        if isinstance(outcome, FileError):
            errors.append(outcome)
        else:
            documents.extend(outcome)
    skipped.sort()
    logger.info(
        "loaded %d documents from %d files in %.1f s (%d errors, %d skipped)",
        len(documents),
        len(files),
        time.perf_counter() - start,
        len(errors),
        len(skipped),
    )
    return LoadResult(documents=documents, errors=errors, skipped=skipped)
