"""RM3 pseudo-relevance feedback: a weighted BM25 query grown from a first pass's top rows.

RM3 (Lavrenko and Croft's relevance model, interpolated with the query: Abdul-Jaleel et al.
2004) as Anserini's ``Rm3Reranker`` computes it, which is what Pyserini's ``set_rm3`` and the
BM25+RM3 baselines of BEIR-era papers run. Its parameters keep Anserini's names and defaults
(``fb_docs=10``, ``fb_terms=10``, ``original_query_weight=0.5``). Given a query's tokens and
the token lists of the ``fb_docs`` best rows of a first BM25 pass with their scores:

1. **Query model** ``q``: each query token's count over the number of query tokens.
2. **Feedback document vectors**: each feedback row's term counts, keeping only terms of 2 to
   20 characters, made of letters and digits, found in at most ``max_df_ratio`` (10%) of the
   live rows (Anserini's stopword rule); then only the row's ``fb_terms`` most frequent terms.
3. **Relevance model** ``rm(t) = sum_i score_i * c_i(t) / |c_i|``, ``|c_i|`` the sum of row
   ``i``'s kept counts (a row whose counts sum to at most 0.001 adds nothing); only the
   ``fb_terms`` largest are kept, then scaled to sum to 1.
4. **Interpolation**: ``w(t) = original_query_weight * q(t) + (1 - original_query_weight) *
   rm(t)`` over the union of both models' terms.

The second pass scores BM25 with every term's contribution multiplied by ``w(t)``
(:data:`indexes.keyword.bm25.Query`'s weighted form, Lucene's ``BoostQuery``).

Where this differs from Anserini, and why:

* weights are float64 (Anserini's are float32): the same formulas, fewer rounding steps;
* ties in "most frequent" and "largest" are broken by the term string (Anserini's follow a
  hash map's iteration order, which is not reproducible across runs of another language);
* "letters and digits" is :meth:`str.isalnum`, where Anserini keeps ``[a-z0-9]+``: the
  tokenizer lower-cases already, and non-Latin scripts (CJK bigrams, accented words) should
  expand too;
* a query whose first pass finds nothing is searched as it is (there is nothing to feed back).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ragtools.indexes.options import settings_of
from ragtools.parsers.errors import ConfigError

__all__ = ["RM3", "DocumentFrequencies"]

DocumentFrequencies = Callable[[Sequence[str]], tuple[np.ndarray, int]]
"""Given terms: the number of live rows containing each, and the number of live rows."""

_MIN_NORM = 0.001
"""A feedback row whose kept counts sum to at most this adds nothing (Anserini's guard)."""


@dataclass(frozen=True)
class RM3:
    """RM3 query expansion settings (Anserini's names and defaults).

    Attributes:
        fb_docs: feedback rows: the first pass's best this many (``>= 1``).
        fb_terms: terms kept per feedback row and in the relevance model (``>= 1``).
        original_query_weight: the query model's share in ``[0, 1]``; ``1`` searches the
            query alone (weighted by its term counts), ``0`` the feedback terms alone.
        max_df_ratio: a term found in more than this share of the live rows is never a
            feedback term (Anserini's 10%, which stands in for a stopword list).

    Raises:
        ConfigError: a value out of range, naming it.
    """

    fb_docs: int = 10
    fb_terms: int = 10
    original_query_weight: float = 0.5
    max_df_ratio: float = 0.1

    def __post_init__(self) -> None:
        for name in ("fb_docs", "fb_terms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                msg = f"RM3 {name} must be an integer >= 1, got {value!r}"
                raise ConfigError(msg)
        for name in ("original_query_weight", "max_df_ratio"):
            value = getattr(self, name)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not (ok and math.isfinite(value) and 0.0 <= value <= 1.0):
                msg = f"RM3 {name} must be a number in [0, 1], got {value!r}"
                raise ConfigError(msg)

    @classmethod
    def of(cls, value: RM3 | Mapping[str, Any] | bool | None) -> RM3 | None:
        """Settings from what a caller passes: ``None``/``False`` (no expansion), ``True``
        (the defaults), a mapping of the fields, or an ``RM3``.

        Raises:
            ConfigError: an unknown field or a value out of range.
        """
        return settings_of(cls, value, "rm3")

    def to_dict(self) -> dict[str, Any]:
        """The settings as a JSON dict."""
        return asdict(self)

    def expand(
        self,
        query: Sequence[str],
        feedback: Sequence[Sequence[str]],
        scores: Sequence[float],
        doc_freq: DocumentFrequencies,
    ) -> dict[str, float]:
        """The expanded, weighted query (term → weight; see the module docstring).

        Args:
            query: the query's tokens (as the index's tokenizer gives them).
            feedback: the token lists of the first pass's best rows, best first (only the
                first ``fb_docs`` are read).
            scores: their first-pass BM25 scores, aligned with ``feedback``.
            doc_freq: the collection's document frequencies (see :data:`DocumentFrequencies`).

        Returns:
            Weights summing to 1 (to 0 for an empty query without feedback). Without
            feedback rows, the query model alone.
        """
        counts = Counter(query)
        total = sum(counts.values())
        query_model = {t: c / total for t, c in counts.items()} if total else {}
        rows = [Counter(tokens) for tokens in feedback[: self.fb_docs]]
        if not rows:
            return query_model
        candidates = sorted({t for row in rows for t in row if _eligible(t)})
        df, n_live = doc_freq(candidates)
        limit = self.max_df_ratio * n_live
        common = {t for t, d in zip(candidates, df.tolist(), strict=True) if d > limit}
        relevance: dict[str, float] = {}
        for row, score in zip(rows, scores, strict=False):
            kept = _largest(
                {t: float(c) for t, c in row.items() if _eligible(t) and t not in common},
                self.fb_terms,
            )
            norm = sum(kept.values())
            if norm <= _MIN_NORM:
                continue
            for term, count in kept.items():
                relevance[term] = relevance.get(term, 0.0) + count / norm * float(score)
        relevance = _largest(relevance, self.fb_terms)
        mass = sum(abs(v) for v in relevance.values())
        if mass > 0:
            relevance = {t: v / mass for t, v in relevance.items()}
        alpha = self.original_query_weight
        return {
            term: alpha * query_model.get(term, 0.0) + (1.0 - alpha) * relevance.get(term, 0.0)
            for term in sorted(query_model.keys() | relevance.keys())
        }


def _eligible(term: str) -> bool:
    """Anserini's shape rule for a feedback term: 2 to 20 characters, letters and digits."""
    return 2 <= len(term) <= 20 and term.isalnum()


def _largest(weights: dict[str, float], n: int) -> dict[str, float]:
    """The ``n`` largest entries, ties broken by term (Anserini's ``pruneToSize``)."""
    if len(weights) <= n:
        return weights
    return dict(sorted(weights.items(), key=lambda item: (-item[1], item[0]))[:n])
