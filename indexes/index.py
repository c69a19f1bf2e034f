"""``Index``: a built index, read-only: chunks + BM25 + vectors + manifest of one version.

Build once offline, open anywhere::

    index = Index.build(["docs/"], "my-index")          # parse, split, index, save
    index = Index.open("my-index")                       # verify checksums, load (mmap)
    index.update()                                       # re-parse only changed files

A version is a list of immutable segments plus deleted rows (:mod:`indexes.store.segments`); one
``Index`` reads any number of them, on one machine or placed in shards, and searches them as
one index: BM25 with the statistics of all live rows, every ranking merged with one tie rule
(score, then chunk key). ``Index`` only reads. Every change (build, update, add, delete,
merge) goes through :class:`~indexes.writer.IndexWriter`, which writes new segments and a new
version, switches the ``CURRENT`` pointer atomically (:mod:`indexes.store.versions`) and then hands
the new :class:`IndexState` to the ``Index`` objects it was given. A state is immutable, so a
search that took one state sees one version's chunks and rankings from start to end,
whatever a writer does meanwhile. Nothing is pickled: chunks are JSON lines, BM25 is JSON +
``.npy``, vectors are faiss's own format, and every file's SHA-256 is in a manifest
(:mod:`indexes.store.manifest` holds the schemas and the migrations of older layouts).
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
import numpy.typing as npt

from ragtools.indexes.dense.embed import Embedder, SentenceTransformerEmbedder
from ragtools.indexes.dense.embed_cache import CachedEmbedder, EmbeddingCache
from ragtools.indexes.dense.windows import WindowedVectorIndex
from ragtools.indexes.errors import IndexLoadError, IndexStateError
from ragtools.indexes.keyword.bm25 import BM25Index, Query
from ragtools.indexes.keyword.collection import (
    Collection,
    GlobalStats,
    SegmentScorer,
    combined,
)
from ragtools.indexes.ranking import Mask, Ranking, Rows, allow_mask, check_k
from ragtools.indexes.settings import IndexSettings
from ragtools.indexes.store.chunk_file import ChunkFile, LiveChunks
from ragtools.indexes.store.chunks import read_chunks
from ragtools.indexes.store.doc_texts import TEXTS_DIR, ChainedTexts, DocumentTexts
from ragtools.indexes.store.manifest import (
    DOCUMENT_TEXTS,
    FORMAT,
    FORMAT_VERSION,
    VERSION_FORMAT,
    VERSION_FORMAT_VERSION,
    VERSION_MANIFEST,
    legacy_segments,
    migrate,
)
from ragtools.indexes.store.persist import read_manifest, sha256_file
from ragtools.indexes.store.segments import (
    LiveRows,
    SegmentEntry,
    first_depth,
    merged_top,
    read_deleted,
)
from ragtools.indexes.store.versions import VersionPin, current_version, pin_version, reading
from ragtools.parsers import Chunk, FileError, Selection

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ragtools.indexes.writer import UpdateOptions, UpdateReport

__all__ = ["MANIFEST", "Index", "IndexState", "open_version"]

MANIFEST = "manifest.json"
CHUNKS = "chunks.jsonl"


def chunk_keys_of(chunks: Iterable[Chunk]) -> npt.NDArray[np.int64]:
    """The 64-bit key of each chunk's id (:attr:`IndexState.chunk_keys`)."""
    digests = b"".join(
        hashlib.blake2b(c.id.encode("utf-8"), digest_size=8).digest() for c in chunks
    )
    return np.frombuffer(digests, dtype="<i8").astype(np.int64)


@dataclass(frozen=True)
class IndexState:
    """One version of an index, as a search sees it: row ``i`` of both halves is
    ``chunks[i]``; ``texts`` maps document ids to their full text (``None``: not stored,
    an index written before format 4)."""

    settings: IndexSettings
    chunks: Sequence[Chunk]
    bm25: BM25Index | None = None
    vector: WindowedVectorIndex | None = None
    manifest: dict[str, Any] = field(default_factory=dict)
    texts: Mapping[str, str] | None = None
    keys: LiveKeys | None = None
    keyword_half: KeywordHalf | None = None
    """What the keyword searches of a version run on (see :class:`KeywordHalf`)."""
    entries: Sequence[SegmentEntry] = ()
    """The version's segments, in row order."""
    parts: Sequence[IndexState | None] = ()
    """Each segment's contents as read (``None``: held elsewhere, e.g. by a Ray actor)."""
    deleted: Sequence[npt.NDArray[np.bool_]] = ()
    """Each segment's deleted rows."""

    def with_search(self, search: Sequence[SegmentPart]) -> IndexState:
        """This state searching ``search`` (e.g. Ray actors, one per shard) instead of the
        segments it holds."""
        return segmented_state(
            self.settings, self.parts, self.deleted, self.manifest, self.entries, search,
            self.keyword_half,
        )  # fmt: skip

    @property
    def stats(self) -> GlobalStats | None:
        """The BM25 collection statistics of the version's live rows (``None``: no keyword
        half, or a version of one segment as stored, whose own statistics they are)."""
        return None if self.keyword_half is None else self.keyword_half.stats

    @cached_property
    def chunk_keys(self) -> npt.NDArray[np.int64]:
        """A 64-bit key per row derived from its chunk id (BLAKE2b), so that rankings of
        different indexes can be fused by chunk id with integer arrays, and ties are
        ordered alike whatever the history of the index (:mod:`indexes.store.segments`). Index it
        with row ids (a version's keys are computed for the rows asked: :class:`LiveKeys`)."""
        if self.keys is not None:
            return cast(npt.NDArray[np.int64], self.keys)
        return chunk_keys_of(self.chunks)

    def keyword_ranking(self, query: Query, k: int, allow: object = None) -> Ranking:
        """BM25 top ``k`` chunk rows allowed by ``allow`` (see :func:`allow_mask`); ``query``
        as :class:`~indexes.keyword.bm25.BM25Index` takes it (text, tokens or weights)."""
        if self.bm25 is None:
            msg = "this index was built without the keyword half"
            raise IndexStateError(msg)
        return self.bm25.search(query, k=k, allow=allow_mask(allow, len(self.chunks)))

    def document_frequencies(self, terms: Sequence[str]) -> tuple[npt.NDArray[np.int64], int]:
        """How many live rows contain each of ``terms``, and the number of live rows: the
        collection statistics BM25 scores with (read by pseudo-relevance feedback)."""
        if self.bm25 is None:
            msg = "this index was built without the keyword half"
            raise IndexStateError(msg)
        stats = self.stats
        if stats is not None:
            return stats.document_frequencies(terms), stats.n_live
        index = self.bm25 if self.keyword_half is None else self.keyword_half.resolve()[0]
        return index.document_frequencies(terms), len(index)

    def vector_ranking(self, query: npt.ArrayLike, k: int, allow: object = None) -> Ranking:
        """Cosine top ``k`` chunk rows for an embedded query (a chunk scores its best window),
        allowed by ``allow`` (the same meaning as for the keyword half)."""
        if self.vector is None:
            msg = "this index was built without the vector half (--no-vector)"
            raise IndexStateError(msg)
        return self.vector.search(query, k, allow_mask(allow, len(self.chunks)))


