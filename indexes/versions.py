"""Crash-safe versioned directories: write a new version, then switch a pointer atomically.

Layout of an index root::

    INDEX/
      CURRENT                the name of the live version, replaced with an atomic rename
      versions/v-000007/     one complete, immutable version
      versions/.tmp-...      a version being written (ignored, removed by the next save)
      .CURRENT.*.tmp         a pointer being written (likewise)
      .lock                  serialises writers (filelock.FileLock)
      .gc.lock               readers share it, garbage collection takes it alone
                             (filelock.ReadWriteLock, a small SQLite database)

A crash at any point leaves ``CURRENT`` naming the previous complete version or the new
complete one, never a mix. Readers that loaded an old version keep working: its files are
only removed ``keep`` versions later.

Both locks come from ``filelock`` rather than ``fcntl``, so the package imports and works on
Windows too. Both are released by the operating system when their holder dies (an flock or
a ``LockFileEx`` lock, and SQLite's own file locks), so a killed writer or reader never
leaves an index locked.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import sqlite3
import stat
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from filelock import FileLock, ReadWriteLock, Timeout

from ragtools.indexes._persist import fsync_dir
from ragtools.parsers.errors import ConfigError, IndexLoadError

__all__ = [
    "POINTER",
    "current_version",
    "is_index_root",
    "list_versions",
    "reading",
    "switch_version",
    "write_version",
]

logger = logging.getLogger(__name__)

POINTER = "CURRENT"
VERSIONS = "versions"
_NAME = re.compile(r"^v-(\d{6,})$")
_GC_LOCK = ".gc.lock"
_OURS = {VERSIONS, "cache", "shards", ".lock", _GC_LOCK}
"""Entries a half-built index may already hold (the embedding cache and a sharded index's
shards are written first)."""


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
        mode = os.lstat(pointer).st_mode
        if not stat.S_ISREG(mode):  # a FIFO blocks, a link to /dev/zero never ends
            raise IndexLoadError(pointer, "not a regular file; an index writes a plain file")
        with open(pointer, "rb") as handle:
            name = handle.read(64).decode("utf-8").strip()
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


def _gc_lock(root: Path) -> ReadWriteLock | None:
    """The reader/collector lock of ``root``, or ``None`` when it cannot be opened.

    One instance per use (``is_singleton=False``): filelock's shared instance coordinates
    processes only, and would refuse (not wait) when a thread of this process collects
    while another thread of it reads.
    """
    try:
        return ReadWriteLock(root / _GC_LOCK, is_singleton=False)
    except (OSError, sqlite3.Error, ValueError):
        logger.debug("index %s: no reader lock (read-only?); reading without it", root)
        return None


@contextlib.contextmanager
def reading(root: str | Path) -> Iterator[None]:
    """Hold off garbage collection of versions while a reader loads one.

    Readers share a lock that the writer needs exclusively only to delete old versions, so
    a version cannot vanish half-way through a load. On a read-only index (no lock file can
    be created) nothing is collected anyway, and the reader goes on without the lock.
    """
    lock = _gc_lock(Path(root)) if is_index_root(root) else None
    with contextlib.ExitStack() as stack:
        if lock is not None:
            stack.callback(lock.close)
            try:
                stack.enter_context(lock.read_lock())
            except (OSError, sqlite3.Error):
                logger.debug("index %s: reader lock unavailable; reading without it", root)
        yield


def _collect(root: Path, versions: Path, keep: int) -> None:
    """Delete all but the newest ``keep`` versions, unless a reader is loading one.

    The writer never waits for readers (it would starve behind a steady stream of them):
    when the lock is taken it skips collection, and the next save collects instead.
    """
    lock = _gc_lock(root)
    if lock is None:
        return
    try:
        with lock.acquire_write(blocking=False):
            for _, old in _existing(versions)[:-keep] if keep > 0 else []:
                shutil.rmtree(old, ignore_errors=True)
    except Timeout:
        logger.debug("index %s: readers busy; old versions are collected later", root)
    finally:
        lock.close()


def _writer_lock(root: Path) -> FileLock:
    """Serialises writers of one index, across threads and processes."""
    return FileLock(root / ".lock")


def _fsync_tree(path: Path) -> None:
    for sub in sorted(p for p in path.rglob("*") if p.is_dir()):
        fsync_dir(sub)
    fsync_dir(path)


def _point(root: Path, name: str) -> None:
    """Make version ``name`` live: write the pointer beside it, then rename it into place."""
    pointer_tmp = root / f".{POINTER}.{uuid.uuid4().hex[:8]}.tmp"
    with open(pointer_tmp, "w", encoding="utf-8") as handle:
        handle.write(name + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(pointer_tmp, root / POINTER)
    fsync_dir(root)


def list_versions(root: str | Path) -> list[Path]:
    """The version directories kept on disk, oldest first (the live one is
    :func:`current_version`; after a rollback it is not the newest)."""
    current_version(root)  # raises IndexLoadError when ``root`` is not an index
    return [path for _, path in _existing(Path(root) / VERSIONS)]


def switch_version(root: str | Path, name: str) -> Path:
    """Make the kept version ``name`` (e.g. ``"v-000003"``) live again: a rollback.

    The pointer is switched with the same atomic rename as a write, under the writer lock.
    The versions are left as they are; the next write is numbered after the newest, so it
    never reuses a name, and collection keeps the newest ones then.

    Raises:
        IndexLoadError: ``root`` is not an index.
        ConfigError: no kept version of that name.
    """
    root = Path(root)
    kept = {path.name: path for path in list_versions(root)}
    if name not in kept:
        msg = f"{root}: no version {name!r}; kept versions: {', '.join(kept) or 'none'}"
        raise ConfigError(msg)
    with _writer_lock(root):
        _point(root, name)
    logger.info("index %s: version %s is live again", root, name)
    return kept[name]


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
        for stale in versions.glob(".tmp-*"):  # left by a writer that was killed
            shutil.rmtree(stale, ignore_errors=True)
        for stale in root.glob(f".{POINTER}.*.tmp"):
            stale.unlink(missing_ok=True)
        existing = _existing(versions)
        number = existing[-1][0] + 1 if existing else 1
        name = f"v-{number:06d}"
        tmp = versions / f".tmp-{name}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            writer(tmp)
            _fsync_tree(tmp)
        except BaseException:  # a failed save leaves nothing behind (a crash: the next save)
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        final = versions / name
        os.rename(tmp, final)
        fsync_dir(versions)
        _point(root, name)
        _collect(root, versions, keep)
    logger.info("index %s: version %s is live", root, name)
    return final
