"""Crash-safe versioned directories: write a new version, then switch a pointer atomically.

Layout of an index root::

    INDEX/
      CURRENT                the name of the live version, replaced with an atomic rename
      versions/v-000007/     one complete, immutable version
      versions/.tmp-...      a version being written (ignored, removed by the next save)
      .lock                  serialises writers (fcntl.flock)

A crash at any point leaves ``CURRENT`` naming the previous complete version or the new
complete one, never a mix. Readers that loaded an old version keep working: its files are
only removed ``keep`` versions later.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from ragtools.indexes._persist import fsync_dir
from ragtools.parsers.errors import ConfigError, IndexLoadError

__all__ = ["POINTER", "current_version", "is_index_root", "reading", "write_version"]

logger = logging.getLogger(__name__)

POINTER = "CURRENT"
VERSIONS = "versions"
_NAME = re.compile(r"^v-(\d{6,})$")
_GC_LOCK = ".gc.lock"
_OURS = {VERSIONS, "cache", ".lock", _GC_LOCK}
"""Entries a half-built index may already hold (the embedding cache is written first)."""


def is_index_root(root: str | Path) -> bool:
    """True when ``root`` holds a pointer file."""
    return (Path(root) / POINTER).is_file()


def current_version(root: str | Path) -> Path:
    """The directory of the live version.

    Raises:
        IndexLoadError: ``root`` is not an index or its pointer names no version.
    """
    root = Path(root)
    pointer = root / POINTER
    if not root.is_dir():
        raise IndexLoadError(root, "no index here (directory does not exist)")
    try:
        name = pointer.read_text(encoding="utf-8").strip()
    except FileNotFoundError as exc:
        msg = f"not an index: {POINTER} is missing (build one with `rag build`)"
        raise IndexLoadError(root, msg) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise IndexLoadError(pointer, f"unreadable ({exc})") from exc
    if not _NAME.match(name):
        raise IndexLoadError(pointer, f"does not name a version: {name[:40]!r}")
    path = root / VERSIONS / name
    if not path.is_dir():
        raise IndexLoadError(path, "the version named by CURRENT is missing")
    return path


def _existing(versions: Path) -> list[tuple[int, Path]]:
    found = []
    for entry in versions.iterdir() if versions.is_dir() else []:
        match = _NAME.match(entry.name)
        if match and entry.is_dir():
            found.append((int(match.group(1)), entry))
    return sorted(found)


@contextlib.contextmanager
def reading(root: str | Path) -> Iterator[None]:
    """Hold off garbage collection of versions while a reader loads one.

    Readers share a lock that the writer needs exclusively only to delete old versions, so
    a version cannot vanish half-way through a load. On a read-only index (no lock file can
    be created) nothing is collected anyway, and the reader goes on without the lock.
    """
    try:
        if not is_index_root(root):
            raise FileNotFoundError(root)
        handle = open(Path(root) / _GC_LOCK, "a+")  # noqa: SIM115 (closed below)
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _collect(root: Path, versions: Path, keep: int) -> None:
    """Delete all but the newest ``keep`` versions, unless a reader is loading one.

    The writer never waits for readers (it would starve behind a steady stream of them):
    when the lock is taken it skips collection, and the next save collects instead.
    """
    with open(root / _GC_LOCK, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            logger.debug("index %s: readers busy; old versions are collected later", root)
            return
        try:
            for _, old in _existing(versions)[:-keep] if keep > 0 else []:
                shutil.rmtree(old, ignore_errors=True)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def _writer_lock(root: Path) -> Iterator[None]:
    with open(root / ".lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _fsync_tree(path: Path) -> None:
    for sub in sorted(p for p in path.rglob("*") if p.is_dir()):
        fsync_dir(sub)
    fsync_dir(path)


def write_version(root: str | Path, writer: Callable[[Path], None], *, keep: int = 2) -> Path:
    """Create a new version of ``root`` with ``writer(directory)`` and make it live.

    ``writer`` must write (and fsync) every file of the version into the directory it is
    given. Only after it returns is the version renamed into place and the pointer switched.

    Returns:
        The directory of the new live version.
    """
    root = Path(root)
    if root.exists() and not root.is_dir():
        msg = f"{root}: exists and is not a directory; choose another --out"
        raise ConfigError(msg)
    foreign = [p.name for p in root.iterdir() if p.name not in _OURS] if root.is_dir() else []
    if foreign and not is_index_root(root):
        msg = f"{root}: directory is not empty and is not an index; refusing to write into it"
        raise ConfigError(msg)
    versions = root / VERSIONS
    versions.mkdir(parents=True, exist_ok=True)
    with _writer_lock(root):
        for stale in versions.glob(".tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        existing = _existing(versions)
        number = existing[-1][0] + 1 if existing else 1
        name = f"v-{number:06d}"
        tmp = versions / f".tmp-{name}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        writer(tmp)
        _fsync_tree(tmp)
        final = versions / name
        os.rename(tmp, final)
        fsync_dir(versions)
        pointer_tmp = root / f".{POINTER}.{uuid.uuid4().hex[:8]}.tmp"
        with open(pointer_tmp, "w", encoding="utf-8") as handle:
            handle.write(name + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(pointer_tmp, root / POINTER)
        fsync_dir(root)
        _collect(root, versions, keep)
    logger.info("index %s: version %s is live", root, name)
    return final
