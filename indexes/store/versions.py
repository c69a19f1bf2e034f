"""The version store of an index: a commit protocol over immutable version directories.

Layout of an index root (a sharded index's shards each hold the same layout)::

    INDEX/
      CURRENT                the name of the live version, replaced with an atomic rename
      NEXT_VERSION           the number the next version gets (a monotonic counter)
      versions/v-000007/     one complete, immutable version
      versions/.tmp-...      a version being written, or one being deleted (debris when its
                             writer died: the next write of any kind removes it)
      .CURRENT.*.tmp         a pointer or counter being written (likewise)
      .lock                  the writer lock: one writer per index (filelock.FileLock)
      .gc.lock               readers share it while they open a version, garbage collection
                             takes it alone (filelock.ReadWriteLock, a small SQLite database)
      .pins/v-000007.*.pin   one file per open reader of that version, locked while it is open

**The protocol.** Every change (build, update, add, delete, rollback, and the whole of a
sharded build or update, shards included) runs under the one writer lock of the index root
(:func:`writer_lock`); a second writer waits for it, up to :data:`WRITER_TIMEOUT`, then gets
an :class:`~indexes.errors.IndexStateError` naming the index. A version is written into a
``.tmp-`` directory, fsynced, renamed to its final name and only then named by ``CURRENT``
(an fsynced temporary file renamed over it): a crash or a full disk at any point leaves
``CURRENT`` naming the previous complete version or the new complete one, never a mix. A
directory named ``v-NNNNNN`` is always complete: versions appear by one rename, and are
deleted by a rename to a ``.tmp-`` name first, so a collection killed half-way leaves debris
the next write removes, never a half-deleted version that ``rag versions`` would list.

**Numbers are never reused.** The next number comes from ``NEXT_VERSION``, which is advanced
(and fsynced) before the version is written, and never from the versions that happen to
exist: after a rollback and a collection, ``v-000002`` might no longer exist, and a new
``v-000002`` with other contents would be mistaken for the old one by whatever still names it
(a sharded top version names its shards' versions; :mod:`indexes.shards` also pins them by the
checksum of their manifests). The counter only ever moves up: it is at least one past the
newest version on disk, so an index written before the counter existed continues after its
newest version.

**Garbage collection never deletes what is in use.** After each write the newest ``keep``
versions are kept, and so is the version ``CURRENT`` names (after a rollback it is not the
newest) and every version an open reader has pinned. Readers *pin* their version for as long
as they are open, rather than the collector keeping a grace period. This is the choice of
Lucene (``IndexDeletionPolicy`` keeps every commit an open ``IndexReader`` holds a reference
to) and of SQLite's WAL mode (a checkpoint never overwrites the pages a reader's read-mark
still needs): a grace period only guesses how long a reader lives, and a long-running server
that opened an index an hour ago would find its files gone. A pin is a file under ``.pins/``
holding an exclusive OS lock; the operating system releases the lock when the reader closes
the index, is garbage-collected or dies, so the collector recognises stale pins (it can take
their lock) and deletes them, and a killed reader never pins a version forever. A reader takes
its pin while it holds the shared ``.gc.lock``, and the collector lists pins only while it
holds that lock alone, so no version is deleted between a reader reading ``CURRENT`` and
pinning it. The collector never waits for readers (it would starve behind a steady stream of
them): when one is opening a version it skips collection, and the next write collects. On a
read-only index no pin or lock can be created, and nothing is collected either.

Both locks come from ``filelock`` rather than ``fcntl``, so the package imports and works on
Windows too. Both are released by the operating system when their holder dies (an flock or
a ``LockFileEx`` lock, and SQLite's own file locks), so a killed writer or reader never
leaves an index locked.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import shutil
import sqlite3
import stat
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from filelock import FileLock, ReadWriteLock, Timeout

from ragtools.indexes.errors import IndexLoadError, IndexStateError
from ragtools.indexes.store.persist import fsync_dir
from ragtools.parsers.errors import ConfigError

__all__ = [
    "COUNTER",
    "POINTER",
    "VERSIONS",
    "WRITER_TIMEOUT",
    "VersionPin",
    "collect",
    "collect_unused",
    "collecting",
    "current_version",
    "disk_full",
    "is_index_root",
    "list_versions",
    "no_space_error",
    "pin_version",
    "reading",
    "sweep",
    "switch_version",
    "write_version",
    "writer_lock",
]

logger = logging.getLogger(__name__)

POINTER = "CURRENT"
COUNTER = "NEXT_VERSION"
VERSIONS = "versions"
WRITER_TIMEOUT = 1800.0
"""Seconds a writer waits for another writer of the same index before giving up: long enough
for a large update to finish, short enough that a stuck job reports instead of hanging."""
_NAME = re.compile(r"^v-(\d{6,})$")
_GC_LOCK = ".gc.lock"
_LOCK = ".lock"
_PINS = ".pins"
_TMP = ".tmp-"
_OURS = {VERSIONS, "cache", "segments", "shards", _LOCK, _GC_LOCK, _PINS, COUNTER}
"""Entries a half-built index may already hold (the embedding cache and a sharded index's
shards are written first)."""
_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written")
"""numpy's message when ``tofile``/``save`` writes fewer bytes than asked: a full disk that
reached numpy's ``fwrite`` rather than Python's ``write`` and so carries no errno."""


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


def list_versions(root: str | Path) -> list[Path]:
    """The version directories kept on disk, oldest first (the live one is
    :func:`current_version`; after a rollback it is not the newest). Each is complete: a
    version appears and disappears by one rename."""
    current_version(root)  # raises IndexLoadError when ``root`` is not an index
    return [path for _, path in _existing(Path(root) / VERSIONS)]


# --------------------------------------------------------------------------- locks
@contextlib.contextmanager
def writer_lock(root: str | Path, *, timeout: float | None = None) -> Iterator[None]:
    """Hold the writer lock of the index ``root`` (created if need be).

    Re-entrant in one thread (a sharded update holds it while each of its writes takes it
    again); another thread or process waits, up to ``timeout`` (default
    :data:`WRITER_TIMEOUT`) seconds.

    Raises:
        ConfigError: ``root`` is a file, or a directory that is neither empty nor an index.
        IndexStateError: another writer held the lock for all of ``timeout``.
    """
    root = Path(root)
    _check_target(root)
    root.mkdir(parents=True, exist_ok=True)
    lock = FileLock(root.resolve() / _LOCK, is_singleton=True)  # one per file, however named
    wait = WRITER_TIMEOUT if timeout is None else timeout
    try:
        lock.acquire(timeout=wait)
    except Timeout as exc:
        msg = (
            f"{root}: another writer (rag build/update/rollback) has held this index's lock "
            f"{root / _LOCK} for {wait:.0f} s; nothing was changed. Wait for it to finish "
            "and run the command again"
        )
        raise IndexStateError(msg) from exc
    try:
        yield
    finally:
        lock.release()


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
    """Hold off garbage collection of versions while a reader opens (and pins) one.

    Readers share a lock that the collector needs exclusively, so a version cannot vanish
    between reading ``CURRENT`` and pinning it, nor half-way through a load. On a read-only
    index (no lock file can be created) nothing is collected anyway, and the reader goes on
    without the lock.
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


