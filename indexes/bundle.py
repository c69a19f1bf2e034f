"""``Index``: chunks + BM25 + vectors + manifest in one crash-safe directory.

Build once offline, open anywhere::

    index = Index.build(["docs/"], "my-index")          # parse, split, index, save
    index = Index.open("my-index")                       # verify checksums, load (mmap)
    index.update()                                       # re-parse only changed files

Each save writes a complete new version directory and then switches the ``CURRENT``
pointer with an atomic rename (see :mod:`indexes.versions`), so a crash never loses the
previous index. Nothing is pickled: chunks are JSON lines, BM25 is JSON + ``.npy``, vectors
are faiss's own format, and every file's SHA-256 is in ``manifest.json``.

Update strategy: the keyword half is rebuilt from the chunk texts (cheap) and the vector
half from the embedding cache (kept beside the versions, keyed by model and text hash), so
an updated index equals a fresh build of the same sources, while the model only embeds new
chunk texts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from ragtools.indexes._persist import load_npy, read_manifest, save_npy, write_manifest
from ragtools.indexes.bm25 import BM25Index
from ragtools.indexes.embed import Embedder, SentenceTransformerEmbedder
from ragtools.indexes.embed_cache import CachedEmbedder, EmbeddingCache
from ragtools.indexes.settings import IndexSettings, keyword_text
from ragtools.indexes.sources import expand_sources, fingerprint, parse_files
from ragtools.indexes.store import read_chunks, write_chunks
from ragtools.indexes.vector import VectorIndex
from ragtools.indexes.versions import current_version, reading, write_version
from ragtools.indexes.windows import allow_mask, best_per_owner, split_windows
from ragtools.parsers import Chunk, Document, FileError, split
from ragtools.parsers.errors import ConfigError, IndexLoadError, IndexStateError

__all__ = ["FORMAT", "FORMAT_VERSION", "Index", "UpdateReport"]

logger = logging.getLogger(__name__)

FORMAT = "ragtools-index"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
CHUNKS = "chunks.jsonl"
WINDOWS = "windows.npy"
"""Owner chunk row of every vector row, present only when some chunk has several windows."""


def _package_version() -> str:
    try:
        return version("ragtools")
    except PackageNotFoundError:
        return "0+unknown"


@dataclass(frozen=True)
class UpdateReport:
    """What :meth:`Index.update` did, by file path."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    failures: list[FileError] = field(default_factory=list)


