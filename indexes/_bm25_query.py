"""Query-time kernels of :class:`indexes.bm25.BM25Index`: one query, a batch, and filters.

A query is scored on an immutable :class:`Snapshot` of the index (postings, weights, deleted
mask), so searches in several threads never see a half-applied ``add`` or ``delete``.

* One query: gather the postings of its terms (slices of a CSC matrix, no scipy call),
  ``np.bincount`` them into a dense score vector, keep the rows that contain a query term
  (``sum > 0`` when every weight is positive; an explicit mask otherwise) and pick the top k
  with one ``np.partition``.
* A batch: the postings of a whole block of queries are gathered with one vectorised index
  computation and summed by one ``np.bincount`` into a dense (queries x rows) matrix; the top
  k of each row is then picked as for one query. (A scipy sparse product ``Q @ W`` was tried
  and was slower than even one-query-at-a-time.)
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from ragtools.indexes._bm25_math import Postings, Weights, query_term_weight, top_k
from ragtools.parsers.errors import ConfigError

__all__ = [
    "QueryTerms",
    "Snapshot",
    "allow_mask",
    "check_k",
    "dense_scores",
    "make_blocks",
    "query_terms",
    "row_ids",
    "score_block",
    "search_one",
    "workers",
]

logger = logging.getLogger(__name__)

QueryTerms = tuple[list[int], Sequence[float]]
"""A query's distinct known term ids (ascending) and the weight of each: its count in the
query, saturated by ``k3`` (:func:`indexes._bm25_math.query_term_weight`)."""

# A batch block's dense score matrix has at most this many cells (512 KB of float64):
# large temporaries cost more in page faults and cache misses than they save in calls.
_BLOCK_CELLS = 65_536
_MIN_BLOCK = 4  # fewer queries per block than this (large corpora): score one by one
_SAMPLE_ABOVE = 100_000  # rows from which top-k starts from a sampled threshold

_EMPTY = (np.zeros(0, np.int64), np.zeros(0, np.float64))


@dataclass(frozen=True)
class Snapshot:
    """Everything a query needs, frozen at one corpus state."""

    postings: Postings
    weights: Weights
    n_rows: int
    n_live: int
    deleted: np.ndarray
    plus_delta: float  # BM25+ adds plus_delta * idf per query term to every row; else 0
    _bounds: list[list[int]] = field(default_factory=list, repr=False)
    _idf: list[list[float]] = field(default_factory=list, repr=False)

    def bounds(self) -> list[int]:
        """``postings.indptr`` as a Python list (built once): cheaper to index per term."""
        if not self._bounds:
            self._bounds.append(self.postings.indptr.tolist())
        return self._bounds[0]

    def constant(self, terms: QueryTerms) -> float:
        """The score every row gets from ``terms`` whatever its content (BM25+ only).

        A Python sum over a cached list: a query has a handful of terms, for which numpy's
        fancy indexing and ``dot`` cost more than the arithmetic (about 4 us a query).
        """
        if not self.plus_delta:
            return 0.0
        if not self._idf:
            self._idf.append(self.weights.idf.tolist())
        idf = self._idf[0]
        ids, counts = terms
        return self.plus_delta * sum([idf[i] * c for i, c in zip(ids, counts, strict=True)])


def query_terms(
    tokens: Sequence[str], vocab: dict[str, int], n_terms: int, k3: float
) -> QueryTerms:
    """Map tokens to known term ids (unknown ones are dropped) and weigh repeats by ``k3``."""
    get = vocab.get
    counts: dict[int, int] = {}
    for token in tokens:
        term = get(token)
        if term is not None and term < n_terms:
            counts[term] = counts.get(term, 0) + 1
    ids = sorted(counts)
    weights: list[int] | list[float] = [counts[i] for i in ids]
    if len(ids) < len(tokens) and k3 != math.inf:  # some term repeats
        weights = [query_term_weight(c, k3) for c in weights]
    return ids, weights


def _gather(snap: Snapshot, terms: QueryTerms) -> tuple[np.ndarray, np.ndarray]:
    bounds, docs, weights = snap.bounds(), snap.postings.docs, snap.weights.weights
    doc_parts, weight_parts = [], []
    for term, count in zip(*terms, strict=True):
        start, end = bounds[term], bounds[term + 1]
        doc_parts.append(docs[start:end])
        weight_parts.append(weights[start:end] if count == 1 else weights[start:end] * count)
    if len(doc_parts) == 1:
        return doc_parts[0], weight_parts[0]
    return np.concatenate(doc_parts), np.concatenate(weight_parts)


def _sum_by_row(rows: np.ndarray, values: np.ndarray, n_rows: int) -> np.ndarray:
    """``out[r] = sum(values[rows == r])`` as float64 (bincount gives int64 for no input)."""
    sums: np.ndarray = np.bincount(rows, weights=values, minlength=n_rows)
    return sums.astype(np.float64, copy=False)


def dense_scores(snap: Snapshot, terms: QueryTerms) -> np.ndarray:
    """Scores of all rows (float64, deleted rows ``-inf``)."""
    if terms[0]:
        docs, values = _gather(snap, terms)
        scores = _sum_by_row(docs, values, snap.n_rows)
        scores += snap.constant(terms)
    else:
        scores = np.zeros(snap.n_rows, np.float64)
    scores[snap.deleted] = -np.inf
    return scores


def search_one(
    snap: Snapshot, terms: QueryTerms, k: int, mask: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` allowed rows containing a query term, score desc then row asc."""
    if not terms[0]:
        return _EMPTY
    docs, values = _gather(snap, terms)
    sums = _sum_by_row(docs, values, snap.n_rows)
    if snap.weights.positive:
        if mask is not None:
            sums *= mask  # a disallowed row becomes a row without a match
        rows, scores = _top_positive(sums, k)
    else:
        matched = np.zeros(snap.n_rows, np.bool_)
        matched[docs] = True
        if mask is not None:
            matched &= mask
        rows, scores = top_k(np.flatnonzero(matched), sums[matched], k)
    if snap.plus_delta:
        scores += snap.constant(terms)
    return rows, scores