@contextlib.contextmanager
def collecting(root: str | Path) -> Iterator[bool]:
    """Hold the collector's side of ``.gc.lock``, without waiting: yields ``False`` (collect
    nothing) while a reader is opening a version or when the lock cannot be had at all."""
    lock = _gc_lock(Path(root))
    if lock is None:
        yield False
        return
    try:
        try:
            held = lock.acquire_write(blocking=False)
        except (Timeout, OSError, sqlite3.Error):
            logger.debug("index %s: readers busy; old versions are collected later", root)
            yield False
            return
        with held:
            yield True
    finally:
        lock.close()


# --------------------------------------------------------------------------- pins
class VersionPin:
    """An open reader's hold on one version: garbage collection keeps it until released.

    The pin is a file locked for as long as the pin lives; :meth:`release` (or the reader's
    process ending) frees it. Take it only inside :func:`reading`.
    """

    def __init__(self, root: Path, name: str) -> None:
        self.name = name
        """The pinned version (e.g. ``"v-000007"``)."""
        folder = root / _PINS
        folder.mkdir(exist_ok=True)
        self.path = folder / f"{name}.{os.getpid()}-{uuid.uuid4().hex[:12]}.pin"
        self._lock = FileLock(self.path, is_singleton=False, thread_local=False)
        self._lock.acquire(timeout=0)  # a new file of its own: never contended

    def release(self) -> None:
        """Free the version for garbage collection (idempotent)."""
        if self._lock.is_locked:
            self._lock.release(force=True)
            self.path.unlink(missing_ok=True)


