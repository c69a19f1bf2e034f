"""Loading files: :func:`load` (one file, strict) and :func:`load_dir` (a tree, forgiving).

:func:`load` raises nothing but :class:`ParseError` (or its subclass
:class:`PasswordRequiredError`): every failure of a parser or of the libraries under it is
wrapped at this boundary with the path in the message, so callers need one ``except``.

:func:`load_dir` never raises for a file: each failure becomes a :class:`FileError` and the
batch goes on. Hidden files and directories, ``__pycache__``, what ``.gitignore`` files
ignore (:mod:`parsers.selection`), empty files, files over ``max_bytes``, and files no
parser recognises (by suffix or content) are skipped, each with a reason: skipped is not
failed.

Parallelism: **processes**, for the heavy formats only. pypdf, python-docx, python-pptx and
openpyxl are pure Python, so threads would serialise on the GIL; processes give a real
speed-up on two cores. Start-up is the cost, so the pool is used only when it pays: PDF and
Office files totalling ``_pool.POOL_MIN_BYTES`` (or ``workers`` given explicitly), and a PDF
of ``_pool.SHARD_MIN_BYTES`` or more is split by pages over the workers, so that one long
book does not leave the other cores idle. Light formats (text, Markdown, HTML, records) and
user-registered parsers run in the calling process meanwhile. Start method: ``fork`` on
Linux when the caller has a single thread (instant, and scripts need no ``__main__``
guard), else ``spawn`` (safe with threads; as with any multiprocessing code, a script must
then call :func:`load_dir` under ``if __name__ == "__main__":``, or pass ``workers=1``).
Results come back as JSON text, and the workers' log records (the scanned-page warnings)
are re-emitted in the caller's loggers. Output is in sorted path order whatever the
completion order. That machinery lives in :mod:`ragtools.parsers._pool`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ragtools.parsers import html, markdown, office, pdf, records, text  # noqa: F401  (register formats)
from ragtools.parsers._pool import (
    Jobs,
    Outcome,
    Task,
    execute,
    failure,
    pool_size,
    run_parser,
    submit,
)
from ragtools.parsers._progress import progress
from ragtools.parsers.document import Document
from ragtools.parsers.errors import ConfigError, ParseError
from ragtools.parsers.file_metadata import file_metadata, source_name, with_file_metadata
from ragtools.parsers.registry import HEAD_BYTES, ParserSpec, resolve
from ragtools.parsers.selection import Selection, select_files

__all__ = [
    "DEFAULT_MAX_BYTES",
    "FileError",
    "LoadResult",
    "load",
    "load_dir",
]

logger = logging.getLogger(__name__)

#: Files larger than this are skipped by :func:`load_dir` (a 100 MiB PDF is ~1 min of pypdf).
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


def load(path: str | os.PathLike[str], *, password: str | None = None) -> list[Document]:
    """Parse one file into documents, choosing the format by suffix and content.

    Args:
        path: the file. Its string form, as given, is the ``source`` of every document
            (only the file name when the path is absolute); ``path`` is the absolute path
            (see :mod:`parsers.file_metadata` for ``file_type``, ``mtime`` and ``size``).
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
    spec = _resolve(file, head, source)
    documents = run_parser(spec, file, source, password)
    try:
        extra = file_metadata(file, spec, file.stat())
    except OSError as exc:
        msg = f"cannot read the file ({exc.strerror or exc})"
        raise ParseError(source, msg) from exc
    name = source_name(source, None)
    return [with_file_metadata(document, name, extra) for document in documents]


# ---- load_dir ---------------------------------------------------------------------------


def _walk(
    root: Path, pattern: str, selection: Selection | None
) -> tuple[list[Path], list[tuple[str, str]]]:
    files, skipped = select_files(root, selection)
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
            stat = file.stat()
            size = stat.st_size
            if size > max_bytes:
                skipped.append((source, f"larger than max_bytes ({size} > {max_bytes} bytes)"))
                continue
            if size == 0:  # e.g. py.typed, __init__.py: nothing to read, nothing wrong
                skipped.append((source, "empty file"))
                continue
            head = _read_head(file, source)
            spec = resolve(file, head)
            if spec is None:  # not a document: skipped, not failed
                kind = file.suffix or "no suffix"
                what = "binary file" if b"\x00" in head else "file"
                skipped.append((source, f"{what} of unknown type ({kind})"))
                continue
            name = source_name(file, root)
            extra = file_metadata(file, spec, stat)
            tasks.append(Task(index, file, source, spec, size, password, name, extra))
        except (ParseError, OSError) as exc:
            failed[index] = failure(source, exc)
    return tasks, failed


def load_dir(
    root: str | os.PathLike[str],
    *,
    pattern: str = "**/*",
    workers: int | None = None,
    show_progress: bool | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    selection: Selection | None = None,
    password: str | None = None,
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
        show_progress: a progress bar on stderr; ``None`` shows it only on a terminal.
        max_bytes: larger files are skipped.
        selection: which files of the tree to read (:class:`~parsers.selection.Selection`:
            include/exclude patterns, ``.gitignore``); hidden entries and ``__pycache__``
            are always skipped.
        password: for encrypted PDFs.

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
    files, skipped = _walk(base, pattern, selection)
    return _load(
        files,
        skipped,
        workers=workers,
        show_progress=show_progress,
        max_bytes=max_bytes,
        password=password,
        root=base if base.is_dir() else base.parent,
    )


def load_files(
    files: Sequence[str | os.PathLike[str]],
    *,
    workers: int | None = None,
    show_progress: bool | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    password: str | None = None,
    relative_to: str | os.PathLike[str] | None = None,
) -> LoadResult:
    """Parse a list of files as :func:`load_dir` parses a tree (same parallelism and rules).

    Used by index builds and updates, which re-parse only the files that changed. Sources
    are relative to ``relative_to`` when given, else the paths as given (as :func:`load`).
    """
    if workers is not None and workers < 1:
        msg = f"workers must be >= 1 or None (automatic), got {workers}"
        raise ConfigError(msg)
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
) -> LoadResult:
    start = time.perf_counter()
    tasks, failed = _plan(files, skipped, max_bytes, password, root)
    results: dict[int, Outcome] = dict(failed)
    size = pool_size(tasks, workers)
    with contextlib.ExitStack() as stack:
        jobs: Jobs = {}
        if size:  # workers start now, before the progress bar's monitor thread would
            jobs = submit(tasks, size, stack)
        steps = execute(tasks, jobs, results)
        for _ in progress(steps, total=len(tasks), desc="parsing", show_progress=show_progress):
            pass
    documents: list[Document] = []
    errors: list[FileError] = []
    by_index = {task.index: task for task in tasks}
    for index in sorted(results):
        outcome = results[index]
        if isinstance(outcome, tuple):
            errors.append(FileError(*outcome))
        else:
            task = by_index[index]
            name = task.name or task.source
            documents.extend(with_file_metadata(d, name, task.metadata) for d in outcome)
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
