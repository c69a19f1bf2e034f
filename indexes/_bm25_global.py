"""Exact BM25 over several segments: collection statistics over the live rows.

A BM25 weight depends on the whole collection: the number of live rows, their total length
(``avgdl``) and each term's document frequency. A segment that scored with its own counts
would rank differently from one index over every row (Elasticsearch's default "query then
fetch"). Every segment scores with :class:`GlobalStats` instead, so a version's scores are
those of one fresh index over its live rows, bit for bit, whatever history made it:

* :meth:`ShardCounts.of` reads what a segment contributes over its live rows: its terms,
  their document frequencies, the number of live rows and their total length;
* :meth:`GlobalStats.merge` adds them up and numbers the terms in one **canonical order**,
  sorted by the term string. A row's score is a sum over the query's terms in term-id order,
  and floats added in another order can differ in the last bit; Okapi's floor (``epsilon``
  times the mean idf) sums over all terms in that order too. An order that depends only on
  the set of terms (not on which row first used a term, as a single ``BM25Index`` numbers
  them) is what makes an index updated by any sequence of changes score exactly as a fresh
  build of the same rows;
* :func:`with_global_stats` re-expresses a segment's postings in that term space and
  computes their weights from the collection's idf and ``avgdl``. A query term the segment
  lacks is still known (BM25+ adds ``delta * idf`` for it to every matching row, as one
  index does).

A segment so scored is read-only (:class:`GlobalStatsBM25`): segments never change; a new
version writes new segments and records deletions (:mod:`indexes.segments`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtools.indexes._bm25_math import Postings, Vocabulary, compute_idf, compute_weights
from ragtools.indexes.bm25 import BM25Index
from ragtools.parsers.errors import IndexLoadError, IndexStateError

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

    @classmethod
    def of(cls, index: BM25Index) -> ShardCounts:
        """The counts of ``index``'s live rows."""
        corpus = index.corpus()
        postings = corpus.postings()  # live rows only
        df = np.diff(postings.indptr)
        present = np.flatnonzero(df > 0)
        terms = corpus.vocab.terms
        return cls(
            [terms[i] for i in present.tolist()],
            df[present].astype(np.int64),
            corpus.n_live,
            corpus.total_len,
        )


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

    def idf(self, *, variant: Any, epsilon: float) -> tuple[np.ndarray, bool, int]:
        """:func:`~indexes._bm25_math.compute_idf` over every term, in the global order."""
        indptr = np.zeros(len(self.df) + 1, np.int64)
        np.cumsum(self.df, out=indptr[1:])
        return compute_idf(indptr, self.n_live, variant=variant, epsilon=epsilon)


class GlobalStatsBM25(BM25Index):
    """A segment's :class:`~indexes.bm25.BM25Index` scoring with collection statistics.

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


def with_global_stats(
    index: BM25Index,
    stats: GlobalStats,
    vocab: Vocabulary,
    idf: tuple[np.ndarray, bool, int],
    *,
    where: str | Path = "shard",
) -> GlobalStatsBM25:
    """``index``'s rows, scored with ``stats``.

    Args:
        index: one shard's BM25 index (as loaded; it is not changed).
        stats: the statistics of the whole sharded index.
        vocab: ``Vocabulary(stats.terms)``, shared by every shard (built once).
        idf: ``stats.idf(...)`` for the index's variant, shared likewise.
        where: the shard, for the error message.

    Raises:
        IndexLoadError: the shard has a term the statistics lack (they belong to another
            version of the sharded index).
    """
    corpus = index.corpus()
    postings = corpus.postings()
    lengths = np.diff(postings.indptr)
    get = vocab.get
    ids = np.fromiter((get(t, -1) for t in corpus.vocab.terms), np.int64, len(corpus.vocab))
    live = lengths > 0
    if np.any(ids[live] < 0):
        missing = corpus.vocab.terms[int(np.flatnonzero(live & (ids < 0))[0])]
        msg = f"term {missing!r} is missing from the global statistics (mixed versions?)"
        raise IndexLoadError(where, msg)
    counts = np.zeros(len(vocab), np.int64)
    counts[ids[live]] = lengths[live]
    indptr = np.zeros(len(vocab) + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    shift = np.where(live, indptr[np.maximum(ids, 0)] - postings.indptr[:-1], 0)
    dest = np.repeat(shift, lengths) + np.arange(len(postings.docs))
    docs = np.empty_like(postings.docs)
    tf = np.empty_like(postings.tf)
    docs[dest], tf[dest] = postings.docs, postings.tf
    weights = compute_weights(
        Postings(indptr, docs, tf),
        corpus.doc_len,
        stats.n_live,
        stats.total_len,
        **index.weight_params,
        global_idf=idf,
    )
    arrays = {"indptr": indptr, "docs": docs, "tf": tf, "weights": weights.weights}
    arrays.update(doc_len=corpus.doc_len, deleted=corpus.deleted)
    return _scored_shard(index, arrays, vocab, idf)


def _scored_shard(
    template: BM25Index,
    arrays: dict[str, np.ndarray],
    vocab: Vocabulary,
    idf: tuple[np.ndarray, bool, int],
) -> GlobalStatsBM25:
    """A read-only shard over ``arrays`` (global term ids, their ``weights`` computed with
    the global ``idf``), scoring like ``template`` (tokenizer, variant, parameters)."""
    settings = {**template.weight_params, "k3": template.k3}
    return GlobalStatsBM25.from_arrays(
        vocab, arrays, idf=idf, tokenizer=template.tokenizer, **settings
    )
