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
  to every matching row, as one index does). A build stores each new segment in this
  form (its own statistics, its terms sorted) with :func:`save_canonical`: the files that
  saving ``combined`` of it alone would write, from the same code, without making that
  index (a dict of every term, which nothing there reads). One segment's terms are
  mapped by their sorting order alone (:meth:`GlobalStats.ordered`), not looked up one by
  one.

* :class:`SegmentScorer` scores one segment's live rows with the collection's statistics
  without merging anything: per query, from the term frequencies of the query terms'
  postings, through the same weight formula (:func:`~indexes.keyword._math.posting_weights`)
  as one index, summing the terms in the canonical order, so its scores are the merged
  index's bit for bit. It needs no memory for every posting: what a version too large to
  merge (ten million rows in sixteen shards) uses. Weighing every posting of a query's
  common terms in every segment is what such a query would cost (a few hundred thousand
  postings per segment at that size), so it finds the best rows by MaxScore, as Lucene does,
  and weighs only the rows that can be among them.

A segment so scored is read-only (:class:`GlobalStatsBM25`): segments never change; a new
version writes new segments and records deletions (:mod:`indexes.store.segments`).
"""

from __future__ import annotations

import bisect
import itertools
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtools.indexes.errors import IndexLoadError, IndexStateError
from ragtools.indexes.keyword._io import write_index
from ragtools.indexes.keyword._math import (
    Postings,
    Vocabulary,
    compute_idf,
    compute_weights,
    length_factors,
    posting_weights,
)
from ragtools.indexes.keyword._query import (
    Snapshot,
    plus_constant,
    query_terms,
    search_one,
    weighted_terms,
)
from ragtools.indexes.keyword.bm25 import BM25Index, Query, TokenRows
from ragtools.indexes.ranking import Mask, Ranking

logger = logging.getLogger(__name__)

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
    ids: Ints | None = None
    """The segment's own id of each of ``terms`` (``None``: not counted from a segment)."""


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
        if len(shards) == 1:  # one segment's terms are distinct: they only need ordering
            return cls.ordered(shards[0])[0]
        totals: dict[str, int] = {}
        for s in shards:
            if not totals:
                totals = dict(zip(s.terms, s.df.tolist(), strict=True))
                continue
            get = totals.get
            for term, df in zip(s.terms, s.df.tolist(), strict=True):
                totals[term] = get(term, 0) + df
        summed = ShardCounts(
            list(totals),
            np.fromiter(totals.values(), np.int64, len(totals)),
            sum(s.n_live for s in shards),
            sum(s.total_len for s in shards),
        )
        return cls.ordered(summed)[0]

    @classmethod
    def ordered(cls, counts: ShardCounts) -> tuple[GlobalStats, Ints]:
        """The statistics of ``counts`` (distinct terms) alone, their terms in the canonical
        order, and the position in ``counts.terms`` of each: the one place that order is
        made (by the term string; the module docstring says why)."""
        terms = counts.terms
        order = sorted(range(len(terms)), key=terms.__getitem__)
        positions = np.fromiter(order, np.int64, len(order))
        ordered = list(map(terms.__getitem__, order))
        return cls(counts.n_live, counts.total_len, ordered, counts.df[positions]), positions

    @classmethod
    def of_segments(
        cls, indexes: Sequence[BM25Index], deleted: Sequence[npt.NDArray[np.bool_]]
    ) -> GlobalStats:
        """The statistics of the segments' live rows (``deleted``: the version's deletions
        in each): each one's :func:`segment_counts`, merged."""
        return cls.merge([segment_counts(i, d) for i, d in zip(indexes, deleted, strict=True)])

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
        list(map(words.__getitem__, present.tolist())),
        df[present].astype(np.int64),
        int(live.sum()),
        int(np.asarray(corpus.doc_len)[live].sum(dtype=np.int64)),
        present.astype(np.int64),
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


PRUNE_SLACK = 1e-9
"""Relative margin added to the score bounds of pruned scoring, far above the rounding of
a sum of a few weights (about 1e-15), so a bound is never below a score it bounds."""

