"""Build and update sharded indexes: shard by shard, then the global statistics, then the top.

A build assigns each file to a shard by a hash of its path (documents given directly, by a
hash of their id), then builds the shards one after another (peak memory: one shard's, plus
the global vocabulary) or as Ray tasks (:mod:`indexes.ray_shards`), each an ordinary bundle
written by :class:`~indexes.writer.IndexWriter`. Then the driver merges every shard's counts
into the global BM25 statistics and writes the top version (:mod:`indexes.shards`), which
makes the new shard versions live together.

Updates are :mod:`indexes.shard_update`. Until the top version is written, the previous top
version, and the shard versions it names, stay live.

A sharded build or update is one writer of the index: it holds the writer lock of the index
root from start to end (:func:`~indexes.versions.writer_lock`), shards included, so a second
build or update waits for it. Shards do not collect their own versions: after each top
version, :func:`finish` removes what killed writers left in every shard (``.tmp-*``
versions, staging folders), the old top versions (as any index does), and then every shard
version that no remaining top version names. So a rollback to any kept top version finds
its shard versions, and a shard version is never collected while an open reader's top
version names it (that top version is pinned).
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ragtools.indexes._bm25_global import GlobalStats, ShardCounts
from ragtools.indexes._persist import read_json, save_npy, sha256_file, write_json, write_manifest
from ragtools.indexes._shard_spill import STAGING_PREFIX, read_spill, spill, staging
from ragtools.indexes.bm25 import BM25Index
from ragtools.indexes.bundle import MANIFEST, Index
from ragtools.indexes.embed import Embedder
from ragtools.indexes.settings import IndexSettings
from ragtools.indexes.shards import (
    GLOBAL_BM25,
    SHARD_ROWS,
    SHARDED_FORMAT,
    SHARDED_FORMAT_VERSION,
    SHARDS_MANIFEST,
    GlobalScoring,
    ShardedIndex,
    is_sharded,
    rows_by_shard,
    shard_dir,
    shard_of,
)
from ragtools.indexes.sources import expand_sources, fingerprint, parse_files, source_root
from ragtools.indexes.versions import (
    VERSIONS,
    collect,
    collecting,
    current_version,
    is_index_root,
    list_versions,
    sweep,
    write_version,
    writer_lock,
)
from ragtools.indexes.writer import IndexWriter, _empty, _package_version
from ragtools.parsers import Chunk, Document, FileError, Selection, split
from ragtools.parsers.errors import ConfigError, IndexLoadError

__all__ = ["ShardWork", "build_shard", "build_sharded", "documents_sharded"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShardWork:
    """One shard's part of a build: its files (parsed by the worker) or its documents."""

    root: str
    number: int
    settings: dict[str, Any]
    files: list[str] = field(default_factory=list)
    documents: list[Document] = field(default_factory=list)
    password: str | None = field(default=None, repr=False)  # for encrypted PDFs, never saved
    source_root: str | None = None  # chunk sources are relative to it, as in one index
    spill: str | None = None  # a file of the shard's documents (indexes._shard_spill)


@dataclass(frozen=True)
class BuiltShard:
    """What a shard build returns to the driver: all it needs to merge, not the shard."""

    number: int
    version: str | None
    unit_chunks: list[int]  # chunks of each file / document, in the shard's order
    counts: ShardCounts | None  # first rows are the shard's own
    failures: list[FileError]
    fingerprints: dict[str, Any]


def chunk_units(units: Sequence[Sequence[Document]], settings: IndexSettings) -> list[list[Chunk]]:
    return [
        split(docs, chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap)
        if docs else []
        for docs in units
    ]  # fmt: skip


