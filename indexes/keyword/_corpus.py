"""The rows a BM25 index has counted, and the corpus statistics every weight depends on.

A BM25 weight depends on the whole corpus: the number of live rows, their total length
(``avgdl``) and each term's document frequency. :class:`Corpus` keeps those counts and the
term-major postings they come from, and lets changes stay cheap: ``add`` only counts the new
rows' tokens (pending until needed), ``delete`` only marks rows, and :meth:`Corpus.postings`
merges the pending rows and drops deleted rows' postings when a query or a save asks. Kept
apart from :class:`~indexes.keyword.bm25.BM25Index`, which owns the parameters, the tokenizer, the
queries and the files, because these statistics are what shards of one index would merge.
Not thread-safe on its own: the index calls it under its lock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ragtools.indexes.keyword._math import (
    Postings,
    RowCounts,
    TokenRows,
    Vocabulary,
    compact_postings,
    count_rows,
    merge_postings,
    to_postings,
)


class Corpus:
    """Counted rows: vocabulary, postings, row lengths, deletions and live totals."""

    def __init__(self) -> None:
        self.vocab = Vocabulary()
        self.doc_len = np.zeros(0, np.int32)
        self.deleted = np.zeros(0, np.bool_)
        self.n_live = 0
        self.total_len = 0  # tokens in live rows
        self._postings = Postings.empty()
        self._pending: list[RowCounts] = []
        self._merged_rows = 0  # rows already in self._postings
        self._compact_needed = False

    @classmethod
    def restore(cls, terms: Sequence[str] | Vocabulary, arrays: Mapping[str, np.ndarray]) -> Corpus:
        """A corpus as saved: every row merged and deleted rows' postings dropped (a
        :class:`Vocabulary` given as ``terms`` is kept, not copied, so shards can share one)."""
        corpus = cls()
        corpus.vocab = terms if isinstance(terms, Vocabulary) else Vocabulary(terms)
        corpus._postings = Postings(arrays["indptr"], arrays["docs"], arrays["tf"])
        corpus.doc_len = arrays["doc_len"]
        corpus.deleted = np.array(arrays["deleted"], dtype=np.bool_)  # writable copy
        corpus._merged_rows = len(corpus.doc_len)
        live = ~corpus.deleted
        corpus.n_live = int(live.sum())
        corpus.total_len = int(corpus.doc_len[live].sum(dtype=np.int64))
        return corpus

    def arrays(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        """What :meth:`restore` reads back, with the posting ``weights`` computed from it."""
        postings = self.postings()
        return {
            "indptr": postings.indptr,
            "docs": postings.docs,
            "tf": postings.tf,
            "weights": weights,
            "doc_len": self.doc_len,
            "deleted": self.deleted,
        }

    @property
    def n_rows(self) -> int:
        """Rows ever added, deleted ones included."""
        return len(self.doc_len)

    def add(self, rows: TokenRows) -> RowCounts:
        """Count new rows (new terms get new ids); their postings wait for :meth:`postings`."""
        counts = count_rows(rows, self.vocab)
        self._pending.append(counts)
        self.doc_len = np.concatenate([self.doc_len, counts.lengths])
        self.deleted = np.concatenate([self.deleted, np.zeros(len(rows), np.bool_)])
        self.n_live += len(rows)
        self.total_len += int(counts.lengths.sum(dtype=np.int64))
        return counts

    def delete(self, ids: np.ndarray) -> int:
        """Mark valid row ids deleted; returns how many were live."""
        fresh = np.unique(ids[~self.deleted[ids]])
        if len(fresh):
            self.deleted[fresh] = True
            self.n_live -= len(fresh)
            self.total_len -= int(self.doc_len[fresh].sum(dtype=np.int64))
            self._compact_needed = True
        return len(fresh)

    def postings(self) -> Postings:
        """The postings of every live row, with pending rows merged in."""
        if self._pending:
            new = to_postings(self._pending, len(self.vocab), self._merged_rows)
            self._postings = new if self._merged_rows == 0 else merge_postings(self._postings, new)
            self._merged_rows = self.n_rows
            self._pending = []
        if self._compact_needed:
            self._postings = compact_postings(self._postings, self.deleted)
            self._compact_needed = False
        return self._postings
