"""``IndexWriter``: build, update, add, delete and merge; each change is a new version.

One writer for every layout: a version is a list of immutable segments plus deleted rows
(:mod:`indexes.store.segments`), whether the index has one shard or many. Every change goes the
same way, under the index's writer lock (:func:`~indexes.store.versions.writer_lock`):

1. work out what changed: the chunks of new or changed files (an update parses only those),
   chunks given to :meth:`IndexWriter.add`, rows to delete;
2. write a **new segment** per shard that receives chunks (BM25 from the chunk texts; vectors
   through the embedding cache kept beside the versions, keyed by model and text hash, so the
   model embeds only texts it has not seen). Existing segments are never rewritten: replaced
   and deleted rows are recorded as the new version's deleted rows;
3. apply the **merge policy** (below);
4. write the version manifest, switch to it atomically, hand the new state to the
   :class:`~indexes.index.Index`, and collect versions and segments nothing needs.

So an update costs what changed, a crash or an error leaves the previous version live and
untouched, and every retriever over the ``Index`` sees the new rows at once, never half of
them. Scores after any sequence of changes equal a fresh build's (BM25's collection
statistics are recomputed over the live rows at open: :mod:`indexes.keyword.collection`).

**Shards** (``shards=N``) place segments on N worker groups: a file goes to the shard of a
hash of its path (a document given directly: of its id), so a file's chunks are always in
one shard; searches run over the segments concurrently (threads, or Ray actors:
:mod:`indexes.ray_shards`). A build parses and writes one shard at a time, and within a
shard the documents never pile up: a build or update streams each file's documents from
its parser through the split into a spill on disk (:meth:`IndexWriter.write_files`), with
each chunk's BM25 tokens made there, then indexes the segment from the spill in batches of
:data:`BATCH_ROWS` rows, no chunk read back but for a vector half. Its peak memory is
the BM25 postings and vocabulary of one shard, not its ``Document`` and ``Chunk`` objects
(a JSON of 10^6 records: under 1 GB, where holding them took 3.4 GB). The split runs
inside each file's time budget, with the parse.

**Merge policy**, after Lucene's ``TieredMergePolicy``: a shard holding more than
:data:`SEGMENTS_PER_SHARD` segments has its smallest ones folded into one (never the segments
this change wrote, whose rows the caller may be holding), and a segment whose rows are more
than half deleted is rewritten without them. :meth:`IndexWriter.merge` folds every shard into
one segment (Lucene's ``forceMerge(1)``). Merging never changes a result: the same live rows
score the same in any grouping.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

from ragtools.indexes.dense.embed import Embedder, SentenceTransformerEmbedder
from ragtools.indexes.dense.windows import WindowedVectorIndex
from ragtools.indexes.index import (
    CHUNKS,
    LAZY_ROWS,
    MANIFEST,
    Index,
    IndexState,
    read_version,
)
from ragtools.indexes.keyword.bm25 import BM25Index, TokenRows
from ragtools.indexes.keyword.collection import save_canonical
from ragtools.indexes.settings import IndexSettings
from ragtools.indexes.sources import (
    Parsed,
    fingerprint,
    parse_files,
    same_file,
    select_sources,
    source_root,
)
from ragtools.indexes.store.chunk_file import ChunkFile
from ragtools.indexes.store.chunks import (
    FileRows,
    add_file_rows,
    chunk_batches,
    chunk_file,
    write_chunks,
)
from ragtools.indexes.store.doc_texts import (
    TEXTS_DIR,
    ChainedTexts,
    write_encoded_texts,
    write_texts,
)
from ragtools.indexes.store.manifest import (
    DOCUMENT_TEXTS,
    FORMAT,
    FORMAT_VERSION,
    OWNERS_FILE,
    SOURCE_ROOT,
    VERSION_FORMAT,
    VERSION_FORMAT_VERSION,
    VERSION_MANIFEST,
)
from ragtools.indexes.store.persist import write_manifest
from ragtools.indexes.store.segments import (
    SegmentEntry,
    collect_segments,
    new_segment_dir,
    publish_segment,
    shard_of,
    write_deleted,
)
from ragtools.indexes.store.spill import ChunkSpill, keyword_tokens, read_spill, spill, staging
from ragtools.indexes.store.versions import (
    collect,
    collecting,
    disk_full,
    list_versions,
    no_space_error,
    write_version,
    writer_lock,
)
from ragtools.parsers import Chunk, Document, FileError, Selection
from ragtools.parsers.errors import ConfigError
from ragtools.parsers.progress import counter

__all__ = [
    "MAX_SHARDS",
    "SEGMENTS_PER_SHARD",
    "IndexWriter",
    "UpdateOptions",
    "UpdateReport",
    "build_differences",
    "write_shard_segment",
]

logger = logging.getLogger(__name__)

MAX_SHARDS = 1024
"""The most shards an index may have: more would be a typo, not a cluster."""
BATCH_ROWS = 10_000
"""Chunks a segment written from spilled files is indexed by at a time: enough that each
step is a vectorised pass, few enough that a batch's objects are a few megabytes."""
SEGMENTS_PER_SHARD = 8
"""Segments a shard holds before the merge policy folds its smallest ones together: few
enough that a query's per-segment overhead stays small, enough that a run of updates does
not rewrite a large segment each time."""

Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class UpdateReport:
    """What :meth:`IndexWriter.update` did, by file path."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    failures: list[FileError] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """``(path, reason)`` of every file or folder left out (hidden, ignored, not a document)."""
    written: bool = True
    """Whether a new version was written (``False``: nothing changed, the index is up to
    date, and the kept versions are left as they are)."""


class UpdateOptions(TypedDict, total=False):
    """The keyword options of every index's ``update`` (see :meth:`IndexWriter.update`)."""

    show_progress: bool | None
    selection: Selection | None
    password: str | None