class KeywordSearch(Protocol):
    """What answers a version's keyword top ``depth`` in live rows: the index this process
    merged (:class:`KeywordPart`), or a shard's Ray actor (:mod:`indexes.ray_shards`)."""

    def keyword(self, tokens: Query, depth: int, allow: Mask | None) -> Ranking:
        """BM25 top ``depth`` (any tie order) among the allowed live rows."""
        ...


class VectorSearch(Protocol):
    """What answers a version's vector top ``depth`` in live rows: one segment held here
    (:class:`LocalSegment`), or a shard's Ray actor."""

    def vector(self, query: npt.ArrayLike, depth: int, allow: Mask | None) -> Ranking:
        """Vector top ``depth`` (any tie order) among the allowed live rows."""
        ...


class SegmentPart(KeywordSearch, VectorSearch, Protocol):
    """A part that answers both halves: a shard's Ray actor."""


class KeywordHalf:
    """What a version's keyword searches run on (:func:`_keyword_half` says which, and why):
    the stored weights of a lone segment, the held segments' live postings merged into one
    index, or, for a version too large to merge (over :data:`COMBINE_POSTINGS` postings), each
    held segment scored per query from its term frequencies
    (:class:`~indexes.keyword.collection.SegmentScorer`). Whatever needs computing is made on
    the first search, so that opening a version to update it never pays for it."""

    def __init__(
        self,
        parts: Sequence[IndexState | None],
        entries: Sequence[SegmentEntry],
        deleted: Sequence[npt.NDArray[np.bool_]],
        stats: GlobalStats | None,
        where: Path,
    ) -> None:
        self._args = (parts, entries, deleted, stats, where)
        self.held = [
            (i, p.bm25) for i, p in enumerate(parts) if p is not None and p.bm25 is not None
        ]
        self.template = self.held[0][1]
        postings = sum(len(index.corpus().postings().docs) for _, index in self.held)
        stored = _scores_as_stored(parts, entries, deleted, stats)
        self.per_segment = not stored and postings > COMBINE_POSTINGS
        self._made: tuple[BM25Index, Rows | None, GlobalStats | None] | None = None
        self._collection: Collection | None = None
        self._scorers: dict[int, SegmentScorer] = {}
        self._lock = threading.Lock()

    def resolve(self) -> tuple[BM25Index, Rows | None, GlobalStats | None]:
        """The one index searched, its rows' live rows (``None``: the same) and the
        statistics (not for a version scored :attr:`per_segment`)."""
        made = self._made
        if made is None:
            with self._lock:
                if self._made is None:
                    index, rows, stats = _keyword_half(*self._args)
                    assert index is not None  # a template exists, so a BM25 half does
                    self._made = (index, rows, stats)
                made = self._made
        return made

    @property
    def stats(self) -> GlobalStats | None:
        """The collection statistics (``None``: a lone segment scored as stored)."""
        return self.collection().stats if self.per_segment else self.resolve()[2]

    def collection(self) -> Collection:
        """The statistics a version scored :attr:`per_segment` scores with: given, or
        counted over the held segments' live rows."""
        if self._collection is None:
            with self._lock:
                if self._collection is None:
                    _, _, deleted, stats, _ = self._args
                    if stats is None:
                        numbers, segments = zip(*self.held, strict=True)
                        stats = GlobalStats.of_segments(segments, [deleted[i] for i in numbers])
                    self._collection = Collection(stats, self.template)
        return self._collection

    def scorer(self, number: int) -> SegmentScorer:
        """Segment ``number``'s scorer (:attr:`per_segment` only)."""
        scorer = self._scorers.get(number)
        if scorer is None:
            index = dict(self.held)[number]
            scorer = SegmentScorer(index, self._args[2][number], self.collection())
            self._scorers[number] = scorer
        return scorer

    def search_parts(self, live: LiveRows) -> list[KeywordSearch]:
        """What :class:`SegmentedBM25` asks: the one index, or each held segment."""
        if self.per_segment:
            return [SegmentKeyword(self, number, live) for number, _ in self.held]
        return [KeywordPart(self)]