PRUNE_SHARE = 32
"""Pruned scoring gives up (and scores every posting) once its candidate rows come from
more than this share of the query's postings: a candidate costs a lookup in every query
term's postings, some thirty times what adding one posting costs."""


class SegmentScorer:
    """One segment's live rows scored with a :class:`Collection`'s statistics, per query
    (see the module docstring). Rows are the segment's own.

    A query's ``k`` best rows are found, whenever that can be proved cheaply, without
    computing the weight of every posting, by MaxScore (Turtle and Flood 1995; Lucene's
    ``MaxScoreBulkScorer``):

    * every query term has an upper bound on what it adds to a row: its idf and query
      weight times a bound on its postings' term-frequency part under the collection's
      length normalisation (:meth:`_saturated`: a loose one from its largest frequency,
      and when that cannot prove a result, the tight one), kept per term and scorer;
    * terms are taken in decreasing bound, as *essential*, until the ``k``-th best exact
      score among the rows that hold an essential term is above the sum of the other
      terms' bounds: a row holding none of them scores at most that sum, so it cannot be
      among the ``k`` best;
    * candidate rows are scored exactly: each term's term frequency is looked up in its
      postings (sorted by row), weighed by the one formula
      (:func:`~indexes.keyword._math.posting_weights`) and summed in canonical term
      order, so the scores are the exhaustive path's bit for bit, and all rows tied with
      the ``k``-th score are among the candidates.

    With one rare term in a query of common ones, the essential rows are a few hundred
    among hundreds of thousands of postings. When pruning cannot be proved within
    :data:`PRUNE_SHARE`, or a weight can be zero or negative (BM25 Okapi's floored idf), the
    segment is scored exhaustively, as one index would be.

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
        self._live = ~self._dead  # read by every query: made once
        self._collection = collection
        params = collection.weight_params
        avgdl = collection.stats.total_len / collection.stats.n_live
        self._factors = length_factors(
            self._doc_len, avgdl, variant=params["variant"], k1=params["k1"], b=params["b"]
        )
        self._weigh = {name: params[name] for name in ("variant", "k1", "delta")}
        self._loose = np.full(len(self._bounds) - 1, np.nan)
        self._tight = self._loose.copy()
        self._shortest = self._factors.min(initial=np.inf, keepdims=True)

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
        get, bounds = self._local.get, self._bounds
        locals_: list[int] = []
        spans: list[tuple[int, int]] = []
        for term in ids:  # canonical order: the sums add as one index's do
            local = get(terms[term])
            locals_.append(-1 if local is None else local)
            spans.append((0, 0) if local is None else (int(bounds[local]), int(bounds[local + 1])))
        mask = self._live if allow is None else allow & self._live
        idf = collection.idf[ids]
        if collection.positive and bool((idf > 0).all()):  # bounds on sums need weights > 0
            for tight in (False, True):
                found = self._pruned(ids, idf, counts, locals_, spans, k, mask, tight=tight)
                if found is not None:
                    return found
        return self._exhaustive(ids, counts, spans, k, mask)

    def _exhaustive(
        self,
        ids: list[int],
        counts: Sequence[float],
        spans: list[tuple[int, int]],
        k: int,
        mask: Mask,
    ) -> Ranking:
        """Every posting of the query's terms weighed, then the one query kernel."""
        collection, postings = self._collection, self._postings
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
        return search_one(snap, (list(range(len(ids))), counts), k, mask)

    def _pruned(
        self,
        ids: list[int],
        idf: npt.NDArray[np.float64],
        counts: Sequence[float],
        locals_: list[int],
        spans: list[tuple[int, int]],
        k: int,
        mask: Mask,
        *,
        tight: bool,
    ) -> Ranking | None:
        """MaxScore with the loose or tight term bounds (see the class docstring and
        :meth:`_saturated`), or ``None`` when it cannot prove its result within
        :data:`PRUNE_SHARE` of the query's postings. ``idf``: the query terms' (of ``ids``)."""
        sizes = [end - start for start, end in spans]
        budget = sum(sizes) // PRUNE_SHARE
        term_bounds = np.array(
            [
                0.0 if local < 0 else idf[i] * counts[i] * self._saturated(local, tight)
                for i, local in enumerate(locals_)
            ]
        ) * (1 + PRUNE_SLACK)
        order = np.argsort(-term_bounds, kind="stable").tolist()
        rest = np.append(np.cumsum(term_bounds[order][::-1])[::-1], 0.0) * (1 + PRUNE_SLACK)
        docs, plus = self._postings.docs, self._collection.plus_delta

        def rows_of(terms: list[int]) -> npt.NDArray[np.int64]:
            parts = [docs[spans[i][0] : spans[i][1]] for i in terms]
            rows = np.unique(np.concatenate(parts)).astype(np.int64)
            return rows[mask[rows]]

        # A lower bound of the k-th best score: the k-th best exact score among the rows
        # of the fewest terms of highest bound that hold k allowed rows.
        theta = -np.inf
        size = 0
        for j in range(len(order)):
            size += sizes[order[j]]
            if size > budget:
                return None
            rows = rows_of(order[: j + 1])
            if len(rows) >= k:
                scores = self._exact(rows, ids, counts, spans)
                theta = float(np.partition(scores, len(scores) - k)[len(scores) - k])
                break
        # The essential terms: the fewest of highest bound whose rows every row that may
        # reach theta holds (the others' bounds add up to less than theta).
        n_essential = next((j for j in range(1, len(order) + 1) if rest[j] < theta), len(order))
        if sum(sizes[i] for i in order[:n_essential]) > budget:
            return None
        if n_essential > j + 1 or len(rows) < k:
            rows = rows_of(order[:n_essential])
            scores = self._exact(rows, ids, counts, spans)
        scores += plus_constant(plus, idf.tolist(), counts)
        return Ranking.top(scores, k, rows)

    def _saturated(self, local: int, tight: bool) -> float:
        """A bound on the weights of term ``local``'s postings for an idf of 1 (kept).

        A weight grows with the term frequency and falls with the row's length in every
        variant. The loose bound is the weight of the term's largest frequency in the
        segment's shortest row: it reads the term's frequencies alone (contiguous). The
        tight one is the largest weight itself, which also gathers its rows' lengths, so
        it is computed only when the loose bounds cannot prove a query's result.
        """
        kept = self._tight if tight else self._loose
        value = float(kept[local])
        if np.isnan(value):
            start, end = int(self._bounds[local]), int(self._bounds[local + 1])
            tf = self._postings.tf[start:end]
            if tight:
                norms = self._factors[self._postings.docs[start:end]]
            else:
                tf, norms = tf.max(initial=0, keepdims=True), self._shortest
            weights = posting_weights(1.0, tf, norms, **self._weigh)
            value = float(weights.max(initial=0.0))
            kept[local] = value
        return value

    def _exact(
        self,
        rows: npt.NDArray[np.int64],
        ids: list[int],
        counts: Sequence[float],
        spans: list[tuple[int, int]],
    ) -> npt.NDArray[np.float64]:
        """The query's sums for ``rows`` (ascending), term by term in canonical order, each
        row's term frequency looked up in the term's postings."""
        sums = np.zeros(len(rows), np.float64)
        norms = self._factors[rows]
        postings, idf = self._postings, self._collection.idf
        needles = rows.astype(postings.docs.dtype)  # as the postings: no converted copy of them
        for term, count, (start, end) in zip(ids, counts, spans, strict=True):
            if start == end or len(rows) == 0:
                continue
            docs = postings.docs[start:end]
            at = np.minimum(np.searchsorted(docs, needles), end - start - 1)
            has = docs[at] == needles
            if not has.any():
                continue
            weights = posting_weights(
                idf[term], postings.tf[start:end][at[has]], norms[has], **self._weigh
            )
            sums[has] += weights if count == 1 else weights * count
        return sums