@dataclass
class _Plan:
    """A change being made: the live version's segments with their deleted rows, and the
    new segments written so far (in row order after the old ones)."""

    entries: list[SegmentEntry]
    deleted: list[Mask]
    chunks: list[Sequence[Chunk]]
    new: list[SegmentEntry] = field(default_factory=list)
    written: dict[str, Sequence[Chunk]] = field(default_factory=dict)
    """The segments this process wrote, by path, with their chunks as it holds them (a
    list, or the mapped file): see :func:`~indexes.index.read_version`."""


class IndexWriter:
    """Changes one :class:`~indexes.index.Index`, a new version per change.

    Each change holds the writer lock of the index from reading the live version to making
    the new one live: a second writer of the same index waits, and then applies its change
    to what the first one wrote (the ``Index`` is refreshed first), so no change is silently
    undone.

    Args:
        index: the index to change.
    """

    def __init__(self, index: Index) -> None:
        self.index = index

    # ----------------------------------------------------------------- builds
    @classmethod
    def build(
        cls,
        sources: Sequence[str | Path],
        path: str | Path,
        *,
        settings: IndexSettings | None = None,
        embedder: Embedder | None = None,
        show_progress: bool | None = None,
        selection: Selection | None = None,
        password: str | None = None,
        shards: int | None = None,
        engine: str = "local",
        address: str | None = None,
        **overrides: Any,
    ) -> Index:
        """Parse ``sources`` (files or directories), split, index both halves and save.

        Args:
            sources: files and directories to index; directories are walked recursively.
            path: the index directory (created; an existing index gets a new version that
                holds only these sources).
            settings: build settings; keyword ``overrides`` (e.g. ``chunk_size=500``) win.
            embedder: an embedder to use instead of ``settings.model`` (e.g. a fake in tests).
            show_progress: progress bars; ``None`` shows them only on a terminal.
            selection: which files of the folders to read (recorded; updates reuse it).
            password: for encrypted PDFs (never recorded).
            shards: place the segments on this many worker groups (``None``: one).
            engine: ``"local"`` writes the shards' segments one after another in this
                process; ``"ray"`` writes them as Ray tasks (on ``address``, or a local
                cluster; :mod:`indexes.ray_build`).

        Raises:
            ConfigError: a source does not exist, a setting is invalid, or no text was found.
        """
        started = time.perf_counter()
        started_ns = time.time_ns()  # before any file is looked at (see sources.fingerprint)
        n_shards = _check_shards(shards)
        writer = cls(_empty(path, settings, overrides, embedder))
        roots = [str(Path(s).expanduser().resolve()) for s in sources]
        rules = selection or Selection()
        files, skipped = select_sources(roots, rules)
        root = source_root(roots)
        groups = _by_shard([str(f) for f in files], n_shards)
        with writer_lock(writer.index.path):
            plan = _Plan([], [], [])
            failures: list[FileError] = []
            parse_skipped: list[tuple[str, str]] = []
            replaced = 0
            if engine == "ray":
                from ragtools.indexes.ray_build import build_files_on_ray

                built = build_files_on_ray(
                    writer.index.path, groups, writer.index.settings, root, password,
                    writer.index.base_embedder, address,
                )  # fmt: skip
                for entry in built.entries:  # written by Ray tasks; their chunks stay there
                    plan.new.append(entry)
                    plan.chunks.append([])
                failures, parse_skipped = built.failures, built.skipped
            elif engine != "local":
                msg = f"unknown engine {engine!r}; use 'local' or 'ray'"
                raise ConfigError(msg)
            else:
                for shard, group in enumerate(groups):
                    if not group:
                        continue
                    parsed = writer.write_files(
                        plan, shard, group, root=root, show_progress=show_progress,
                        password=password,
                    )  # fmt: skip
                    failures += parsed.failures
                    parse_skipped += parsed.skipped
                    replaced += parsed.replaced
            writer.commit(
                plan,
                n_shards=n_shards,
                tracked={
                    "sources": roots,
                    "fingerprints": {str(f): fingerprint(f) for f in files},
                    "fingerprinted_ns": started_ns,
                    "failures": sorted(failures, key=lambda f: f.path),
                    "meta": {},
                    "skipped": sorted(skipped + parse_skipped),
                    "selection": rules,
                    SOURCE_ROOT: str(root),
                },
                replaced=replaced,
            )
        logger.info(
            "built %s: %d files, %d chunks in %d segments, %d failures in %.1fs",
            path,
            len(files),
            len(writer.index.chunks),
            len(writer.index.segments),
            len(failures),
            time.perf_counter() - started,
        )
        return writer.index

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        path: str | Path,
        *,
        settings: IndexSettings | None = None,
        embedder: Embedder | None = None,
        show_progress: bool | None = None,
        meta: dict[str, Any] | None = None,
        shards: int | None = None,
        engine: str = "local",
        address: str | None = None,
        **overrides: Any,
    ) -> Index:
        """Index already-parsed documents (no source files are tracked for updates).

        ``meta`` is any JSON the caller wants kept in the manifest (e.g. a corpus hash).
        With ``shards``, each document goes to the shard of a hash of its id; the documents
        are read once, lazily, into one staging file per shard (:mod:`indexes.store.spill`), and
        each shard's segment is written from its file, so only one shard's documents are in
        memory at a time. ``engine="ray"`` writes the shards' segments as Ray tasks.
        """
        del show_progress  # progress is shown by the embedder
        n_shards = _check_shards(shards)
        if engine not in ("local", "ray"):
            msg = f"unknown engine {engine!r}; use 'local' or 'ray'"
            raise ConfigError(msg)
        writer = cls(_empty(path, settings, overrides, embedder))
        root = writer.index.path
        with writer_lock(root):
            plan = _Plan([], [], [])
            if n_shards == 1 and engine == "local":
                docs = list(documents)
                writer.write_segment(plan, 0, writer.split(docs), _texts(docs))
            else:
                with staging(root) as directory:
                    _, files = spill(documents, directory, n_shards)
                    if engine == "ray":
                        from ragtools.indexes.ray_shards import write_spills_on_ray

                        resolved = writer.index.settings
                        for entry in write_spills_on_ray(root, resolved, files, embedder, address):
                            plan.new.append(entry)
                            plan.chunks.append([])
                    else:
                        for shard, file in enumerate(files):
                            docs = list(read_spill(file))
                            writer.write_segment(plan, shard, writer.split(docs), _texts(docs))
            writer.commit(plan, n_shards=n_shards, tracked={"meta": dict(meta or {})})
        return writer.index

    # ----------------------------------------------------------------- changes
    def update(
        self,
        sources: Sequence[str | Path] | None = None,
        *,
        show_progress: bool | None = None,
        selection: Selection | None = None,
        password: str | None = None,
    ) -> UpdateReport:
        """Bring the index up to date with its sources.

        Only files whose size or SHA-256 changed are parsed, split and indexed again, into a
        new segment (one per shard they belong to); the rows of changed and removed files
        are recorded as deleted; only chunk texts not in the embedding cache are embedded.
        When nothing changed, no version is written (:attr:`UpdateReport.written`). The
        result equals a fresh build of the same sources. ``sources`` and ``selection``
        default to the recorded ones; ``password`` is for encrypted PDFs. An index whose
        chunks predate the current text form (no ``source_root`` in its manifest) has every
        file parsed again.
        """
        with writer_lock(self.index.path):
            self.index.refresh()
            return self._update(
                sources, show_progress=show_progress, selection=selection, password=password
            )

    def _update(
        self,
        sources: Sequence[str | Path] | None,
        *,
        show_progress: bool | None,
        selection: Selection | None,
        password: str | None,
    ) -> UpdateReport:
        index = self.index
        manifest = index.manifest
        known = [str(Path(s).expanduser().resolve()) for s in sources or ()]
        roots = known or list(manifest.get("sources", []))
        if not roots:
            msg = "this index tracks no source files (built from documents); pass sources"
            raise ConfigError(msg)
        rules = selection if selection is not None else index.selection
        selected, walk_skipped = select_sources(roots, rules)
        files = [str(f) for f in selected]
        started_ns = time.time_ns()
        root = source_root(roots)
        before: dict[str, Any] = manifest.get("fingerprints", {})
        old = before if manifest.get(SOURCE_ROOT) == str(root) else {}
        taken = int(manifest.get("fingerprinted_ns") or 0)
        prints = {f: fingerprint(f, old.get(f), taken) for f in files}
        stale = [f for f in files if not same_file(old.get(f), prints[f])]
        retried: set[str] = set()
        if password is not None:  # files that failed before may have wanted it: read them
            retried = {f.path for f in index.failures} - set(stale)
            stale += [f for f in files if f in retried]
        stale_set = set(stale)
        gone = set(before) - set(prints)
        kept = [f for f in index.failures if f.path in prints and f.path not in stale_set]
        kept_skips = [s for s in index.skipped if s[0] in prints and s[0] not in stale_set]
        tracked: dict[str, Any] = {
            "sources": roots,
            "fingerprints": prints,
            "fingerprinted_ns": started_ns,
            "selection": rules,
            SOURCE_ROOT: str(root),
        }
        if not stale and not gone and _same_tracking(manifest, tracked):
            logger.info("index %s is up to date: no file changed", index.path)
            skipped = sorted(set(walk_skipped) | set(kept_skips))
            quiet = {p for p, _ in kept_skips}
            unchanged = len([f for f in files if f not in quiet])
            return UpdateReport(unchanged=unchanged, skipped=skipped, written=False)
        plan = self._plan()
        dropped = stale_set | gone
        self._delete_rows(plan, lambda c: chunk_file(c) in dropped, paths=dropped)
        groups = _by_shard(stale, index.n_shards)
        failures: list[FileError] = []
        parse_skipped: list[tuple[str, str]] = []
        replaced = 0
        for shard, group in enumerate(groups):
            if not group:
                continue
            parsed = self.write_files(
                plan, shard, group, root=root, show_progress=show_progress, password=password
            )
            failures += parsed.failures
            parse_skipped += parsed.skipped
            replaced += parsed.replaced
        skipped = sorted(set(walk_skipped) | set(kept_skips) | set(parse_skipped))
        skipped_paths = {p for p, _ in skipped}
        was_skipped = {p for p, _ in index.skipped}
        report = UpdateReport(
            added=[
                f for f in files if (f not in before or f in retried) and f not in skipped_paths
            ],
            changed=[
                f for f in stale if f in before and f not in retried and f not in skipped_paths
            ],
            removed=sorted(p for p in gone if p not in was_skipped),
            unchanged=len([f for f in files if f not in stale_set and f not in skipped_paths]),
            failures=failures,
            skipped=skipped,
        )
        tracked.update(failures=sorted(kept + failures, key=lambda f: f.path), skipped=skipped)
        self.commit(plan, n_shards=index.n_shards, tracked=tracked, replaced=replaced)
        return report

    def add(self, chunks: Sequence[Chunk]) -> npt.NDArray[np.int64]:
        """Add chunks as new segments (one per shard they go to; a new version); returns
        the row of each chunk in it, in the order given (the new segments come last)."""
        if not chunks:
            return np.zeros(0, np.int64)
        with writer_lock(self.index.path):
            self.index.refresh()
            plan = self._plan()
            n_shards = self.index.n_shards
            shard = [shard_of(c.doc_id, n_shards) for c in chunks]
            order = sorted(range(len(chunks)), key=lambda i: (shard[i], i))
            for number in sorted(set(shard)):
                group = [chunks[i] for i in order if shard[i] == number]
                self.write_segment(plan, number, group, {})
            self.commit(plan, n_shards=n_shards)
            end = len(self.index.chunks)
        rows = np.empty(len(chunks), np.int64)
        rows[order] = np.arange(end - len(chunks), end, dtype=np.int64)
        return rows

    def delete(self, doc_ids: Iterable[str]) -> int:
        """Delete every chunk of the given documents (a new version); returns how many."""
        wanted = set(doc_ids)
        with writer_lock(self.index.path):
            self.index.refresh()
            plan = self._plan()
            removed = self._delete_rows(plan, lambda c: c.doc_id in wanted)
            if removed:
                self.commit(plan, n_shards=self.index.n_shards)
        return removed

    def merge(self) -> int:
        """Fold each shard's segments into one, without deleted rows (a new version, when
        there is anything to fold); returns how many segments were rewritten."""
        with writer_lock(self.index.path):
            self.index.refresh()
            plan = self._plan()
            folded = 0
            while True:
                picked = [
                    members
                    for members in _members_by_shard(plan.entries).values()
                    if len(members) > 1 or plan.deleted[members[0]].any()
                ]
                if not picked:
                    break
                folded += len(picked[0])
                self._fold(plan, picked[0])
            if folded:
                self.commit(plan, n_shards=self.index.n_shards, policy=False)
            return folded

    # ----------------------------------------------------------------- segments
    def set_search_settings(self, **changes: Any) -> None:
        """A new version with the same segments and these settings changed: only those
        that change no row (``fusion``), e.g. what ``rag tune`` chose.

        Raises:
            ConfigError: another setting, or an invalid value.
        """
        allowed = {"fusion"}
        if set(changes) - allowed:
            msg = f"only {sorted(allowed)} can change without a rebuild, got {sorted(changes)}"
            raise ConfigError(msg)
        index = self.index
        settings = IndexSettings.checked({**index.settings.model_dump(), **changes})
        self.commit(self._plan(), n_shards=index.n_shards, policy=False, settings=settings)

    def split(self, documents: Sequence[Document]) -> list[Chunk]:
        """``documents`` split into chunks with the index's settings."""
        return self.index.settings.split(documents)

    def write_segment(
        self, plan: _Plan, shard: int, chunks: Sequence[Chunk], texts: Mapping[str, str]
    ) -> None:
        """Index ``chunks`` into a new segment of ``shard`` and add it to ``plan``.

        ``texts`` are the full texts of new documents; the texts of documents the index
        already holds are carried over from it.
        """
        if not chunks:
            return
        tmp = new_segment_dir(self.index.path)
        try:
            self._write_segment(tmp, plan, shard, chunks, texts)
        except BaseException as exc:  # a failed write leaves nothing behind
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(exc, OSError) and disk_full(exc):
                raise no_space_error(self.index.path, exc, tmp) from exc
            raise

    def _write_segment(
        self,
        tmp: Path,
        plan: _Plan,
        shard: int,
        chunks: Sequence[Chunk],
        texts: Mapping[str, str],
    ) -> None:
        write_chunks(tmp / CHUNKS, chunks)
        held = [p.texts for p in self.index.state.parts if p is not None and p.texts is not None]
        every_text = ChainedTexts([texts, *held])  # a document's text is in its segment
        files = [CHUNKS, *write_texts(tmp, (c.doc_id for c in chunks), every_text)]
        files_rows: FileRows = {}
        add_file_rows(files_rows, 0, chunks)
        tokens = keyword_tokens(self.index.settings)
        self._index_segment(
            tmp,
            plan,
            shard,
            files,
            rows=len(chunks),
            tokens=[TokenRows.of(tokens(chunks))] if tokens is not None else [],
            chunks=lambda: [chunks],
            files_rows=files_rows,
            documents=len({c.doc_id for c in chunks}),
            kept=chunks,
        )

    def write_files(
        self,
        plan: _Plan,
        shard: int,
        files: Sequence[str],
        *,
        root: Path,
        show_progress: bool | None,
        password: str | None,
    ) -> Parsed:
        """Parse ``files`` and index their chunks into a new segment of ``shard``.

        Each file's documents are split as they are parsed, inside the file's time budget,
        and spilled to a staging directory (:class:`~indexes.store.spill.ChunkSpill`); the
        segment is then written from there in batches of :data:`BATCH_ROWS` chunks, so a
        file of a million records costs memory for a batch, not for a million chunks. The
        rows are in the order of ``files``, then of each file's documents, as a build from
        the documents in memory would have them.
        """
        index_path = self.index.path
        with (
            staging(index_path) as directory,
            ChunkSpill.of(directory, self.index.settings) as spilled,
        ):
            try:
                parsed = parse_files(
                    [Path(f) for f in files],
                    root=root,
                    show_progress=show_progress,
                    password=password,
                    sink=spilled,
                )
            except OSError as exc:
                if disk_full(exc):
                    raise no_space_error(index_path, exc, directory) from exc
                raise
            if not spilled.rows:
                return parsed
            order = range(len(files))
            tmp = new_segment_dir(index_path)
            try:
                spilled.write_chunks(tmp / CHUNKS, order)
                names = [CHUNKS, *write_encoded_texts(tmp, spilled.texts(order))]
                self._index_segment(
                    tmp,
                    plan,
                    shard,
                    names,
                    rows=spilled.rows,
                    tokens=spilled.tokens(order, BATCH_ROWS),
                    chunks=lambda: chunk_batches(tmp / CHUNKS, BATCH_ROWS),
                    files_rows=spilled.files_rows(order),
                    documents=spilled.documents,
                    kept=None,
                )
            except BaseException as exc:  # a failed write leaves nothing behind
                shutil.rmtree(tmp, ignore_errors=True)
                if isinstance(exc, OSError) and disk_full(exc):
                    raise no_space_error(index_path, exc, tmp) from exc
                raise
        return parsed

    def _index_segment(
        self,
        tmp: Path,
        plan: _Plan,
        shard: int,
        files: list[str],
        *,
        rows: int,
        tokens: Iterable[TokenRows],
        chunks: Callable[[], Iterable[Sequence[Chunk]]],
        files_rows: FileRows,
        documents: int,
        kept: Sequence[Chunk] | None,
    ) -> None:
        """Index the chunk store written in ``tmp`` (its ``files`` so far) and publish it as
        a segment of ``shard``.

        Args:
            rows: the store's chunks.
            tokens: their BM25 tokens, in batches (none when the index has no BM25 half).
            chunks: the store's chunks in batches, read only for a vector half (whose
                embedding costs far more than reading them).
            files_rows: the store's rows by source file (the manifest's ``sources``).
            documents: documents the chunks come from.
            kept: the store's chunks when they are in memory already.
        """
        index, settings = self.index, self.index.settings
        bm25 = settings.new_bm25() if settings.keyword else None
        if bm25 is not None:  # batches give the rows, vocabulary and postings of one add
            with counter(rows, desc="indexing", unit="chunks") as advance:
                for batch in tokens:
                    bm25.add(batch)
                    advance(len(batch))
        texts: list[str] = []
        headers: list[str] = []
        if settings.vector:
            for part in chunks():
                texts += [c.text for c in part]
                headers += [settings.vector_header(c) for c in part] if settings.context else []
        bm25_params = None
        if bm25 is not None:
            files += _save_bm25(tmp, bm25)
            bm25_params, bm25 = bm25.params, None  # its arrays are freed before the next step
        embedder_info = None
        vectors = 0
        if settings.vector:
            vector = WindowedVectorIndex.build(
                texts,
                self._embed,
                dim=index.embedder.dim,
                kind=settings.vector_kind,
                window=settings.vector_window,
                overlap=settings.vector_window_overlap,
                headers=headers if settings.context else None,
            )
            model_id = index.embedder.model_id
            files += vector.save(tmp, model_id=model_id, owners_file=OWNERS_FILE)
            embedder_info = _embedder_info(index, settings)
            vectors = len(vector)
        data: dict[str, Any] = {
            "package_version": _package_version(),
            "created": _now(),
            "settings": settings.model_dump(mode="json"),
            "bm25": bm25_params,
            "embedder": embedder_info,
            "vector_owners": OWNERS_FILE if OWNERS_FILE in files else None,
            DOCUMENT_TEXTS: TEXTS_DIR,
            "counts": {"chunks": rows, "vectors": vectors, "documents": documents},
            "failures": [],
            "sources": files_rows,
        }
        write_manifest(
            tmp, MANIFEST, fmt=FORMAT, version=FORMAT_VERSION, files=files, data=data, sealed=True
        )
        path, digest = publish_segment(tmp)
        plan.new.append(SegmentEntry(path, shard, digest, rows, canonical=True))
        # A large segment's chunks, and a spilled one's (never in memory), are read back from
        # its file when a merge needs them: a sharded build of ten million rows would
        # otherwise hold every shard's chunks.
        lazy = rows > LAZY_ROWS
        held = kept if kept is not None and not lazy else ChunkFile(index.path / path / CHUNKS)
        plan.chunks.append(held)
        plan.written[path] = held

    def _plan(self) -> _Plan:
        """The live version as a starting point. A version of an older layout has its live
        rows written into new segments first (its folders are not segments that a new version
        may name: they are collected with its versions)."""
        index = self.index
        state = index.state
        if index.version_dir is None:
            return _Plan([], [], [])
        parts = [p.chunks if p is not None else [] for p in state.parts]
        if (index.version_dir / VERSION_MANIFEST).is_file():
            return _Plan(list(state.entries), list(state.deleted), parts)
        plan = _Plan([], [], [])
        by_shard: dict[int, list[Chunk]] = {}
        for entry, chunks in zip(state.entries, parts, strict=True):
            by_shard.setdefault(entry.shard, []).extend(chunks)
        for shard, chunks in sorted(by_shard.items()):
            if chunks:
                self.write_segment(plan, shard, chunks, {})
        plan.entries, plan.chunks, plan.new = plan.new, plan.chunks, []
        plan.deleted = [np.zeros(e.rows, np.bool_) for e in plan.entries]
        return plan

    def _delete_rows(self, plan: _Plan, doomed: Any, *, paths: set[str] | None = None) -> int:
        """Mark deleted every live row of ``plan``'s old segments whose chunk ``doomed``
        says; returns how many rows were marked.

        ``paths`` says the same as ``doomed`` by source file: then a segment's map of the
        rows of each file (``sources`` in its manifest) finds them without reading a chunk.
        """
        state = self.index.state
        maps = [None] * len(plan.entries)
        if paths is not None and plan.entries == list(state.entries):
            maps = [None if p is None else p.manifest.get("sources") for p in state.parts]
        count = 0
        for i, chunks in enumerate(plan.chunks[: len(plan.entries)]):
            mask = plan.deleted[i]
            hits = None if paths is None else _rows_of(maps[i], paths, len(mask))
            if hits is None:
                hits = np.fromiter((bool(doomed(c)) for c in chunks), np.bool_, len(chunks))
            fresh = hits & ~mask
            if fresh.any():
                plan.deleted[i] = mask | fresh
                count += int(fresh.sum())
        return count

    def _fold(self, plan: _Plan, members: Sequence[int]) -> None:
        """Replace the old segments ``members`` (of one shard) by one segment of their live
        rows, placed where the first of them was."""
        live = [
            c
            for i in members
            for c, gone in zip(plan.chunks[i], plan.deleted[i], strict=True)
            if not gone
        ]
        shard = plan.entries[members[0]].shard
        mark = len(plan.new)
        if live:
            self.write_segment(plan, shard, live, {})
        folded = plan.new[mark:]
        folded_chunks = plan.chunks[len(plan.entries) + mark :]
        del plan.new[mark:]
        del plan.chunks[len(plan.entries) + mark :]
        first = members[0]
        keep = [i for i in range(len(plan.entries)) if i not in set(members) or i == first]
        entries, deleted, chunks = [], [], []
        for i in keep:
            if i == first:
                for entry, part in zip(folded, folded_chunks, strict=True):
                    entries.append(entry)
                    deleted.append(np.zeros(entry.rows, np.bool_))
                    chunks.append(part)
            else:
                entries.append(plan.entries[i])
                deleted.append(plan.deleted[i])
                chunks.append(plan.chunks[i])
        plan.chunks = chunks + plan.chunks[len(plan.entries) :]
        plan.entries, plan.deleted = entries, deleted

    def _apply_policy(self, plan: _Plan) -> None:
        """The merge policy (module docstring) over ``plan``'s old segments."""
        while True:
            half_deleted = [
                i for i, e in enumerate(plan.entries)
                if e.rows and plan.deleted[i].sum() * 2 > e.rows
            ]  # fmt: skip
            if half_deleted:
                self._fold(plan, half_deleted[:1])
                continue
            new_per_shard: dict[int, int] = {}
            for e in plan.new:
                new_per_shard[e.shard] = new_per_shard.get(e.shard, 0) + 1
            crowded = [
                (shard, members) for shard, members in _members_by_shard(plan.entries).items()
                if len(members) + new_per_shard.get(shard, 0) > SEGMENTS_PER_SHARD
                and len(members) >= 2
            ]  # fmt: skip
            if not crowded:
                return
            shard, members = crowded[0]
            excess = len(members) + new_per_shard.get(shard, 0) - SEGMENTS_PER_SHARD
            by_size = sorted(members, key=lambda i: (int((~plan.deleted[i]).sum()), i))
            self._fold(plan, sorted(by_size[: max(2, excess + 1)]))

    # ----------------------------------------------------------------- commit
    def commit(
        self,
        plan: _Plan,
        *,
        n_shards: int,
        tracked: Mapping[str, Any] | None = None,
        replaced: int = 0,
        policy: bool = True,
        settings: IndexSettings | None = None,
    ) -> None:
        """Write ``plan`` as a new version, make the ``Index`` show it, then collect.

        What the index tracks (``sources``, ``fingerprints``, ``failures``, ``meta``,
        ``skipped``, ``selection``, ``source_root``) carries over from the current version
        unless ``tracked`` gives it. ``replaced`` (lone surrogates the parsers replaced by
        U+FFFD in this change) is counted in the manifest for the build report.

        Raises:
            ConfigError: the new version would hold no live row.
        """
        index, settings = self.index, settings or self.index.settings
        if policy:
            self._apply_policy(plan)
        # Segments without a live row are dropped: nothing would ever read them.
        rows = [(e, d) for e, d in zip(plan.entries, plan.deleted, strict=True) if not d.all()] + [
            (e, np.zeros(e.rows, np.bool_)) for e in plan.new
        ]
        if not any(e.rows > int(d.sum()) for e, d in rows):
            msg = f"{index.path}: no text to index (all sources empty, unreadable or without text)"
            raise ConfigError(msg)
        carried = _tracking(index.manifest, tracked or {})

        def write(directory: Path) -> None:
            entries = []
            files = []
            for entry, mask in rows:
                n_deleted = int(mask.sum())
                if n_deleted:
                    name = write_deleted(directory, entry.name, mask)
                    files.append(name)
                    entry = replace(entry, deleted=name, n_deleted=n_deleted)
                else:
                    entry = replace(entry, deleted=None, n_deleted=0)
                entries.append(entry)
            live = sum(e.live for e in entries)
            data = {
                "package_version": _package_version(),
                "created": _now(),
                "settings": settings.model_dump(mode="json"),
                "bm25": settings.new_bm25().params if settings.keyword else None,
                "embedder": _embedder_info(index, settings) if settings.vector else None,
                "shards": n_shards,
                "segments": [e.to_json() for e in entries],
                "counts": {
                    "chunks": live,
                    "files": len(
                        set(carried["fingerprints"]) - {p for p, *_ in carried["skipped"]}
                    ),
                    "failures": len(carried["failures"]),
                    "skipped": len(carried["skipped"]),
                    "replaced": replaced,
                    "segments": len(entries),
                    "deleted_rows": sum(e.n_deleted for e in entries),
                    **({"shards": n_shards} if n_shards > 1 else {}),
                },
                **carried,
            }
            write_manifest(
                directory,
                VERSION_MANIFEST,
                fmt=VERSION_FORMAT,
                version=VERSION_FORMAT_VERSION,
                files=files,
                data=data,
                sealed=True,
                indent=None,  # a fingerprint per source file: encoded in C
            )

        with writer_lock(index.path):  # the new version stays live until the index pins it
            final = write_version(index.path, write, keep=None)
            reuse = {
                entry.path: part
                for entry, part in zip(index.state.entries, index.state.parts, strict=False)
                if part is not None
            }
            # Its new segments were hashed as they were written, moments ago, under this
            # lock: they are read without hashing them again, nor reading their chunks.
            state = read_version(index.path, final, reuse=reuse, written=plan.written)
            index.show(state, final)
            with collecting(index.path) as free:  # after the pin moved
                if free:
                    collect(index.path, settings.keep_versions)
                    collect_segments(index.path, list_versions(index.path))

    def _embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        embedder = self.index.embedder
        vectors = embedder.embed_documents(texts)
        embedder.cache.save()
        return vectors