class KeywordPart:
    """The keyword half searched in this process as one index (:class:`KeywordHalf`)."""

    def __init__(self, half: KeywordHalf) -> None:
        self.half = half

    def keyword(self, tokens: Query, depth: int, allow: Mask | None) -> Ranking:
        index, rows, _ = self.half.resolve()
        if rows is None:
            return index.search(tokens, depth, allow)
        found = index.search(tokens, depth, None if allow is None else allow[rows])
        return Ranking(rows[found.rows], found.scores)


class SegmentKeyword:
    """One held segment of a version scored :attr:`KeywordHalf.per_segment`."""

    def __init__(self, half: KeywordHalf, number: int, live: LiveRows) -> None:
        self.half, self.number, self.live = half, number, live

    def keyword(self, tokens: Query, depth: int, allow: Mask | None) -> Ranking:
        if len(self.live.local[self.number]) == 0:
            return Ranking.empty()
        local = self.live.segment_mask(self.number, allow)
        found = self.half.scorer(self.number).search(tokens, depth, local)
        return Ranking(self.live.to_live(self.number, found.rows), found.scores)


class LocalSegment:
    """The vectors of one segment held in this process (``state`` ``None``: held
    elsewhere); its BM25 half is searched through the version's :class:`KeywordPart`."""

    def __init__(self, number: int, state: IndexState | None, live: LiveRows) -> None:
        self.number, self.state, self.live = number, state, live
        self.empty = state is None or len(live.local[number]) == 0

    def vector(self, query: npt.ArrayLike, depth: int, allow: Mask | None) -> Ranking:
        if self.empty or self.state is None or self.state.vector is None:
            return Ranking.empty()
        local = self.live.segment_mask(self.number, allow)
        found = self.state.vector.search(query, depth, local)
        return Ranking(self.live.to_live(self.number, found.rows), found.scores)


class SegmentedBM25:
    """The keyword half of a version: :class:`~indexes.keyword.bm25.BM25Index`'s ``search`` over
    the version's live rows. Each segment scores with the collection's statistics; the
    parts' answers are merged by :func:`~indexes.store.segments.merged_top` (ties by chunk key).
    Several parts (Ray actors) are asked in a thread each, so their round trips overlap."""

    def __init__(
        self, parts: Sequence[KeywordSearch], view: _SegmentView, template: BM25Index
    ) -> None:
        self.parts = list(parts)
        self._view = view
        self.params = template.params
        self.tokenizer = template.tokenizer
        self.variant, self.k1, self.b = template.variant, template.k1, template.b
        self.epsilon, self.delta, self.k3 = template.epsilon, template.delta, template.k3

    def __len__(self) -> int:
        return self._view.n_live

    def search(self, query: Query, k: int = 10, allow: object = None) -> Ranking:
        """The ``k`` best live rows for ``query`` among those allowed (see
        :func:`~indexes.ranking.allow_mask`)."""
        k = check_k(k)
        view = self._view
        if view.n_live == 0:
            msg = "the BM25 index has no live rows: add documents before searching"
            raise IndexStateError(msg)
        mask = allow_mask(allow, view.n_live)
        tokens = self.tokenizer(query) if isinstance(query, str) else query

        def call(part: KeywordSearch) -> Callable[[int], Ranking]:
            return lambda depth: part.keyword(tokens, depth, mask)

        return view.top([call(p) for p in self.parts], k)


class SegmentedVectors:
    """The vector half of a version, as :class:`SegmentedBM25` is the keyword half. Segments
    held here are scanned in the calling thread: each scan is a BLAS product that BLAS
    already spreads over the cores, and threads on top of it oversubscribe them; remote parts
    (Ray actors) are asked in a thread each, so their round trips overlap."""

    def __init__(
        self, parts: Sequence[VectorSearch], view: _SegmentView, size: int, *, remote: bool
    ) -> None:
        self.parts = list(parts)
        self._view = view
        self._size = size
        self._remote = remote

    def __len__(self) -> int:
        return self._size

    def search(self, query: npt.ArrayLike, k: int, allow: object = None) -> Ranking:
        """The ``k`` nearest live rows to an embedded query among those allowed."""
        k = check_k(k)
        view = self._view
        mask = allow_mask(allow, view.n_live)

        def call(part: VectorSearch) -> Callable[[int], Ranking]:
            return lambda depth: part.vector(query, depth, mask)

        return view.top([call(p) for p in self.parts], k, threads=self._remote)


class _SegmentView:
    """What both halves of a version share: the number of live rows, the chunk keys, and
    the threads that search the parts."""

    def __init__(self, n_live: int, keys: Callable[[Rows], Rows]) -> None:
        self.n_live = n_live
        self.keys = keys
        self._pool: ThreadPoolExecutor | None = None

    def top(
        self, calls: Sequence[Callable[[int], Ranking]], k: int, *, threads: bool = True
    ) -> Ranking:
        """:func:`merged_top` over the parts (``calls[i](depth)``)."""
        n = len(calls)
        if threads and n > 1:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(min(n, 8), thread_name_prefix="segment")
            depth = first_depth(k)
            first = list(self._pool.map(lambda call: call(depth), calls))
            return merged_top(n, lambda s, d: first[s] if d == depth else calls[s](d), self.keys, k)
        return merged_top(n, lambda s, d: calls[s](d), self.keys, k)


