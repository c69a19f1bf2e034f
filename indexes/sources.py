"""Which files an index is built from, and whether they changed since the last build.

A source is a file or a directory (walked recursively, hidden entries skipped). Each file
gets a fingerprint, its size and SHA-256, stored in the manifest; ``Index.update`` re-parses
only files whose fingerprint differs, so editing one file of a thousand parses one file.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from indexes._persist import sha256_file
from parsers import Document, ParseError, load
from parsers._progress import progress
from parsers.errors import ConfigError

__all__ = ["FileFailure", "expand_sources", "fingerprint", "parse_files"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FileFailure:
    """A file that could not be parsed; the batch goes on without it."""

    path: str
    error: str
    message: str


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


def fingerprint(path: Path) -> dict[str, str | int]:
    """Size and SHA-256 of a file: what decides whether it must be parsed again."""
    return {"size": path.stat().st_size, "sha256": sha256_file(path)}


def _parse_one(path: Path) -> list[Document] | FileFailure:
    try:
        return load(path)
    except ParseError as exc:
        return FileFailure(str(path), type(exc).__name__, str(exc))
    except Exception as exc:  # a parser bug must not stop a batch; it is reported, not hidden
        logger.exception("unexpected error parsing %s", path)
        return FileFailure(str(path), type(exc).__name__, f"{path}: {exc}")


def parse_files(
    files: Sequence[Path], *, workers: int | None = None, show_progress: bool | None = None
) -> tuple[dict[str, list[Document]], list[FileFailure]]:
    """Parse ``files`` in parallel; returns documents by file path and the failures."""
    by_file: dict[str, list[Document]] = {}
    failures: list[FileFailure] = []
    with ThreadPoolExecutor(max_workers=workers or 4) as pool:
        results = pool.map(_parse_one, files)
        for path, result in zip(
            files,
            progress(results, total=len(files), desc="parsing", show_progress=show_progress),
            strict=True,
        ):
            if isinstance(result, FileFailure):
                logger.warning("skipped %s: %s", path, result.message)
                failures.append(result)
            else:
                by_file[str(path)] = result
    return by_file, failures