# ----------------------------------------------------------------- helpers
def build_differences(
    index: Index,
    sources: Sequence[str],
    selection: Selection,
    settings: Mapping[str, Any],
    shards: int | None = None,
) -> str:
    """What differs between ``index`` and a build of ``sources`` asked with these options,
    or ``""``: a build that differs in nothing is an update of the index (``rag build``
    run twice updates), one that differs replaces its contents (``--force``).

    ``settings`` are the :class:`IndexSettings` fields the build names.
    """
    found = []
    if sorted(index.sources) != sorted(sources):
        found.append(f"sources {sorted(index.sources)} (asked: {sorted(sources)})")
    if index.selection != selection:
        found.append(f"selection {index.selection.to_json()} (asked: {selection.to_json()})")
    recorded = index.settings.model_dump()
    for name, value in settings.items():
        if recorded[name] != value:
            found.append(f"{name} {recorded[name]!r} (asked: {value!r})")
    if _check_shards(shards) != index.n_shards:
        found.append(f"shards {index.n_shards} (asked: {_check_shards(shards)})")
    return "; ".join(found)


def write_shard_segment(
    root: str | Path,
    settings: IndexSettings,
    embedder: Embedder | None,
    shard: int,
    chunks: Sequence[Chunk],
    texts: Mapping[str, str],
) -> SegmentEntry:
    """Write one segment of the index ``root`` for a change a driver commits: what a Ray
    task of a build does (:mod:`indexes.ray_build`). The segment is collected unless the
    driver's version names it."""
    writer = IndexWriter(_empty(root, settings, {}, embedder))
    plan = _Plan([], [], [])
    writer.write_segment(plan, shard, chunks, texts)
    return plan.new[0]


