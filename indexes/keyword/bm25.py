"""BM25 keyword index: rank-bm25's scores, vectorised, incremental, filterable, pickle-free.

What was chosen, and why:

* **Formulas** are rank-bm25's (``BM25Okapi`` with its ``epsilon * mean idf`` floor for
  negative idfs, ``BM25L``, ``BM25Plus``), so ``get_scores`` equals
  ``rank_bm25.<Variant>.get_scores`` on the same tokens; plus the Lucene variant of the BEIR
  baselines (``idf = log(1 + (N - df + 0.5) / (df + 0.5))``, ``tf (k1 + 1) / (tf + k1 (1 - b +
  b dl / avgdl))``: bm25s's ``"lucene"`` times the constant ``k1 + 1``).
* **Repeated query terms**: a term repeated ``n`` times in the query counts ``n (k3 + 1) / (k3
  + n)`` times (Robertson's ``k3``, the query-side twin of ``k1``). ``k3 = inf`` counts it ``n``
  times, as rank-bm25 does, and is the default whenever a variant is named; ``BM25Index()``'s
  tuned default saturates (see :data:`DEFAULT_PARAMS`). ``k3`` changes no stored weight.
* **Storage** is a term-major sparse matrix with the score of every (term, row) pair
  precomputed (see :mod:`indexes.keyword._math`); a query adds its terms' postings into one score
  per row (:mod:`indexes.keyword._query`).
* **Incremental**: ``add`` and ``delete`` only update the counts (:mod:`indexes.keyword._corpus`);
  the next query or ``save`` recomputes the weights from the live rows, in time linear in the
  index size, so scores equal a fresh build on the surviving rows. Row ids are stable: a
  deleted row keeps its id and is never reused.
* **Results**: ``search`` returns a :class:`~indexes.ranking.Ranking` of only rows that
  contain at least one query term, so a filter matching 3 rows returns those 3 and no
  zero-score filler; BM25+ adds ``delta * idf`` to every row, but a row matching no term is
  still not returned. Order is score descending, then row ascending. ``get_scores`` gives
  every row a score; deleted rows get ``-inf``.
* **Empty cases**: searching an index without live rows raises :class:`IndexStateError`; an
  empty or all-unknown query returns an empty result (``get_scores``: zeros).

Defaults: ``BM25Index()`` is the configuration chosen by nDCG@10 on SciFact's *train*
queries (:data:`DEFAULT_VARIANT` with :data:`DEFAULT_PARAMS` and ``Tokenizer()``'s defaults);
naming a variant, e.g. ``BM25Index(variant="okapi")``, gives rank-bm25's own defaults for it
(:data:`VARIANT_DEFAULTS`). rank-bm25's BM25+ adds ``delta * idf`` to every row, matching or
not, so ``delta`` shifts all scores of a query equally and never changes a ranking.

Example:
    >>> index = BM25Index()
    >>> index.add(["the cat sat", "a dog barked", "cats and dogs"]).tolist()
    [0, 1, 2]
    >>> index.search("cat", k=2).rows.tolist()
    [0, 2]
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Self

import numpy as np

from ragtools.indexes.errors import IndexLoadError, IndexStateError
from ragtools.indexes.keyword import _query as q
from ragtools.indexes.keyword._corpus import Corpus
from ragtools.indexes.keyword._io import index_arguments, read_index, write_index
from ragtools.indexes.keyword._math import (
    DEFAULT_PARAMS,
    DEFAULT_VARIANT,
    VARIANT_DEFAULTS,
    TokenRows,
    Variant,
    Vocabulary,
    Weights,
    compute_idf,
    compute_weights,
    resolve_params,
)
from ragtools.indexes.ranking import Ranking, allow_mask, check_k, row_ids
from ragtools.indexes.text.tokenize import Tokenizer
from ragtools.parsers.document import Chunk
from ragtools.parsers.errors import ConfigError
from ragtools.parsers.progress import progress

__all__ = [
    "DEFAULT_PARAMS",
    "DEFAULT_VARIANT",
    "VARIANT_DEFAULTS",
    "BM25Index",
    "Query",
    "TokenRows",
    "Variant",
]

logger = logging.getLogger(__name__)

Query = str | Sequence[str] | Mapping[str, float]
"""A query: text (tokenized with the index's tokenizer), an already tokenized list, or a
weighted query mapping index terms (tokens as the tokenizer gives them) to weights ``>= 0``.
A weight multiplies the term's BM25 contribution, as a Lucene ``BoostQuery`` does; ``k3``
does not apply to a weighted query (its weights are taken as given)."""

Allow = np.ndarray | Sequence[int] | Sequence[bool]
"""A boolean mask over all rows, or a collection of allowed row ids (see
:func:`indexes.ranking.allow_mask`)."""


class BM25Index:
    """A BM25 keyword index over rows of text.

    Args:
        tokenizer: how texts and text queries are tokenized; ``None`` uses ``Tokenizer()``
            (whose defaults were tuned with this index's).
        variant: ``"okapi"``, ``"bm25l"``, ``"bm25plus"`` (rank-bm25's) or ``"lucene"``;
            ``None`` is the tuned default (:data:`DEFAULT_VARIANT`, :data:`DEFAULT_PARAMS`).
        k1: term-frequency saturation (``>= 0``); ``None`` takes the default (tuned when
            ``variant`` is ``None``, else the variant's rank-bm25 default).
        b: length normalisation in ``[0, 1]``; ``None`` takes the default likewise.
        epsilon: Okapi only: negative idfs are floored to ``epsilon * mean idf``.
        delta: BM25L/BM25+ only; ``None`` takes the variant's default (0.5 and 1.0).
        k3: query-term frequency saturation (``>= 0``; ``math.inf``: a repeated query term
            counts once per occurrence, rank-bm25's rule); ``None`` takes the default (tuned
            when ``variant`` is ``None``, else ``inf``).

    Raises:
        ConfigError: an unknown variant or an out-of-range parameter.
    """

    def __init__(
        self,
        tokenizer: Tokenizer | None = None,
        *,
        variant: Variant | None = None,
        k1: float | None = None,
        b: float | None = None,
        epsilon: float = 0.25,
        delta: float | None = None,
        k3: float | None = None,
    ) -> None:
        self.tokenizer = tokenizer if tokenizer is not None else Tokenizer()
        self.variant, self.k1, self.b, self.epsilon, self.delta, self.k3 = resolve_params(
            variant, k1, b, epsilon, delta, k3
        )
        self._corpus = Corpus()
        self._ready: q.Snapshot | None = None
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ state

    @property
    def weight_params(self) -> dict[str, Any]:
        """The settings the stored weights depend on, as ``compute_weights`` takes them."""
        names = ("variant", "k1", "b", "epsilon", "delta")
        return {name: getattr(self, name) for name in names}

    @property
    def params(self) -> dict[str, Any]:
        """The settings as a JSON dict (variant, k1, b, epsilon, delta, k3, tokenizer);
        an infinite ``k3`` is written as ``null`` (JSON has no infinity)."""
        return {
            **self.weight_params,
            "k3": None if self.k3 == math.inf else self.k3,
            "tokenizer": self.tokenizer.to_dict(),
        }

    @property
    def n_rows(self) -> int:
        """Rows ever added, deleted ones included (the length of :meth:`get_scores`)."""
        return self._corpus.n_rows

    def __len__(self) -> int:
        """Live (not deleted) rows."""
        return self._corpus.n_live

    @property
    def deleted(self) -> np.ndarray:
        """Read-only boolean mask of deleted rows, length :attr:`n_rows`."""
        view = self._corpus.deleted.view()
        view.flags.writeable = False
        return view

    @property
    def vocabulary_size(self) -> int:
        """Distinct terms ever indexed."""
        return len(self._corpus.vocab)

    def __repr__(self) -> str:
        return (
            f"BM25Index(variant={self.variant!r}, k1={self.k1}, b={self.b}, k3={self.k3}, "
            f"rows={self.n_rows}, live={len(self)}, terms={self.vocabulary_size})"
        )

    # --------------------------------------------------------------- mutation

    def add(self, items: Sequence[str | Chunk | Sequence[str]] | TokenRows) -> np.ndarray:
        """Index new rows.

        Args:
            items: texts, :class:`~parsers.document.Chunk` objects (their ``text``) or
                already tokenized lists of strings, in any mix; or tokenized rows held
                flat (:class:`TokenRows`, what a build reads back from its spill).

        Returns:
            The new row ids (int64), consecutive, in the order of ``items``.

        Raises:
            ConfigError: an item of another type.
        """
        started = time.perf_counter()
        if isinstance(items, TokenRows):
            rows = items
        elif all(type(item) is list for item in items):
            rows = TokenRows.of(items)  # type: ignore[arg-type]
        else:
            shown = progress(items, total=len(items), desc="indexing", unit="chunks")
            rows = TokenRows.of([self._as_tokens(item, "item") for item in shown])
        with self._lock:
            first = self.n_rows
            if not len(rows):
                return np.zeros(0, np.int64)
            self._corpus.add(rows)
            self._ready = None
        logger.info(
            "BM25: added %d rows (%d tokens) in %.3fs; %d terms",
            len(rows),
            int(rows.lengths.sum(dtype=np.int64)),
            time.perf_counter() - started,
            self.vocabulary_size,
        )
        return np.arange(first, first + len(rows), dtype=np.int64)

    def delete(self, rows: Sequence[int] | np.ndarray) -> None:
        """Delete rows by id; deleting a deleted row again does nothing.

        Raises:
            ConfigError: a row id outside ``[0, n_rows)``.
        """
        with self._lock:
            fresh = self._corpus.delete(row_ids(rows, self.n_rows, "rows"))
            if not fresh:
                return
            self._ready = None
        logger.info("BM25: deleted %d rows; %d live", fresh, len(self))

    def corpus(self) -> Corpus:
        """The counted rows (vocabulary, live postings, row lengths, deletions, live totals),
        brought up to date: what merging the statistics of several indexes reads
        (:mod:`indexes.keyword.collection`). Read it; only the index changes it (under its lock)."""
        with self._lock:
            self._corpus.postings()  # merges pending rows, drops deleted rows' postings
            return self._corpus

    def arrays(self) -> dict[str, np.ndarray]:
        """The index as arrays, weights brought up to date: what :meth:`save` writes and
        :meth:`from_arrays` takes back (``indptr``, ``docs``, ``tf``, ``weights``,
        ``doc_len``, ``deleted``; the postings are term-major over the live rows)."""
        with self._lock:
            return self._corpus.arrays(self._snapshot().weights.weights)

    def _snapshot(self) -> q.Snapshot:
        """Bring postings and weights up to date (if anything changed) and return them."""
        ready = self._ready
        if ready is not None:
            return ready
        with self._lock:
            if self._ready is not None:
                return self._ready
            started = time.perf_counter()
            corpus = self._corpus
            weights = compute_weights(
                corpus.postings(),
                corpus.doc_len,
                corpus.n_live,
                corpus.total_len,
                **self.weight_params,
            )
            self._ready = self._make_snapshot(weights)
            logger.debug("BM25: weights recomputed in %.3fs", time.perf_counter() - started)
            return self._ready

    def _make_snapshot(self, weights: Weights) -> q.Snapshot:
        plus_delta = self.delta if self.variant == "bm25plus" else 0.0
        corpus = self._corpus
        postings, deleted = corpus.postings(), corpus.deleted.copy()
        return q.Snapshot(postings, weights, self.n_rows, corpus.n_live, deleted, plus_delta)

    # ---------------------------------------------------------------- queries

    def get_scores(self, query: Query) -> np.ndarray:
        """BM25 score of every row for ``query``.

        Returns:
            float64 array of length :attr:`n_rows`; higher is better; deleted rows are
            ``-inf``. On the live rows it equals
            ``rank_bm25.BM25<Variant>(tokens).get_scores(query_tokens)``.

        Raises:
            IndexStateError: the index has no live rows.
        """
        snap = self._live_snapshot()
        return q.dense_scores(snap, self._terms(query, snap))

    def search(self, query: Query, k: int = 10, allow: Allow | None = None) -> Ranking:
        """The ``k`` best rows for ``query`` among those containing a query term.

        Args:
            query: text or token list.
            k: maximum number of results (``>= 1``).
            allow: restrict the search to these rows (see :func:`indexes.ranking.allow_mask`),
                applied before ranking, so ``k`` results come back whenever ``k`` allowed rows
                contain a query term.

        Returns:
            Rows and float64 scores, score descending, ties by row ascending. Empty when no
            allowed row contains a query term.

        Raises:
            ConfigError: ``k < 1`` or an invalid ``allow``.
            IndexStateError: the index has no live rows.
        """
        k, snap = check_k(k), self._live_snapshot()
        mask = allow_mask(allow, snap.n_rows)
        return q.search_one(snap, self._terms(query, snap), k, mask)

    def search_batch(
        self,
        queries: Sequence[Query],
        k: int = 10,
        allow: Allow | None = None,
        n_threads: int | None = None,
    ) -> list[Ranking]:
        """:meth:`search` for many queries; one ranking per query, in order.

        Args:
            queries: texts or token lists.
            k: maximum number of results per query.
            allow: one filter applied to every query (see :meth:`search`).
            n_threads: worker threads; ``None`` or 1 runs in the calling thread, -1 uses
                every CPU (numpy releases the GIL in the gathers and sums).

        Raises:
            ConfigError: ``k < 1``, an invalid ``allow`` or ``n_threads``.
            IndexStateError: the index has no live rows.
        """
        k = check_k(k)
        n_workers = q.workers(n_threads)
        snap = self._live_snapshot()
        mask = allow_mask(allow, snap.n_rows)
        terms = [self._terms(query, snap) for query in queries]
        if n_workers == 1 or len(terms) < 2:
            return [q.search_one(snap, t, k, mask) for t in terms]
        with ThreadPoolExecutor(max_workers=n_workers) as pool:
            return list(pool.map(lambda t: q.search_one(snap, t, k, mask), terms))

    def _live_snapshot(self) -> q.Snapshot:
        snap = self._snapshot()
        if snap.n_live == 0:
            msg = "the BM25 index has no live rows: add documents before searching"
            raise IndexStateError(msg)
        return snap

    def _terms(self, query: Query, snap: q.Snapshot) -> q.QueryTerms:
        if isinstance(query, Mapping):
            return q.weighted_terms(query, self._corpus.vocab, snap.postings.n_terms)
        tokens = self._as_tokens(query, "query")
        return q.query_terms(tokens, self._corpus.vocab, snap.postings.n_terms, self.k3)

    def document_frequencies(self, terms: Sequence[str]) -> np.ndarray:
        """How many live rows contain each of ``terms`` (int64; 0 for an unknown term): what
        pseudo-relevance feedback reads to leave out terms common in the collection."""
        snap = self._snapshot()
        df = np.diff(snap.postings.indptr)
        get, n_terms = self._corpus.vocab.get, snap.postings.n_terms
        ids = [get(term, n_terms) for term in terms]
        return np.array([int(df[i]) if i < n_terms else 0 for i in ids], np.int64)

    def _as_tokens(self, item: object, what: str) -> Sequence[str]:
        # Cheapest checks first: isinstance against the pydantic Chunk class is slow.
        if isinstance(item, (list, tuple)):
            return item
        if isinstance(item, str):
            return self.tokenizer(item)
        if isinstance(item, Chunk):
            return self.tokenizer(item.text)
        msg = (
            f"cannot use a {type(item).__name__} as a BM25 {what}; pass a string, "
            "a Chunk or a list of token strings"
        )
        raise ConfigError(msg)

    # ------------------------------------------------------------ persistence

    def save(self, directory: str | Path) -> Path:
        """Save to ``directory`` (created if needed): ``.npy`` arrays, ``vocab.json`` and the
        manifest ``bm25.json`` with checksums. No pickle.

        Returns:
            The manifest path.
        """
        started = time.perf_counter()
        with self._lock:
            path = write_index(directory, self.params, self._corpus.vocab.terms, self.arrays())
        logger.info(
            "BM25: saved %d rows, %d terms to %s in %.3fs",
            self.n_rows,
            self.vocabulary_size,
            directory,
            time.perf_counter() - started,
        )
        return path

    @classmethod
    def from_arrays(
        cls,
        terms: Sequence[str] | Vocabulary,
        arrays: Mapping[str, np.ndarray],
        *,
        idf: tuple[np.ndarray, bool, int] | None = None,
        tokenizer: Tokenizer | None = None,
        **params: Any,
    ) -> Self:
        """An index over arrays as :meth:`arrays` gives them, scoring with their ``weights``
        as they are (nothing is recomputed, so a memory-mapped array stays unread).

        Args:
            terms: term ``i`` is the term of posting list ``i`` (a :class:`Vocabulary` is
                kept as it is, so shards can share one).
            arrays: ``indptr``, ``docs``, ``tf``, ``weights``, ``doc_len``, ``deleted``.
            idf: the ``compute_idf`` triple the weights were computed with; ``None``: the
                idf of these rows (a whole index). A shard scoring with the statistics of
                all shards passes theirs (:mod:`indexes.keyword.collection`).
            tokenizer: as in the constructor.
            **params: the constructor's keyword arguments (variant, k1, b, epsilon, ...).

        Raises:
            ConfigError: an unknown variant or an out-of-range parameter.
        """
        index = cls(tokenizer, **params)
        index._corpus = corpus = Corpus.restore(terms, arrays)
        if idf is None:
            live = corpus.postings().indptr
            idf = compute_idf(live, corpus.n_live, variant=index.variant, epsilon=index.epsilon)
        values, positive, n_negative = idf
        weights = Weights(values, arrays["weights"], positive, n_negative)
        index._ready = index._make_snapshot(weights)  # the given weights: nothing to recompute
        return index

    @classmethod
    def load(cls, directory: str | Path, *, mmap: bool = False, verify: bool = True) -> BM25Index:
        """Load an index written by :meth:`save`.

        Load only indexes you built: checksums detect damage, not a forger who also rewrites
        the manifest.

        Args:
            directory: the directory given to :meth:`save`.
            mmap: memory-map the arrays read-only instead of reading them (fast open; later
                ``add``/``delete`` work on in-memory copies).
            verify: check every file's SHA-256 first (reads each file once).

        Raises:
            IndexLoadError: a missing, truncated, tampered or inconsistent file (named).
            IndexVersionError: written by a newer format version.
        """
        started = time.perf_counter()
        stored = read_index(directory, mmap=mmap, verify=verify)
        try:
            tokenizer_settings, params = index_arguments(stored.params)
            tokenizer = Tokenizer.from_dict(tokenizer_settings)
            index = cls.from_arrays(stored.terms, stored.arrays, tokenizer=tokenizer, **params)
        except (ConfigError, KeyError, TypeError, ValueError) as exc:
            msg = f"invalid BM25 params {stored.params!r} ({exc})"
            raise IndexLoadError(stored.manifest_path, msg) from exc
        logger.info(
            "BM25: loaded %d rows, %d terms from %s in %.3fs",
            index.n_rows,
            index.vocabulary_size,
            directory,
            time.perf_counter() - started,
        )
        return index
