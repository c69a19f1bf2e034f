"""An on-disk embedding cache, so that a rebuild embeds only the texts that changed.

Entries are keyed by ``(model_id, SHA-256 of the UTF-8 text)``. Each model gets its own
sub-directory (named by a hash of the model id) holding:

- ``vectors-<gen>.npy``: float32 ``(n, dim)``, rows in the order of the hashes;
- ``hashes-<gen>.npy``: the raw 32-byte digests as a sorted ``|S32`` array, so a lookup is a
  vectorised binary search (no per-entry Python objects kept in memory);
- ``shelf.json``: model id, dim, the current generation's file names and their SHA-256.

A save writes new generation files, fsyncs them, then atomically replaces ``shelf.json``
(temporary file + ``os.replace``): the JSON is the commit point, so a crash mid-save leaves
the previous generation readable. No pickle: ``np.save(allow_pickle=False)`` and JSON only.

A cache is disposable: a shelf that is missing, unreadable, or fails its checksum is logged
as a WARNING and treated as empty (its texts are simply embedded again). Use one writer at
a time per directory: concurrent saves can make one of them lose its work (detected by the
checksums and re-embedded), never serve wrong vectors. Entries are never evicted; delete
the directory, or call :meth:`EmbeddingCache.clear` then ``save``, to reclaim space.
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtools.indexes.dense.embed import Embedder
from ragtools.indexes.errors import DimensionMismatchError, IndexLoadError
from ragtools.indexes.store.persist import (
    fsync_dir,
    load_npy,
    read_json,
    save_npy,
    sha256_file,
    write_json,
)
from ragtools.parsers.errors import ConfigError

__all__ = ["CachedEmbedder", "EmbeddingCache", "text_key"]

logger = logging.getLogger(__name__)

_FORMAT = "embedding-cache"
_VERSION = 1
_SHELF = "shelf.json"
_KEY = np.dtype("S32")


def text_key(text: str) -> bytes:
    """The 32-byte SHA-256 digest of ``text`` (UTF-8; lone surrogates kept) used as cache key."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


@dataclass
class _Shelf:
    """All cached vectors of one model: sorted keys and the matching rows."""

    dim: int
    keys: npt.NDArray[np.bytes_]
    vectors: npt.NDArray[np.float32]
    dirty: bool = False

    def find(self, keys: npt.NDArray[np.bytes_]) -> tuple[npt.NDArray[np.bool_], npt.NDArray[Any]]:
        if len(self.keys) == 0:
            return np.zeros(len(keys), dtype=bool), np.zeros(len(keys), dtype=np.int64)
        pos = np.searchsorted(self.keys, keys)
        pos = np.minimum(pos, len(self.keys) - 1)
        return self.keys[pos] == keys, pos