def commit_shard(
    work: ShardWork,
    units: list[list[Chunk]],
    embedder: Embedder | None,
    failures: list[FileError],
    prints: dict[str, Any],
    texts: Mapping[str, str] | None = None,
) -> BuiltShard:
    """Write a new version of one shard holding ``units``' chunks (none: the shard is empty)
    and their documents' ``texts``."""
    chunks = [c for unit in units for c in unit]
    path = shard_dir(work.root, work.number)
    version = counts = None
    if chunks:
        writer = IndexWriter(
            _empty(path, IndexSettings.model_validate(work.settings), {}, embedder), collect=False
        )
        writer.commit(
            chunks, sources=list(prints), fingerprints=prints, failures=failures, documents=texts
        )
        version = current_version(path).name
        bm25 = writer.index.state.bm25
        if bm25 is not None:
            counts = ShardCounts.of(bm25, np.arange(len(chunks), dtype=np.int64))
    return BuiltShard(work.number, version, [len(u) for u in units], counts, failures, prints)


def build_shard(work: ShardWork, embedder: Embedder | None = None) -> BuiltShard:
    """Parse (files), split, index and write one shard: the unit of work of a build, run in
    this process or as a Ray task."""
    settings = IndexSettings.model_validate(work.settings)
    if work.files:
        paths = [Path(f) for f in work.files]
        root = Path(work.source_root) if work.source_root else None
        parsed = parse_files(paths, root=root, show_progress=False, password=work.password)
        by_file, failures = parsed.by_file, parsed.failures
        units = chunk_units([by_file.get(f, []) for f in work.files], settings)
        prints = {f: fingerprint(p) for f, p in zip(work.files, paths, strict=True)}
        texts = {d.id: d.text for docs in by_file.values() for d in docs}
        return commit_shard(work, units, embedder, failures, prints, texts)
    documents = list(read_spill(work.spill)) if work.spill else work.documents
    units = chunk_units([[d] for d in documents], settings)
    return commit_shard(work, units, embedder, [], {}, {d.id: d.text for d in documents})


def _run(
    works: Sequence[ShardWork], embedder: Embedder | None, engine: str, address: str | None
) -> list[BuiltShard]:
    if engine == "ray":
        from ragtools.indexes.ray_build import build_files_on_ray
        from ragtools.indexes.ray_shards import build_on_ray

        if any(w.spill or w.documents for w in works):  # documents: one Ray task per shard
            return build_on_ray(works, embedder, address)
        return build_files_on_ray(works, embedder, address)
    if engine != "local":
        msg = f"unknown engine {engine!r}; use 'local' or 'ray'"
        raise ConfigError(msg)
    return [build_shard(work, embedder) for work in works]


def _settings(
    path: str | Path, settings: IndexSettings | None, overrides: dict[str, Any]
) -> IndexSettings:
    return _empty(path, settings, overrides, None).settings


MAX_SHARDS = 1024
"""The most shards an index may have: Elasticsearch's own cap on an index's primary shards.
Each shard is a folder of files and a worker's share of every query, so past this a shard
costs more than it serves (the project's 10M-document run uses 16)."""


def _check_shards(shards: object) -> int:
    if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= MAX_SHARDS:
        msg = f"shards must be an integer from 1 to {MAX_SHARDS}, got {shards!r}"
        raise ConfigError(msg)
    return shards