def pin_version(root: str | Path, name: str) -> VersionPin | None:
    """Pin version ``name`` of ``root`` for an open reader, or ``None`` on a read-only index
    (where nothing is collected)."""
    try:
        return VersionPin(Path(root), name)
    except (OSError, Timeout):
        logger.debug("index %s: cannot pin %s (read-only?); nothing is collected there", root, name)
        return None


def _pinned(root: Path) -> set[str]:
    """Names of the versions open readers pin; stale pins (their reader is gone) are deleted.

    Call only while holding :func:`collecting`."""
    names = set()
    folder = root / _PINS
    for pin in folder.glob("*.pin") if folder.is_dir() else []:
        probe = FileLock(pin, is_singleton=False, thread_local=False)
        try:
            probe.acquire(timeout=0)
        except Timeout:
            names.add(pin.name.split(".", 1)[0])
            continue
        except OSError:  # cannot tell: keep the version
            names.add(pin.name.split(".", 1)[0])
            continue
        probe.release(force=True)
        pin.unlink(missing_ok=True)
    return names


# --------------------------------------------------------------------------- writing
def disk_full(exc: OSError) -> bool:
    """True when ``exc`` means the disk (or the quota) is full, including numpy's short
    writes, which carry no errno."""
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return True
    return exc.errno is None and _SHORT_WRITE.search(str(exc)) is not None


def no_space_error(root: Path, exc: OSError, where: Path) -> IndexStateError:
    what = exc.filename if isinstance(exc.filename, str) and exc.filename else str(where)
    try:
        live = f"the live version {current_version(root).name} is unchanged"
    except IndexLoadError:
        live = "no version was made live"
    msg = (
        f"{root}: no space left on device (ENOSPC) while writing {what} ({exc}); {live}. "
        "Free space on that file system (or pass another --out) and run the command again"
    )
    return IndexStateError(msg)


def _fsync_tree(path: Path) -> None:
    for sub in sorted(p for p in path.rglob("*") if p.is_dir()):
        fsync_dir(sub)
    fsync_dir(path)


def _replace_file(root: Path, target: str, text: str) -> None:
    """Write ``root/target`` by an fsynced temporary file renamed over it."""
    tmp = root / f".{target}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, root / target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(root)


def _point(root: Path, name: str) -> None:
    """Make version ``name`` live: write the pointer beside it, then rename it into place."""
    _replace_file(root, POINTER, name)


def _next_number(root: Path) -> int:
    """Take the next version number of ``root`` and persist the counter past it."""
    number = 1
    try:
        text = (root / COUNTER).read_text(encoding="ascii").strip()
        number = max(number, int(text))
    except FileNotFoundError:
        pass
    except (OSError, ValueError, UnicodeDecodeError):
        logger.warning("index %s: %s unreadable; numbering after the newest version", root, COUNTER)
    existing = _existing(root / VERSIONS)
    if existing:
        number = max(number, existing[-1][0] + 1)
    _replace_file(root, COUNTER, str(number + 1))
    return number


def _remove(path: Path) -> None:
    """Delete a version directory: renamed out of the ``v-`` names first, so that a crash
    half-way leaves ``.tmp-`` debris, never a half-deleted version."""
    doomed = path.parent / f"{_TMP}gc-{path.name}-{uuid.uuid4().hex[:8]}"
    try:
        os.rename(path, doomed)
    except FileNotFoundError:
        return
    fsync_dir(path.parent)
    shutil.rmtree(doomed, ignore_errors=True)


def sweep(root: str | Path) -> None:
    """Remove what killed writers left in ``root``: temporary versions, pointers, counters.

    Call only while holding the writer lock of the index ``root`` belongs to.
    """
    root = Path(root)
    versions = root / VERSIONS
    for stale in versions.glob(f"{_TMP}*") if versions.is_dir() else []:
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)
    for name in (POINTER, COUNTER):
        for stale in root.glob(f".{name}.*.tmp"):
            stale.unlink(missing_ok=True)


