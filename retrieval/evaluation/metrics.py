"""Ranking metrics at cut-off k, defined exactly as trec_eval computes them.

pytrec_eval (trec_eval 9 in C) is the reference; the test suite compares every value with
it on generated runs. This module is pure Python and numpy so that evaluation needs no C
extension at run time. The trec_eval details that change numbers, all reproduced here:

* **Order.** A run is ranked by score, descending; equal scores are broken by document id in
  *descending* byte order (trec_eval's ``comp_sim_docno``), never by insertion order.
  trec_eval keeps scores as C ``float``, so they are compared after rounding to float32:
  cosines that differ only in the 8th digit are ties there, and so here. :func:`trec_order`
  gives that order; ranks written by ``write_trec_run`` follow it.
* **Relevance.** A judgment counts as relevant when its score is >= 1 (pytrec_eval's default
  ``relevance_level``); unjudged documents are non-relevant.
* ``nDCG@k`` (trec_eval ``ndcg_cut.k``): gains are the graded judgment values themselves
  (not ``2**rel - 1``), negative values count as 0, the discount is ``log2(rank + 1)``, and
  the ideal ranking is built from the qrels (all judged documents, best first, cut at k).
* ``R@k`` (``recall.k``): relevant documents in the top k / all relevant documents.
* ``AP@k`` (``map_cut.k``): the sum of precision at each relevant rank <= k, divided by the
  number of relevant documents (not by ``min(k, R)``).
* ``RR@k``: trec_eval's ``recip_rank`` has no cut-off; like BEIR we cut the run to its top
  k (in trec_eval order) first, so it is 1/rank of the first relevant document if that rank
  is <= k, else 0.
* ``P@k`` (``P.k``): relevant documents in the top k / k, even when fewer than k documents
  were retrieved.
* A query whose judgments are all non-relevant scores 0 on every measure (pytrec_eval
  evaluates it); a query with an empty judgment dict is not a judged query and is left out
  (pytrec_eval drops it too). Run queries that are not in the qrels are ignored.

**Queries judged but absent from the run.** pytrec_eval leaves them out of its output, and
BEIR averages over what it returns, which rewards a system that returns nothing for hard
queries. Here ``missing="zero"`` (the default) gives them 0 on every measure and averages over
all judged queries, as ``trec_eval -c`` does; ``missing="skip"`` reproduces pytrec_eval's
set of queries. Both modes give pytrec_eval's per-query values for every query the run has
(an empty result list included).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from typing import Literal

import numpy as np

from ragtools.parsers.errors import ConfigError

__all__ = [
    "DEFAULT_K_VALUES",
    "MEASURES",
    "MissingQueries",
    "Qrels",
    "Run",
    "average",
    "canonical_metric",
    "evaluate_run",
    "metric_cutoff",
    "per_query",
    "trec_order",
]

logger = logging.getLogger(__name__)

Qrels = Mapping[str, Mapping[str, int]]
"""Judgments ``{query_id: {doc_id: graded relevance}}``; relevance >= 1 is relevant."""

Run = Mapping[str, Mapping[str, float]]
"""Retrieved documents ``{query_id: {doc_id: score}}``; higher scores rank first."""

MissingQueries = Literal["zero", "skip"]

DEFAULT_K_VALUES: tuple[int, ...] = (1, 3, 5, 10, 100, 1000)
"""The cut-offs BEIR reports."""

MEASURES: tuple[str, ...] = ("nDCG", "R", "AP", "RR", "P")
"""Measure names in the ir_measures style; result keys are ``f"{measure}@{k}"``, e.g.
``nDCG@10``. :func:`canonical_metric` also accepts the older names (``ndcg@10``,
``recall@100``, ``map@100``, ``mrr@10``, ``p@10``) and ranx's (``precision@10``)."""

_MEASURE_ALIASES: dict[str, str] = {
    "ndcg": "nDCG",
    "r": "R",
    "recall": "R",
    "ap": "AP",
    "map": "AP",
    "rr": "RR",
    "mrr": "RR",
    "p": "P",
    "precision": "P",
}

_RELEVANCE_LEVEL = 1


