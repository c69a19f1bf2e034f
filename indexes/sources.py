"""Which files an index is built from, and whether they changed since the last build.

A source is a file or a directory. Directories are walked by :func:`parsers.select_files`
(hidden entries, ``__pycache__``, ``.gitignore``d paths and symbolic links leaving the
directory skipped, unless ``follow_links``; include and exclude patterns) and filtered by the
document policy (:func:`parsers.policy.select_documents`: stylesheets, minified scripts,
source maps and lock files skipped unless an include pattern names them), with the
:class:`~parsers.Selection` recorded in the manifest, so that an update selects what the
build selected. :func:`plan_sources` runs the same selection and the loader's own planning
without parsing: ``rag build --dry-run``.

Each file gets a fingerprint, its size and SHA-256, stored
in the manifest; ``Index.update`` re-parses only files whose fingerprint differs, so editing
one file of a thousand parses one file. Parsing itself is :func:`parsers.load_files`
(parallel where it pays; a bad file is an entry in the failures, never the end of the batch).

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtools.indexes.store.persist import sha256_file
from ragtools.parsers import Document, FileError, Selection, load_files
from ragtools.parsers.errors import ConfigError
from ragtools.parsers.loading import DEFAULT_MAX_BYTES, DocumentSink, Plan, plan_files
from ragtools.parsers.policy import select_documents
from ragtools.parsers.selection import select_files, special_kind

__all__ = [
    "Parsed",
    "expand_sources",
    "fingerprint",
    "parse_files",
    "plan_sources",
    "select_sources",
    "source_root",
]

logger = logging.getLogger(__name__)


def select_sources(
    sources: Iterable[str | Path], selection: Selection | None = None
) -> tuple[list[Path], list[tuple[str, str]]]:
    """Resolve files and directories into sorted, de-duplicated absolute files, and the
    ``(path, reason)`` of every entry the selection left out.

    Raises:
        ConfigError: a source does not exist.
    """
    files: set[Path] = set()
    skipped: set[tuple[str, str]] = set()
    for source in sources:
        path = Path(source).expanduser().resolve()
        if not path.exists():
            msg = f"{source}: no such file or directory"
            raise ConfigError(msg)
        found, left = select_files(path, selection)
        if path.is_dir():  # a file named on its own is always read
            found, policy = select_documents(path, found, selection)
            left += policy
        files.update(found)
        skipped.update(left)
    # Paths' own comparison costs several times a comparison of their parts (same order).
    return sorted(files, key=lambda p: p.parts), sorted(skipped)


def plan_sources(sources: Iterable[str | Path], selection: Selection | None = None) -> Plan:
    """What a build of ``sources`` would parse and skip, decided by the code the build runs
    (:func:`select_sources`, then :func:`parsers.loading.plan_files`), parsing nothing.

    Returns:
        The plan; its ``skipped`` holds the walk's skips and the loader's, sorted.

    Raises:
        ConfigError: a source does not exist.
    """
    files, skipped = select_sources(sources, selection)
    plan = plan_files(files)
    return Plan(plan.parse, sorted(skipped + plan.skipped), plan.errors)


def expand_sources(sources: Iterable[str | Path], selection: Selection | None = None) -> list[Path]:
    """The files of :func:`select_sources` alone."""
    return select_sources(sources, selection)[0]


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


STABLE_NS = 2_000_000_000
"""A file last modified this long before its fingerprint was taken cannot have changed
since without a new modification time (see :func:`fingerprint`)."""


def same_file(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """Whether two fingerprints are of the same contents: same size and SHA-256 (a file too
    large to read: same size and modification time; an unreadable one: the same reason)."""
    if old is None:
        return False
    if "unreadable" in old or "unreadable" in new:
        return dict(old) == dict(new)
    keys = ("size", "sha256") if "sha256" in new else ("size", "mtime_ns")
    return all(old.get(key) == new.get(key) for key in keys)


def fingerprint(
    path: str | Path, known: Mapping[str, Any] | None = None, taken_ns: int = 0
) -> dict[str, str | int]:
    """Size and SHA-256 of a file: what decides whether it must be parsed again.

    ``known`` is the file's fingerprint taken at ``taken_ns`` (the previous build or update).
    When the file still has that size and modification time, and that time lay more than
    :data:`STABLE_NS` before ``taken_ns``, it is the same file and is not read again (git's
    stat check, and its guard against a file changed in the same clock tick as it was
    looked at): an update of 20,000 files hashed them all in most of its time.

    A file that cannot be read (no permission, a FIFO or a device, gone) gets the reason
    instead of a digest and never raises: its parse fails as one entry of the failures, and
    it is parsed again once its fingerprint changes. A file over
    :data:`~parsers.loading.DEFAULT_MAX_BYTES` is never read, so it is fingerprinted by its
    size and modification time only: hashing a 40 GB sparse file on every build, to skip it
    again, cost minutes.
    """
    try:
        info = os.stat(path)  # a string will do: an update looks at every file
        kind = special_kind(info.st_mode)
        if kind is not None:
            return {"size": 0, "unreadable": kind}
        if info.st_size > DEFAULT_MAX_BYTES:
            return {"size": info.st_size, "mtime_ns": info.st_mtime_ns}
        if (
            known is not None
            and "sha256" in known
            and known.get("size") == info.st_size
            and known.get("mtime_ns") == info.st_mtime_ns
            and info.st_mtime_ns < taken_ns - STABLE_NS
        ):
            return dict(known)
        digest = sha256_file(path)
        return {"size": info.st_size, "sha256": digest, "mtime_ns": info.st_mtime_ns}
    except OSError as exc:
        return {"size": 0, "unreadable": exc.strerror or type(exc).__name__}


@dataclass(frozen=True)
class Parsed:
    """What :func:`parse_files` got: documents by file, failures and skipped files."""

    by_file: dict[str, list[Document]] = field(default_factory=dict)
    failures: list[FileError] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    replaced: int = 0
    """Lone surrogates replaced by U+FFFD in the documents (:attr:`parsers.LoadResult.replaced`),
    for the build report."""


def parse_files(
    files: Sequence[Path],
    *,
    root: Path | None = None,
    show_progress: bool | None = None,
    password: str | None = None,
    sink: DocumentSink | None = None,
) -> Parsed:
    """Parse ``files`` (absolute), sources relative to ``root``: the documents of each parsed
    file by absolute path, the failures, and the files skipped as not documents (no parser
    recognises them, or too large), each with why. With ``sink``, the documents go there
    instead (:func:`parsers.load_files`), and each parsed file's list is empty.

    Each failure is logged at INFO only: it is returned, and the caller reports it once.
    """
    result = load_files(
        files, show_progress=show_progress, password=password, relative_to=root, sink=sink
    )
    by_file: dict[str, list[Document]] = {}
    for document in result.documents:
        by_file.setdefault(str(document.metadata.get("path", document.source)), []).append(document)
    left_out = {f.path for f in result.errors} | {path for path, _ in result.skipped}
    for file in map(str, files):
        if file not in left_out:
            by_file.setdefault(file, [])  # parsed, but no text (e.g. a scanned PDF)
    for failure in result.errors:
        logger.info("failed %s: %s", failure.path, failure.message)
    errors = sorted(result.errors, key=lambda f: f.path)
    return Parsed(by_file, errors, sorted(result.skipped), result.replaced)
