"""The faiss index behind a ``VectorIndex``, and what differs between its kinds.

:class:`indexes.dense.vector.VectorIndex` keeps the contract: row ids, filters over rows, exact k,
locking and files. :class:`FaissStore` keeps what faiss does differently for ``flat``,
``hnsw`` and ``ivf``: how each index is made, how it takes and drops labels (a flat index
compacts, HNSW can only leave tombstones, IVF removes by id), when an IVF index trains, the
search parameters that carry an ID selector, and the exact scan over stored vectors that
flat search and the approximate kinds' fallback share. Vectors enter it already checked and
normalised by :func:`unit_rows`.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ragtools.indexes.errors import DimensionMismatchError
from ragtools.indexes.ranking import Ranking, Rows
from ragtools.parsers.errors import ConfigError
from ragtools.parsers.optional import require

logger = logging.getLogger(__name__)

VectorKind = Literal["flat", "hnsw", "ivf"]
KINDS: tuple[str, ...] = ("flat", "hnsw", "ivf")
_IVF_AUTO_MIN_TRAIN = 10_000
_IVF_POINTS_PER_LIST = 39
_BLOCK_FLOATS = 1 << 24  # similarity block of 64 MB per matrix product
_NOT_FINITE = "{what} vectors contain NaN or infinity (or values too large to square)"
Floats = npt.NDArray[np.float32]


def _positive(name: str, value: object, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        msg = f"{name} must be a positive integer{' or None' if optional else ''}, got {value!r}"
        raise ConfigError(msg)


def unit_rows(vectors: npt.ArrayLike, dim: int, what: str) -> Floats:
    """``vectors`` as float32 rows of length ``dim`` scaled to unit length (zero stays zero).

    Raises:
        DimensionMismatchError: another shape or dimension.
        ConfigError: a value that is not finite.
    """
    x = np.asarray(vectors, dtype=np.float32)
    if x.size == 0 and x.ndim == 1:  # an empty list: nothing to add or search
        x = x.reshape(0, dim)
    if x.ndim == 1 and what == "query":
        x = x[None, :]
    if x.ndim != 2 or (x.shape[0] and x.shape[1] != dim) or x.shape[1:] == (0,):
        got = x.shape[-1] if x.ndim else "a scalar"
        msg = (
            f"{what} vectors must have shape (n, {dim}); got {x.shape} "
            f"(dim {got}); embed with the model this index was built with"
        )
        raise DimensionMismatchError(msg)
    if len(x) == 1:  # one query: its length as a Python float saves array operations
        square = float(np.dot(x[0], x[0]))
        if not math.isfinite(square):  # NaN and infinity propagate into the length
            raise ConfigError(_NOT_FINITE.format(what=what))
        return x / np.float32(math.sqrt(square)) if square else x
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))
    if not np.isfinite(norms).all():
        raise ConfigError(_NOT_FINITE.format(what=what))
    norms[norms == 0] = 1.0
    out: Floats = x / norms[:, None]
    return out


class FaissStore:
    """One faiss index of one kind; parameters as in :class:`~indexes.dense.vector.VectorIndex`.

    Raises:
        ConfigError: a bad kind or parameter.
        MissingDependencyError: faiss is not installed.
    """

    def __init__(
        self,
        dim: int,
        kind: VectorKind,
        *,
        hnsw_m: int,
        ef_search: int,
        ef_construction: int,
        nlist: int | None,
        nprobe: int | None,
    ) -> None:
        _positive("dim", dim)
        if kind not in KINDS:
            msg = f"kind must be one of {', '.join(KINDS)}; got {kind!r}"
            raise ConfigError(msg)
        for name, value in (
            ("hnsw_m", hnsw_m),
            ("ef_search", ef_search),
            ("ef_construction", ef_construction),
        ):
            _positive(name, value)
        _positive("nlist", nlist, optional=True)
        _positive("nprobe", nprobe, optional=True)
        self.faiss: Any = require("faiss", package="faiss-cpu")
        self.dim, self.kind = dim, kind
        self.hnsw_m, self.ef_search, self.ef_construction = hnsw_m, ef_search, ef_construction
        self.nlist, self.nprobe = nlist, nprobe
        self.mapped = False  # a memory-mapped index must be copied before it changes
        self._xb: Floats | None = None  # view of stored vectors (flat, hnsw)
        self.raw: Any = self.new_index()

    def new_index(self) -> Any:
        """An empty faiss index of this kind (flat until an IVF index trains)."""
        faiss = self.faiss
        if self.kind == "hnsw":
            index = faiss.IndexHNSWFlat(self.dim, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = self.ef_construction
            index.hnsw.efSearch = self.ef_search
            return index
        return faiss.IndexFlatIP(self.dim)

    @property
    def is_ivf(self) -> bool:
        """Whether the index is a trained IVF index."""
        return bool(isinstance(self.raw, self.faiss.IndexIVF))

    @property
    def approximate(self) -> bool:
        """HNSW, or trained IVF: searched by faiss, with an exact fallback."""
        return self.kind == "hnsw" or self.is_ivf

    def params(self, metric: str) -> dict[str, Any]:
        """Settings as a JSON-ready dict (saved in the manifest; used to rebuild)."""
        out: dict[str, Any] = {"kind": self.kind, "dim": self.dim, "metric": metric}
        if self.kind == "hnsw":
            out |= {
                "hnsw_m": self.hnsw_m,
                "ef_search": self.ef_search,
                "ef_construction": self.ef_construction,
            }
        elif self.kind == "ivf":
            out |= {"nlist": self.nlist, "nprobe": self.nprobe, "trained": self.is_ivf}
        return out

    def replace(self, raw: Any, *, mapped: bool) -> None:
        """Use ``raw`` (read from disk, or a fresh index) from now on."""
        self.raw, self.mapped, self._xb = raw, mapped, None
        if self.is_ivf:
            self.nlist = int(raw.nlist)

    def own(self) -> None:
        """Copy a memory-mapped index into memory before changing it."""
        if self.mapped:
            faiss = self.faiss
            self.replace(faiss.deserialize_index(faiss.serialize_index(self.raw)), mapped=False)
            logger.info("vector index: copied memory-mapped index into memory to modify it")

    def add(self, x: Floats, labels: Rows, n_live: int) -> None:
        """Add vectors under ``labels``; an IVF index trains once it holds enough."""
        self.own()
        if self.is_ivf:
            self.raw.add_with_ids(x, labels)
        else:
            self.raw.add(x)
        self._xb = None
        if self.kind == "ivf" and not self.is_ivf and n_live >= self._train_min():
            self._train_ivf()

    def remove(self, labels: Rows) -> bool:
        """Drop ``labels`` where faiss can; True when the flat storage compacted (later labels
        moved down), False when they stay taken (IVF removal, HNSW tombstones)."""
        self.own()
        self._xb = None
        if self.kind == "hnsw":
            return False
        self.raw.remove_ids(self.faiss.IDSelectorBatch(labels))
        return not self.is_ivf

    def stored(self) -> Floats:
        """A read-only view of a flat or HNSW index's stored vectors, by label.

        The view points into faiss's buffer, which adding or removing may reallocate: it is
        kept only until the next change.
        """
        if self._xb is None:
            faiss = self.faiss
            flat = faiss.downcast_index(self.raw.storage) if self.kind == "hnsw" else self.raw
            n = int(flat.ntotal)
            if n == 0:
                return np.zeros((0, self.dim), dtype=np.float32)
            view = faiss.rev_swig_ptr(flat.get_xb(), n * self.dim).reshape(n, self.dim)
            view.flags.writeable = False
            self._xb = view
        return self._xb

    def _train_min(self) -> int:
        return _IVF_AUTO_MIN_TRAIN if self.nlist is None else _IVF_POINTS_PER_LIST * self.nlist

    def _train_ivf(self) -> None:
        faiss = self.faiss
        x = self.stored().copy()  # flat: label == position
        nlist = self.nlist or max(1, min(int(4 * math.sqrt(len(x))), len(x) // 39))
        started = time.perf_counter()
        ivf = faiss.IndexIVFFlat(
            faiss.IndexFlatIP(self.dim), self.dim, nlist, faiss.METRIC_INNER_PRODUCT
        )
        ivf.train(x)
        ivf.add_with_ids(x, np.arange(len(x), dtype=np.int64))
        ivf.nprobe = self._nprobe(nlist)
        self.replace(ivf, mapped=False)
        logger.info(
            "vector index: trained IVF with nlist=%d on %d vectors in %.2fs",
            nlist,
            len(x),
            time.perf_counter() - started,
        )

    def _nprobe(self, nlist: int) -> int:
        return min(nlist, self.nprobe or max(16, nlist // 8))

    def search(
        self, q: Floats, k: int, bitmap: npt.NDArray[np.uint8] | None, *, every_list: bool = False
    ) -> tuple[npt.NDArray[np.float32], Rows]:
        """faiss's own search of an approximate kind, excluding the labels whose bit is 0
        in ``bitmap`` (``None``: none); ``every_list`` makes IVF-Flat exact."""
        faiss = self.faiss
        sel = faiss.IDSelectorBitmap(bitmap) if bitmap is not None else None
        if self.kind == "hnsw":
            params = faiss.SearchParametersHNSW(sel=sel, efSearch=self.ef_search)
        else:
            nlist = self.raw.nlist
            nprobe = nlist if every_list else self._nprobe(nlist)
            params = faiss.SearchParametersIVF(sel=sel, nprobe=nprobe)
        scores, labels = self.raw.search(q, k, params=params)
        return scores, labels

    def scan(self, q: Floats, candidates: Rows | None, rows: Rows, k: int) -> list[Ranking]:
        """Exact top ``k`` of every query over the stored vectors of ``candidates`` (labels;
        ``None``: all), ranked by their ``rows``; a block of queries per matrix product."""
        stored = self.stored() if candidates is None else self.stored()[candidates]
        if len(q) == 1:  # a matrix-vector product: BLAS's cheapest call for one query
            return [Ranking.top(stored @ q[0], k, rows)]
        out: list[Ranking] = []
        block = max(1, _BLOCK_FLOATS // max(1, len(stored)))
        for start in range(0, len(q), block):
            sims = q[start : start + block] @ stored.T
            out += [Ranking.top(s, k, rows) for s in sims]
        return out