class Index:
    """A built index: use :meth:`build`, :meth:`from_documents` or :meth:`open`.

    Attributes:
        path: the index root directory.
        settings: how it was built (reused by :meth:`update`).
        chunks: every chunk, row ``i`` of both halves being ``chunks[i]``.
        bm25: the keyword half, or ``None``.
        vector: the vector half, or ``None``.
        failures: files that could not be parsed at the last build or update.
    """

    def __init__(
        self,
        path: Path,
        settings: IndexSettings,
        *,
        embedder: Embedder | None = None,
        sources: Sequence[str] = (),
    ) -> None:
        self.path = path
        self.settings = settings
        self.sources = list(sources)
        self.chunks: list[Chunk] = []
        self.bm25: BM25Index | None = None
        self.vector: VectorIndex | None = None
        self.failures: list[FileError] = []
        self.fingerprints: dict[str, dict[str, Any]] = {}
        self.manifest: dict[str, Any] = {}
        self.meta: dict[str, Any] = {}
        self._deleted: set[int] = set()
        # Vector row -> chunk row when chunks have several windows; None: the identity.
        self._owners: np.ndarray | None = None
        self._base_embedder = embedder
        self._embedder: CachedEmbedder | None = None
        self._unique_ids: tuple[list[Chunk], int, bool] | None = None  # see chunk_ids_unique

    # ----------------------------------------------------------------- construction
    @classmethod
    def build(
        cls,
        sources: Sequence[str | Path],
        path: str | Path,
        *,
        settings: IndexSettings | None = None,
        embedder: Embedder | None = None,
        show_progress: bool | None = None,
        **overrides: Any,
    ) -> Index:
        """Parse ``sources`` (files or directories), split, index both halves and save.

        Args:
            sources: files and directories to index; directories are walked recursively.
            path: the index directory (created; an existing index gets a new version).
            settings: build settings; keyword ``overrides`` (e.g. ``chunk_size=500``) win.
            embedder: an embedder to use instead of ``settings.model`` (e.g. a fake in tests).
            show_progress: progress bars; ``None`` shows them only on a terminal.

        Raises:
            ConfigError: a source does not exist, a setting is invalid, or no text was found.
        """
        settings = _settings(settings, overrides)
        roots = [str(Path(s).expanduser().resolve()) for s in sources]
        index = cls(Path(path), settings, embedder=embedder, sources=roots)
        files = expand_sources(roots)
        started = time.perf_counter()
        by_file, failures = parse_files(files, show_progress=show_progress)
        index.failures = failures
        index.fingerprints = {str(f): fingerprint(f) for f in files}
        documents = [doc for f in files for doc in by_file.get(str(f), [])]
        index._index_chunks(index._split(documents), show_progress)
        index.save()
        logger.info(
            "built %s: %d files, %d chunks, %d failures in %.1fs",
            path,
            len(files),
            len(index.chunks),
            len(failures),
            time.perf_counter() - started,
        )
        return index

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
        **overrides: Any,
    ) -> Index:
        """Index already-parsed documents (no source files are tracked for updates).

        ``meta`` is any JSON the caller wants kept in the manifest (e.g. a corpus hash).
        """
        index = cls(Path(path), _settings(settings, overrides), embedder=embedder)
        index.meta = dict(meta or {})
        index._index_chunks(index._split(list(documents)), show_progress)
        index.save()
        return index

    @classmethod
    def open(
        cls, path: str | Path, *, mmap: bool = True, embedder: Embedder | None = None
    ) -> Index:
        """Open the live version of an index, verifying its format and every checksum.

        Args:
            path: the index directory.
            mmap: memory-map the large arrays instead of reading them.
            embedder: the embedder for queries (default: the model named in the manifest).

        Raises:
            IndexLoadError: missing, damaged or tampered file (named in the message).
            IndexVersionError: written by a newer format version.
        """
        root = Path(path)
        with reading(root):  # no version is garbage-collected while we load it
            directory = current_version(root)
            try:
                return cls._load(root, directory, mmap=mmap, embedder=embedder)
            except OSError as exc:
                raise IndexLoadError(directory, f"unreadable ({exc})") from exc

    @classmethod
    def _load(cls, root: Path, directory: Path, *, mmap: bool, embedder: Embedder | None) -> Index:
        manifest = read_manifest(
            directory, MANIFEST, fmt=FORMAT, version=FORMAT_VERSION, sealed=True
        )
        try:
            # Indexes written before title_boost and vector windows existed had neither.
            old = {"title_boost": 0, "vector_window": 0}
            settings = IndexSettings.model_validate({**old, **manifest["settings"]})
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexLoadError(directory / MANIFEST, f"invalid settings ({exc})") from exc
        index = cls(root, settings, embedder=embedder, sources=manifest.get("sources", []))
        index.manifest = manifest
        index.meta = dict(manifest.get("meta", {}))
        index.fingerprints = dict(manifest.get("fingerprints", {}))
        index.failures = [FileError(**f) for f in manifest.get("failures", [])]
        index.chunks = read_chunks(directory / CHUNKS)
        if settings.keyword:
            index.bm25 = BM25Index.load(directory / "bm25", mmap=mmap)
        if settings.vector:
            dim = (manifest.get("embedder") or {}).get("dim")
            index.vector = VectorIndex.load(directory / "vector", mmap=mmap, dim=dim)
            if WINDOWS in manifest.get("files", {}):
                index._owners = _read_owners(directory / WINDOWS, len(index.chunks))
        index._check_counts(directory)
        return index

    def _check_counts(self, directory: Path) -> None:
        expected = self.manifest.get("counts", {}).get("chunks")
        sizes = {"chunks.jsonl": len(self.chunks)}
        if self.bm25 is not None:
            sizes["bm25"] = len(self.bm25)
        if expected is None or any(size != expected for size in sizes.values()):
            msg = f"row counts disagree: manifest says {expected}, files have {sizes}"
            raise IndexLoadError(directory, msg)
        if self.vector is not None:
            windows = len(self._owners) if self._owners is not None else expected
            if len(self.vector) != windows:
                msg = f"the vector half has {len(self.vector)} rows, expected {windows}"
                raise IndexLoadError(directory / "vector", msg)

    # ----------------------------------------------------------------- building
    def _split(self, documents: Sequence[Document]) -> list[Chunk]:
        return split(
            documents,
            chunk_size=self.settings.chunk_size,
            chunk_overlap=self.settings.chunk_overlap,
        )

    @property
    def embedder(self) -> CachedEmbedder:
        """The (cached) embedder used for documents and queries; loads lazily."""
        if self._embedder is None:
            base = self._base_embedder or SentenceTransformerEmbedder(self.settings.model)
            cache = EmbeddingCache(self.path / "cache" / "embeddings")
            self._embedder = CachedEmbedder(base, cache)
        return self._embedder

    def _index_chunks(self, chunks: list[Chunk], show_progress: bool | None) -> None:
        if not chunks:
            msg = f"{self.path}: no text to index (all sources empty, unreadable or without text)"
            raise ConfigError(msg)
        self.chunks = chunks
        self._deleted = set()
        self._owners = None
        if self.settings.keyword:
            self.bm25 = self.settings.new_bm25()
            self.bm25.add(self._keyword_texts(chunks))
        if self.settings.vector:
            self.vector = VectorIndex(self.embedder.dim, kind=self.settings.vector_kind)
            self._add_vectors(chunks, first_row=0)
        del show_progress  # progress is shown by the parser and the embedder

    def _add_vectors(self, chunks: Sequence[Chunk], first_row: int) -> None:
        """Embed the chunks' windows (cached) and add them; rows from ``first_row`` on."""
        assert self.vector is not None
        windows, owners = split_windows(
            [c.text for c in chunks],
            self.settings.vector_window,
            self.settings.vector_window_overlap,
        )
        owners += first_row
        # Vector rows continue after every row ever assigned (deleted ones included).
        start = len(self._owners) if self._owners is not None else first_row
        vectors = self.embedder.embed_documents(windows)
        self.embedder.cache.save()
        self.vector.add(np.arange(start, start + len(windows), dtype=np.int64), vectors)
        if self._owners is not None or len(windows) != len(chunks):
            before = self._owners if self._owners is not None else np.arange(start)
            self._owners = np.concatenate([before, owners])

    def _keyword_texts(self, chunks: Sequence[Chunk]) -> list[str]:
        boost = self.settings.title_boost
        return [keyword_text(c.text, c.metadata, boost) for c in chunks]

    # ----------------------------------------------------------------- persistence
    def save(self) -> Path:
        """Write the index as a new version and make it live; returns its directory."""
        if self._deleted:
            live = [c for i, c in enumerate(self.chunks) if i not in self._deleted]
            self._index_chunks(live, show_progress=False)
        return write_version(self.path, self._write)

    def _write(self, directory: Path) -> None:
        write_chunks(directory / CHUNKS, self.chunks)
        files = [CHUNKS]
        if self.bm25 is not None:
            self.bm25.save(directory / "bm25")
        if self.vector is not None:
            self.vector.save(directory / "vector", model_id=self.embedder.model_id)
            if self._owners is not None:
                save_npy(directory / WINDOWS, self._owners)
                files.append(WINDOWS)
        for name in ("bm25", "vector"):
            if (directory / name).is_dir():
                files += [str(p.relative_to(directory)) for p in (directory / name).iterdir()]
        data = {
            "package_version": _package_version(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "settings": self.settings.model_dump(mode="json"),
            "tokenizer": self.bm25.params if self.bm25 is not None else None,
            "embedder": self._embedder_info(),
            "counts": {
                "chunks": len(self.chunks),
                "vectors": len(self.vector) if self.vector is not None else 0,
                "documents": len({c.doc_id for c in self.chunks}),
                "files": len(self.fingerprints),
                "failures": len(self.failures),
            },
            "sources": self.sources,
            "fingerprints": self.fingerprints,
            "failures": [vars(f) for f in self.failures],
            "meta": self.meta,
        }
        self.manifest = write_manifest(
            directory,
            MANIFEST,
            fmt=FORMAT,
            version=FORMAT_VERSION,
            files=files,
            data=data,
            sealed=True,
        )

    def _embedder_info(self) -> dict[str, Any] | None:
        if self.vector is None:
            return None
        return {
            "model": self.settings.model,
            "model_id": self.embedder.model_id,
            "dim": self.embedder.dim,
            "kind": self.settings.vector_kind,
        }

    # ----------------------------------------------------------------- changes
    def update(
        self, sources: Sequence[str | Path] | None = None, *, show_progress: bool | None = None
    ) -> UpdateReport:
        """Bring the index up to date with its sources and save a new version.

        Only files whose size or SHA-256 changed are parsed again; chunks of removed files
        are dropped; only chunk texts not in the embedding cache are embedded. The result
        equals a fresh :meth:`build` of the same sources.
        """
        roots = [str(Path(s).expanduser().resolve()) for s in sources] if sources else self.sources
        if not roots:
            msg = "this index tracks no source files (built from documents); pass sources"
            raise ConfigError(msg)
        files = expand_sources(roots)
        prints = {str(f): fingerprint(f) for f in files}
        old = self.fingerprints
        stale = [f for f in files if old.get(str(f)) != prints[str(f)]]
        parsed, failures = parse_files(stale, show_progress=show_progress)
        stale_paths = {str(f) for f in stale}
        by_source: dict[str, list[Chunk]] = {}
        for row, chunk in enumerate(self.chunks):
            if row not in self._deleted:
                by_source.setdefault(chunk.source, []).append(chunk)
        chunks: list[Chunk] = []
        for path in map(str, files):
            if path in stale_paths:
                chunks += self._split(parsed.get(path, []))
            else:
                chunks += by_source.get(path, [])
        report = UpdateReport(
            added=[p for p in map(str, files) if p not in old],
            changed=[p for p in map(str, files) if p in old and p in stale_paths],
            removed=sorted(set(old) - set(prints)),
            unchanged=len(files) - len(stale),
            failures=failures,
        )
        self.sources, self.fingerprints = roots, prints
        kept = [f for f in self.failures if f.path in prints and f.path not in stale_paths]
        self.failures = sorted(kept + failures, key=lambda f: f.path)
        self._index_chunks(chunks, show_progress)
        self.save()
        return report

    def add(self, chunks: Sequence[Chunk]) -> np.ndarray:
        """Append chunks to both halves in memory; call :meth:`save` to persist."""
        chunks = list(chunks)
        start = len(self.chunks)
        rows = np.arange(start, start + len(chunks), dtype=np.int64)
        if not chunks:
            return rows
        if self.bm25 is not None:
            self.bm25.add(self._keyword_texts(chunks))
        if self.vector is not None:
            self._add_vectors(chunks, first_row=start)
        self.chunks.extend(chunks)
        return rows

    def delete(self, doc_ids: Iterable[str]) -> int:
        """Remove every chunk of the given documents in memory; returns how many rows."""
        wanted = set(doc_ids)
        rows = [
            i for i, c in enumerate(self.chunks) if c.doc_id in wanted and i not in self._deleted
        ]
        if rows:
            array = np.asarray(rows, dtype=np.int64)
            if self.bm25 is not None:
                self.bm25.delete(array)
            if self.vector is not None:
                owned = self._owners
                windows = array if owned is None else np.flatnonzero(np.isin(owned, array))
                self.vector.delete(windows)
            self._deleted.update(rows)
        return len(rows)

    # ----------------------------------------------------------------- search
    def __len__(self) -> int:
        return len(self.chunks) - len(self._deleted)

    def chunk_ids_unique(self) -> bool:
        """Whether no two rows hold chunks with the same id, so rows can stand for chunks.

        Computed once per chunk list (again when the list is replaced or grows): a hybrid
        query asks on every call.
        """
        cached = self._unique_ids
        if cached is None or cached[0] is not self.chunks or cached[1] != len(self.chunks):
            unique = len({chunk.id for chunk in self.chunks}) == len(self.chunks)
            cached = self._unique_ids = (self.chunks, len(self.chunks), unique)
        return cached[2]

    def keyword_search(
        self, query: str, k: int, allow: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """BM25 top ``k`` as ``(row, score)`` pairs, best first."""
        return _pairs(self.keyword_rows(query, k, allow))

    def keyword_rows(
        self, query: str, k: int, allow: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`keyword_search` as ``(rows, scores)`` arrays (no Python pair per row)."""
        if self.bm25 is None:
            msg = f"{self.path}: this index was built without the keyword half"
            raise IndexStateError(msg)
        return self.bm25.search(query, k=k, allow=allow)

    def vector_search(
        self, query: str | np.ndarray, k: int, allow: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """Cosine top ``k`` as ``(row, score)`` pairs, best first."""
        return _pairs(self.vector_rows(query, k, allow))

    def vector_rows(
        self, query: str | np.ndarray, k: int, allow: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`vector_search` as ``(rows, scores)`` arrays (no Python pair per row)."""
        if self.vector is None:
            msg = f"{self.path}: this index was built without the vector half (--no-vector)"
            raise IndexStateError(msg)
        vector = self.embedder.embed_query(query) if isinstance(query, str) else query
        owners = self._owners
        if owners is None:
            return self.vector.search(vector, k=k, allow=allow)
        # A chunk scores its best window: rank windows, keep each chunk's first, and fetch
        # deeper until k chunks are found or every allowed window has been seen.
        window_allow = None if allow is None else allow_mask(allow, len(self.chunks))[owners]
        available = len(self.vector) if window_allow is None else int(window_allow.sum())
        fetch = min(available, -(-k * len(owners) // max(len(self.chunks), 1)) + 16)
        while True:
            rows, scores = self.vector.search(vector, k=max(fetch, 1), allow=window_allow)
            best = best_per_owner(rows, owners, k)
            if len(best) >= k or fetch >= available:
                break
            fetch = min(available, 2 * fetch)
        return owners[rows[best]], scores[best]

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
        summary["failures"] = [vars(f) for f in self.failures]
        return summary


def _pairs(run: tuple[np.ndarray, np.ndarray]) -> list[tuple[int, float]]:
    rows, scores = run
    return list(zip(rows.tolist(), scores.tolist(), strict=True))


def _settings(settings: IndexSettings | None, overrides: dict[str, Any]) -> IndexSettings:
    base = settings.model_dump() if settings is not None else {}
    try:
        return IndexSettings.model_validate({**base, **overrides})
    except ValueError as exc:
        msg = f"invalid index settings: {exc}"
        raise ConfigError(msg) from exc


def _read_owners(path: Path, n_chunks: int) -> np.ndarray:
    """The vector-row owner map, checked: int64, non-decreasing chunk rows in range."""
    owners = load_npy(path)
    ok = (
        owners.ndim == 1
        and owners.dtype == np.int64
        and (len(owners) == 0 or (owners[0] >= 0 and owners[-1] < n_chunks))
        and bool(np.all(np.diff(owners) >= 0))
    )
    if not ok:
        msg = f"invalid window owners (shape {owners.shape}, dtype {owners.dtype})"
        raise IndexLoadError(path, msg)
    return owners
