"""Which files an index is built from, and whether they changed since the last build.

A source is a file or a directory (walked recursively, hidden entries skipped). Each file
gets a fingerprint, its size and SHA-256, stored in the manifest; ``Index.update`` re-parses
only files whose fingerprint differs, so editing one file of a thousand parses one file.
Parsing itself is :func:`parsers.load_files` (parallel where it pays; a bad file is an
entry in the failures, never the end of the batch).

Chunk sources are relative to one directory, the *source root* (:func:`source_root`): the
directory given, when one directory is given (``rag build docs/`` gives ``guide.md``); the
directory holding all the given sources otherwise (``rag build docs papers`` gives
``docs/guide.md`` and ``papers/x.pdf``; one file gives its name). The manifest keeps it, so
an update names files the same way and a filter can take the path as the user types it.
Fingerprints stay keyed by absolute path, the file's ``path`` metadata.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from ragtools.indexes._persist import sha256_file
from ragtools.parsers import Document, FileError, load_files
from ragtools.parsers.errors import ConfigError

__all__ = ["expand_sources", "fingerprint", "parse_files", "source_root"]

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
        if path.is_file():
            files.add(path)
        elif path.is_dir():
            files.update(p for p in path.rglob("*") if p.is_file() and not _hidden(p, path))
        else:
            msg = f"{source}: no such file or directory"
            raise ConfigError(msg)
    return sorted(files)


def source_root(sources: Sequence[str | Path]) -> Path:
    """The directory chunk sources are relative to (see the module docstring)."""
    paths = [Path(source).expanduser().resolve() for source in sources]
    if len(paths) == 1 and paths[0].is_dir():
        return paths[0]
    parents = [path if path.is_dir() and len(paths) == 1 else path.parent for path in paths]
    try:
        return Path(os.path.commonpath(parents)) if parents else Path.cwd()
    except ValueError:  # different drives (Windows): no common directory
        return parents[0]


def fingerprint(path: Path) -> dict[str, str | int]:
    """Size and SHA-256 of a file: what decides whether it must be parsed again."""
    return {"size": path.stat().st_size, "sha256": sha256_file(path)}


def parse_files(
    files: Sequence[Path], *, root: Path, show_progress: bool | None = None
) -> tuple[dict[str, list[Document]], list[FileError]]:
    """Parse ``files`` (absolute), sources relative to ``root``; returns the documents of
    each parsed file, by absolute path, and the failures.

    Skipped files (binary of an unknown type, too large) count as failures, with the reason.
    """
    result = load_files(files, show_progress=show_progress, relative_to=root)
    by_file: dict[str, list[Document]] = {}
    for document in result.documents:
        by_file.setdefault(str(document.metadata.get("path", document.source)), []).append(document)
    failures = list(result.errors)
    failures += [FileError(path, "Skipped", reason) for path, reason in result.skipped]
    parsed_or_failed = {f.path for f in failures}
    for file in map(str, files):
        if file not in parsed_or_failed:
            by_file.setdefault(file, [])  # parsed, but no text (e.g. a scanned PDF)
    for failure in failures:
        logger.warning("skipped %s: %s", failure.path, failure.message)
    return by_file, sorted(failures, key=lambda f: f.path)
