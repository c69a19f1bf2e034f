"""``Index``: a built index, read-only: chunks + BM25 + vectors + manifest of one version.

Build once offline, open anywhere::

    index = Index.build(["docs/"], "my-index")          # parse, split, index, save
    index = Index.open("my-index")                       # verify checksums, load (mmap)
    index.update()                                       # re-parse only changed files

``Index`` only reads. Every change (build, update, add, delete) goes through
:class:`~indexes.writer.IndexWriter`, which writes a complete new version directory, switches
the ``CURRENT`` pointer atomically (:mod:`indexes.versions`) and then hands the new
:class:`IndexState` to the ``Index`` objects it was given. A state is immutable, so a search
that took one state sees one version's chunks and rankings from start to end, whatever a
writer does meanwhile. Nothing is pickled: chunks are JSON lines, BM25 is JSON + ``.npy``,
vectors are faiss's own format, and every file's SHA-256 is in ``manifest.json``
(:mod:`indexes.manifest` holds its schema and migrations).
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ragtools.indexes._chunk_file import ChunkFile
from ragtools.indexes._persist import read_manifest
from ragtools.indexes.bm25 import BM25Index
from ragtools.indexes.doc_texts import DocumentTexts
from ragtools.indexes.embed import Embedder, SentenceTransformerEmbedder
from ragtools.indexes.embed_cache import CachedEmbedder, EmbeddingCache
from ragtools.indexes.manifest import DOCUMENT_TEXTS, FORMAT, FORMAT_VERSION, migrate
from ragtools.indexes.ranking import Ranking, allow_mask
from ragtools.indexes.settings import IndexSettings
from ragtools.indexes.store import read_chunks
from ragtools.indexes.versions import VersionPin, current_version, pin_version, reading
from ragtools.indexes.windows import WindowedVectorIndex
from ragtools.parsers import Chunk, FileError, Selection
from ragtools.parsers.errors import IndexLoadError, IndexStateError

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

    @cached_property
    def chunk_keys(self) -> npt.NDArray[np.int64]:
        """A 64-bit key per row derived from its chunk id (BLAKE2b), so that rankings of
        different indexes can be fused by chunk id with integer arrays."""
        return chunk_keys_of(self.chunks)

    def keyword_ranking(self, query: str, k: int, allow: object = None) -> Ranking:
        """BM25 top ``k`` chunk rows allowed by ``allow`` (see :func:`allow_mask`)."""
        if self.bm25 is None:
            msg = "this index was built without the keyword half"
            raise IndexStateError(msg)
        return self.bm25.search(query, k=k, allow=allow_mask(allow, len(self.chunks)))

    def vector_ranking(self, query: npt.ArrayLike, k: int, allow: object = None) -> Ranking:
        """Cosine top ``k`` chunk rows for an embedded query (a chunk scores its best window),
        allowed by ``allow`` (the same meaning as for the keyword half)."""
        if self.vector is None:
            msg = "this index was built without the vector half (--no-vector)"
            raise IndexStateError(msg)
        return self.vector.search(query, k, allow_mask(allow, len(self.chunks)))


class Index:
    """A built index: use :meth:`build`, :meth:`from_documents` or :meth:`open`.

    An index opened with :meth:`open` pins its version (:mod:`indexes.versions`): garbage
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
        names, loaded on first use); writers of new versions and shards reuse it."""
        return self._base_embedder

    def close(self) -> None:
        """Release this index's pin on its version (searches still work on POSIX, whose
        mapped files outlive their deletion; reopen to be safe). Idempotent."""
        self.hold_pin(None)

    def hold_pin(self, pin: VersionPin | None) -> None:
        """Pin ``pin``'s version for as long as this object lives; release the previous.

        The one way a version pin (:func:`~indexes.versions.pin_version`) is handed to an
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
        """Parse, split and index ``sources``; see :meth:`IndexWriter.build` (with
        ``shards=N``: :func:`~indexes.shard_writer.build_sharded`)."""
        from ragtools.indexes.writer import IndexWriter

        shards = options.pop("shards", None)
        if shards is not None:
            from ragtools.indexes.shard_writer import build_sharded

            return build_sharded(sources, path, shards=shards, **options)

        return IndexWriter.build(sources, path, **options)

    @classmethod
    def from_documents(cls, documents: Any, path: str | Path, **options: Any) -> Index:
        """Index already-parsed documents; see :meth:`IndexWriter.from_documents` (with
        ``shards=N``: :func:`~indexes.shard_writer.documents_sharded`)."""
        from ragtools.indexes.writer import IndexWriter

        shards = options.pop("shards", None)
        if shards is not None:
            from ragtools.indexes.shard_writer import documents_sharded

            return documents_sharded(documents, path, shards=shards, **options)

        return IndexWriter.from_documents(documents, path, **options)

    def update(
        self, sources: Sequence[str | Path] | None = None, **options: Unpack[UpdateOptions]
    ) -> UpdateReport:
        """Bring the index up to date with its sources; see :meth:`IndexWriter.update`."""
        from ragtools.indexes.writer import IndexWriter

        return IndexWriter(self).update(sources, **options)

    @classmethod
    def open(
        cls, path: str | Path, *, mmap: bool = True, embedder: Embedder | None = None
    ) -> Index:
        """Open the live version of an index, verifying its format and every checksum; a
        sharded index opens as a :class:`~indexes.shards.ShardedIndex`.

        Args:
            path: the index directory.
            mmap: memory-map the large arrays instead of reading them.
            embedder: the embedder for queries (default: the model named in the manifest).

        Raises:
            IndexLoadError: missing, damaged or tampered file (named in the message).
            IndexVersionError: written by a newer format version.
        """
        root = Path(path)
        with reading(root):  # no version is garbage-collected while we read CURRENT and pin it
            directory = current_version(root)
            pin = pin_version(root, directory.name)
            try:
                index = open_version(root, directory, mmap=mmap, embedder=embedder)
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

    def info(self) -> dict[str, Any]:
        """A JSON summary for ``rag info``: version, counts, settings, model, failures.

        ``bm25`` is the keyword half's parameters in effect (variant, k1, b, k3, tokenizer):
        empty ``settings.bm25`` means the defaults of the version that built the index.
        """
        keys = ("format", "format_version", "package_version", "created", "counts", "settings")
        summary = {key: self.manifest.get(key) for key in keys}
        summary["path"] = str(self.path)
        summary["bm25"] = self.bm25.params if self.bm25 is not None else None
        summary["embedder"] = self.manifest.get("embedder")
        summary["sources"] = self.sources
        summary["failures"] = self.manifest.get("failures", [])
        summary["skipped"] = self.manifest.get("skipped", [])
        summary["selection"] = self.selection.to_json()
        return summary