class LiveTexts(Mapping[str, str]):
    """The texts of the documents that still have a live chunk: a deleted document's text
    stays in its segment, but is not the version's."""

    def __init__(self, texts: Mapping[str, str], chunks: Sequence[Chunk]) -> None:
        self._texts = texts
        self._chunks = chunks
        self._live: set[str] | None = None

    def _live_ids(self) -> set[str]:
        if self._live is None:
            self._live = {c.doc_id for c in self._chunks}
        return self._live

    def __getitem__(self, doc_id: str) -> str:
        if doc_id not in self._live_ids():
            raise KeyError(doc_id)
        return self._texts[doc_id]

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._live_ids() and doc_id in self._texts

    def __iter__(self) -> Iterator[str]:
        live = self._live_ids()
        return (doc_id for doc_id in self._texts if doc_id in live)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class LiveKeys:
    """The chunk keys of a version's live rows (:attr:`IndexState.chunk_keys`), indexed like
    an array. A segment whose chunks are in memory has its keys computed once, on first use;
    one whose chunks stay in their file (:data:`LAZY_ROWS`) has the keys of the rows asked
    computed when asked: all of them would parse every chunk, when a query needs the keys of
    its candidates only."""

    def __init__(self, parts: Sequence[Sequence[Chunk]], live: LiveRows) -> None:
        self._parts = list(parts)
        self._live = live
        self._keys: list[npt.NDArray[np.int64] | None] = [None] * len(parts)

    def __len__(self) -> int:
        return len(self._live)

    def _segment_keys(self, segment: int, local: Rows) -> npt.NDArray[np.int64]:
        part = self._parts[segment]
        if isinstance(part, ChunkFile):
            return chunk_keys_of(part[int(row)] for row in local.tolist())
        keys = self._keys[segment]
        if keys is None:
            keys = self._keys[segment] = chunk_keys_of(part)
        return keys[local]

    def __getitem__(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        wanted = np.asarray(rows, dtype=np.int64)
        flat = wanted.reshape(-1)
        if len(flat) and (flat.min() < 0 or flat.max() >= len(self._live)):
            msg = "chunk key row out of range"
            raise IndexError(msg)
        out = np.empty(len(flat), np.int64)
        offsets = self._live.offsets
        segments = np.searchsorted(offsets, flat, side="right") - 1
        for segment in np.unique(segments).tolist():
            at = np.flatnonzero(segments == segment)
            local = self._live.local[segment][flat[at] - offsets[segment]]
            out[at] = self._segment_keys(segment, local)
        return out.reshape(wanted.shape)


def segmented_state(
    settings: IndexSettings,
    parts: Sequence[IndexState | None],
    deleted: Sequence[npt.NDArray[np.bool_]],
    manifest: dict[str, Any],
    entries: Sequence[SegmentEntry],
    search: Sequence[SegmentPart] | None = None,
    keyword: KeywordHalf | None = None,
) -> IndexState:
    """The state a search sees: the live chunks of every segment, and merged halves.

    ``parts[i]`` is ``None`` for a segment this process does not hold (a Ray actor's state
    holds its shard's segments only); ``keyword`` is the BM25 index of the segments held
    (:func:`_keyword_half`); ``search`` replaces what this process holds as the parts
    searched (Ray actors).
    """
    live = LiveRows(deleted)
    held = [p for p in parts if p is not None]
    chunk_parts: list[Sequence[Chunk]] = [p.chunks if p is not None else [] for p in parts]
    if len(parts) == 1 and held and not deleted[0].any():
        chunks: Sequence[Chunk] = held[0].chunks
    else:
        chunks = LiveChunks(chunk_parts, live)
    keys = LiveKeys(chunk_parts, live)
    view = _SegmentView(len(live), keys.__getitem__)
    groups: Sequence[VectorSearch] = search or [
        LocalSegment(i, p, live) for i, p in enumerate(parts)
    ]
    bm25 = vector = None
    if settings.keyword and keyword is not None:
        keyword_parts: Sequence[KeywordSearch] = search or keyword.search_parts(live)
        bm25 = cast(BM25Index, SegmentedBM25(keyword_parts, view, keyword.template))
    if settings.vector and any(p.vector is not None for p in held):
        size = 0  # live vectors: a chunk has one per window
        for part, mask in zip(parts, deleted, strict=True):
            if part is not None and part.vector is not None:
                owners = part.vector.owners
                size += int((~mask).sum() if owners is None else (~mask[owners]).sum())
        segmented = SegmentedVectors(groups, view, size, remote=search is not None)
        vector = cast(WindowedVectorIndex, segmented)
    stored = [p.texts for p in held if p.texts is not None]
    texts: Mapping[str, str] | None = None
    if stored:
        texts = ChainedTexts(stored)
        if any(mask.any() for mask in deleted):
            texts = LiveTexts(texts, chunks)
    summary = dict(manifest)
    summary["segments"] = [e.to_json() for e in entries]
    if held and DOCUMENT_TEXTS not in summary:
        summary[DOCUMENT_TEXTS] = TEXTS_DIR if len(stored) == len(held) else None
    return IndexState(
        settings, chunks, bm25, vector, summary, texts,
        keys=keys, keyword_half=keyword, entries=entries, parts=parts, deleted=deleted,
    )  # fmt: skip


class Index:
    """A built index: use :meth:`build`, :meth:`from_documents` or :meth:`open`.

    An index opened with :meth:`open` pins its version (:mod:`indexes.store.versions`): garbage
    collection keeps that version's files until :meth:`close`, the end of a ``with`` block,
    the object being garbage-collected or the process ending.

    Attributes:
        path: the index root directory.
        state: the live version's contents (replaced as a whole by a writer).
        version_dir: the version directory ``state`` was read from or written to (``None``
            before the first write).
    """

    def __init__(
        self,
        path: Path,
        state: IndexState,
        *,
        embedder: Embedder | None = None,
        version_dir: Path | None = None,
    ) -> None:
        self.path = path
        self.state = state
        self.version_dir = version_dir
        self._base_embedder = embedder
        self._embedder: CachedEmbedder | None = None
        self._pin: VersionPin | None = None
        self._unpin: weakref.finalize[[], Index] | None = None

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def base_embedder(self) -> Embedder | None:
        """The embedder given when this index was opened (``None``: the one its manifest
        names, loaded on first use); writers of new versions reuse it."""
        return self._base_embedder

    def close(self) -> None:
        """Release this index's pin on its version (searches still work on POSIX, whose
        mapped files outlive their deletion; reopen to be safe). Idempotent."""
        self.hold_pin(None)

    def hold_pin(self, pin: VersionPin | None) -> None:
        """Pin ``pin``'s version for as long as this object lives; release the previous.

        The one way a version pin (:func:`~indexes.store.versions.pin_version`) is handed to an
        ``Index``: whoever opens a version pins it first, then gives the pin to the index.
        """
        previous = self._unpin
        self._pin, self._unpin = pin, None
        if pin is not None:
            self._unpin = weakref.finalize(self, pin.release)
        if previous is not None:
            previous()

    def show(self, state: IndexState, version_dir: Path) -> None:
        """Make this index show ``state``, just written as ``version_dir`` by a writer that
        still holds the writer lock, and move its pin there."""
        with reading(self.path):
            pin = pin_version(self.path, version_dir.name)
        self.state, self.version_dir = state, version_dir
        self.hold_pin(pin)

    def adopt(self, other: Index) -> None:
        """Show what ``other`` (an index of the same root) shows, and take over its pin."""
        pin = other._pin
        if other._unpin is not None:
            other._unpin.detach()
        other._pin = other._unpin = None
        self.state, self.version_dir = other.state, other.version_dir
        self.hold_pin(pin)

    def refresh(self) -> bool:
        """Read the live version again if a writer switched it since this index read it.

        Writers call it once they hold the writer lock, so that an update, add or delete
        applies to the live version, never to an older one (which would undo what the
        other writer did). Returns whether anything was read.
        """
        if self.version_dir is None:
            return False
        with reading(self.path):
            directory = current_version(self.path)
            if directory == self.version_dir:
                return False
            pin = pin_version(self.path, directory.name)
            try:
                fresh = open_version(self.path, directory, embedder=self._base_embedder)
            except BaseException:
                if pin is not None:
                    pin.release()
                raise
        fresh.hold_pin(pin)
        self.adopt(fresh)
        return True

    # ----------------------------------------------------------------- entry points
    @classmethod
    def build(cls, sources: Sequence[str | Path], path: str | Path, **options: Any) -> Index:
        """Parse, split and index ``sources``; see :meth:`IndexWriter.build`."""
        from ragtools.indexes.writer import IndexWriter

        return IndexWriter.build(sources, path, **options)

    @classmethod
    def from_documents(cls, documents: Any, path: str | Path, **options: Any) -> Index:
        """Index already-parsed documents; see :meth:`IndexWriter.from_documents`."""
        from ragtools.indexes.writer import IndexWriter

        return IndexWriter.from_documents(documents, path, **options)

    def update(
        self, sources: Sequence[str | Path] | None = None, **options: Unpack[UpdateOptions]
    ) -> UpdateReport:
        """Bring the index up to date with its sources; see :meth:`IndexWriter.update`."""
        from ragtools.indexes.writer import IndexWriter

        return IndexWriter(self).update(sources, **options)

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        mmap: bool = True,
        embedder: Embedder | None = None,
        lazy_chunks: bool | None = None,
    ) -> Index:
        """Open the live version of an index, verifying its format and every checksum.

        Args:
            path: the index directory.
            mmap: memory-map the large arrays instead of reading them.
            embedder: the embedder for queries (default: the model named in the manifest).
            lazy_chunks: keep every segment's chunks in its file, parsed when read (what
                an update wants: it reads the rows of changed files by each segment's map
                of them); ``None`` does so for a version of over :data:`LAZY_ROWS` rows.

        Raises:
            IndexLoadError: missing, damaged or tampered file (named in the message).
            IndexVersionError: written by a newer format version.
        """
        root = Path(path)
        with reading(root):  # no version is garbage-collected while we read CURRENT and pin it
            directory = current_version(root)
            pin = pin_version(root, directory.name)
            try:
                index = open_version(
                    root, directory, mmap=mmap, embedder=embedder, lazy_chunks=lazy_chunks
                )
            except BaseException:
                if pin is not None:
                    pin.release()
                raise
        index.hold_pin(pin)
        return index

    # ----------------------------------------------------------------- reading
    @property
    def settings(self) -> IndexSettings:
        """How the index was built (reused by updates)."""
        return self.state.settings

    @property
    def chunks(self) -> Sequence[Chunk]:
        """Every chunk, row ``i`` of both halves being ``chunks[i]``."""
        return self.state.chunks

    @property
    def bm25(self) -> BM25Index | None:
        """The keyword half, or ``None``."""
        return self.state.bm25

    @property
    def vector(self) -> WindowedVectorIndex | None:
        """The vector half, or ``None``."""
        return self.state.vector

    @property
    def manifest(self) -> dict[str, Any]:
        """The live version's manifest (current schema)."""
        return self.state.manifest

    @property
    def sources(self) -> list[str]:
        """The files and folders the index was built from (absolute paths)."""
        return list(self.manifest.get("sources", []))

    @property
    def fingerprints(self) -> dict[str, Any]:
        """Size and SHA-256 of every source file at the last build or update, by path."""
        return dict(self.manifest.get("fingerprints", {}))

    @property
    def meta(self) -> dict[str, Any]:
        """The JSON the builder asked to keep (e.g. a corpus fingerprint)."""
        return dict(self.manifest.get("meta", {}))

    @property
    def failures(self) -> list[FileError]:
        """Files that could not be parsed at the last build or update."""
        return [FileError(**f) for f in self.manifest.get("failures", [])]

    @property
    def skipped(self) -> list[tuple[str, str]]:
        """``(path, reason)`` of the files and folders left out at the last build or update."""
        return [(str(p), str(r)) for p, r in self.manifest.get("skipped", [])]

    @property
    def selection(self) -> Selection:
        """Which files of the source folders are read (patterns, ``.gitignore``)."""
        return Selection.from_json(self.manifest.get("selection"))

    @property
    def embedder(self) -> CachedEmbedder:
        """The (cached) embedder used for documents and queries; loads lazily."""
        if self._embedder is None:
            base = self._base_embedder or SentenceTransformerEmbedder(
                self.settings.model, precision=self.settings.precision
            )
            cache = EmbeddingCache(self.path / "cache" / "embeddings")
            self._embedder = CachedEmbedder(base, cache)
        return self._embedder

    def __len__(self) -> int:
        return len(self.chunks)

    def keyword_search(self, query: str, k: int, allow: object = None) -> list[tuple[int, float]]:
        """BM25 top ``k`` as ``(row, score)`` pairs, best first."""
        return self.state.keyword_ranking(query, k, allow).pairs()

    def vector_search(
        self, query: str | npt.ArrayLike, k: int, allow: object = None
    ) -> list[tuple[int, float]]:
        """Cosine top ``k`` as ``(row, score)`` pairs, best first."""
        vector = self.embedder.embed_query(query) if isinstance(query, str) else query
        return self.state.vector_ranking(vector, k, allow).pairs()

    @property
    def segments(self) -> list[SegmentEntry]:
        """The segments of the live version, in row order (see :mod:`indexes.store.segments`)."""
        where = self.version_dir or self.path
        return [SegmentEntry.from_json(s, where) for s in self.manifest.get("segments", [])]

    @property
    def n_shards(self) -> int:
        """How many worker groups the segments are placed in (1: not sharded)."""
        shards = self.manifest.get("shards")
        if isinstance(shards, list):  # a sharded index written before segments
            return len(shards)
        return int(shards or 1)

    def info(self) -> dict[str, Any]:
        """A JSON summary for ``rag info``: version, counts, segments, settings, model,
        failures.

        ``bm25`` is the keyword half's parameters in effect (variant, k1, b, k3, tokenizer):
        empty ``settings.bm25`` means the defaults of the version that built the index.
        """
        keys = ("format", "format_version", "package_version", "created", "counts", "settings")
        summary = {key: self.manifest.get(key) for key in keys}
        segments = self.segments
        counts = dict(summary.get("counts") or {})
        counts["chunks"] = len(self.chunks)
        counts["segments"] = len(segments)
        counts["deleted_rows"] = sum(s.n_deleted for s in segments)
        counts["vectors"] = len(self.vector) if self.vector is not None else 0
        counts["documents"] = len({c.doc_id for c in self.chunks})
        if self.n_shards > 1:
            counts["shards"] = self.n_shards
        summary["counts"] = counts
        summary["segments"] = [
            {"name": s.name, "shard": s.shard, "rows": s.rows, "deleted": s.n_deleted}
            for s in segments
        ]
        summary["path"] = str(self.path)
        summary["bm25"] = self.bm25.params if self.bm25 is not None else None
        summary["embedder"] = self.manifest.get("embedder")
        summary["sources"] = self.sources
        summary["failures"] = self.manifest.get("failures", [])
        summary["skipped"] = self.manifest.get("skipped", [])
        summary["selection"] = self.selection.to_json()
        return summary


