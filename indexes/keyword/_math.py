"""Array kernels behind :class:`indexes.keyword.bm25.BM25Index`: postings and BM25 weights.

The index is a term-major sparse matrix (CSC of shape ``(n_rows, n_terms)``) held as three
plain arrays: ``indptr`` (int64, ``n_terms + 1``), ``docs`` (int32 row ids, ascending within a
term) and ``tf`` (int32 term frequencies). A query touches only the postings of its terms.

For every variant the score of a (term, row) pair does not depend on the query, so it is
precomputed once per corpus state as ``weights`` (float64, aligned with ``docs``) and a query
adds its terms' slices into one score per row. BM25+ also adds ``delta * idf`` to
*every* row for each query term (rank-bm25's formula); that part is a per-query constant, kept
out of the weights. Float64 throughout, because Okapi's floored idfs can be negative and a sum
of mixed signs in float32 would not match rank-bm25 to 1e-6.

Everything here is vectorised: there is no Python loop over rows or postings.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
from collections.abc import Iterable, Sequence, Sized
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain
from typing import Literal, get_args

import numpy as np
import scipy.sparse as sp

from ragtools.parsers.errors import ConfigError

logger = logging.getLogger(__name__)

Variant = Literal["okapi", "bm25l", "bm25plus", "lucene"]

DEFAULT_VARIANT: Variant = "bm25plus"
"""The variant of ``BM25Index()``, chosen on SciFact train (``eval/tune_bm25.py``)."""

DEFAULT_PARAMS: dict[str, float] = {"k1": 1.5, "b": 0.7, "delta": 1.0, "k3": 1.0}
"""``BM25Index()``'s parameters, chosen with the variant on SciFact train by
``eval/tune_bm25.py``, with the default ``Tokenizer()``: k1 and b with ``k3 = inf`` (train
nDCG@10 0.7016), then k3 (train 0.7061, test 0.6907). With ``k3 = 1`` a term said twice counts
1.5 times, not twice."""

VARIANT_DEFAULTS: dict[str, dict[str, float]] = {
    "okapi": {"k1": 1.5, "b": 0.75, "delta": 0.0, "k3": math.inf},
    "bm25l": {"k1": 1.5, "b": 0.75, "delta": 0.5, "k3": math.inf},
    "bm25plus": {"k1": 1.5, "b": 0.75, "delta": 1.0, "k3": math.inf},
    "lucene": {"k1": 1.5, "b": 0.75, "delta": 0.0, "k3": math.inf},
}
"""Defaults when a variant is named: rank-bm25's (bm25s's for lucene; delta is unused there;
``k3 = inf`` counts a repeated query term once per occurrence, as rank-bm25 does)."""


def resolve_params(
    variant: Variant | None,
    k1: float | None,
    b: float | None,
    epsilon: float,
    delta: float | None,
    k3: float | None = None,
) -> tuple[Variant, float, float, float, float, float]:
    """Fill in defaults and validate: ``(variant, k1, b, epsilon, delta, k3)``.

    Raises:
        ConfigError: an unknown variant or an out-of-range parameter.
    """
    if variant is None:
        variant, defaults = DEFAULT_VARIANT, DEFAULT_PARAMS
    elif variant in VARIANT_DEFAULTS:
        defaults = VARIANT_DEFAULTS[variant]
    else:
        msg = f"unknown BM25 variant {variant!r}; use one of {list(get_args(Variant))}"
        raise ConfigError(msg)
    values = (
        float(defaults["k1"] if k1 is None else k1),
        float(defaults["b"] if b is None else b),
        float(epsilon),
        float(defaults["delta"] if delta is None else delta),
    )
    for name, value, high in zip(
        ("k1", "b", "epsilon", "delta"), values, (math.inf, 1.0, math.inf, math.inf), strict=True
    ):
        if not (math.isfinite(value) and 0.0 <= value <= high):
            msg = f"BM25 {name} must be a finite number in [0, {high}], got {value!r}"
            raise ConfigError(msg)
    saturation = float(defaults["k3"] if k3 is None else k3)
    if not saturation >= 0.0:  # also rejects nan
        msg = f"BM25 k3 must be a number >= 0 (inf: no saturation), got {k3!r}"
        raise ConfigError(msg)
    return variant, *values, saturation


def query_term_weight(count: float, k3: float) -> float:
    """How much a term repeated ``count`` times in a query counts: Robertson's ``k3``
    saturation ``count (k3 + 1) / (k3 + count)``; ``k3 = inf`` gives ``count`` (rank-bm25),
    ``k3 = 0`` gives 1 (each distinct term once). A single occurrence always counts exactly 1.
    """
    if count == 1 or k3 == math.inf:
        return float(count)
    return count * (k3 + 1.0) / (k3 + count)


_BLOCK_TOKENS = 1 << 22  # tokens counted per block: bounds the per-token temporaries
_WEIGHT_CHUNK = 1 << 15
"""Postings per weight-computation step: its float64 temporaries (256 KB each) stay in the
CPU's cache and are reused by the allocator, where one temporary per whole posting list is
fresh memory the kernel must fault in page by page, which cost more than the arithmetic."""
_THREADED_WEIGHTS = 1 << 22
"""Postings from which two threads fill the weights (numpy releases the GIL)."""


class Vocabulary(dict[str, int]):
    """Term → id; looking up an unknown term with ``[]`` assigns it the next id.

    Queries must use :meth:`dict.get`, which never inserts.
    """

    def __init__(self, terms: Sequence[str] = ()) -> None:
        super().__init__(zip(terms, range(len(terms)), strict=True))
        self.terms: list[str] = list(terms)

    def __missing__(self, term: str) -> int:
        new_id = len(self.terms)
        self[term] = new_id
        self.terms.append(term)
        return new_id


@dataclass(frozen=True)
class Postings:
    """Term-major postings: row ids and term frequencies of each term, rows ascending."""

    indptr: np.ndarray  # int64, n_terms + 1
    docs: np.ndarray  # int32, nnz
    tf: np.ndarray  # int32, nnz

    @property
    def n_terms(self) -> int:
        """Number of terms the postings cover (terms may have no posting)."""
        return len(self.indptr) - 1

    @classmethod
    def empty(cls) -> Postings:
        """No terms, no postings."""
        return cls(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32))


@dataclass(frozen=True)
class Weights:
    """Per-corpus-state scoring tables."""

    idf: np.ndarray  # float64, n_terms (0 for terms without live postings)
    weights: np.ndarray  # float64, nnz: the BM25 contribution of each posting
    positive: bool  # every weight > 0, so a row matched a query iff its sum is > 0
    n_negative_idf: int  # Okapi terms whose raw idf was negative (floored)


@dataclass(frozen=True)
class TokenRows:
    """Rows of tokens one after another: row ``i`` is the next ``lengths[i]`` tokens.

    What counting reads. A batch of rows read back from a build's spill is one list of
    tokens cut into rows with numpy, without a list per row: a million such lists, and
    the garbage collector's passes over them, cost more than counting their tokens.
    """

    tokens: Iterable[str]
    """The rows' tokens one after another, read once: a list, or (:meth:`of`) the rows' own
    lists chained, not copied."""
    lengths: np.ndarray
    """The number of tokens of each row (int64)."""

    @classmethod
    def of(cls, token_lists: Sequence[Sequence[str]]) -> TokenRows:
        """The rows of ``token_lists`` (a sequence of token sequences), read through."""
        lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
        return cls(chain.from_iterable(token_lists), lengths)

    def __len__(self) -> int:
        """The number of rows."""
        return len(self.lengths)


@dataclass(frozen=True)
class RowCounts:
    """Doc-major term counts of a batch of new rows (a CSR matrix as three arrays)."""

    indptr: np.ndarray  # int64, n_rows + 1
    terms: np.ndarray  # int32, nnz: term ids, ascending within a row
    tf: np.ndarray  # int32, nnz
    lengths: np.ndarray  # int32, n_rows: tokens per row (repeats included)


def count_rows(rows: TokenRows, vocab: Vocabulary) -> RowCounts:
    """Map tokens to ids (new terms get new ids) and count them per row.

    The mapping is one dict probe per token (a new term gets the next id from
    :class:`Vocabulary`). Counting then goes in blocks of about :data:`_BLOCK_TOKENS`
    tokens; scipy sums duplicate (row, term) pairs with a short sort per row, so the cost is
    linear in the token count.

    Raises:
        ConfigError: ``rows.lengths`` add up to more tokens than it holds, or (a list of
            tokens, checked before any is counted) to another number.
    """
    n_new = len(rows)
    lengths = np.asarray(rows.lengths, dtype=np.int64)
    ends = np.cumsum(lengths)
    total = int(ends[-1]) if n_new else 0
    tokens = rows.tokens
    held = len(tokens) if isinstance(tokens, Sized) else None
    try:
        if held not in (None, total):
            raise ValueError
        ids = np.fromiter(map(vocab.__getitem__, tokens), dtype=np.int32, count=total)
    except ValueError as exc:  # a list of another length, or an iterator too short
        msg = (
            f"TokenRows lengths add up to {total} tokens, but it holds "
            f"{'fewer' if held is None else held}; give each row's number of tokens"
        )
        raise ConfigError(msg) from exc
    cuts = (
        np.searchsorted(
            ends,
            np.arange(_BLOCK_TOKENS, int(ends[-1]) if n_new else 0, _BLOCK_TOKENS),
            side="left",
        )
        + 1
    )
    bounds = [0, *sorted(set(cuts.tolist()) - {0, n_new}), n_new] if n_new else [0]
    row_ptrs: list[np.ndarray] = [np.zeros(1, np.int64)]
    terms: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    nnz = 0
    n_terms = max(1, len(vocab))
    for start, stop in itertools.pairwise(bounds):
        first = int(ends[start - 1]) if start else 0
        block_ids = ids[first : int(ends[stop - 1])]
        indptr = np.zeros(stop - start + 1, dtype=np.int64)
        np.cumsum(lengths[start:stop], out=indptr[1:])
        mat = sp.csr_matrix(
            (np.ones(len(block_ids), dtype=np.int32), block_ids, indptr),
            shape=(stop - start, n_terms),
        )
        mat.sum_duplicates()
        row_ptrs.append(mat.indptr[1:].astype(np.int64) + nnz)
        terms.append(mat.indices.astype(np.int32, copy=False))
        counts.append(mat.data.astype(np.int32, copy=False))
        nnz += int(mat.indptr[-1])
    return RowCounts(
        np.concatenate(row_ptrs),
        np.concatenate(terms) if terms else np.zeros(0, np.int32),
        np.concatenate(counts) if counts else np.zeros(0, np.int32),
        lengths.astype(np.int32),
    )


def to_postings(batches: Sequence[RowCounts], n_terms: int, row_offset: int) -> Postings:
    """Term-major postings of consecutive row batches, the first row being ``row_offset``.

    One counting sort (scipy's CSR → CSC conversion) keeps rows ascending within a term.
    """
    ptrs: list[np.ndarray] = [np.zeros(1, np.int64)]
    nnz = 0
    for batch in batches:
        ptrs.append(batch.indptr[1:] + nnz)
        nnz += int(batch.indptr[-1])
    if nnz == 0:
        empty = np.zeros(0, np.int32)
        return Postings(np.zeros(n_terms + 1, np.int64), empty, empty.copy())
    indptr = np.concatenate(ptrs)
    doc_major = sp.csr_matrix(
        (
            np.concatenate([b.tf for b in batches]),
            np.concatenate([b.terms for b in batches]),
            indptr,
        ),
        shape=(len(indptr) - 1, n_terms),
    )
    term_major = doc_major.tocsc()
    docs = term_major.indices.astype(np.int32, copy=False)
    if row_offset:
        docs = docs + np.int32(row_offset)
    return Postings(
        term_major.indptr.astype(np.int64, copy=False),
        docs,
        term_major.data.astype(np.int32, copy=False),
    )


def merge_postings(old: Postings, new: Postings) -> Postings:
    """Append ``new`` (rows after all of ``old``'s, ``new.n_terms >= old.n_terms``) per term."""
    n_terms = new.n_terms
    old_counts = np.zeros(n_terms, dtype=np.int64)
    old_counts[: old.n_terms] = np.diff(old.indptr)
    new_counts = np.diff(new.indptr)
    indptr = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(old_counts + new_counts, out=indptr[1:])
    nnz_old, nnz_new = len(old.docs), len(new.docs)
    # Each term's old postings go first (their rows are smaller), then the new ones.
    shift_old = indptr[: old.n_terms] - old.indptr[:-1]
    dest_old = np.repeat(shift_old, old_counts[: old.n_terms]) + np.arange(nnz_old)
    dest_new = np.repeat(indptr[:-1] + old_counts - new.indptr[:-1], new_counts) + np.arange(
        nnz_new
    )
    docs = np.empty(nnz_old + nnz_new, dtype=np.int32)
    tf = np.empty(nnz_old + nnz_new, dtype=np.int32)
    docs[dest_old] = old.docs
    docs[dest_new] = new.docs
    tf[dest_old] = old.tf
    tf[dest_new] = new.tf
    return Postings(indptr, docs, tf)


def compact_postings(postings: Postings, deleted: np.ndarray) -> Postings:
    """Drop the postings of deleted rows (row ids are kept; terms may become empty)."""
    keep = ~deleted[postings.docs]
    if keep.all():
        return postings
    kept_before = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum(keep, out=kept_before[1:])
    return Postings(kept_before[postings.indptr], postings.docs[keep], postings.tf[keep])


def compute_idf(
    indptr: np.ndarray, n_live: int, *, variant: Variant, epsilon: float
) -> tuple[np.ndarray, bool, int]:
    """idf of every term from live postings (terms without any get 0, as if unknown).

    Returns:
        ``(idf, positive, n_negative)``: float64 idf per term, whether every present term's
        idf is > 0, and how many Okapi idfs were negative before rank-bm25's floor.
    """
    df = np.diff(indptr).astype(np.float64)
    present = df > 0
    n = float(n_live)
    idf = np.zeros(len(df), dtype=np.float64)
    dfp = df[present]
    n_negative = 0
    if variant == "okapi":
        raw = np.log(n - dfp + 0.5) - np.log(dfp + 0.5)
        negative = raw < 0
        n_negative = int(negative.sum())
        if n_negative:
            # rank-bm25: the floor is epsilon times the mean of the *raw* idfs.
            raw[negative] = epsilon * (raw.sum() / len(raw))
        idf[present] = raw
    elif variant == "bm25l":
        idf[present] = np.log(n + 1) - np.log(dfp + 0.5)
    elif variant == "bm25plus":
        idf[present] = np.log((n + 1) / dfp)
    else:  # lucene
        idf[present] = np.log(1 + (n - dfp + 0.5) / (dfp + 0.5))
    return idf, bool(np.all(idf[present] > 0)), n_negative


def length_factors(
    doc_len: np.ndarray, avgdl: float, *, variant: Variant, k1: float, b: float
) -> np.ndarray:
    """Each row's length normalisation, the part of a posting's weight that depends on its
    row alone: ``1 - b + b * dl / avgdl`` for BM25L, ``k1`` times it for the others (float64,
    one per row). Computed once per row rather than once per posting, with rank-bm25's
    expressions in its order, so the weights keep their last bits.
    """
    base = 1 - b + b * doc_len.astype(np.float64) / avgdl
    return base if variant == "bm25l" else k1 * base


def posting_weights(
    idf: np.ndarray | float,
    tf: np.ndarray,
    norm: np.ndarray,
    *,
    variant: Variant,
    k1: float,
    delta: float,
) -> np.ndarray:
    """The weights of postings with term frequencies ``tf`` in rows of length factors
    ``norm`` (:func:`length_factors`), their terms' ``idf`` given per posting or as one
    number: the one BM25 weight formula, which every scoring path calls.

    Same operation order as rank-bm25, so the floats agree to the last bits; a number
    and an array of that number give the same floats.
    """
    tf = tf.astype(np.float64)
    weights: np.ndarray
    if variant in ("okapi", "lucene"):
        weights = idf * (tf * (k1 + 1) / (tf + norm))
    elif variant == "bm25l":
        ctd = tf / norm
        weights = idf * tf * (k1 + 1) * (ctd + delta) / (k1 + ctd + delta)
    else:  # bm25plus; the delta * idf part is added per query to every row
        weights = idf * ((tf * (k1 + 1)) / (norm + tf))
    return weights


def compute_weights(
    postings: Postings,
    doc_len: np.ndarray,
    n_live: int,
    total_len: int,
    *,
    variant: Variant,
    k1: float,
    b: float,
    epsilon: float,
    delta: float,
    global_idf: tuple[np.ndarray, bool, int] | None = None,
    factors: np.ndarray | None = None,
) -> Weights:
    """idf per term and the score of every posting, with rank-bm25's formulas.

    ``postings`` must hold live rows only (see :func:`compact_postings`), so document
    frequencies are ``diff(indptr)`` and terms without postings are out of the vocabulary
    (idf 0), exactly as in a fresh build on the surviving rows. Segments merged for a version
    pass the :func:`compute_idf` of the whole collection as ``global_idf``
    (see :mod:`indexes.keyword.collection`), and a segment scored per query passes its rows'
    :func:`length_factors`, computed once for its version, as ``factors``.
    """
    idf, positive, n_negative = global_idf or compute_idf(
        postings.indptr, n_live, variant=variant, epsilon=epsilon
    )
    if n_negative:
        logger.warning(
            "BM25 okapi: %d terms occur in more than half of the %d rows; their negative "
            "idf is floored to epsilon * mean idf (rank-bm25's rule), so they barely count. "
            "On small corpora prefer variant='lucene' or 'bm25plus'.",
            n_negative,
            n_live,
        )
    weights = np.empty(len(postings.docs), dtype=np.float64)
    if len(weights) == 0:
        return Weights(idf, weights, positive, n_negative)
    if factors is None:
        factors = length_factors(doc_len, total_len / n_live, variant=variant, k1=k1, b=b)
    indptr = postings.indptr
    nnz = int(indptr[-1])

    def fill(start: int, end: int) -> None:
        # The terms of postings start..end-1, each with its number of postings among them.
        t0 = int(np.searchsorted(indptr, start, side="right")) - 1
        t1 = int(np.searchsorted(indptr, end - 1, side="right"))
        spans = np.diff(np.clip(indptr[t0 : t1 + 1], start, end))
        idf_p = np.repeat(idf[t0:t1], spans)
        weights[start:end] = posting_weights(
            idf_p,
            postings.tf[start:end],
            factors[postings.docs[start:end]],
            variant=variant,
            k1=k1,
            delta=delta,
        )

    def fill_all(first: int, last: int) -> None:
        for start in range(first, last, _WEIGHT_CHUNK):
            fill(start, min(start + _WEIGHT_CHUNK, last))

    if nnz >= _THREADED_WEIGHTS and (os.cpu_count() or 1) >= 2:
        half = nnz // 2
        with ThreadPoolExecutor(2, thread_name_prefix="bm25-weights") as pool:
            list(pool.map(lambda r: fill_all(*r), [(0, half), (half, nnz)]))
    else:
        fill_all(0, nnz)
    return Weights(idf, weights, positive, n_negative)
