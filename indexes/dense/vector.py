"""A faiss vector index: cosine search, external row ids, delete, exact-k pre-filtering.

Choices:

- Metric: inner product over L2-normalised vectors, so scores are cosines in [-1, 1]
  (higher is better). Vectors are normalised on ``add`` and queries on ``search``; a zero
  vector stays zero and scores 0 against everything.
- Kinds: ``flat`` (exact, ``IndexFlatIP``; the default and the right choice up to a few
  hundred thousand vectors), ``hnsw`` (``IndexHNSWFlat``) and ``ivf`` (``IndexIVFFlat``).
- Row ids: callers add vectors under their own non-negative int64 ``rows`` (chunk-store
  positions); :class:`~indexes.dense._vector_labels.LabelRows` maps faiss's internal labels to them
  (saved as ``rows.npy``), in place of ``IndexIDMap2``, which cannot serve all three kinds.

  * ``flat``: delete really removes (faiss compacts, label == position stays true).
  * ``hnsw``: faiss cannot remove from the graph, so a deleted label becomes a tombstone
    (``rows[label] == -1``) that every search excludes with an ID selector. Tombstones
    still cost traversal time; :meth:`VectorIndex.compact` rebuilds the graph without them.
  * ``ivf``: labels are given with ``add_with_ids`` and deleted with ``remove_ids``.

- Filters are PRE-filters: the allowed rows become a bitmap over labels
  (``faiss.IDSelectorBitmap``) passed in ``SearchParameters`` / ``SearchParametersHNSW`` /
  ``SearchParametersIVF``, so faiss only ever returns allowed rows. Flat search is then
  exact; when an approximate kind returns fewer than ``min(k, allowed)`` hits (HNSW under a
  selective filter), that query is redone exactly over the allowed rows, so k results come
  back whenever k allowed rows exist. faiss's ``-1`` padding never leaves this module.
- Flat search, and the exact fallback of the approximate kinds, is one plain numpy path: a
  matrix product of the queries with faiss's stored vectors (a zero-copy view; the allowed
  rows gathered first under a filter), then :meth:`Ranking.top`. numpy's multi-threaded BLAS
  beats faiss's single-threaded flat scan on a few cores, and results are exact either way.
  The approximate kinds search with faiss and ID selectors.
- IVF needs training. An ``ivf`` index holds its vectors in an exact flat index until it
  has ``39 * nlist`` of them (faiss's minimum of 39 training points per centroid; 10,000
  when ``nlist`` is automatic, below which exact search is as fast anyway), then trains
  on everything it holds and switches; ``nlist`` defaults to ``4 * sqrt(n)``. Centroids are
  not retrained later: rebuild after the corpus has changed a lot.
- What differs between the kinds lives in :class:`~indexes.dense._faiss_store.FaissStore`.
- Persistence: ``index.faiss`` (faiss's own ``write_index``), ``rows.npy`` and the manifest
  ``vector.json`` with SHA-256 checksums, verified before faiss reads a byte
  (:mod:`indexes.dense._vector_io`). A memory-mapped index is copied into memory on its first
  ``add``/``delete``, because faiss aborts the process when a mapped array is resized.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtools.indexes.dense import _vector_io as io
from ragtools.indexes.dense._faiss_store import FaissStore, VectorKind, unit_rows
from ragtools.indexes.dense._vector_labels import LabelRows, parse_rows
from ragtools.indexes.errors import DimensionMismatchError, IndexLoadError
from ragtools.indexes.ranking import Mask, Ranking, Rows, allow_mask, check_k
from ragtools.parsers.errors import ConfigError

__all__ = ["MANIFEST", "VectorIndex", "VectorKind"]

logger = logging.getLogger(__name__)

MANIFEST = io.MANIFEST
"""Name of the manifest written by :meth:`VectorIndex.save`."""

Allow = npt.ArrayLike | None


class VectorIndex:
    """Cosine-similarity index over faiss with row ids, delete and exact-k filters.

    Example:
        >>> index = VectorIndex(3)
        >>> index.add([10, 11], [[1, 0, 0], [0, 1, 0]])
        >>> index.search([1, 0.1, 0], k=5).rows.tolist()
        [10, 11]
    """

    def __init__(
        self,
        dim: int,
        kind: VectorKind = "flat",
        *,
        hnsw_m: int = 32,
        ef_search: int = 64,
        ef_construction: int = 40,
        nlist: int | None = None,
        nprobe: int | None = None,
    ) -> None:
        """Create an empty index (faiss is imported here, not at module import).

        Args:
            dim: vector dimension.
            kind: ``"flat"`` (exact), ``"hnsw"`` or ``"ivf"`` (approximate).
            hnsw_m: HNSW graph degree (faiss ``M``).
            ef_search: HNSW candidate list size at search time (raised to k when smaller);
                64 gives recall@10 ≈ 0.98 on 20k random 32-d vectors.
            ef_construction: HNSW candidate list size while building (faiss default 40).
            nlist: number of IVF lists; ``None`` picks ``4 * sqrt(n)`` at training time.
            nprobe: IVF lists visited per query; ``None`` picks ``max(16, nlist // 8)``
                (recall@10 ≈ 0.95 against flat on SciFact with MiniLM and nlist=64).

        Raises:
            ConfigError: a bad kind or parameter.
            MissingDependencyError: faiss is not installed.
        """
        self._store = FaissStore(
            dim,
            kind,
            hnsw_m=hnsw_m,
            ef_search=ef_search,
            ef_construction=ef_construction,
            nlist=nlist,
            nprobe=nprobe,
        )
        self.dim = dim
        self.kind: VectorKind = kind
        self._labels = LabelRows()
        self._live_bitmap: npt.NDArray[np.uint8] | None = None  # HNSW/IVF, with tombstones
        self._lock = threading.RLock()
        self.model_id: str | None = None
        """Embedding model id recorded by :meth:`save` or read by :meth:`load`."""

    @property
    def params(self) -> dict[str, Any]:
        """Settings as a JSON-ready dict (saved in the manifest; used to rebuild)."""
        return self._store.params(io.METRIC)

    @property
    def trained(self) -> bool:
        """False only for an ``ivf`` index still searching exactly before training."""
        return self.kind != "ivf" or self._store.is_ivf

    @property
    def nlist(self) -> int | None:
        """IVF lists: as given, or chosen at training time (``None`` before it)."""
        return self._store.nlist

    @property
    def ntotal(self) -> int:
        """Number of live (not deleted) vectors."""
        return self._labels.n_live

    def __len__(self) -> int:
        return self.ntotal

    def __contains__(self, row: object) -> bool:
        return row in self._labels

    def __repr__(self) -> str:
        return f"VectorIndex(dim={self.dim}, kind={self.kind!r}, ntotal={self.ntotal})"

    @property
    def rows(self) -> Rows:
        """The live rows, ascending (a copy)."""
        return self._labels.sorted_rows.copy()

    @property
    def n_rows(self) -> int:
        """The size of the row space: 1 + the largest row ever added (0 when empty)."""
        return self._labels.bound

    # ----------------------------------------------------------------- mutation
    def add(self, rows: npt.ArrayLike, vectors: npt.ArrayLike) -> None:
        """Add vectors under the given rows.

        Args:
            rows: one distinct non-negative integer id per vector, not in the index yet.
            vectors: array-like of shape ``(n, dim)``; normalised before storing.

        Raises:
            ConfigError: rows and vectors differ in length, rows repeat or exist already,
                are negative, or a vector is not finite.
            DimensionMismatchError: vectors of another dimension.
        """
        row_arr = parse_rows(rows)
        x = unit_rows(vectors, self.dim, "added")
        if len(row_arr) != len(x):
            msg = f"got {len(row_arr)} rows for {len(x)} vectors; pass one row id per vector"
            raise ConfigError(msg)
        if len(row_arr) == 0:
            return
        ordered = np.sort(row_arr)
        repeats = ordered[1:][np.diff(ordered) == 0]
        if len(repeats):
            msg = f"rows must be distinct; row {int(repeats[0])} appears more than once"
            raise ConfigError(msg)
        with self._lock:
            _, present = self._labels.labels_of(row_arr)
            if present.any():
                msg = (
                    f"row {int(row_arr[present][0])} is already in the index; "
                    "delete it first to replace its vector"
                )
                raise ConfigError(msg)
            self._store.add(x, self._labels.append(row_arr), self.ntotal)
            self._live_bitmap = None
        logger.debug("vector index: added %d vectors (ntotal=%d)", len(x), self.ntotal)

    def delete(self, rows: npt.ArrayLike) -> int:
        """Delete rows; rows not in the index are ignored.

        Returns:
            The number of rows actually deleted.

        Raises:
            ConfigError: rows are not non-negative integers.
        """
        row_arr = np.unique(parse_rows(rows))
        with self._lock:
            labels, _ = self._labels.labels_of(row_arr)
            if len(labels) == 0:
                return 0
            if self._store.remove(labels):
                self._labels.remove(labels)  # flat storage compacted: label == position
            else:
                self._labels.tombstone(labels)  # see module docstring
            self._live_bitmap = None
        logger.debug("vector index: deleted %d rows (ntotal=%d)", len(labels), self.ntotal)
        return len(labels)

    def compact(self) -> None:
        """Rebuild an HNSW graph without its tombstones (other kinds are always compact)."""
        with self._lock:
            live = self._labels.sorted_labels
            if self.kind != "hnsw" or len(live) == len(self._labels.rows):
                return
            vectors = self._store.stored()[live]
            rows = self._labels.rows[live]
            self._store.replace(self._store.new_index(), mapped=False)
            self._labels = LabelRows(bound=self._labels.bound)
            self._live_bitmap = None
            self.add(rows, vectors)

    # ----------------------------------------------------------------- search
    def search(self, vector: npt.ArrayLike, k: int, allow: Allow = None) -> Ranking:
        """Return the ``k`` rows most similar to one query vector.

        Args:
            vector: query of shape ``(dim,)`` (normalised here).
            k: number of results wanted; clamped to the number of candidate rows.
            allow: optional pre-filter over ``range(n_rows)`` (see
                :func:`indexes.ranking.allow_mask`).

        Returns:
            Rows and cosine scores, best first, without padding: exactly
            ``min(k, candidates)`` of them.

        Raises:
            ConfigError: ``k`` is not a positive integer, or ``allow`` is malformed.
            DimensionMismatchError: the query has another dimension.
        """
        q = np.asarray(vector, dtype=np.float32)
        if q.ndim != 1:
            msg = f"search takes one vector of shape ({self.dim},), got {q.shape}; use search_batch"
            raise DimensionMismatchError(msg)
        return self._search(unit_rows(q, self.dim, "query"), check_k(k), allow)[0]

    def search_batch(self, vectors: npt.ArrayLike, k: int, allow: Allow = None) -> list[Ranking]:
        """Search several queries at once (one BLAS product per block of queries).

        Args:
            vectors: queries of shape ``(n, dim)``.
            k: number of results per query; clamped to the number of candidate rows.
            allow: one pre-filter applied to every query (see :meth:`search`).

        Returns:
            One ranking per query, aligned with ``vectors``.

        Raises:
            ConfigError: ``k`` is not a positive integer, or ``allow`` is malformed.
            DimensionMismatchError: queries of another dimension.
        """
        return self._search(unit_rows(vectors, self.dim, "query"), check_k(k), allow)

    def _search(self, q: npt.NDArray[np.float32], k: int, allow: Allow) -> list[Ranking]:
        """Rankings of normalised queries ``q``; the one path of both public searches."""
        with self._lock:
            mask = self._labels.allowed(allow_mask(allow, self._labels.bound))
            if not self._store.approximate:
                return self._exact(q, mask, k)
            n_candidates = self.ntotal if mask is None else int(np.count_nonzero(mask))
            kk = min(k, n_candidates)
            if kk == 0:
                return [Ranking.empty() for _ in range(len(q))]
            scores, labels = self._store.search(q, kk, self._bitmap(mask, n_candidates))
            out = []
            for i in range(len(q)):
                if np.count_nonzero(labels[i] >= 0) < kk:  # HNSW under a selective filter
                    logger.debug("approximate search found fewer than %d; exact fallback", kk)
                    out.append(self._exact(q[i : i + 1], mask, kk)[0])
                else:
                    rows = self._labels.rows[labels[i]]
                    out.append(Ranking(rows, scores[i].astype(np.float64)))
        return out

    def _bitmap(self, mask: Mask | None, n_candidates: int) -> npt.NDArray[np.uint8] | None:
        """The ID selector's bitmap over labels, only when some label is excluded (by
        ``mask``, or as a tombstone); the tombstone bitmap is kept until the next change."""
        n_labels = len(self._labels.rows)
        if mask is not None:
            return np.packbits(mask, bitorder="little") if n_candidates < n_labels else None
        if self.ntotal < n_labels and self._live_bitmap is None:
            self._live_bitmap = np.packbits(self._labels.rows >= 0, bitorder="little")
        return self._live_bitmap if self.ntotal < n_labels else None

    def _exact(self, q: npt.NDArray[np.float32], mask: Mask | None, k: int) -> list[Ranking]:
        """Exact top ``k`` of every query over the allowed live labels: a scan of the stored
        vectors (flat, HNSW), or every IVF list searched."""
        label_rows = self._labels.rows
        if self._store.is_ivf:
            n = self.ntotal if mask is None else int(np.count_nonzero(mask))
            if n == 0:
                return [Ranking.empty() for _ in range(len(q))]
            bitmap = self._bitmap(mask, n)
            scores, labels = self._store.search(q, min(k, n), bitmap, every_list=True)
            return [
                Ranking(label_rows[lab[lab >= 0]], sco[lab >= 0].astype(np.float64))
                for lab, sco in zip(labels, scores, strict=True)
            ]
        if mask is None and self.kind == "flat":  # no tombstones: every stored vector
            return self._store.scan(q, None, label_rows, k)
        candidates = self._labels.sorted_labels if mask is None else np.flatnonzero(mask)
        return self._store.scan(q, candidates, label_rows[candidates], k)

    # ----------------------------------------------------------------- persistence
    def save(self, directory: str | os.PathLike[str], *, model_id: str | None = None) -> None:
        """Write ``index.faiss``, ``rows.npy`` and the manifest ``vector.json``.

        The directory is created if needed; files are fsynced and the manifest is written
        last. For crash-safe replacement save into a fresh directory and switch to it (the
        index bundle does that).

        Args:
            directory: target directory.
            model_id: the embedding model's id, recorded in the manifest as metadata.
        """
        path = Path(directory)
        with self._lock:
            data = {
                **self.params,
                "normalized": True,
                "ntotal": self.ntotal,
                "n_labels": len(self._labels.rows),
                "n_rows": self._labels.bound,
                "model_id": model_id,
            }
            io.write_files(path, self._store.faiss, self._store.raw, self._labels.rows, data)
        self.model_id = model_id
        logger.info("vector index: saved %d vectors (%s) to %s", self.ntotal, self.kind, path)

    @classmethod
    def load(
        cls,
        directory: str | os.PathLike[str],
        mmap: bool = False,
        *,
        dim: int | None = None,
        verify: bool = True,
    ) -> VectorIndex:
        """Load an index written by :meth:`save`, verifying checksums before faiss reads it.

        Args:
            directory: the directory given to :meth:`save`.
            mmap: memory-map the faiss file (HNSW and IVF) instead of reading it.
            dim: if given, the dimension the caller's embedder produces.
            verify: check every file's SHA-256 first (``False`` only for files the caller
                has just written and hashed itself).

        Returns:
            The index, with ``model_id`` from the manifest.

        Raises:
            IndexLoadError: a file is missing, corrupt, tampered or inconsistent (names it).
            IndexVersionError: the manifest's format version is too new.
            DimensionMismatchError: the index dimension differs from ``dim``.
        """
        path = Path(directory)
        manifest = io.read_checked_manifest(path, verify=verify)
        try:
            index = cls(
                int(manifest["dim"]),
                manifest["kind"],
                hnsw_m=int(manifest.get("hnsw_m", 32)),
                ef_search=int(manifest.get("ef_search", 64)),
                ef_construction=int(manifest.get("ef_construction", 40)),
                nlist=manifest.get("nlist"),
                nprobe=manifest.get("nprobe"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            msg = f"invalid vector index manifest ({exc})"
            raise IndexLoadError(path / MANIFEST, msg) from exc
        io.check_metric_and_dim(path, manifest, dim)
        stored = io.read_files(path, index._store.faiss, manifest, mmap=mmap)
        rows = stored.rows
        index._store.replace(stored.raw, mapped=stored.mapped)
        # Saved before the row space was recorded: the largest row still held bounds it.
        bound = int(manifest.get("n_rows", int(rows.max()) + 1 if len(rows) else 0))
        index._labels = LabelRows(rows, bound)
        index.model_id = manifest.get("model_id")
        logger.info("vector index: loaded %d vectors (%s) from %s", index.ntotal, index.kind, path)
        return index