def open_version(
    root: Path,
    directory: Path,
    *,
    mmap: bool = True,
    embedder: Embedder | None = None,
    lazy_chunks: bool | None = None,
) -> Index:
    """An index of one version directory of ``root``, checked in full, without a pin: what
    :meth:`Index.open` reads, and what a rollback checks before making a version live.

    Raises:
        IndexLoadError: a missing, damaged or tampered file (named in the message).
    """
    try:
        state = read_version(root, directory, mmap=mmap, lazy_chunks=lazy_chunks)
    except OSError as exc:
        raise IndexLoadError(directory, f"unreadable ({exc})") from exc
    return Index(root, state, embedder=embedder, version_dir=directory)


LAZY_ROWS = 200_000
"""A version of more rows, over all its segments, keeps each segment's chunks in its mapped
file, parsed when read (:class:`~indexes.store.chunk_file.ChunkFile`), so that memory does
not grow with the chunks, however they are cut into segments and shards."""

COMBINE_POSTINGS = 20_000_000
"""Postings (about 8 bytes each on disk, some 40 to 50 in memory while merging) up to which
a version's segments are merged into one index for its keyword searches; above, each
segment is scored per query (:class:`KeywordHalf`): merging ten million rows would hold
every posting in memory at once, several times the 8 GB such an index is served in."""


