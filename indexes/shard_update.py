"""Update a sharded index: only the shards whose files changed get a new version.

An update re-parses the files whose fingerprint changed, rewrites only the shards that hold a
changed, added or removed file (their other files' chunks are kept), reads the counts of the
untouched shards from disk, re-merges the global statistics and writes a new top version
(:func:`indexes.shard_writer.finish`). Until that last step the previous top version, and the
shard versions it names, stay live. The result equals a fresh build of the same sources, so
it equals one index over them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragtools.indexes._bm25_global import ShardCounts
from ragtools.indexes.bm25 import BM25Index
from ragtools.indexes.doc_texts import ChainedTexts
from ragtools.indexes.shard_writer import BuiltShard, ShardWork, chunk_units, commit_shard, finish
from ragtools.indexes.shards import Shard, ShardedIndex, shard_of
from ragtools.indexes.sources import expand_sources, fingerprint, parse_files, source_root
from ragtools.indexes.versions import VERSIONS, writer_lock
from ragtools.indexes.writer import UpdateReport
from ragtools.parsers import Chunk, FileError, Selection
from ragtools.parsers.errors import ConfigError

__all__ = ["update_sharded"]


def update_sharded(
    index: ShardedIndex,
    sources: Sequence[str | Path] | None = None,
    *,
    show_progress: bool | None = None,
    selection: Selection | None = None,
    password: str | None = None,
) -> UpdateReport:
    """Update a sharded index from its sources, rewriting only the shards that changed.

    The result equals a fresh sharded build (and so one index) of the same sources.
    ``selection`` chooses the files of the sources; ``password`` opens encrypted PDFs.
    The whole update holds the writer lock of the index, and starts from the live version
    (``index`` is refreshed first if another writer changed it).
    """
    del show_progress
    with writer_lock(index.path):
        index.refresh()
        return _update(index, sources, selection=selection, password=password)


def _update(
    index: ShardedIndex,
    sources: Sequence[str | Path] | None,
    *,
    selection: Selection | None,
    password: str | None,
) -> UpdateReport:
    manifest = index.manifest
    known = [str(Path(s).expanduser().resolve()) for s in sources or ()]
    roots = known or list(manifest.get("sources", []))
    if not roots:
        msg = "this index tracks no source files (built from documents); pass sources"
        raise ConfigError(msg)
    n = len(index.shards)
    files = [str(f) for f in expand_sources(roots, selection)]
    prints = {f: fingerprint(Path(f)) for f in files}
    old: dict[str, Any] = manifest.get("fingerprints", {})
    stale = {f for f in files if old.get(f) != prints[f]}
    removed = sorted(set(old) - set(prints))
    touched = {shard_of(f, n) for f in [*stale, *removed]}
    by_shard: list[list[str]] = [[] for _ in range(n)]
    for f in files:
        by_shard[shard_of(f, n)].append(f)
    blob = index.settings.model_dump(mode="json")
    old_failures = [f for f in index.failures if f.path in prints and f.path not in stale]
    built = []
    for shard in index.shards:
        s = shard.number
        work = ShardWork(
            str(index.path),
            s,
            blob,
            files=by_shard[s],
            source_root=str(source_root(roots)),
            password=password,
        )
        kept_failures = [f for f in old_failures if shard_of(f.path, n) == s]
        if s in touched:
            built.append(_rebuild(work, shard.state, stale, index, kept_failures))
        else:
            built.append(
                _unchanged(work, shard, kept_failures, {f: prints[f] for f in by_shard[s]})
            )
    units = [shard_of(f, n) for f in files]
    tracked = {"sources": roots, "meta": index.meta}
    finish(index.path, index.settings, built, units, tracked, index.base_embedder, into=index)
    new_failures = [f for b in built for f in b.failures if f.path in stale]
    return UpdateReport(
        added=[f for f in files if f not in old],
        changed=sorted(f for f in stale if f in old),
        removed=removed,
        unchanged=len(files) - len(stale),
        failures=sorted(new_failures, key=lambda f: f.path),
    )


def _rebuild(
    work: ShardWork,
    state: Any,
    stale: set[str],
    index: ShardedIndex,
    kept_failures: list[FileError],
) -> BuiltShard:
    """A new version of a shard: its stale files parsed again, the others' chunks kept."""
    settings = index.settings
    again = [f for f in work.files if f in stale]
    root = Path(work.source_root) if work.source_root else None
    result = parse_files(
        [Path(f) for f in again], root=root, show_progress=False, password=work.password
    )
    parsed, failures = result.by_file, result.failures
    old: dict[str, list[Chunk]] = {}
    for chunk in state.chunks if state is not None else []:
        old.setdefault(str(chunk.metadata.get("path", chunk.source)), []).append(chunk)
    units = [
        chunk_units([parsed.get(f, [])], settings)[0] if f in stale else old.get(f, [])
        for f in work.files
    ]
    prints = {f: fingerprint(Path(f)) for f in work.files}
    everything = sorted(kept_failures + failures, key=lambda f: f.path)
    fresh = {d.id: d.text for f in again for d in parsed.get(f, [])}
    texts = ChainedTexts([fresh, state.texts or {}] if state is not None else [fresh])
    return commit_shard(work, units, index.base_embedder, everything, prints, texts)


def _unchanged(
    work: ShardWork, shard: Shard, failures: list[FileError], prints: dict[str, Any]
) -> BuiltShard:
    """An untouched shard: its version and, read from disk, its own counts."""
    counts_of: Callable[[], ShardCounts | None] = lambda: None  # noqa: E731
    if shard.version is not None and shard.state is not None and shard.state.bm25 is not None:
        directory = shard.path / VERSIONS / shard.version / "bm25"
        local = BM25Index.load(directory, mmap=True)
        counts_of = lambda: ShardCounts.of(local, np.arange(local.n_rows))  # noqa: E731
    per_file: dict[str, int] = {}
    for chunk in shard.state.chunks if shard.state is not None else []:
        path = str(chunk.metadata.get("path", chunk.source))
        per_file[path] = per_file.get(path, 0) + 1
    units = [per_file.get(f, 0) for f in work.files]
    return BuiltShard(work.number, shard.version, units, counts_of(), failures, prints)