def open_version(
    root: Path, directory: Path, *, mmap: bool = True, embedder: Embedder | None = None
) -> Index:
    """An index of one version directory of ``root``, checked in full, without a pin: what
    :meth:`Index.open` reads, and what a rollback checks before making a version live.

    Raises:
        IndexLoadError: a missing, damaged or tampered file (named in the message).
    """
    if (directory / "shards.json").is_file():
        from ragtools.indexes.shards import ShardedIndex, read_sharded

        state, shards = read_sharded(root, directory, mmap=mmap)
        return ShardedIndex(root, state, shards, version_dir=directory, embedder=embedder)
    try:
        state = load_state(directory, mmap=mmap)
    except OSError as exc:
        raise IndexLoadError(directory, f"unreadable ({exc})") from exc
    return Index(root, state, embedder=embedder, version_dir=directory)


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
    directory: Path, *, mmap: bool, lazy_chunks: bool = False, keyword: bool = True
) -> IndexState:
    """Read and check one version directory (manifest first, then every half).

    ``lazy_chunks`` maps the chunk store and parses a chunk when read (a shard's, so that a
    sharded index's memory does not grow with its chunks; see :mod:`indexes._chunk_file`).
    ``keyword=False`` leaves the BM25 half unread (a shard's: the top version holds it scored
    with the global statistics); its files' checksums are still verified.
    """
    manifest = migrate(
        read_manifest(directory, MANIFEST, fmt=FORMAT, version=FORMAT_VERSION, sealed=True)
    )
    try:
        settings = IndexSettings.model_validate(manifest["settings"])
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexLoadError(directory / MANIFEST, f"invalid settings ({exc})") from exc
    _check_tracked(directory / MANIFEST, manifest)
    chunks = ChunkFile(directory / CHUNKS) if lazy_chunks else read_chunks(directory / CHUNKS)
    expected = manifest.get("counts", {}).get("chunks")
    if expected != len(chunks):
        msg = f"row counts disagree: manifest says {expected}, {CHUNKS} has {len(chunks)}"
        raise IndexLoadError(directory, msg)
    bm25 = BM25Index.load(directory / "bm25", mmap=mmap) if settings.keyword and keyword else None
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
        )
    texts = None
    if manifest.get(DOCUMENT_TEXTS):
        texts = DocumentTexts.open(directory, manifest["files"], lazy=lazy_chunks)
    return IndexState(settings, chunks, bm25, vector, manifest, texts)
