"""Files of :class:`indexes.dense.vector.VectorIndex`: ``index.faiss``, ``rows.npy`` and
``vector.json``.

faiss's own ``write_index`` holds the vectors, ``rows.npy`` the label → row map, and the
manifest the parameters plus a SHA-256 of both files. The manifest and every checksum are
verified *before* faiss reads a byte: a ``.faiss`` file is native code input, so load only
indexes you built (faiss issue #5400). What faiss then returns is checked against the
manifest (index type, dimension, vector count), so a swapped or inconsistent file is named
instead of silently searched. A flat index is always read into memory (see
:mod:`indexes.dense.vector`); HNSW and IVF can be memory-mapped with ``IO_FLAG_MMAP_IFC``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragtools.indexes.errors import DimensionMismatchError, IndexLoadError
from ragtools.indexes.ranking import Rows
from ragtools.indexes.store.persist import (
    fsync_dir,
    load_npy,
    read_manifest,
    save_npy,
    write_manifest,
)

MANIFEST = "vector.json"
METRIC = "inner_product"
_INDEX_FILE = "index.faiss"
_ROWS_FILE = "rows.npy"
_FORMAT = "faiss"
_VERSION = 1


def write_files(path: Path, faiss: Any, raw: Any, rows: Rows, data: dict[str, Any]) -> None:
    """Write and fsync the faiss index and the row map, then the manifest last."""
    path.mkdir(parents=True, exist_ok=True)
    tmp = path / f".{_INDEX_FILE}.tmp"
    faiss.write_index(raw, str(tmp))
    with open(tmp, "rb+") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, path / _INDEX_FILE)
    save_npy(path / _ROWS_FILE, rows)
    write_manifest(
        path,
        MANIFEST,
        fmt=_FORMAT,
        version=_VERSION,
        files=[_INDEX_FILE, _ROWS_FILE],
        data=data,
        sealed=True,
    )
    fsync_dir(path)


@dataclass(frozen=True)
class Stored:
    """What :func:`read_files` verified: the manifest, the row map and faiss's index."""

    manifest: dict[str, Any]
    rows: Rows
    raw: Any
    mapped: bool


def read_checked_manifest(path: Path, *, verify: bool = True) -> dict[str, Any]:
    """The manifest, verified (seal, and with ``verify`` checksums) before any data file is
    read.

    Raises:
        IndexLoadError: missing, damaged or tampered manifest or data file.
        IndexVersionError: written by a newer format version.
    """
    return read_manifest(path, MANIFEST, fmt=_FORMAT, version=_VERSION, verify=verify, sealed=True)


def check_metric_and_dim(path: Path, manifest: dict[str, Any], dim: int | None) -> None:
    """Refuse another metric, or vectors of another dimension than ``dim`` (if given).

    Raises:
        IndexLoadError: another metric.
        DimensionMismatchError: another dimension.
    """
    if manifest.get("metric") != METRIC:
        raise IndexLoadError(path / MANIFEST, f"unsupported metric {manifest.get('metric')!r}")
    saved = manifest.get("dim")
    if dim is not None and dim != saved:
        msg = (
            f"{path / MANIFEST}: the index holds {saved}-dim vectors but the embedder gives "
            f"{dim}-dim ones; rebuild the index with this model or use the original model"
        )
        raise DimensionMismatchError(msg)


def read_files(path: Path, faiss: Any, manifest: dict[str, Any], *, mmap: bool) -> Stored:
    """Read the row map and the faiss index that ``manifest`` describes, and check both.

    Raises:
        IndexLoadError: a file is missing, corrupt or disagrees with the manifest (named).
    """
    try:
        kind, dim = manifest["kind"], int(manifest["dim"])
        n_labels, ntotal = int(manifest["n_labels"]), int(manifest["ntotal"])
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexLoadError(path / MANIFEST, f"invalid vector index manifest ({exc})") from exc
    rows = load_npy(path / _ROWS_FILE)
    if rows.dtype != np.int64 or rows.ndim != 1 or len(rows) != n_labels:
        raise IndexLoadError(path / _ROWS_FILE, f"expected {n_labels} int64 row ids")
    fpath = path / _INDEX_FILE
    mapped = mmap and kind != "flat"
    try:
        raw = faiss.read_index(str(fpath), faiss.IO_FLAG_MMAP_IFC if mapped else 0)
    except RuntimeError as exc:
        raise IndexLoadError(fpath, f"faiss could not read the index ({exc})") from exc
    expected = faiss.IndexHNSWFlat if kind == "hnsw" else faiss.IndexFlatIP
    if kind == "ivf" and manifest.get("trained"):
        expected = faiss.IndexIVFFlat
    if not isinstance(raw, expected) or raw.d != dim:
        found = f"a {type(raw).__name__} of dim {raw.d}"
        raise IndexLoadError(fpath, f"holds {found}, but the manifest says {kind} of dim {dim}")
    live = int(np.count_nonzero(rows >= 0))
    stored = n_labels if not isinstance(raw, faiss.IndexIVF) else live
    if live != ntotal or int(raw.ntotal) != stored:
        msg = f"holds {raw.ntotal} vectors, manifest expects {ntotal} live of {n_labels}"
        raise IndexLoadError(fpath, msg)
    return Stored(manifest, rows.copy(), raw, mapped)