class EmbeddingCache:
    """Vectors keyed by ``(model_id, sha256(text))``, in memory and optionally on disk.

    Example:
        >>> cache = EmbeddingCache("eval/cache/embeddings")
        >>> emb = CachedEmbedder(FakeEmbedder(), cache)
        >>> _ = emb.embed_documents(["a", "b"])
        >>> cache.save()
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        """Open (or prepare) a cache.

        Args:
            directory: where to persist; created on :meth:`save`. ``None`` keeps the cache
                in memory only (``save`` is then a no-op).
        """
        self._dir = Path(directory) if directory is not None else None
        self._shelves: dict[str, _Shelf | None] = {}

    @property
    def directory(self) -> Path | None:
        """The persistence directory, or ``None`` for a memory-only cache."""
        return self._dir

    @staticmethod
    def _shelf_dir(root: Path, model_id: str) -> Path:
        return root / hashlib.sha256(model_id.encode("utf-8")).hexdigest()[:24]

    def _shelf(self, model_id: str) -> _Shelf | None:
        if model_id not in self._shelves:
            self._shelves[model_id] = self._read_shelf(self._dir, model_id) if self._dir else None
        return self._shelves[model_id]

    def _read_shelf(self, root: Path, model_id: str) -> _Shelf | None:
        sdir = self._shelf_dir(root, model_id)
        if not (sdir / _SHELF).is_file():
            return None
        try:
            meta = read_json(sdir / _SHELF)
            if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
                raise IndexLoadError(sdir / _SHELF, f"not a {_FORMAT!r} file")
            if meta.get("format_version") != _VERSION or meta.get("model_id") != model_id:
                raise IndexLoadError(sdir / _SHELF, "other format version or model id")
            arrays = []
            for field in ("keys", "vectors"):
                path = sdir / str(meta[field])
                if not path.is_file() or sha256_file(path) != meta["sha256"][field]:
                    raise IndexLoadError(path, "missing or fails its checksum")
                arrays.append(load_npy(path))
            keys, vectors = arrays
            dim = int(meta["dim"])
            if (
                keys.dtype != _KEY
                or keys.ndim != 1
                or vectors.dtype != np.float32
                or vectors.shape != (len(keys), dim)
            ):
                raise IndexLoadError(sdir, "arrays have unexpected shapes or dtypes")
        except (IndexLoadError, KeyError, TypeError, ValueError) as exc:
            logger.warning("ignoring unreadable embedding cache %s (%s); will re-embed", sdir, exc)
            return None
        logger.info("embedding cache: %d vectors for %s from %s", len(keys), model_id, sdir)
        return _Shelf(dim=dim, keys=keys, vectors=vectors)

    def __len__(self) -> int:
        """Number of vectors held in memory, over every model loaded so far."""
        return sum(len(s.keys) for s in self._shelves.values() if s is not None)

    def count(self, model_id: str) -> int:
        """Number of cached vectors for ``model_id`` (reads its shelf from disk if needed)."""
        shelf = self._shelf(model_id)
        return 0 if shelf is None else len(shelf.keys)

    def dim(self, model_id: str) -> int | None:
        """Dimension of the cached vectors of ``model_id``, or ``None`` when none are cached."""
        shelf = self._shelf(model_id)
        return None if shelf is None else shelf.dim

    def get(
        self, model_id: str, keys: Sequence[bytes]
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float32]]:
        """Look keys up.

        Args:
            model_id: the model (or ``cache_id``) the vectors belong to.
            keys: digests from :func:`text_key`.

        Returns:
            ``(found, vectors)``: a boolean mask over ``keys``, and the vectors of the found
            keys in the order they appear in ``keys`` (shape ``(found.sum(), dim)``).
        """
        arr = np.asarray(keys, dtype=_KEY)
        shelf = self._shelf(model_id)
        if shelf is None:
            return np.zeros(len(arr), dtype=bool), np.zeros((0, 0), dtype=np.float32)
        found, pos = shelf.find(arr)
        return found, np.ascontiguousarray(shelf.vectors[pos[found]])

    def put(self, model_id: str, keys: Sequence[bytes], vectors: npt.ArrayLike) -> None:
        """Store vectors (rows aligned with ``keys``); existing keys keep their vector.

        Raises:
            ConfigError: ``keys`` and ``vectors`` disagree in length, or the vectors are
                not finite.
            DimensionMismatchError: the vectors' dim differs from what is cached already.
        """
        arr = np.asarray(keys, dtype=_KEY)
        vecs = np.asarray(vectors, dtype=np.float32)
        if vecs.ndim != 2 or len(vecs) != len(arr):
            msg = f"need one vector per key: {len(arr)} keys, vectors of shape {vecs.shape}"
            raise ConfigError(msg)
        if not np.isfinite(vecs).all():
            msg = f"refusing to cache non-finite vectors for model {model_id!r}"
            raise ConfigError(msg)
        if len(arr) == 0:
            return
        shelf = self._shelf(model_id)
        if shelf is None:
            shelf = _Shelf(
                dim=vecs.shape[1],
                keys=np.zeros(0, dtype=_KEY),
                vectors=np.zeros((0, vecs.shape[1]), dtype=np.float32),
            )
            self._shelves[model_id] = shelf
        if vecs.shape[1] != shelf.dim:
            msg = (
                f"model {model_id!r} gave {vecs.shape[1]}-dim vectors but the cache holds "
                f"{shelf.dim}-dim ones; clear the cache or use another model_id"
            )
            raise DimensionMismatchError(msg)
        arr, first = np.unique(arr, return_index=True)
        vecs = vecs[first]
        found, _ = shelf.find(arr)
        if found.all():
            return
        keys_all = np.concatenate([shelf.keys, arr[~found]])
        order = np.argsort(keys_all, kind="stable")
        shelf.keys = keys_all[order]
        shelf.vectors = np.concatenate([shelf.vectors, vecs[~found]])[order]
        shelf.dirty = True

    def clear(self, model_id: str | None = None) -> None:
        """Forget the vectors of one model (or all) in memory; the next save persists that."""
        for mid in [model_id] if model_id is not None else list(self._shelves):
            shelf = self._shelf(mid)
            if shelf is not None:
                shelf.keys = np.zeros(0, dtype=_KEY)
                shelf.vectors = np.zeros((0, shelf.dim), dtype=np.float32)
                shelf.dirty = True

    def save(self) -> None:
        """Flush changed shelves to disk atomically (no-op for a memory-only cache)."""
        if self._dir is None:
            return
        for model_id, shelf in self._shelves.items():
            if shelf is not None and shelf.dirty:
                self._write_shelf(self._shelf_dir(self._dir, model_id), model_id, shelf)
                shelf.dirty = False

    @staticmethod
    def _write_shelf(sdir: Path, model_id: str, shelf: _Shelf) -> None:
        sdir.mkdir(parents=True, exist_ok=True)
        gen = uuid.uuid4().hex[:16]
        names = {"keys": f"hashes-{gen}.npy", "vectors": f"vectors-{gen}.npy"}
        save_npy(sdir / names["keys"], shelf.keys)
        save_npy(sdir / names["vectors"], shelf.vectors)
        meta = {
            "format": _FORMAT,
            "format_version": _VERSION,
            "model_id": model_id,
            "dim": shelf.dim,
            "count": len(shelf.keys),
            **names,
            "sha256": {field: sha256_file(sdir / name) for field, name in names.items()},
        }
        tmp = sdir / f".{_SHELF}.{gen}.tmp"
        write_json(tmp, meta)
        os.replace(tmp, sdir / _SHELF)
        fsync_dir(sdir)
        for old in sdir.glob("*.npy"):
            if old.name not in names.values():
                old.unlink(missing_ok=True)
        logger.info("embedding cache: saved %d vectors for %s", len(shelf.keys), model_id)


class CachedEmbedder:
    """Wraps an :class:`~indexes.dense.embed.Embedder`; only uncached texts reach the model.

    Identical texts within one call are embedded once. Queries are passed through uncached
    (they may use a query prompt, and are rarely repeated). The cache key namespace is the
    wrapped embedder's ``cache_id`` when it has one, else its ``model_id``.
    """

    def __init__(self, embedder: Embedder, cache: EmbeddingCache | None = None) -> None:
        """Wrap ``embedder``; ``cache=None`` uses a fresh in-memory cache."""
        self.embedder = embedder
        self.cache = cache if cache is not None else EmbeddingCache()
        self.hits = 0
        """Texts served from the cache so far (after de-duplication)."""
        self.misses = 0
        """Texts sent to the wrapped embedder so far."""

    @property
    def model_id(self) -> str:
        """The wrapped embedder's ``model_id``."""
        return self.embedder.model_id

    @property
    def cache_id(self) -> str:
        """Namespace of this embedder's entries in the cache."""
        value = getattr(self.embedder, "cache_id", None)
        return value if isinstance(value, str) and value else self.embedder.model_id

    @property
    def dim(self) -> int:
        """Vector dimension; from the cache when it has vectors, so the model need not load."""
        return self.cache.dim(self.cache_id) or self.embedder.dim

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts, calling the wrapped embedder only for texts not cached yet.

        Returns:
            float32 array of shape ``(len(texts), dim)``, identical to what the wrapped
            embedder returned when each text was first embedded.

        Raises:
            ConfigError: ``texts`` is a single string or holds non-strings.
            DimensionMismatchError: the wrapped embedder returned a wrong shape.
        """
        if isinstance(texts, str):
            msg = "embed_documents takes a sequence of texts, got a single str; wrap it in a list"
            raise ConfigError(msg)
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                msg = f"texts[{i}] must be a str, got {type(text).__name__}"
                raise ConfigError(msg)
        keys = np.array([text_key(t) for t in texts], dtype=_KEY)
        unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        cid = self.cache_id
        found, _ = self.cache.get(cid, list(unique))
        missing = np.flatnonzero(~found)
        self.hits += len(unique) - len(missing)
        self.misses += len(missing)
        if len(missing):
            todo = [texts[int(first[m])] for m in missing]
            logger.debug("embedding %d of %d unique texts (rest cached)", len(todo), len(unique))
            fresh = np.asarray(self.embedder.embed_documents(todo), dtype=np.float32)
            if fresh.ndim != 2 or fresh.shape[0] != len(todo):
                msg = (
                    f"embedder {self.model_id!r} returned shape {fresh.shape} for {len(todo)} texts"
                )
                raise DimensionMismatchError(msg)
            self.cache.put(cid, list(unique[missing]), fresh)
        found, vectors = self.cache.get(cid, list(unique))
        return np.ascontiguousarray(vectors[inverse.reshape(-1)])

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """Embed a query with the wrapped embedder (not cached)."""
        return self.embedder.embed_query(text)

    def save(self) -> None:
        """Flush the cache to disk (same as ``cache.save()``)."""
        self.cache.save()