def collect(root: str | Path, keep: int, *, protect: Iterable[str] = ()) -> list[str]:
    """Delete the versions of ``root`` that nothing needs; returns their names.

    Kept: the newest ``keep`` versions, the one ``CURRENT`` names, every version an open
    reader pins and the names in ``protect``. Call only while holding the writer lock and
    :func:`collecting` (when it yielded ``True``).
    """
    root = Path(root)
    existing = _existing(root / VERSIONS)
    kept = {path.name for _, path in existing[-keep:]} if keep > 0 else set()
    kept |= set(protect) | _pinned(root)
    if is_index_root(root):
        with contextlib.suppress(IndexLoadError):
            kept.add(current_version(root).name)
    gone = []
    for _, path in existing:
        if path.name not in kept:
            _remove(path)
            gone.append(path.name)
    if gone:
        logger.debug("index %s: collected %s", root, ", ".join(gone))
    return gone


def collect_unused(root: str | Path, keep: int) -> list[str]:
    """:func:`collect` when no reader is opening a version, else nothing (the next write
    collects). Call only while holding the writer lock."""
    with collecting(root) as free:
        return collect(root, keep) if free else []


def switch_version(
    root: str | Path, name: str, *, check: Callable[[Path], object] | None = None
) -> Path:
    """Make the kept version ``name`` (e.g. ``"v-000003"``) live again: a rollback.

    Under the writer lock, the version is looked up (and checked with ``check``, e.g. a full
    load, so a damaged version never goes live), then the pointer is switched with the same
    atomic rename as a write. The versions are left as they are; the next write takes the
    next number of the counter, and collection keeps the live one.

    Raises:
        IndexLoadError: ``root`` is not an index, or ``check`` found the version damaged.
        ConfigError: no kept version of that name.
    """
    root = Path(root)
    current_version(root)  # not an index: IndexLoadError, before any lock file is made
    with writer_lock(root):
        kept = {path.name: path for path in list_versions(root)}
        if name not in kept:
            msg = f"{root}: no version {name!r}; kept versions: {', '.join(kept) or 'none'}"
            raise ConfigError(msg)
        if check is not None:
            check(kept[name])
        sweep(root)
        try:
            _point(root, name)
        except OSError as exc:
            if disk_full(exc):
                raise no_space_error(root, exc, root / POINTER) from exc
            raise
    logger.info("index %s: version %s is live again", root, name)
    return kept[name]


def _check_target(root: Path) -> None:
    if root.exists() and not root.is_dir():
        msg = f"{root}: exists and is not a directory; choose another --out"
        raise ConfigError(msg)
    foreign = [p.name for p in root.iterdir() if p.name not in _OURS] if root.is_dir() else []
    if foreign and not is_index_root(root):
        msg = f"{root}: directory is not empty and is not an index; refusing to write into it"
        raise ConfigError(msg)


def write_version(
    root: str | Path, writer: Callable[[Path], None], *, keep: int | None = 2
) -> Path:
    """Create a new version of ``root`` with ``writer(directory)`` and make it live.

    ``writer`` must write (and fsync) every file of the version into the directory it is
    given. Only after it returns is the version renamed into place and the pointer switched.
    ``keep=None`` collects nothing (a shard's versions: the sharded writer collects them by
    what its top versions name).

    Returns:
        The directory of the new live version.

    Raises:
        IndexStateError: the disk is full (the message names the index, the path and
            ENOSPC; the previous version stays live), or another writer held the lock.
    """
    root = Path(root)
    with writer_lock(root):
        sweep(root)
        tmp = root / VERSIONS / f"{_TMP}new-{uuid.uuid4().hex[:8]}"
        try:
            (root / VERSIONS).mkdir(exist_ok=True)
            name = f"v-{_next_number(root):06d}"
            tmp.mkdir()
            writer(tmp)
            _fsync_tree(tmp)
            final = root / VERSIONS / name
            os.rename(tmp, final)
            fsync_dir(root / VERSIONS)
            _point(root, name)
        except BaseException as exc:  # a failed save leaves nothing behind (a crash: the next)
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(exc, OSError) and disk_full(exc):
                raise no_space_error(root, exc, tmp) from exc
            raise
        if keep is not None:
            collect_unused(root, keep)
    logger.info("index %s: version %s is live", root, name)
    return final
