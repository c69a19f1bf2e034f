"""Loading files: :func:`load` (one file, strict) and :func:`load_dir` (a tree, forgiving).

:func:`load` raises nothing but :class:`ParseError` (or its subclass
:class:`PasswordRequiredError`): every failure of a parser or of the libraries under it is
wrapped at this boundary with the path in the message, so callers need one ``except``.

:func:`load_dir` never raises for a file: each failure becomes a :class:`FileError` and the
batch goes on. Hidden files and directories, files over ``max_bytes``, binary files of
unknown type (NUL bytes, no parser sniffs them) and anything but regular files (FIFOs,
devices, sockets: reading them blocks or never ends) are skipped, each with a reason.
Every parse runs under a per-file ``time_budget`` (:mod:`parsers._budget`); a worker
process that dies (a crash, out of memory) fails its own file only, which is never parsed
again in the caller, so one bomb cannot take the batch down.

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
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ragtools.parsers import html, markdown, office, pdf, records, text  # noqa: F401  (register formats)
from ragtools.parsers._budget import DEFAULT_TIME_BUDGET
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
from ragtools.parsers.registry import HEAD_BYTES, ParserSpec, resolve

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_TIME_BUDGET",
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


_SPECIAL = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def special_kind(mode: int) -> str | None:
    """What a non-regular, non-directory file is (``"a FIFO"``), or ``None``.

    Only regular files are opened: reading a FIFO blocks until a writer comes, and a
    device such as ``/dev/zero`` never ends.
    """
    return next((kind for test, kind in _SPECIAL if test(mode)), None)


def _not_regular(kind: str) -> str:
    return f"not a regular file ({kind}); only regular files are read"


def _read_head(file: Path, source: str) -> bytes:
    try:
        mode = file.stat().st_mode
        if stat.S_ISDIR(mode):
            msg = "is a directory; use parsers.load_dir for directories"
            raise ParseError(source, msg)
        kind = special_kind(mode)
        if kind is not None:
            raise ParseError(source, _not_regular(kind))
        # O_NONBLOCK: should the path have become a FIFO since the stat, opening it returns
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(fd, "rb") as handle:
            kind = special_kind(os.fstat(fd).st_mode)
            if kind is not None:
                raise ParseError(source, _not_regular(kind))
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


def load(
    path: str | os.PathLike[str],
    *,
    password: str | None = None,
    time_budget: float | None = DEFAULT_TIME_BUDGET,
) -> list[Document]:
    """Parse one file into documents, choosing the format by suffix and content.

    Args:
        path: the file. Its string form, as given, is the ``source`` of every document.
        password: for encrypted PDFs.
        time_budget: seconds the parse may take (``None``: no limit); enforced in the
            main thread on POSIX (see :mod:`parsers._budget`).

    Returns:
        The documents: one per page for PDF and PPTX (pages without text are skipped with a
        WARNING), one per sheet for XLSX, one per record for CSV/JSON/JSONL, else one.

    Raises:
        PasswordRequiredError: an encrypted file, and no password or a wrong one.
        ParseError: every other failure (missing, empty, binary, damaged, unsupported, not
            a regular file, over the time budget or a size limit).

    Example:
        >>> docs = load("../shared/pdfs/tracemonkey.pdf")
        >>> len(docs), docs[0].metadata["page"]
        (14, 1)
    """
    source = os.fspath(path)
    file = Path(source)
    head = _read_head(file, source)
    _check_budget(time_budget)
    return run_parser(_resolve(file, head, source), file, source, password, time_budget)


def _check_budget(time_budget: float | None) -> None:
    if time_budget is not None and not time_budget > 0:
        msg = f"time_budget must be a positive number of seconds or None, got {time_budget}"
        raise ConfigError(msg)


# ---- load_dir ---------------------------------------------------------------------------


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
            elif not path.is_dir():
                kind = _special_path(path)
                if kind is not None:
                    skipped.append((str(path), _not_regular(kind)))
        elif hidden == len(relative.parts) - 1 and not path.is_dir():
            skipped.append((str(path), "hidden file"))
        else:
            directory = root.joinpath(*relative.parts[: hidden + 1])
            if directory not in hidden_dirs:
                hidden_dirs.add(directory)
                skipped.append((str(directory), "hidden directory"))
    return files, skipped


def _special_path(path: Path) -> str | None:
    try:
        return special_kind(path.stat().st_mode)
    except OSError:
        return None


def _plan(
    files: list[Path], skipped: list[tuple[str, str]], max_bytes: int
) -> tuple[list[Task], dict[int, Outcome]]:
    tasks: list[Task] = []
    failed: dict[int, Outcome] = {}
    for index, file in enumerate(files):
        source = str(file)
        try:
            kind = _special_path(file)
            if kind is not None:
                skipped.append((source, _not_regular(kind)))
                continue
            if file.is_symlink() and not file.exists():
                skipped.append((source, "broken symbolic link"))
                continue
            size = file.stat().st_size
            if size > max_bytes:
                skipped.append((source, f"larger than max_bytes ({size} > {max_bytes} bytes)"))
                continue
            head = _read_head(file, source)
            if resolve(file, head) is None and b"\x00" in head:
                kind = file.suffix or "no suffix"
                skipped.append((source, f"binary file of unknown type ({kind})"))
                continue
            tasks.append(Task(index, file, source, _resolve(file, head, source), size))
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
    time_budget: float | None = DEFAULT_TIME_BUDGET,
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
        time_budget: seconds one file may take to parse (``None``: no limit); a file over
            it is stopped and becomes an entry of ``errors``.

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
    _check_budget(time_budget)
    files, skipped = _walk(base, pattern)
    return _load(
        files,
        skipped,
        workers=workers,
        show_progress=show_progress,
        max_bytes=max_bytes,
        time_budget=time_budget,
    )


def load_files(
    files: Sequence[str | os.PathLike[str]],
    *,
    workers: int | None = None,
    show_progress: bool | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    time_budget: float | None = DEFAULT_TIME_BUDGET,
) -> LoadResult:
    """Parse a list of files as :func:`load_dir` parses a tree (same parallelism and rules).

    Used by index updates, which re-parse only the files that changed.
    """
    if workers is not None and workers < 1:
        msg = f"workers must be >= 1 or None (automatic), got {workers}"
        raise ConfigError(msg)
    _check_budget(time_budget)
    paths = [Path(os.fspath(f)) for f in files]
    return _load(
        paths,
        [],
        workers=workers,
        show_progress=show_progress,
        max_bytes=max_bytes,
        time_budget=time_budget,
    )


def _load(
    files: list[Path],
    skipped: list[tuple[str, str]],
    *,
    workers: int | None,
    show_progress: bool | None,
    max_bytes: int,
    time_budget: float | None,
) -> LoadResult:
    start = time.perf_counter()
    tasks, failed = _plan(files, skipped, max_bytes)
    results: dict[int, Outcome] = dict(failed)
    size = pool_size(tasks, workers)
    with contextlib.ExitStack() as stack:
        jobs: Jobs = {}
        if size:  # workers start now, before the progress bar's monitor thread would
            jobs = submit(tasks, size, stack, time_budget)
        steps = execute(tasks, jobs, results, time_budget)
        for _ in progress(steps, total=len(tasks), desc="Parsing", show_progress=show_progress):
            pass
    documents: list[Document] = []
    errors: list[FileError] = []
    for index in sorted(results):
        outcome = results[index]
        if isinstance(outcome, tuple):
            errors.append(FileError(*outcome))
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