class GlobalStatsBM25(BM25Index):
    """A segment's :class:`~indexes.keyword.bm25.BM25Index` scoring with collection statistics.

    Searches and scores like any BM25 index (rows are the segment's own); changing it would
    make its statistics disagree with the other segments', so ``add`` and ``delete`` refuse.
    """

    def add(self, items: Sequence[Any] | TokenRows) -> np.ndarray:
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
    made = _canonical(indexes, deleted, stats, where)
    template = indexes[0]
    settings = {**template.weight_params, "k3": template.k3}
    index = GlobalStatsBM25.from_arrays(
        made.stats.terms if made.vocab is None else made.vocab,
        made.arrays,
        idf=made.idf,
        tokenizer=template.tokenizer,
        **settings,
    )
    return index, made.stats


def save_canonical(index: BM25Index, directory: str | Path) -> Path:
    """Save ``index``, a new segment's, in its canonical form: what ``combined([index],
    [no row deleted])`` would save (the same files, byte for byte), without building that
    index, whose vocabulary (a dict of every term) nothing here reads.

    Returns:
        The manifest path (as :meth:`BM25Index.save`).
    """
    started = time.perf_counter()
    made = _canonical([index], [np.zeros(index.n_rows, np.bool_)], None, "segment")
    path = write_index(directory, index.params, made.stats.terms, made.arrays)
    logger.info(
        "BM25: saved %d rows, %d terms in canonical form to %s in %.3fs",
        index.n_rows,
        len(made.stats.terms),
        directory,
        time.perf_counter() - started,
    )
    return path