def build_sharded(
    sources: Sequence[str | Path],
    path: str | Path,
    *,
    shards: int,
    settings: IndexSettings | None = None,
    embedder: Embedder | None = None,
    show_progress: bool | None = None,
    engine: str = "local",
    address: str | None = None,
    selection: Selection | None = None,
    password: str | None = None,
    **overrides: Any,
) -> ShardedIndex:
    """Build a sharded index of ``sources``; the options are :meth:`IndexWriter.build`'s.

    Args:
        shards: the number of shards (``>= 1``).
        engine: ``"local"`` builds the shards one after another in this process; ``"ray"``
            builds them as Ray tasks (on ``address``, or a local cluster).
        selection: which files of the sources to index (default: :class:`Selection()`).
        password: for encrypted PDFs (never recorded).
    """
    del show_progress  # shards parse quietly; the log says what was built
    started = time.perf_counter()
    n = _check_shards(shards)
    resolved = _settings(path, settings, overrides)
    roots = [str(Path(s).expanduser().resolve()) for s in sources]
    files = [str(f) for f in expand_sources(roots, selection)]
    by_shard: list[list[str]] = [[] for _ in range(n)]
    for f in files:
        by_shard[shard_of(f, n)].append(f)
    blob = resolved.model_dump(mode="json")
    works = [
        ShardWork(
            str(path),
            s,
            blob,
            files=by_shard[s],
            password=password,
            source_root=str(source_root(roots)),
        )
        for s in range(n)
    ]
    with writer_lock(path):
        built = _run(works, embedder, engine, address)
        units = [shard_of(f, n) for f in files]
        index = finish(path, resolved, built, units, {"sources": roots, "meta": {}}, embedder)
    logger.info(
        "built %s: %d shards, %d files, %d chunks in %.1fs",
        path, n, len(files), len(index.chunks), time.perf_counter() - started,
    )  # fmt: skip
    return index


def documents_sharded(
    documents: Iterable[Document],
    path: str | Path,
    *,
    shards: int,
    settings: IndexSettings | None = None,
    embedder: Embedder | None = None,
    show_progress: bool | None = None,
    meta: dict[str, Any] | None = None,
    engine: str = "local",
    address: str | None = None,
    **overrides: Any,
) -> ShardedIndex:
    """Index already-parsed documents in shards (by a hash of each document's id).

    The documents are read once, lazily, and routed to per-shard files; then the shards are
    built one by one from those files, so only one shard's documents are ever in memory.
    """
    del show_progress
    n = _check_shards(shards)
    resolved = _settings(path, settings, overrides)
    blob = resolved.model_dump(mode="json")
    tracked = {"sources": [], "meta": dict(meta or {})}
    with writer_lock(path):
        with staging(path) as directory:
            units, files = spill(documents, directory, n)
            works = [ShardWork(str(path), s, blob, spill=str(files[s])) for s in range(n)]
            built = _run(works, embedder, engine, address)
        return finish(path, resolved, built, units, tracked, embedder)


def _place(units: Sequence[int] | np.ndarray, built: Sequence[BuiltShard]) -> np.ndarray:
    """The shard of every global row (int32): ``units`` (the shard of each file or document,
    in global order) laid out with their chunk counts."""
    shard_of_unit = np.asarray(units, dtype=np.int32).reshape(-1)
    counts = np.zeros(len(shard_of_unit), np.int64)
    for s, b in enumerate(built):
        counts[shard_of_unit == s] = b.unit_chunks
    return np.repeat(shard_of_unit, counts)


