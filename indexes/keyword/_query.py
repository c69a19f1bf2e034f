"""Query-time kernels of :class:`indexes.keyword.bm25.BM25Index`: one query, a batch, and filters.

A query is scored on an immutable :class:`Snapshot` of the index (postings, weights, deleted
mask), so searches in several threads never see a half-applied ``add`` or ``delete``.

* One query: add the weights of its terms' postings (slices of a CSC matrix, no scipy
  call) into a dense score vector; find a floor that ``k`` allowed rows reach (the ``k``-th
  best score among one query term's rows); rank, with :meth:`~indexes.ranking.Ranking.top`,
  only the allowed rows that contain a query term (``sum > 0`` when every weight is
  positive; an explicit mask otherwise) and reach the floor.
* A batch is its queries one by one (in threads if asked): a query costs one pass over its
  own terms' postings, so there is nothing a second, block-wise implementation could share
  between queries except Python overhead.
"""

from __future__ import annotations

import logging
import math
import numbers
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ragtools.indexes.keyword._math import Postings, Weights, query_term_weight
from ragtools.indexes.ranking import Mask, Ranking
from ragtools.parsers.errors import ConfigError

logger = logging.getLogger(__name__)

QueryTerms = tuple[list[int], Sequence[float]]
"""A query's distinct known term ids (ascending) and the weight of each: its count in the
query, saturated by ``k3`` (:func:`indexes.keyword._math.query_term_weight`), or the weight
given with it (:func:`weighted_terms`)."""


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
        fancy indexing and ``dot`` cost more than the arithmetic itself.
        """
        if not self.plus_delta:
            return 0.0
        if not self._idf:
            self._idf.append(self.weights.idf.tolist())
        idf = self._idf[0]
        ids, counts = terms
        return plus_constant(self.plus_delta, [idf[i] for i in ids], counts)


def plus_constant(plus_delta: float, idf: Sequence[float], counts: Sequence[float]) -> float:
    """BM25+'s per-query part, ``plus_delta`` times the query terms' idf weighted by their
    counts: the score a row gets from the query whatever its content (0 for other variants,
    whose ``plus_delta`` is 0). One expression, so every path adds the same float."""
    if not plus_delta:
        return 0.0
    return plus_delta * sum([i * c for i, c in zip(idf, counts, strict=True)])


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


def weighted_terms(weights: Mapping[str, float], vocab: dict[str, int], n_terms: int) -> QueryTerms:
    """Map a weighted query (term → weight) to known term ids and their weights.

    A weight multiplies its term's BM25 contribution, as a boost does in Lucene
    (``BoostQuery``): what query expansion (:mod:`indexes.keyword.rm3`) needs. Unknown
    terms and terms of weight 0 are dropped (they add nothing to any row).

    Raises:
        ConfigError: a weight that is not a finite number ``>= 0``.
    """
    get = vocab.get
    known: dict[int, float] = {}
    for token, weight in weights.items():
        number = isinstance(weight, numbers.Real) and not isinstance(weight, bool)
        value = float(weight) if number else math.nan
        if not (math.isfinite(value) and value >= 0.0):
            msg = (
                f"query term {token!r} has weight {weight!r}; weights of a weighted BM25 "
                "query must be finite numbers >= 0"
            )
            raise ConfigError(msg)
        term = get(token)
        if term is not None and term < n_terms and value > 0.0:
            known[term] = value
    ids = sorted(known)
    return ids, [known[i] for i in ids]


_GATHER = 1 << 16
"""Postings added by one ``np.add.at`` call at most, unless one term alone has more."""


def _sum_by_row(snap: Snapshot, terms: QueryTerms) -> tuple[np.ndarray, list[np.ndarray]]:
    """Each row's sum of the query terms' posting weights (float64, one per row), and each
    term's rows.

    The terms' slices of the postings are added in term-id order (``np.add.at`` adds in index
    order), so every row's sum is ``((0 + w1) + w2) + ...`` in that order however the slices
    are grouped. Consecutive short slices are gathered into one call, because each call
    costs as much as adding a few thousand postings; a slice as long as ``_GATHER`` is added
    alone, straight from the (possibly memory-mapped) postings, as copying it would cost more
    than the call it saves.
    """
    bounds, docs, weights = snap.bounds(), snap.postings.docs, snap.weights.weights
    sums = np.zeros(snap.n_rows, np.float64)
    rows_of_terms: list[np.ndarray] = []
    group: list[np.ndarray] = []
    group_weights: list[np.ndarray] = []
    size = 0
    for term, count in zip(*terms, strict=True):
        start, end = bounds[term], bounds[term + 1]
        if group and size + end - start > _GATHER:
            _add_group(sums, group, group_weights)
            group, group_weights, size = [], [], 0
        rows = docs[start:end]
        rows_of_terms.append(rows)
        group.append(rows)
        group_weights.append(weights[start:end] if count == 1 else weights[start:end] * count)
        size += end - start
    if group:
        _add_group(sums, group, group_weights)
    return sums, rows_of_terms


def _add_group(sums: np.ndarray, rows: list[np.ndarray], weights: list[np.ndarray]) -> None:
    """``sums[rows[i][j]] += weights[i][j]`` in order, in one ``np.add.at`` call (its fast
    path takes native-width row ids, hence the cast while concatenating)."""
    if len(rows) == 1:
        np.add.at(sums, rows[0], weights[0])
    else:
        np.add.at(sums, np.concatenate(rows, dtype=np.intp), np.concatenate(weights))


def dense_scores(snap: Snapshot, terms: QueryTerms) -> np.ndarray:
    """Scores of all rows (float64, deleted rows ``-inf``)."""
    scores, _ = _sum_by_row(snap, terms)
    if terms[0]:
        scores += snap.constant(terms)
    scores[snap.deleted] = -np.inf
    return scores


def search_one(snap: Snapshot, terms: QueryTerms, k: int, mask: Mask | None) -> Ranking:
    """Top ``k`` allowed rows containing a query term, score desc then row asc.

    Only rows scoring at least :func:`_floor` are ranked: at least ``k`` allowed rows reach
    it, so no row below it can be among the ``k`` best. That keeps the selection and sort to
    a handful of rows where ranking every matched row would sort most of the corpus.
    """
    if not terms[0]:
        return Ranking.empty()
    sums, rows_of_terms = _sum_by_row(snap, terms)
    floor = _floor(sums, rows_of_terms, k, mask)
    if snap.weights.positive:  # a row contains a query term exactly when its sum is > 0
        keep = sums >= floor if floor > 0 else sums > 0
    else:
        keep = np.zeros(snap.n_rows, np.bool_)
        for rows in rows_of_terms:
            keep[rows] = True
        if floor > -np.inf:
            keep &= sums >= floor
    if mask is not None:
        keep &= mask
    rows = np.flatnonzero(keep)
    scores = sums[rows]
    if snap.plus_delta:  # before ranking, so rows whose sums round to one score tie by row
        scores += snap.constant(terms)
    return Ranking.top(scores, k, rows)


def _floor(sums: np.ndarray, rows_of_terms: list[np.ndarray], k: int, mask: Mask | None) -> float:
    """A score that at least ``k`` allowed rows containing a query term reach (``-inf`` when
    no term alone has ``k`` allowed rows): the ``k``-th best sum among the rows of the query
    term with the fewest rows that still has ``k`` allowed ones, which is cheap to find and,
    a rare term's rows scoring high, close to the ``k``-th best score itself.
    """
    for rows in sorted(rows_of_terms, key=len):
        if mask is not None and len(rows) >= k:
            rows = rows[mask[rows]]
        if len(rows) >= k:
            values = sums[rows]
            return float(np.partition(values, len(values) - k)[len(values) - k])
    return -np.inf


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
