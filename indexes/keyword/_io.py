"""On-disk format of :class:`indexes.keyword.bm25.BM25Index` (format ``"bm25"``, version 1).

One directory, no pickle::

    bm25.json      manifest: format, format_version, params (variant, k1, b, epsilon, delta,
                   tokenizer settings), counts, SHA-256 of every file below and of itself
    vocab.json     the terms, in term-id order
    indptr.npy     int64   term-major postings pointer (n_terms + 1)
    docs.npy       int32   row id of each posting (live rows only)
    tf.npy         int32   term frequency of each posting
    weights.npy    float64 precomputed BM25 score of each posting
    doc_len.npy    int32   tokens per row (n_rows)
    deleted.npy    bool    deleted-row mask (n_rows)

The weights are saved so that a memory-mapped load opens in milliseconds without recomputing
them. Checksums are verified before any array is opened (:mod:`indexes.store.persist`); then the
arrays' dtypes, shapes and cross-consistency are checked, so a damaged or tampered directory
raises :class:`IndexLoadError` naming the offending file.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragtools.indexes.errors import IndexLoadError
from ragtools.indexes.keyword._math import Vocabulary
from ragtools.indexes.store.persist import (
    fsync_dir,
    load_npy,
    read_json,
    read_manifest,
    save_npy,
    write_json,
)
from ragtools.indexes.store.persist import write_manifest as _write_manifest

logger = logging.getLogger(__name__)

FORMAT = "bm25"
FORMAT_VERSION = 1
MANIFEST = "bm25.json"
VOCAB = "vocab.json"

ARRAYS: dict[str, np.dtype[Any]] = {
    "indptr": np.dtype(np.int64),
    "docs": np.dtype(np.int32),
    "tf": np.dtype(np.int32),
    "weights": np.dtype(np.float64),
    "doc_len": np.dtype(np.int32),
    "deleted": np.dtype(np.bool_),
}
"""Array name → dtype; each is stored as ``<name>.npy``."""


@dataclass(frozen=True)
class Stored:
    """What :func:`read_index` found, checked for consistency."""

    params: dict[str, Any]
    terms: Vocabulary
    arrays: dict[str, np.ndarray]
    manifest_path: Path


def write_index(
    directory: str | Path,
    params: dict[str, Any],
    terms: list[str],
    arrays: dict[str, np.ndarray],
) -> Path:
    """Write the data files, then the manifest (last, so a half-written save never loads)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    # Write beside, then rename: an index memory-mapped from these very files keeps reading
    # the old inodes instead of crashing on a truncated mapping.
    for name, dtype in ARRAYS.items():
        tmp = directory / f"{name}.npy.tmp"
        save_npy(tmp, np.asarray(arrays[name], dtype=dtype))
        os.replace(tmp, directory / f"{name}.npy")
    write_json(directory / f"{VOCAB}.tmp", terms, indent=None)
    os.replace(directory / f"{VOCAB}.tmp", directory / VOCAB)
    fsync_dir(directory)
    n_rows = len(arrays["doc_len"])
    data = {
        "params": params,
        "n_rows": n_rows,
        "n_live": int(n_rows - np.count_nonzero(arrays["deleted"])),
        "n_terms": len(terms),
        "n_postings": len(arrays["docs"]),
    }
    files = [f"{name}.npy" for name in ARRAYS] + [VOCAB]
    _write_manifest(
        directory, MANIFEST, fmt=FORMAT, version=FORMAT_VERSION, files=files, data=data, sealed=True
    )
    return directory / MANIFEST