def finish(
    path: str | Path,
    settings: IndexSettings,
    built: Sequence[BuiltShard],
    units: Sequence[int] | np.ndarray,
    tracked: dict[str, Any],
    embedder: Embedder | None,
    into: ShardedIndex | None = None,
) -> ShardedIndex:
    """Merge the statistics and write the top version that makes ``built`` live together.

    Returns the new version opened, or ``into`` (the index being updated) showing it: it
    moves its pin to the new version before old versions are collected."""
    shard_of_row = _place(units, built)
    placed = rows_by_shard(shard_of_row, len(built))
    if not any(len(r) for r in placed):
        msg = f"{path}: no text to index (all sources empty, unreadable or without text)"
        raise ConfigError(msg)
    counts = [
        replace(b.counts, first_row=rows[b.counts.first_row])
        for b, rows in zip(built, placed, strict=True)
        if b.counts is not None
    ]
    stats = GlobalStats.merge(counts) if settings.keyword else None
    failures = sorted((f for b in built for f in b.failures), key=lambda f: f.path)
    prints = {k: v for b in built for k, v in b.fingerprints.items()}
    embedder_info = None
    for b in built:  # every shard has the same embedder: the first one's manifest says which
        if b.version is not None:
            bundle = shard_dir(path, b.number) / VERSIONS / b.version / "manifest.json"
            embedder_info = read_json(bundle).get("embedder")
            break
    data = {
        "package_version": _package_version(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "settings": settings.model_dump(mode="json"),
        "shards": [
            {"version": b.version, "chunks": len(rows), "manifest_sha256": _pin(path, b)}
            for b, rows in zip(built, placed, strict=True)
        ],
        "embedder": embedder_info,
        "counts": {
            "chunks": int(sum(len(r) for r in placed)),
            "shards": len(built),
            "files": len(prints),
            "failures": len(failures),
        },
        "sources": tracked["sources"],
        "fingerprints": dict(sorted(prints.items())),
        "failures": [vars(f) for f in failures],
        "meta": tracked["meta"],
    }

    def write(directory: Path) -> None:
        save_npy(directory / SHARD_ROWS, shard_of_row)
        files = [SHARD_ROWS]
        if stats is not None:
            write_json(directory / GLOBAL_BM25, stats.to_json(), indent=None)
            files.append(GLOBAL_BM25)
            scoring = GlobalScoring(stats)
            for b in built:  # one shard's BM25 in memory at a time
                if b.version is not None:
                    where = shard_dir(path, b.number) / VERSIONS / b.version / "bm25"
                    local = BM25Index.load(where, mmap=True)
                    files += scoring.save(local, directory, b.number, where)
        write_manifest(
            directory, SHARDS_MANIFEST, fmt=SHARDED_FORMAT, version=SHARDED_FORMAT_VERSION,
            files=files, data=data, sealed=True,
        )  # fmt: skip

    with writer_lock(path):
        write_version(path, write, keep=None)
        opened = Index.open(path, embedder=embedder)
        assert isinstance(opened, ShardedIndex)
        if into is not None:
            into.adopt(opened)
            opened = into
        _collect(Path(path), settings.keep_versions)
    return opened


def _pin(root: str | Path, built: BuiltShard) -> str | None:
    """The checksum of a shard version's manifest, by which its top version pins it."""
    if built.version is None:
        return None
    return sha256_file(shard_dir(root, built.number) / VERSIONS / built.version / MANIFEST)


def _named(root: Path) -> dict[int, set[str]] | None:
    """The shard versions each kept top version of ``root`` names, by shard number
    (``None`` when a top manifest cannot be read: then no shard version is collected)."""
    named: dict[int, set[str]] = {}
    for directory in list_versions(root):
        if not is_sharded(directory):
            continue
        try:
            entries = read_json(directory / SHARDS_MANIFEST)["shards"]
            for number, entry in enumerate(entries):
                named.setdefault(number, set()).add(str(entry["version"]))
        except (IndexLoadError, KeyError, TypeError) as exc:
            logger.warning("index %s: shard versions not collected: %s", root, exc)
            return None
    return named


def _collect(root: Path, keep: int) -> None:
    """Remove killed writers' leftovers in every shard, then collect the old top versions
    and every shard version no remaining top version names. Runs under the writer lock."""
    shards = root / "shards"
    folders = sorted(shards.iterdir()) if shards.is_dir() else []
    for folder in folders:
        if folder.name.startswith(STAGING_PREFIX):
            shutil.rmtree(folder, ignore_errors=True)
        elif folder.is_dir():
            sweep(folder)
    with collecting(root) as free:
        if not free:
            return
        collect(root, keep)
        named = _named(root)
        if named is None:
            return
        for folder in folders:
            number = folder.name.removeprefix("shard-")
            if not number.isdigit() or folder != shard_dir(root, int(number)):
                continue
            with collecting(folder) as shard_free:
                if shard_free and is_index_root(folder):
                    collect(folder, 0, protect=named.get(int(number), set()))