def canonical_metric(name: str) -> str:
    """The ir_measures-style name of a metric, from it or any alias.

    Args:
        name: ``MEASURE@k``, e.g. ``nDCG@10``, ``ndcg@10``, ``recall@100``, ``R@100``,
            ``map@100``, ``mrr@10``, ``precision@10`` (the measure part is case-insensitive).

    Returns:
        ``nDCG@k``, ``R@k``, ``AP@k``, ``RR@k`` or ``P@k``.

    Raises:
        ConfigError: an unknown measure or a cut-off that is not an integer >= 1.
    """
    measure, _, cutoff = str(name).strip().partition("@")
    canonical = _MEASURE_ALIASES.get(measure.lower())
    if canonical is None or not cutoff.isdigit() or int(cutoff) < 1:
        msg = (
            f"unknown metric {name!r}; use MEASURE@k with MEASURE one of "
            f"{', '.join(MEASURES)} (or ndcg, recall, map, mrr, p), e.g. nDCG@10"
        )
        raise ConfigError(msg)
    return f"{canonical}@{int(cutoff)}"


def metric_cutoff(name: str) -> int:
    """The cut-off k of a metric name (any alias), e.g. 100 for ``R@100``."""
    return int(canonical_metric(name).partition("@")[2])


def trec_order(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """Rank one query's documents as trec_eval does.

    Args:
        scores: ``{doc_id: score}`` for one query.

    Returns:
        ``(doc_id, score)`` pairs with the scores as given (as Python floats), highest score
        first, comparing scores rounded to float32 as trec_eval does; equal scores in
        descending doc id order (so ``"b"`` ranks before ``"a"``).
    """
    doc_ids = list(scores)
    values = [float(scores[doc_id]) for doc_id in doc_ids]
    with np.errstate(over="ignore"):  # beyond float32's range is +-inf, as in C
        keys = np.asarray(values, dtype=np.float32).tolist()
    order = sorted(range(len(doc_ids)), key=lambda i: doc_ids[i], reverse=True)
    order.sort(key=lambda i: keys[i], reverse=True)  # stable: keeps doc ids descending
    return [(doc_ids[i], values[i]) for i in order]


def per_query(
    qrels: Qrels,
    run: Run,
    k_values: Iterable[int] = DEFAULT_K_VALUES,
    *,
    missing: MissingQueries = "zero",
) -> dict[str, dict[str, float]]:
    """Every measure at every cut-off, for each judged query.

    Args:
        qrels: graded judgments ``{query_id: {doc_id: relevance}}``.
        run: ``{query_id: {doc_id: score}}``; higher is better.
        k_values: the cut-offs, each >= 1.
        missing: what to do with judged queries the run lacks: ``"zero"`` gives them 0 on
            every measure, ``"skip"`` leaves them out (pytrec_eval's behaviour).

    Returns:
        ``{query_id: {"nDCG@10": ..., "R@100": ..., ...}}`` in qrels order, with keys
        ``f"{measure}@{k}"`` for every measure of :data:`MEASURES` and every k (sorted).

    Raises:
        ConfigError: empty qrels, a bad k, a bad ``missing`` value or a NaN score.
    """
    ks = _check_k_values(k_values)
    if missing not in ("zero", "skip"):
        msg = f"missing must be 'zero' or 'skip', got {missing!r}"
        raise ConfigError(msg)
    if not qrels:
        msg = "qrels is empty: nothing to evaluate against; load a split with judgments"
        raise ConfigError(msg)
    absent = [qid for qid, judged in qrels.items() if judged and qid not in run]
    unjudged = sum(1 for qid in run if qid not in qrels)
    if unjudged:
        logger.debug("ignoring %d run queries that have no judgments", unjudged)
    if absent and missing == "zero":
        logger.warning(
            "%d of %d judged queries are absent from the run; they count as 0",
            len(absent),
            len(qrels),
        )
    results: dict[str, dict[str, float]] = {}
    for query_id, judged in qrels.items():
        if not judged:
            continue
        if query_id in run:
            results[query_id] = _query_measures(query_id, judged, run[query_id], ks)
        elif missing == "zero":
            results[query_id] = dict.fromkeys(_keys(ks), 0.0)
    return results


def evaluate_run(
    qrels: Qrels,
    run: Run,
    k_values: Iterable[int] = DEFAULT_K_VALUES,
    *,
    missing: MissingQueries = "zero",
) -> dict[str, float]:
    """Average every measure over the judged queries.

    Args:
        qrels: graded judgments ``{query_id: {doc_id: relevance}}``.
        run: ``{query_id: {doc_id: score}}``; higher is better.
        k_values: the cut-offs, each >= 1.
        missing: ``"zero"`` averages over all judged queries (absent ones count 0, as
            ``trec_eval -c``); ``"skip"`` averages over the judged queries present in the run
            (as BEIR over pytrec_eval's output).

    Returns:
        Mean values keyed ``"nDCG@10"``, ``"R@100"``, ``"AP@100"``, ``"RR@10"``,
        ``"P@10"``, ... for every measure and k; each in [0, 1], higher is better.

    Raises:
        ConfigError: as :func:`per_query`, or no judged query is in the run with
            ``missing="skip"``.

    Example:
        >>> evaluate_run({"q": {"d1": 1, "d2": 1}}, {"q": {"d1": 0.9, "d3": 0.5}}, [1, 2])
        ... # doctest: +NORMALIZE_WHITESPACE
        {'nDCG@1': 1.0, 'nDCG@2': 0.6131471927654584, 'R@1': 0.5, 'R@2': 0.5,
         'AP@1': 0.5, 'AP@2': 0.5, 'RR@1': 1.0, 'RR@2': 1.0, 'P@1': 1.0, 'P@2': 0.5}
    """
    rows = per_query(qrels, run, k_values, missing=missing)
    if not rows:
        shown = ", ".join(repr(q) for q in list(run)[:3])
        msg = (
            f"none of the {len(run)} run queries (e.g. {shown}) is in the qrels; "
            "check that the run and the qrels come from the same dataset and split"
        )
        raise ConfigError(msg)
    return average(rows)


def average(rows: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Every metric's mean over the queries of :func:`per_query` rows (exactly rounded sums),
    as :func:`evaluate_run` reports it; ``{}`` for no rows."""
    keys = list(next(iter(rows.values()))) if rows else []
    return {key: math.fsum(row[key] for row in rows.values()) / len(rows) for key in keys}


def _check_k_values(k_values: Iterable[int]) -> tuple[int, ...]:
    ks = tuple(k_values)
    bad = [k for k in ks if isinstance(k, bool) or not isinstance(k, int) or k < 1]
    if not ks or bad:
        msg = f"k_values must be integers >= 1, got {list(ks)!r}; e.g. (1, 10, 100)"
        raise ConfigError(msg)
    return tuple(sorted(set(ks)))


def _keys(ks: tuple[int, ...]) -> list[str]:
    return [f"{measure}@{k}" for measure in MEASURES for k in ks]


def _query_measures(
    query_id: str, judged: Mapping[str, int], scores: Mapping[str, float], ks: tuple[int, ...]
) -> dict[str, float]:
    for doc_id, score in scores.items():
        if math.isnan(score):
            msg = f"query {query_id!r}: document {doc_id!r} has a NaN score; scores must be numbers"
            raise ConfigError(msg)
    ranked = trec_order(scores)[: ks[-1]]
    rels = np.array([judged.get(doc_id, 0) for doc_id, _ in ranked], dtype=np.float64)
    num_rel = sum(1 for value in judged.values() if value >= _RELEVANCE_LEVEL)
    ideal = np.array(sorted((v for v in judged.values() if v > 0), reverse=True), np.float64)
    ideal = ideal[: ks[-1]]

    ranks = np.arange(1, len(rels) + 1, dtype=np.float64)
    relevant = rels >= _RELEVANCE_LEVEL
    hits = np.cumsum(relevant)
    dcg = np.cumsum(np.maximum(rels, 0.0) / np.log2(ranks + 1.0))
    idcg = np.cumsum(ideal / np.log2(np.arange(2, len(ideal) + 2, dtype=np.float64)))
    precision_sum = np.cumsum(np.where(relevant, hits / ranks, 0.0))
    first = int(np.argmax(relevant)) + 1 if relevant.any() else 0

    out: dict[str, float] = {}
    for k in ks:
        n = min(k, len(rels))
        top_dcg = float(dcg[n - 1]) if n else 0.0
        top_idcg = float(idcg[min(k, len(ideal)) - 1]) if len(ideal) else 0.0
        out[f"nDCG@{k}"] = top_dcg / top_idcg if top_idcg > 0 else 0.0
        top_hits = float(hits[n - 1]) if n else 0.0
        out[f"R@{k}"] = top_hits / num_rel if num_rel else 0.0
        out[f"AP@{k}"] = float(precision_sum[n - 1]) / num_rel if n and num_rel else 0.0
        out[f"RR@{k}"] = 1.0 / first if 0 < first <= k else 0.0
        out[f"P@{k}"] = top_hits / k
    return {key: out[key] for key in _keys(ks)}