def version_entries(root: Path, directory: Path) -> tuple[dict[str, Any], list[SegmentEntry]]:
    """The version manifest (current schema) and the segments of a version folder.

    Raises:
        IndexLoadError: a missing or damaged manifest, or a malformed segment list (named).
    """
    if not (directory / VERSION_MANIFEST).is_file():
        return legacy_segments(root, directory)
    manifest = read_manifest(
        directory,
        VERSION_MANIFEST,
        fmt=VERSION_FORMAT,
        version=VERSION_FORMAT_VERSION,
        sealed=True,
    )
    where = directory / VERSION_MANIFEST
    segments = manifest.get("segments")
    if not isinstance(segments, list):
        raise IndexLoadError(where, "invalid or missing segments")
    entries = [SegmentEntry.from_json(s, where) for s in segments]
    for entry in entries:
        if entry.deleted is not None and entry.deleted not in manifest["files"]:
            raise IndexLoadError(where, f"{entry.deleted} is not a listed file")
    return manifest, entries


def read_version(
    root: Path,
    directory: Path,
    *,
    mmap: bool = True,
    shard: int | None = None,
    stats: GlobalStats | None = None,
    reuse: Mapping[str, IndexState] | None = None,
    lazy_chunks: bool | None = None,
    written: Mapping[str, Sequence[Chunk]] | None = None,
) -> IndexState:
    """Read and check one version and every segment it names; see :mod:`indexes.store.segments`.

    ``shard`` reads only that shard's segments (a Ray actor's part), scoring BM25 with the
    version's collection statistics ``stats`` as the whole index computed them. ``reuse``
    gives segments already read, as read (:attr:`IndexState.loaded`), by path: a writer's
    new version reads only the segments it wrote (segments never change). ``written``
    names, by path, segments the caller has just written in this process, with their
    chunks as it holds them (a list, or the mapped file): their files are not hashed again
    (the caller hashed them, as it wrote them, for their manifests), and their chunks are
    taken as held when that is the form the version reads them in (mapped over
    :data:`LAZY_ROWS` rows, else a list), read otherwise. Everything else is read and
    checked as for any segment.

    Raises:
        IndexLoadError: a missing, damaged or tampered file (named), or a segment other than
            the one the version was written with.
    """
    manifest, entries = version_entries(root, directory)
    where = directory / VERSION_MANIFEST
    try:
        settings = IndexSettings.recorded(manifest["settings"])
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexLoadError(where, f"invalid settings ({exc})") from exc
    _check_tracked(where, manifest)
    loaded: list[IndexState | None] = []
    deleted: list[npt.NDArray[np.bool_]] = []
    known = reuse or {}
    fresh = written or {}
    # Memory grows with the version's chunks, not with any one segment's: sixteen shards of
    # 120,000 rows would otherwise hold 1.9M parsed chunks where one segment of 1.9M rows
    # holds none.
    large = sum(entry.rows for entry in entries) > LAZY_ROWS
    for entry in entries:
        deleted.append(read_deleted(directory, entry))
        if shard is not None and entry.shard != shard:
            loaded.append(None)
        elif entry.path in known:
            loaded.append(known[entry.path])
        else:
            lazy = mmap and (lazy_chunks if lazy_chunks is not None else large)
            held = fresh.get(entry.path)
            part = _read_segment(
                root,
                entry,
                mmap=mmap,
                lazy=lazy,
                where=where,
                hashed=entry.path in fresh,
                chunks=held if isinstance(held, ChunkFile) == lazy else None,
            )
            loaded.append(part)
    keyword = None
    if settings.keyword and any(p is not None and p.bm25 is not None for p in loaded):
        keyword = KeywordHalf(loaded, entries, deleted, stats, where)
    return segmented_state(settings, loaded, deleted, manifest, entries, keyword=keyword)