def _check_shards(shards: object) -> int:
    if shards is None:
        return 1
    if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= MAX_SHARDS:
        msg = f"--shards must be an integer from 1 to {MAX_SHARDS}, got {shards!r}"
        raise ConfigError(msg)
    return shards


def _by_shard(files: Sequence[str], n_shards: int) -> list[list[str]]:
    groups: list[list[str]] = [[] for _ in range(n_shards)]
    for f in files:
        groups[shard_of(f, n_shards)].append(f)
    return groups


def _members_by_shard(entries: Sequence[SegmentEntry]) -> dict[int, list[int]]:
    """The positions of ``entries`` in each shard, in order."""
    members: dict[int, list[int]] = {}
    for i, entry in enumerate(entries):
        members.setdefault(entry.shard, []).append(i)
    return members


def _texts(documents: Iterable[Document]) -> dict[str, str]:
    return {doc.id: doc.text for doc in documents}


def _save_bm25(tmp: Path, bm25: BM25Index) -> list[str]:
    """Save a new segment's BM25 in its canonical form; the file names, for the manifest."""
    save_canonical(bm25, tmp / "bm25")
    return [f"bm25/{p.name}" for p in sorted((tmp / "bm25").iterdir())]


def _rows_of(runs: object, paths: set[str], n_rows: int) -> Mask | None:
    """The rows of ``paths`` by a segment's ``sources`` map (``None``: no usable map)."""
    if not isinstance(runs, dict):
        return None
    rows = np.zeros(n_rows, np.bool_)
    try:
        for path in paths & runs.keys():
            for first, count in runs[path]:
                if not (first >= 0 and first + count <= n_rows):
                    return None
                rows[first : first + count] = True
    except (TypeError, ValueError):
        return None
    return rows