@dataclass(frozen=True)
class _Canonical:
    """The arrays of one index over the live rows of some segments (as
    :meth:`BM25Index.arrays` gives them), the statistics and idf they score with, and
    the vocabulary of those statistics when mapping the terms made one."""

    arrays: dict[str, np.ndarray]
    stats: GlobalStats
    idf: tuple[np.ndarray, bool, int]
    vocab: Vocabulary | None


def _canonical(
    indexes: Sequence[BM25Index],
    deleted: Sequence[npt.NDArray[np.bool_]],
    stats: GlobalStats | None,
    where: str | Path,
) -> _Canonical:
    """What :func:`combined` and :func:`save_canonical` make: the one definition of the
    canonical form."""
    template = indexes[0]
    lone: Ints | None = None  # one segment's own statistics: its term ids, canonically
    if stats is None and len(indexes) == 1:
        counts = segment_counts(indexes[0], deleted[0])
        stats, canonical = GlobalStats.ordered(counts)
        assert counts.ids is not None  # counted from the segment
        lone = counts.ids[canonical]
    elif stats is None:
        stats = GlobalStats.of_segments(indexes, deleted)
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
    vocab = None if lone is not None else Vocabulary(stats.terms)
    global_terms = []
    for words, local in terms_parts:
        if vocab is not None:
            ids = np.fromiter(map(vocab.get, words, itertools.repeat(-1)), np.int64, len(words))
        else:  # the segment's live terms are the collection's: their order maps them
            assert lone is not None
            ids = np.full(len(words), -1, np.int64)
            ids[lone] = np.arange(len(lone), dtype=np.int64)
        mapped = ids[local]
        if np.any(mapped < 0):
            missing = words[int(local[np.flatnonzero(mapped < 0)[0]])]
            msg = f"term {missing!r} is missing from the collection statistics (mixed versions?)"
            raise IndexLoadError(where, msg)
        global_terms.append(mapped)
    n_terms = len(stats.terms)
    term = np.concatenate([np.zeros(0, np.int64), *global_terms])
    rows = np.concatenate([np.zeros(0, np.int64), *rows_parts]).astype(np.int32)
    tf = np.concatenate([np.zeros(0, np.int32), *tf_parts]).astype(np.int32)
    order = np.argsort(term, kind="stable")  # rows stay ascending within a term
    indptr = np.zeros(n_terms + 1, np.int64)
    np.cumsum(np.bincount(term, minlength=n_terms), out=indptr[1:])
    doc_len = np.concatenate([np.zeros(0, np.int32), *lengths]).astype(np.int32)
    idf = stats.idf(variant=template.variant, epsilon=template.epsilon)
    postings = Postings(indptr, rows[order], tf[order])
    weights = compute_weights(
        postings, doc_len, stats.n_live, stats.total_len, **template.weight_params, global_idf=idf
    )
    arrays = {"indptr": indptr, "docs": postings.docs, "tf": postings.tf}
    arrays.update(weights=weights.weights, doc_len=doc_len, deleted=np.zeros(offset, np.bool_))
    return _Canonical(arrays, stats, idf, vocab)
