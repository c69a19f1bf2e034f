"""Exact BM25 over several segments: collection statistics over the live rows.

A BM25 weight depends on the whole collection: the number of live rows, their total length
(``avgdl``) and each term's document frequency. A segment that scored with its own counts
would rank differently from one index over every row (Elasticsearch's default "query then
fetch"). Every segment scores with :class:`GlobalStats` instead, so a version's scores are
those of one fresh index over its live rows, bit for bit, whatever history made it:

* :class:`ShardCounts` is what a segment contributes over its live rows (counted by
  :func:`combined`): its terms, their document frequencies, the number of live rows and
  their total length;
* :meth:`GlobalStats.merge` adds them up and numbers the terms in one **canonical order**,
  sorted by the term string. A row's score is a sum over the query's terms in term-id order,
  and floats added in another order can differ in the last bit; Okapi's floor (``epsilon``
  times the mean idf) sums over all terms in that order too. An order that depends only on
  the set of terms (not on which row first used a term, as a single ``BM25Index`` numbers
  them) is what makes an index updated by any sequence of changes score exactly as a fresh
  build of the same rows;
* :func:`combined` re-expresses the segments' live postings in that term space, merges them
  into one index over the live rows, and computes the weights from the collection's idf and
  ``avgdl``. A query term a segment lacks is still known (BM25+ adds ``delta * idf`` for it
  to every matching row, as one index does).

* :class:`SegmentScorer` scores one segment's live rows with the collection's statistics
  without merging anything: per query, from the term frequencies of the query terms'
  postings, through the same weight formula (:func:`~indexes.keyword._math.compute_weights`)
  and query kernel (:func:`~indexes.keyword._query.search_one`) as one index, summing the
  terms in the canonical order, so its scores are the merged index's bit for bit. It costs
  a few array operations over the query's postings per query instead of memory for every
  posting: what a version too large to merge (ten million rows in sixteen shards) uses.

A segment so scored is read-only (:class:`GlobalStatsBM25`): segments never change; a new
version writes new segments and records deletions (:mod:`indexes.store.segments`).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtools.indexes.errors import IndexLoadError, IndexStateError
from ragtools.indexes.keyword._math import (
    Postings,
    Vocabulary,
    compute_idf,
    compute_weights,
    length_factors,
)
from ragtools.indexes.keyword._query import Snapshot, query_terms, search_one, weighted_terms
from ragtools.indexes.keyword.bm25 import BM25Index, Query
from ragtools.indexes.ranking import Mask, Ranking

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class ShardCounts:
    """What one segment contributes to the collection statistics.

    Attributes:
        terms: the segment's terms that occur in a live row.
        df: live rows containing each term.
        n_live: live rows; total_len: their tokens.
    """

    terms: list[str]
    df: Ints
    n_live: int
    total_len: int


@dataclass(frozen=True)
class GlobalStats:
    """The statistics every segment scores with: what one index over all live rows counts.

    Attributes:
        n_live: rows in the whole index (BM25's ``N``).
        total_len: their tokens (``avgdl = total_len / n_live``).
        terms: every term, sorted (the canonical order, see the module docstring).
        df: document frequency of each term, aligned with ``terms``.
    """

    n_live: int
    total_len: int
    terms: list[str]
    df: Ints

    @classmethod
    def merge(cls, shards: Sequence[ShardCounts]) -> GlobalStats:
        """Add up the segments' counts (the segments hold disjoint rows)."""
        n_live = sum(s.n_live for s in shards)
        total_len = sum(s.total_len for s in shards)
        totals: dict[str, int] = {}
        for s in shards:
            if not totals:
                totals = dict(zip(s.terms, s.df.tolist(), strict=True))
                continue
            get = totals.get
            for term, df in zip(s.terms, s.df.tolist(), strict=True):
                totals[term] = get(term, 0) + df
        terms = sorted(totals)
        df_sorted = np.fromiter((totals[t] for t in terms), np.int64, len(terms))
        return cls(n_live, total_len, terms, df_sorted)

    def document_frequencies(self, terms: Sequence[str]) -> Ints:
        """The document frequency of each of ``terms`` (0 for a term no live row has)."""
        out = np.zeros(len(terms), np.int64)
        for i, term in enumerate(terms):
            at = bisect.bisect_left(self.terms, term)  # terms are sorted
            if at < len(self.terms) and self.terms[at] == term:
                out[i] = self.df[at]
        return out

    def idf(self, *, variant: Any, epsilon: float) -> tuple[np.ndarray, bool, int]:
        """:func:`~indexes.keyword._math.compute_idf` over every term, in the global order."""
        indptr = np.zeros(len(self.df) + 1, np.int64)
        np.cumsum(self.df, out=indptr[1:])
        return compute_idf(indptr, self.n_live, variant=variant, epsilon=epsilon)


def segment_counts(index: BM25Index, deleted: npt.NDArray[np.bool_]) -> ShardCounts:
    """What ``index`` (a segment) contributes to the statistics over its rows not in
    ``deleted`` (the version's deletions; rows deleted before it was written have no
    postings)."""
    corpus = index.corpus()
    postings = corpus.postings()
    live = ~(np.asarray(corpus.deleted, dtype=np.bool_) | deleted)
    if live.all() or not deleted.any():
        df = np.diff(postings.indptr)
    else:
        term_of = np.repeat(np.arange(postings.n_terms, dtype=np.int64), np.diff(postings.indptr))
        df = np.bincount(term_of[live[postings.docs]], minlength=postings.n_terms)
    present = np.flatnonzero(df)
    words = corpus.vocab.terms
    return ShardCounts(
        [words[i] for i in present.tolist()],
        df[present].astype(np.int64),
        int(live.sum()),
        int(np.asarray(corpus.doc_len)[live].sum(dtype=np.int64)),
    )


class Collection:
    """The statistics of a version with what scoring reads from them: the canonical
    vocabulary and every term's idf (computed once, as one index over the live rows would).

    Args:
        stats: the collection statistics; template: any of the segments (its parameters).
    """

    def __init__(self, stats: GlobalStats, template: BM25Index) -> None:
        self.stats = stats
        self.vocab = Vocabulary(stats.terms)
        self.idf, self.positive, _ = stats.idf(variant=template.variant, epsilon=template.epsilon)
        self.weight_params = template.weight_params
        self.k3 = template.k3
        self.plus_delta = template.delta if template.variant == "bm25plus" else 0.0


class SegmentScorer:
    """One segment's live rows scored with a :class:`Collection`'s statistics, per query
    (see the module docstring). Rows are the segment's own.

    Args:
        index: the segment's BM25 index (memory-mapped: only the query's postings are read).
        deleted: the version's deletions in the segment.
        collection: the statistics to score with.
    """

    def __init__(
        self, index: BM25Index, deleted: npt.NDArray[np.bool_], collection: Collection
    ) -> None:
        corpus = index.corpus()
        self._postings = corpus.postings()
        self._bounds = self._postings.indptr
        self._local = corpus.vocab
        self._doc_len = corpus.doc_len
        self._dead = np.asarray(corpus.deleted, dtype=np.bool_) | deleted
        self._collection = collection
        params = collection.weight_params
        avgdl = collection.stats.total_len / collection.stats.n_live
        self._factors = length_factors(
            self._doc_len, avgdl, variant=params["variant"], k1=params["k1"], b=params["b"]
        )

    def search(self, query: Query, k: int, allow: Mask | None) -> Ranking:
        """The ``k`` best allowed live rows containing a query term (score descending,
        then row), scored as one index over the collection's live rows would score them.

        ``query`` is tokens, or weighted terms (:data:`~indexes.keyword.bm25.Query`); a string
        is tokenized by the caller.
        """
        collection = self._collection
        terms = collection.stats.terms
        if isinstance(query, Mapping):
            ids, counts = weighted_terms(query, collection.vocab, len(terms))
        else:
            tokens = [query] if isinstance(query, str) else query
            ids, counts = query_terms(tokens, collection.vocab, len(terms), collection.k3)
        if not ids:
            return Ranking.empty()
        get, bounds, postings = self._local.get, self._bounds, self._postings
        spans = []
        for term in ids:  # canonical order: the sums add as one index's do
            local = get(terms[term])
            spans.append((0, 0) if local is None else (int(bounds[local]), int(bounds[local + 1])))
        indptr = np.zeros(len(ids) + 1, np.int64)
        np.cumsum([end - start for start, end in spans], out=indptr[1:])
        sub = Postings(
            indptr,
            np.concatenate([np.zeros(0, np.int32)] + [postings.docs[a:b] for a, b in spans]),
            np.concatenate([np.zeros(0, np.int32)] + [postings.tf[a:b] for a, b in spans]),
        )
        stats = collection.stats
        weights = compute_weights(
            sub,
            self._doc_len,
            stats.n_live,
            stats.total_len,
            **collection.weight_params,
            global_idf=(collection.idf[ids], collection.positive, 0),
            factors=self._factors,
        )
        n_rows = len(self._dead)
        snap = Snapshot(sub, weights, n_rows, n_rows, self._dead, collection.plus_delta)
        mask = ~self._dead if allow is None else allow & ~self._dead
        return search_one(snap, (list(range(len(ids))), counts), k, mask)


class GlobalStatsBM25(BM25Index):
    """A segment's :class:`~indexes.keyword.bm25.BM25Index` scoring with collection statistics.

    Searches and scores like any BM25 index (rows are the segment's own); changing it would
    make its statistics disagree with the other segments', so ``add`` and ``delete`` refuse.
    """

    def add(self, items: Sequence[Any]) -> np.ndarray:
        """Refused: change an index through its writer."""
        msg = "a segment's BM25 scores with collection statistics: update the index instead"
        raise IndexStateError(msg)

    def delete(self, rows: Sequence[int] | np.ndarray) -> None:
        """Refused, as :meth:`add`."""
        self.add([])


def combined(
    indexes: Sequence[BM25Index],
    deleted: Sequence[npt.NDArray[np.bool_]],
    stats: GlobalStats | None = None,
    *,
    where: str | Path = "segment",
) -> tuple[GlobalStatsBM25, GlobalStats]:
    """One index over the live rows of ``indexes`` (segments, in row order), scoring with
    ``stats`` (default: the statistics of those rows), and the statistics.

    Row ``r`` of the result is the ``r``-th live row of the segments taken one after another.
    The postings are re-expressed in the canonical term space of ``stats`` (a query term a
    segment lacks is still known) and merged, term by term, in row order, so one query is one
    pass of the kernel whatever the number of segments (per-segment kernels cost some 0.1 ms
    each, which eight unmerged segments would pay on every query). The inputs are not changed.

    Raises:
        IndexLoadError: a segment has a live term the given statistics lack (they belong to
            another version); the message names ``where``.
    """
    template = indexes[0]
    if stats is None:
        stats = GlobalStats.merge(
            [segment_counts(i, d) for i, d in zip(indexes, deleted, strict=True)]
        )
    terms_parts, rows_parts, tf_parts, lengths = [], [], [], []
    offset = 0
    for index, mask in zip(indexes, deleted, strict=True):
        corpus = index.corpus()
        postings = corpus.postings()  # rows deleted when written are already gone
        live = ~(np.asarray(corpus.deleted, dtype=np.bool_) | mask)
        renumber = np.cumsum(live, dtype=np.int64) - 1 + offset
        term_of = np.repeat(np.arange(postings.n_terms, dtype=np.int64), np.diff(postings.indptr))
        keep = live[postings.docs]
        terms_parts.append((corpus.vocab.terms, term_of[keep]))
        rows_parts.append(renumber[postings.docs[keep]])
        tf_parts.append(postings.tf[keep])
        lengths.append(np.asarray(corpus.doc_len)[live])
        offset += int(live.sum())
    vocab = Vocabulary(stats.terms)
    get = vocab.get
    global_terms = []
    for words, local in terms_parts:
        ids = np.fromiter((get(t, -1) for t in words), np.int64, len(words))
        mapped = ids[local]
        if np.any(mapped < 0):
            missing = words[int(local[np.flatnonzero(mapped < 0)[0]])]
            msg = f"term {missing!r} is missing from the collection statistics (mixed versions?)"
            raise IndexLoadError(where, msg)
        global_terms.append(mapped)
    term = np.concatenate([np.zeros(0, np.int64), *global_terms])
    rows = np.concatenate([np.zeros(0, np.int64), *rows_parts]).astype(np.int32)
    tf = np.concatenate([np.zeros(0, np.int32), *tf_parts]).astype(np.int32)
    order = np.argsort(term, kind="stable")  # rows stay ascending within a term
    indptr = np.zeros(len(vocab) + 1, np.int64)
    np.cumsum(np.bincount(term, minlength=len(vocab)), out=indptr[1:])
    doc_len = np.concatenate([np.zeros(0, np.int32), *lengths]).astype(np.int32)
    idf = stats.idf(variant=template.variant, epsilon=template.epsilon)
    postings = Postings(indptr, rows[order], tf[order])
    weights = compute_weights(
        postings, doc_len, stats.n_live, stats.total_len, **template.weight_params, global_idf=idf
    )
    arrays = {"indptr": indptr, "docs": postings.docs, "tf": postings.tf}
    arrays.update(weights=weights.weights, doc_len=doc_len, deleted=np.zeros(offset, np.bool_))
    settings = {**template.weight_params, "k3": template.k3}
    index = GlobalStatsBM25.from_arrays(
        vocab, arrays, idf=idf, tokenizer=template.tokenizer, **settings
    )
    return index, stats
