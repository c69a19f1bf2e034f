"""Exact BM25 across shards: global statistics, merged from each shard's counts.

A BM25 weight depends on the whole corpus: the number of live rows, their total length
(``avgdl``) and each term's document frequency. A shard that scored with its own counts would
rank differently from one index over every row (Elasticsearch's default "query then fetch").
Here every shard scores with :class:`GlobalStats` instead, so its scores are the single
index's scores, bit for bit, not merely close:

* :meth:`ShardCounts.of` reads what a shard contributes: its terms, their document
  frequencies, live rows and total length, and the global row where each term first occurs;
* :meth:`GlobalStats.merge` adds them up. It numbers the terms as one index over all rows
  would (by first occurrence: row, then position in the row), because a row's score is a sum
  over the query's terms in term-id order, and floats added in another order can differ in
  the last bit; Okapi's floor (``epsilon`` times the mean idf) sums over terms in that order
  too;
* :func:`with_global_stats` re-expresses a shard's postings in the global term space and
  computes their weights from the global idf and ``avgdl``. A query term the shard lacks is
  still known (BM25+ adds ``delta * idf`` for it to every matching row, as the single index
  does).
* :func:`save_scored` writes those arrays (``.npy``, the layout of :mod:`indexes._bm25_io`)
  with each top version, and :func:`load_scored` maps them read-only: opening a sharded index
  then costs no re-expression and holds no posting in memory (16 bytes a posting, some 50
  postings a document, would not fit at ten million documents). The statistics change with
  any shard, so every top version writes every shard's arrays anew.

A shard so scored is read-only (:class:`GlobalStatsBM25`): a change to any shard changes the
statistics of all, so changes go through the sharded writer, which re-merges them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtools.indexes._bm25_io import ARRAYS, load_arrays
from ragtools.indexes._bm25_math import Postings, Vocabulary, compute_idf, compute_weights
from ragtools.indexes._persist import save_npy
from ragtools.indexes.bm25 import BM25Index
from ragtools.parsers.errors import IndexLoadError, IndexStateError

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class ShardCounts:
    """What one shard contributes to the global statistics.

    Attributes:
        terms: the shard's terms that occur in a live row, in its own id order.
        df: live rows containing each term.
        first_row: the global row of each term's first live occurrence.
        n_live: live rows; total_len: their tokens.
    """

    terms: list[str]
    df: Ints
    first_row: Ints
    n_live: int
    total_len: int

    @classmethod
    def of(cls, index: BM25Index, global_rows: npt.ArrayLike) -> ShardCounts:
        """The counts of ``index``, whose row ``i`` is row ``global_rows[i]`` of the whole."""
        corpus = index.corpus()
        postings = corpus.postings()  # live rows only, rows ascending within a term
        df = np.diff(postings.indptr)
        present = np.flatnonzero(df > 0)
        first_local = postings.docs[postings.indptr[present]]
        rows = np.asarray(global_rows, dtype=np.int64)
        terms = corpus.vocab.terms
        return cls(
            [terms[i] for i in present.tolist()],
            df[present].astype(np.int64),
            rows[first_local],
            corpus.n_live,
            corpus.total_len,
        )


@dataclass(frozen=True)
class GlobalStats:
    """The statistics every shard scores with: what one index over all rows would count.

    Attributes:
        n_live: rows in the whole index (BM25's ``N``).
        total_len: their tokens (``avgdl = total_len / n_live``).
        terms: every term, numbered as one index over all rows numbers them.
        df: document frequency of each term, aligned with ``terms``.
    """

    n_live: int
    total_len: int
    terms: list[str]
    df: Ints

    @classmethod
    def merge(cls, shards: Sequence[ShardCounts]) -> GlobalStats:
        """Add up the shards' counts (the shards hold disjoint rows)."""
        n_live = sum(s.n_live for s in shards)
        total_len = sum(s.total_len for s in shards)
        # One dict numbers the distinct terms (a probe per shard term: far cheaper than
        # sorting the terms as strings).
        numbers: dict[str, int] = {}
        number = numbers.setdefault
        inverse = np.concatenate(
            [np.zeros(0, np.int64)]
            + [
                np.fromiter((number(t, len(numbers)) for t in s.terms), np.int64, len(s.terms))
                for s in shards
            ]
        )
        if len(inverse) == 0:
            return cls(n_live, total_len, [], np.zeros(0, np.int64))
        unique = np.array(list(numbers), dtype=object)
        df = np.concatenate([s.df for s in shards])
        first = np.concatenate([s.first_row for s in shards])
        local = np.concatenate([np.arange(len(s.terms), dtype=np.int64) for s in shards])
        total_df = np.zeros(len(unique), np.int64)
        np.add.at(total_df, inverse, df)
        # Each term's first occurrence: the smallest (global row, id in that row's shard);
        # a shard numbers the terms first seen in one row by their position in it.
        order = np.lexsort((local, first, inverse))
        sorted_terms = inverse[order]
        head = order[np.r_[True, sorted_terms[1:] != sorted_terms[:-1]]]
        rank = np.lexsort((local[head], first[head]))
        return cls(n_live, total_len, unique[rank].tolist(), total_df[rank])

    def idf(self, *, variant: Any, epsilon: float) -> tuple[np.ndarray, bool, int]:
        """:func:`~indexes._bm25_math.compute_idf` over every term, in the global order."""
        indptr = np.zeros(len(self.df) + 1, np.int64)
        np.cumsum(self.df, out=indptr[1:])
        return compute_idf(indptr, self.n_live, variant=variant, epsilon=epsilon)

    def to_json(self) -> dict[str, Any]:
        """A JSON object (``terms`` and ``df`` as parallel lists)."""
        return {
            "n_live": self.n_live,
            "total_len": self.total_len,
            "terms": self.terms,
            "df": self.df.tolist(),
        }

    @classmethod
    def from_json(cls, data: Any, path: str | Path) -> GlobalStats:
        """Read :meth:`to_json`'s output back, checked.

        Raises:
            IndexLoadError: a malformed object (naming ``path``).
        """
        try:
            terms, df = data["terms"], np.asarray(data["df"], dtype=np.int64)
            n_live, total_len = int(data["n_live"]), int(data["total_len"])
            ok = (
                isinstance(terms, list)
                and all(isinstance(t, str) for t in terms)
                and df.shape == (len(terms),)
                and bool(np.all(df > 0))
                and n_live >= 0
                and total_len >= 0
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexLoadError(path, f"invalid global BM25 statistics ({exc})") from exc
        if not ok or len(set(terms)) != len(terms):
            raise IndexLoadError(path, "invalid global BM25 statistics")
        return cls(n_live, total_len, terms, df)


class GlobalStatsBM25(BM25Index):
    """A shard's :class:`~indexes.bm25.BM25Index` scoring with global statistics.

    Searches and scores like any BM25 index (rows are the shard's own); changing it would
    make its statistics disagree with the other shards', so ``add`` and ``delete`` refuse.
    """

    def add(self, items: Sequence[Any]) -> np.ndarray:
        """Refused: change a sharded index through its writer."""
        msg = "a shard's BM25 scores with global statistics: update the sharded index instead"
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


def save_scored(shard: GlobalStatsBM25, directory: Path) -> list[str]:
    """Write ``shard``'s postings and weights (global term ids) as ``.npy`` files in
    ``directory`` (created); returns their names."""
    directory.mkdir(parents=True, exist_ok=True)
    arrays = shard.arrays()
    for name, dtype in ARRAYS.items():
        save_npy(directory / f"{name}.npy", np.asarray(arrays[name], dtype=dtype))
    return [f"{name}.npy" for name in ARRAYS]


def load_scored(
    directory: Path,
    template: BM25Index,
    vocab: Vocabulary,
    idf: tuple[np.ndarray, bool, int],
    n_rows: int,
) -> GlobalStatsBM25:
    """Map what :func:`save_scored` wrote, as a shard of ``n_rows`` rows scoring like
    ``template`` (tokenizer, variant, parameters) with the global ``vocab`` and ``idf``.

    The files' SHA-256 are those the sealed top manifest lists (checked when it is read);
    here their dtypes, shapes and pointers are checked, not every posting, which would bring
    every page of the mapping into memory.

    Raises:
        IndexLoadError: a missing file, or one that does not fit the others (named).
    """
    arrays = load_arrays(directory, len(vocab), n_rows, mmap=True, read_postings=False)
    return _scored_shard(template, arrays, vocab, idf)
