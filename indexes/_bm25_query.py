"""Query-time kernels of :class:`indexes.bm25.BM25Index`: one query, a batch, and filters.

A query is scored on an immutable :class:`Snapshot` of the index (postings, weights, deleted
mask), so searches in several threads never see a half-applied ``add`` or ``delete``.

* One query: gather the postings of its terms (slices of a CSC matrix, no scipy call),
  ``np.bincount`` them into a dense score vector, keep the rows that contain a query term
  (``sum > 0`` when every weight is positive; an explicit mask otherwise) and rank them with
  :meth:`~indexes.ranking.Ranking.top`.
* A batch is its queries one by one (in threads if asked): a query costs a gather and a
  ``bincount`` over its own terms' postings, so there is nothing a second, block-wise
  implementation could share between queries except Python overhead.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ragtools.indexes._bm25_math import Postings, Weights, query_term_weight
from ragtools.indexes.ranking import Mask, Ranking
from ragtools.parsers.errors import ConfigError

logger = logging.getLogger(__name__)

QueryTerms = tuple[list[int], Sequence[float]]
"""A query's distinct known term ids (ascending) and the weight of each: its count in the
query, saturated by ``k3`` (:func:`indexes._bm25_math.query_term_weight`)."""


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


def search_one(snap: Snapshot, terms: QueryTerms, k: int, mask: Mask | None) -> Ranking:
    """Top ``k`` allowed rows containing a query term, score desc then row asc."""
    if not terms[0]:
        return Ranking.empty()
    docs, values = _gather(snap, terms)
    sums = _sum_by_row(docs, values, snap.n_rows)
    if snap.weights.positive:  # a row contains a query term exactly when its sum is > 0
        matched = sums > 0
    else:
        matched = np.zeros(snap.n_rows, np.bool_)
        matched[docs] = True
    if mask is not None:
        matched &= mask
    rows = np.flatnonzero(matched)
    ranking = Ranking.top(sums[rows], k, rows)
    if snap.plus_delta:
        return Ranking(ranking.rows, ranking.scores + snap.constant(terms))
    return ranking


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