def _read_segment(
    root: Path,
    entry: SegmentEntry,
    *,
    mmap: bool,
    lazy: bool,
    where: Path,
    hashed: bool = False,
    chunks: Sequence[Chunk] | None = None,
) -> IndexState:
    segment_dir = root / entry.path
    if not segment_dir.is_dir():
        raise IndexLoadError(segment_dir, "the segment named by the version is missing")
    part = load_state(segment_dir, mmap=mmap, lazy_chunks=lazy, verify=not hashed, chunks=chunks)
    # After the segment's own checks, which name what is wrong inside a damaged segment.
    pinned = entry.manifest_sha256
    if pinned is not None and sha256_file(segment_dir / MANIFEST) != pinned:
        msg = "not the segment this version was written with (manifest checksum differs)"
        raise IndexLoadError(segment_dir / MANIFEST, msg)
    if len(part.chunks) != entry.rows:
        msg = f"segment {entry.name} has {len(part.chunks)} rows, the version says {entry.rows}"
        raise IndexLoadError(where, msg)
    return part


def _scores_as_stored(
    parts: Sequence[IndexState | None],
    entries: Sequence[SegmentEntry],
    deleted: Sequence[npt.NDArray[np.bool_]],
    stats: GlobalStats | None,
) -> bool:
    """Whether a version's keyword half is one canonical segment without deletions, scored
    with its own statistics: its stored weights are then the version's."""
    return len(parts) == 1 and stats is None and entries[0].canonical and not deleted[0].any()