def index_arguments(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Stored ``params`` as the tokenizer's settings and ``BM25Index``'s keyword arguments,
    with what older files left implicit filled in.

    Raises:
        KeyError: no tokenizer settings.
    """
    arguments = dict(params)
    tokenizer = dict(arguments.pop("tokenizer"))
    # Saved before acronym plurals were cut: its rows were tokenized without it.
    tokenizer.setdefault("acronym_plurals", False)
    # null (or absent: saved before k3 existed, when repeats counted linearly) is inf.
    k3 = arguments.pop("k3", None)
    return tokenizer, {**arguments, "k3": math.inf if k3 is None else k3}


def read_index(directory: str | Path, *, mmap: bool, verify: bool) -> Stored:
    """Read and check a directory written by :func:`write_index`.

    Raises:
        IndexLoadError: a file is missing, fails its checksum, or is inconsistent (the
            message names the file).
        IndexVersionError: the format version is newer than this package reads.
    """
    directory = Path(directory)
    manifest_path = directory / MANIFEST
    manifest = read_manifest(
        directory, MANIFEST, fmt=FORMAT, version=FORMAT_VERSION, verify=verify, sealed=True
    )
    listed = set(manifest["files"])
    for fname in [f"{name}.npy" for name in ARRAYS] + [VOCAB]:
        if fname not in listed:
            raise IndexLoadError(manifest_path, f"the manifest does not list {fname}")
    params, n_rows = manifest.get("params"), manifest.get("n_rows")
    if not isinstance(params, dict) or not isinstance(n_rows, int) or n_rows < 0:
        raise IndexLoadError(manifest_path, "missing or invalid 'params' or 'n_rows'")
    terms = read_json(directory / VOCAB)
    if not isinstance(terms, list) or not all(isinstance(t, str) for t in terms):
        raise IndexLoadError(directory / VOCAB, "expected a JSON list of term strings")
    vocab = Vocabulary(terms)  # what the index looks terms up in: made once, checked here
    if len(vocab) != len(terms):
        raise IndexLoadError(directory / VOCAB, "the vocabulary has duplicate terms")
    arrays = load_arrays(directory, len(terms), n_rows, mmap=mmap)
    return Stored(params, vocab, arrays, manifest_path)


def load_arrays(
    directory: Path, n_terms: int, n_rows: int, *, mmap: bool, read_postings: bool = True
) -> dict[str, np.ndarray]:
    """The index arrays in ``directory``, checked to fit ``n_terms`` terms and ``n_rows``
    rows; ``read_postings=False`` skips the checks that read every posting (ranges of row
    ids, frequencies and lengths), which would bring every page of a mapping into memory.

    Raises:
        IndexLoadError: a missing file, or one that does not fit the others (named).
    """
    arrays: dict[str, np.ndarray] = {}
    for name, dtype in ARRAYS.items():
        path = directory / f"{name}.npy"
        array = load_npy(path, mmap=mmap)
        if array.dtype != dtype or array.ndim != 1:
            msg = f"expected a 1-D {dtype} array, found {array.ndim}-D {array.dtype}"
            raise IndexLoadError(path, msg)
        arrays[name] = array
    problem = _find_inconsistency(arrays, n_terms, n_rows, read_postings)
    if problem is not None:
        fname, msg = problem
        raise IndexLoadError(directory / fname, msg)
    return arrays


def _find_inconsistency(
    arrays: dict[str, np.ndarray], n_terms: int, n_rows: int, read_postings: bool
) -> tuple[str, str] | None:
    """The first (file, problem) found, or None when the arrays fit together."""
    indptr, docs = arrays["indptr"], arrays["docs"]
    if len(indptr) != n_terms + 1:
        return "indptr.npy", f"has {len(indptr)} entries for {n_terms} terms"
    nnz = len(docs)
    if indptr[0] != 0 or indptr[-1] != nnz or np.any(np.diff(indptr) < 0):
        return "indptr.npy", f"is not a valid pointer array for {nnz} postings"
    for name in ("tf", "weights"):
        if len(arrays[name]) != nnz:
            return f"{name}.npy", f"has {len(arrays[name])} entries, expected {nnz}"
    for name in ("doc_len", "deleted"):
        if len(arrays[name]) != n_rows:
            return f"{name}.npy", f"has {len(arrays[name])} rows, expected {n_rows}"
    if not read_postings:
        return None
    if nnz and (int(docs.min()) < 0 or int(docs.max()) >= n_rows):
        return "docs.npy", f"holds row ids outside [0, {n_rows})"
    if nnz and int(arrays["tf"].min()) < 1:
        return "tf.npy", "holds term frequencies below 1"
    if n_rows and int(arrays["doc_len"].min()) < 0:
        return "doc_len.npy", "holds negative lengths"
    return None