def _tracking(manifest: Mapping[str, Any], tracked: Mapping[str, Any]) -> dict[str, Any]:
    """What the new version tracks, as JSON: ``tracked`` over the current ``manifest``'s."""
    out: dict[str, Any] = {
        "sources": list(manifest.get("sources") or []),
        "fingerprints": dict(manifest.get("fingerprints") or {}),
        "failures": list(manifest.get("failures") or []),
        "meta": dict(manifest.get("meta") or {}),
        "skipped": [list(s) for s in manifest.get("skipped") or []],
        "selection": manifest.get("selection"),
        SOURCE_ROOT: manifest.get(SOURCE_ROOT),
        "fingerprinted_ns": manifest.get("fingerprinted_ns"),
    }
    for key, value in tracked.items():
        if key == "failures":
            value = [vars(f) for f in value]
        elif key == "skipped":
            value = [list(s) for s in value]
        elif key == "selection":
            value = value.to_json()
        out[key] = value
    return out


def _same_tracking(manifest: Mapping[str, Any], tracked: Mapping[str, Any]) -> bool:
    selection = tracked["selection"]
    return (
        list(manifest.get("sources", [])) == list(tracked["sources"])
        and Selection.from_json(manifest.get("selection")).to_json() == selection.to_json()
        and manifest.get(SOURCE_ROOT) == tracked[SOURCE_ROOT]
    )


def _embedder_info(index: Index, settings: IndexSettings) -> dict[str, Any]:
    return {
        "model": settings.model,
        "model_id": index.embedder.model_id,
        "dim": index.embedder.dim,
        "kind": settings.vector_kind,
    }


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _empty(
    path: str | Path,
    settings: IndexSettings | None,
    overrides: dict[str, Any],
    embedder: Embedder | None,
) -> Index:
    """An ``Index`` with no version yet, for a writer's first commit."""
    base = settings.model_dump() if settings is not None else {}
    resolved = IndexSettings.checked({**base, **overrides})
    if resolved.vector and embedder is None:  # a model not on this machine fails before parsing
        SentenceTransformerEmbedder(resolved.model, precision=resolved.precision).resolve()
    return Index(Path(path), IndexState(resolved, []), embedder=embedder)


def _package_version() -> str:
    try:
        return version("ragtools")
    except PackageNotFoundError:
        return "0+unknown"