def _keyword_half(
    parts: Sequence[IndexState | None],
    entries: Sequence[SegmentEntry],
    deleted: Sequence[npt.NDArray[np.bool_]],
    stats: GlobalStats | None,
    where: Path,
) -> tuple[BM25Index | None, Rows | None, GlobalStats | None]:
    """The BM25 index a version's keyword searches run on, the live row of each of its rows
    (``None``: its rows are the live rows), and the collection statistics (``None``: not
    computed, for a version of one segment as stored).

    Where scoring happens, by measurement (``eval/bench_segments.py``, ``eval/bench_scale.py``):

    * a version of one canonical segment without deletions scores with the weights as stored
      (nothing is computed at open: the arrays are memory-mapped);
    * otherwise, up to :data:`COMBINE_POSTINGS` postings, the live postings of the segments
      held are merged in memory into one index scoring with the collection's statistics
      (:func:`~indexes.keyword.collection.combined`), in time and memory linear in the
      postings, writing nothing: an update stays cheap on disk, and a query is one kernel
      pass whatever the number of segments (one kernel per segment cost two to three times
      one segment's latency with eight small segments, where each call's fixed cost
      dominates);
    * above it (:attr:`KeywordHalf.per_segment`, not this function), each segment is scored
      per query from its term frequencies: at millions of rows a query's cost is its
      postings, not the calls, and merging would hold every posting in memory.

    The merge policy (:mod:`indexes.writer`) bounds how far a version drifts from what is
    stored.
    """
    held = [(i, p.bm25) for i, p in enumerate(parts) if p is not None and p.bm25 is not None]
    if not held:
        return None, None, stats
    if _scores_as_stored(parts, entries, deleted, stats):
        return held[0][1], None, None
    indexes = [b for _, b in held]
    index, stats = combined(indexes, [deleted[i] for i, _ in held], stats, where=where)
    if len(held) == len(parts):
        return index, None, stats
    live = LiveRows(deleted)
    rows = np.concatenate(
        [np.zeros(0, np.int64)]
        + [live.offsets[i] + np.arange(len(live.local[i]), dtype=np.int64) for i, _ in held]
    )
    return index, rows, stats


_FAILURE_KEYS = {"path", "error", "message"}


def _check_tracked(path: Path, manifest: dict[str, Any]) -> None:
    """The manifest's own fields that later code trusts: failures, owner map, counts."""
    failures = manifest.get("failures", [])
    if not isinstance(failures, list) or not all(
        isinstance(f, dict)
        and set(f) == _FAILURE_KEYS
        and all(isinstance(v, str) for v in f.values())
        for f in failures
    ):
        raise IndexLoadError(path, "invalid failures list (entries of path, error, message)")
    owners = manifest.get("vector_owners")
    if owners is not None and owners not in manifest["files"]:
        raise IndexLoadError(path, f"vector_owners names {str(owners)[:80]!r}, not a listed file")
    if not isinstance(manifest.get("counts"), dict):
        raise IndexLoadError(path, "invalid or missing counts")


def load_state(
    directory: Path,
    *,
    mmap: bool,
    lazy_chunks: bool = False,
    verify: bool = True,
    chunks: Sequence[Chunk] | None = None,
) -> IndexState:
    """Read and check one segment (a bundle: manifest first, then every half).

    ``lazy_chunks`` maps the chunk store and parses a chunk when read (a large segment's, so
    that memory does not grow with its chunks; see :mod:`indexes.store.chunk_file`).
    ``verify=False`` leaves the data files' checksums unchecked and ``chunks`` are its
    chunks as already read: for a segment this process has just written (see
    :func:`read_version`).
    """
    manifest = migrate(
        read_manifest(
            directory, MANIFEST, fmt=FORMAT, version=FORMAT_VERSION, verify=verify, sealed=True
        )
    )
    try:
        settings = IndexSettings.recorded(manifest["settings"])
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexLoadError(directory / MANIFEST, f"invalid settings ({exc})") from exc
    _check_tracked(directory / MANIFEST, manifest)
    if chunks is None:
        chunks = ChunkFile(directory / CHUNKS) if lazy_chunks else read_chunks(directory / CHUNKS)
    expected = manifest.get("counts", {}).get("chunks")
    if expected != len(chunks):
        msg = f"row counts disagree: manifest says {expected}, {CHUNKS} has {len(chunks)}"
        raise IndexLoadError(directory, msg)
    bm25 = (
        BM25Index.load(directory / "bm25", mmap=mmap, verify=verify) if settings.keyword else None
    )
    if bm25 is not None and len(bm25) != len(chunks):
        msg = f"row counts disagree: {len(chunks)} chunks, {len(bm25)} BM25 rows"
        raise IndexLoadError(directory / "bm25", msg)
    vector = None
    if settings.vector:
        vector = WindowedVectorIndex.load(
            directory,
            len(chunks),
            owners_file=manifest.get("vector_owners"),
            mmap=mmap,
            dim=(manifest.get("embedder") or {}).get("dim"),
            verify=verify,
        )
    texts = None
    if manifest.get(DOCUMENT_TEXTS):
        texts = DocumentTexts.open(directory, manifest["files"], lazy=lazy_chunks)
    return IndexState(settings, chunks, bm25, vector, manifest, texts)