def _top_positive(sums: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and values of the ``k`` largest positive entries, value desc then row asc.

    A lower bound of the k-th largest value selects the candidate rows in one pass: on large
    corpora the k-th largest of an evenly strided sample of about ``sqrt(k n)`` rows (at
    least k rows of the full vector reach it), otherwise the exact ``np.partition`` value.
    Only the candidates (ties included, in row order) are then partitioned and sorted,
    stably, so ties at the k-th place resolve by row.
    """
    n = len(sums)
    low, stride = 0.0, 1
    if k < n:
        stride = int(math.sqrt(n / k)) if n >= _SAMPLE_ABOVE else 1
        sample = sums[::stride]
        m = len(sample)
        if m > k:
            low = float(np.partition(sample, m - k)[m - k])
    rows = np.flatnonzero(sums >= low) if low > 0 else np.flatnonzero(sums > 0)
    values = sums[rows]
    if len(rows) > k and stride > 1:
        kth = np.partition(values, len(values) - k)[len(values) - k]
        keep = np.flatnonzero(values >= kth)
        rows, values = rows[keep], values[keep]
    order = np.argsort(-values, kind="stable")[:k]
    return rows[order], values[order]


def make_blocks(snap: Snapshot, batch: list[QueryTerms]) -> list[list[QueryTerms]]:
    """Group queries so that each block's dense score matrix stays small (cache-sized)."""
    size = max(1, _BLOCK_CELLS // max(1, snap.n_rows))
    return [batch[i : i + size] for i in range(0, len(batch), size)]


def score_block(
    snap: Snapshot, block: list[QueryTerms], k: int, mask: np.ndarray | None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`search_one` for each query of ``block``.

    With positive weights and enough queries per block, the postings of every (query, term)
    pair are gathered with one vectorised index computation and summed into a dense
    ``(queries, rows)`` matrix by a single ``np.bincount``: the per-cell additions happen in
    the same order as in :func:`search_one`, so the scores are bit-identical.
    """
    if not snap.weights.positive or len(block) < _MIN_BLOCK:
        return [search_one(snap, terms, k, mask) for terms in block]
    n = snap.n_rows
    indptr, docs, weights = snap.postings.indptr, snap.postings.docs, snap.weights.weights
    per_query = [len(ids) for ids, _ in block]
    n_pairs = sum(per_query)
    terms = np.fromiter(chain.from_iterable(ids for ids, _ in block), np.int64, count=n_pairs)
    counts = np.fromiter(chain.from_iterable(c for _, c in block), np.float64, count=n_pairs)
    starts = indptr[terms]
    lengths = indptr[terms + 1] - starts
    ends = np.cumsum(lengths)
    pos = np.arange(int(ends[-1]) if n_pairs else 0) + np.repeat(starts - ends + lengths, lengths)
    base = np.repeat(np.arange(len(block), dtype=np.int64) * n, per_query)
    flat = docs[pos] + np.repeat(base, lengths)
    values = weights[pos]
    if np.any(counts != 1):
        values *= np.repeat(counts, lengths)
    dense = _sum_by_row(flat, values, len(block) * n).reshape(len(block), n)
    if mask is not None:
        dense *= mask
    out: list[tuple[np.ndarray, np.ndarray]] = []
    for i, query in enumerate(block):
        if not query[0]:
            out.append(_EMPTY)
            continue
        rows, scores = _top_positive(dense[i], k)
        if snap.plus_delta:
            scores += snap.constant(query)
        out.append((rows, scores))
    return out


def row_ids(rows: object, n_rows: int, what: str) -> np.ndarray:
    """Validate a collection of row ids; returns them as int64.

    Raises:
        ConfigError: not 1-D integers, or an id outside ``[0, n_rows)``.
    """
    ids = np.asarray(rows)
    if ids.size == 0:
        return np.zeros(0, np.int64)
    if ids.ndim != 1 or ids.dtype.kind not in "iu":
        msg = f"{what} must be a 1-D collection of integer row ids, got dtype {ids.dtype}"
        raise ConfigError(msg)
    ids = ids.astype(np.int64, copy=False)
    outside = (ids < 0) | (ids >= n_rows)
    if outside.any():
        bad = int(ids[outside][0])
        msg = f"{what} contains row {bad}, outside [0, {n_rows}); row ids come from add()"
        raise ConfigError(msg)
    return ids


def allow_mask(allow: object, n_rows: int) -> np.ndarray | None:
    """Turn ``allow`` (None, a boolean mask or row ids) into a boolean mask or None.

    Raises:
        ConfigError: a mask of the wrong shape or invalid row ids.
    """
    if allow is None:
        return None
    array = np.asarray(allow)
    if array.dtype == np.bool_:
        if array.shape != (n_rows,):
            msg = f"an allow mask must have shape ({n_rows},), got {array.shape}"
            raise ConfigError(msg)
        return array
    mask = np.zeros(n_rows, np.bool_)
    mask[row_ids(array, n_rows, "allow")] = True
    return mask


def check_k(k: object) -> int:
    """Validate ``k`` (an integer >= 1).

    Raises:
        ConfigError: anything else.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        msg = f"k must be an integer >= 1, got {k!r}"
        raise ConfigError(msg)
    return int(k)


def workers(n_threads: int | None) -> int:
    """Number of worker threads: ``None``/1 → 1, -1 → every CPU.

    Raises:
        ConfigError: anything else below 1.
    """
    if n_threads is None or n_threads == 1:
        return 1
    if n_threads == -1:
        return os.cpu_count() or 1
    if isinstance(n_threads, bool) or not isinstance(n_threads, int) or n_threads < 1:
        msg = f"n_threads must be None, -1 or an integer >= 1, got {n_threads!r}"
        raise ConfigError(msg)
    return n_threads
