"""Which files an index is built from, and whether they changed since the last build.

A source is a file or a directory (walked recursively, hidden entries skipped). Each file
gets a fingerprint, its size and SHA-256, stored in the manifest; ``Index.update`` re-parses
only files whose fingerprint differs, so editing one file of a thousand parses one file.
Parsing itself is :func:`parsers.load_files` (parallel where it pays; a bad file is an
entry in the failures, never the end of the batch).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

from ragtools.indexes._persist import sha256_file
from ragtools.parsers import Document, FileError, load_files
from ragtools.parsers.errors import ConfigError
from ragtools.parsers.loading import special_kind

__all__ = ["expand_sources", "fingerprint", "parse_files"]

logger = logging.getLogger(__name__)


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def expand_sources(sources: Iterable[str | Path]) -> list[Path]:
    """Resolve files and directories into a sorted, de-duplicated list of absolute files.

    Raises:
        ConfigError: a source does not exist.
    """
    files: set[Path] = set()
    for source in sources:
        path = Path(source).expanduser().resolve()
        if path.is_dir():  # every entry but folders: a FIFO or a device is a failure
            files.update(p for p in path.rglob("*") if not p.is_dir() and not _hidden(p, path))
        elif path.exists():
            files.add(path)
        else:
            msg = f"{source}: no such file or directory"
            raise ConfigError(msg)
    return sorted(files)


def fingerprint(path: Path) -> dict[str, str | int]:
    """Size and SHA-256 of a file: what decides whether it must be parsed again.

    A file that cannot be read (no permission, a FIFO or a device, gone) gets the reason
    instead of a digest and never raises: its parse fails as one entry of the failures, and
    it is parsed again once its fingerprint changes.
    """
    try:
        info = path.stat()
        kind = special_kind(info.st_mode)
        if kind is not None:
            return {"size": 0, "unreadable": kind}
        return {"size": info.st_size, "sha256": sha256_file(path)}
    except OSError as exc:
        return {"size": 0, "unreadable": exc.strerror or type(exc).__name__}


def parse_files(
    files: Sequence[Path], *, show_progress: bool | None = None
) -> tuple[dict[str, list[Document]], list[FileError]]:
    """Parse ``files``; returns the documents of each parsed file and the failures.

    Skipped files (binary of an unknown type, too large) count as failures, with the reason.
    """
    result = load_files(files, show_progress=show_progress)
    by_file: dict[str, list[Document]] = {}
    for document in result.documents:
        by_file.setdefault(document.source, []).append(document)
    failures = list(result.errors)
    failures += [FileError(path, "Skipped", reason) for path, reason in result.skipped]
    parsed_or_failed = {f.path for f in failures}
    for file in map(str, files):
        if file not in parsed_or_failed:
            by_file.setdefault(file, [])  # parsed, but no text (e.g. a scanned PDF)
    for failure in failures:
        logger.warning("skipped %s: %s", failure.path, failure.message)
    return by_file, sorted(failures, key=lambda f: f.path)
