"""``rag tune``: choose an index's hybrid fusion on judged queries, and write it as a version.

What ranx's ``optimize_fusion`` does for runs, done for a retriever: given queries and
judgements (a BEIR layout, ``queries.jsonl`` + ``qrels/<split>.tsv``, whether a public
dataset or a user's own), each half of the index is asked once per training query for its
deepest candidate list; then every setting of a grid is scored on those lists by mean
nDCG@10 over the judged training queries:

* fusion method, which fixes the normalisation (``rrf``: reciprocal ranks; ``relative_score``:
  min-max; ``dbsf``: mean +- 3 standard deviations, clipped; ``zscore``: mean 0, std 1;
  :mod:`retrieval.fusion`);
* the BM25 weight ``w`` in 0.0, 0.1, ..., 1.0 (the vector weight is ``1 - w``);
* the candidate depth, :data:`DEPTHS`.

The best setting wins; ties go to the package's default setting, then to the weights nearest
the default, then to the grid order (:data:`METHODS` with the default method first,
shallower depths first), so a grid with a flat top keeps what users already have.
ranx's ``optimize_fusion`` searches weights the same way (a grid with step 0.1) but for one
method and normalisation at a time, over fixed runs; here method, normalisation and depth
are searched together, and the hits are the hybrid retriever's own (dedup by chunk id, one
tie rule).

A judgement names a document by its id, its ``source`` path, a page (``a.pdf#p3``) or a
section (``guide.md#From source``, a chunk's last heading), whichever the qrels use: a user's
own judgements naturally name files, pages and sections, not content hashes. Judgements
naming documents the index does not hold, or queries ``queries.jsonl`` lacks, are refused,
naming them: a typo would otherwise score as a miss and bias the choice. Fewer than
:data:`MIN_QUERIES` judged queries are refused; fewer than :data:`FEW_QUERIES` give a result
with a warning, as differences between settings on so few queries are mostly noise.

When the dataset has a test split (another ``qrels`` file), the chosen setting and the
default are compared on it with ``rag compare``'s paired tests; the figures and the
provenance (dataset, splits, query counts, scores, date) are written with the settings into
the index's new version (``IndexSettings.fusion``), which ``HybridRetriever.from_index``, and
so ``rag search``, the tools and MCP, then use.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

from ragtools.indexes.errors import IndexStateError
from ragtools.indexes.index import Index
from ragtools.indexes.settings import FusionSettings
from ragtools.parsers.document import Chunk
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.base import Filter, QueryFilter, RankedChunks, Ranker
from ragtools.retrieval.evaluation.beir import available_splits, load_qrels, load_queries
from ragtools.retrieval.evaluation.compare import Comparison, compare_systems
from ragtools.retrieval.evaluation.metrics import Qrels, per_query
from ragtools.retrieval.fusion import FusionMethod
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.hybrid import (
    DEFAULT_CANDIDATE_K,
    DEFAULT_FUSION,
    DEFAULT_WEIGHTS,
    HybridRetriever,
)
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.vector import VectorRetriever

__all__ = ["DEPTHS", "FEW_QUERIES", "METHODS", "MIN_QUERIES", "TuneResult", "tune_fusion"]

logger = logging.getLogger(__name__)

MIN_QUERIES = 10
"""Fewer judged training queries than this are refused."""
FEW_QUERIES = 50
"""Fewer judged training queries than this give a warning with the result."""
METHODS: tuple[FusionMethod, ...] = ("relative_score", "rrf", "dbsf", "zscore")
WEIGHTS = tuple(round(0.1 * i, 1) for i in range(11))
DEPTHS = (100, 300, 1000)
_METRICS = ("nDCG@10", "R@100")


@dataclass(frozen=True)
class TuneResult:
    """What ``rag tune`` found.

    Attributes:
        chosen: the winning setting, with its provenance.
        default: the package's default setting, as :class:`FusionSettings`.
        train: mean nDCG@10 and R@100 of ``"default"`` and ``"chosen"`` on the train split.
        test: the paired comparison on the test split (``None``: no test split).
        warnings: e.g. too few judged queries.
        grid: every setting's train scores.
    """

    chosen: FusionSettings
    default: FusionSettings
    train: dict[str, dict[str, float]]
    test: Comparison | None
    warnings: list[str] = field(default_factory=list)
    grid: list[dict[str, Any]] = field(default_factory=list)


class _CachedRanker:
    """A retriever's deepest ranking of each query, computed once; shallower asks are its
    head (the same rows :meth:`~retrieval.base.IndexRetriever.rank` returns at that depth)."""

    def __init__(self, base: Ranker, depth: int) -> None:
        self.base, self.depth, self.stage = base, depth, base.stage
        self._cache: dict[str, RankedChunks] = {}

    def rank(self, query: str, k: int, filter: Filter | QueryFilter | None) -> RankedChunks:
        full = self._cache.get(query)
        if full is None:
            full = self._cache[query] = self.base.rank(query, self.depth, None)
        return RankedChunks(full.ranking.head(k), full.chunks, full.keys, full.stage)


def _unit_keys() -> dict[str, Callable[[Chunk], str]]:
    """The ways a judgement may name what is relevant, most specific last."""

    def page(chunk: Chunk) -> str:
        return f"{chunk.metadata.get('source')}#p{chunk.metadata.get('page')}"

    def section(chunk: Chunk) -> str:
        headings = chunk.metadata.get("headings")
        last = headings[-1] if isinstance(headings, list) and headings else ""
        return f"{chunk.metadata.get('source')}#{last}"

    return {
        "document id": lambda chunk: chunk.doc_id,
        "source path": lambda chunk: str(chunk.metadata.get("source")),
        "page (source#p<page>)": page,
        "section (source#<heading>)": section,
    }


def _judged_key(index: Index, qrels: Qrels, where: Path) -> Callable[[Hit], str]:
    """How a hit is matched to judgements: by document id, ``source`` path, page
    (``a.pdf#p3``) or section (``guide.md#From source``, the chunk's last heading), the
    first that knows every judged name; a judgement file may mix pages and sections.

    Raises:
        ConfigError: documents the index holds under none of these, named.
    """
    named = {doc for judged in qrels.values() for doc in judged}
    forms = _unit_keys()
    known = {name: {form(c) for c in index.chunks} for name, form in forms.items()}
    for name, form in forms.items():
        if named <= known[name]:
            return lambda hit, form=form: form(hit.chunk)  # type: ignore[misc]
    units = known["page (source#p<page>)"] | known["section (source#<heading>)"]
    if named <= units:
        page, section = forms["page (source#p<page>)"], forms["section (source#<heading>)"]
        return lambda hit: page(hit.chunk) if "page" in hit.chunk.metadata else section(hit.chunk)
    missing = [named - ids for ids in [*known.values(), units]]
    unknown = sorted(sorted(missing, key=len)[0])
    msg = (
        f"{where}: the judgements name {len(unknown)} document(s) the index does not hold "
        f"(as a document id, source path, source#p<page> or source#<heading>): "
        f"{', '.join(unknown[:5])}{', ...' if len(unknown) > 5 else ''}; judge documents "
        "of this index"
    )
    raise ConfigError(msg)


def _scores(
    retriever: HybridRetriever,
    queries: Mapping[str, str],
    qrels: Qrels,
    key: Callable[[Hit], str],
) -> dict[str, dict[str, float]]:
    """Per-query nDCG@10 and R@100 (a document keeps its best chunk's place)."""
    run: dict[str, dict[str, float]] = {}
    for qid in qrels:
        found: dict[str, float] = {}
        for hit in retriever.invoke(queries[qid], k=100):
            found.setdefault(key(hit), hit.score)
        run[qid] = found
    rows = per_query(qrels, run, (10, 100))
    return {q: {m: rows[q][m] for m in _METRICS} for q in qrels}


def _mean(rows: Mapping[str, Mapping[str, float]], metric: str) -> float:
    return math.fsum(r[metric] for r in rows.values()) / len(rows)


def tune_fusion(
    index: Index,
    dataset: str | Path,
    *,
    split: str = "train",
    test_split: str | None = "test",
    depths: Sequence[int] = DEPTHS,
) -> TuneResult:
    """Search the fusion grid on ``split`` of ``dataset`` (see the module docstring).

    Args:
        index: an index with both halves.
        dataset: a folder with ``queries.jsonl`` and ``qrels/<split>.tsv``.
        split: the judgements the choice is made on.
        test_split: judgements to report the gain on (skipped when the dataset lacks it or
            it is ``split``); ``None``: none.
        depths: candidate depths searched.

    Raises:
        IndexStateError: the index lacks a half (there is nothing to fuse).
        ConfigError: fewer than :data:`MIN_QUERIES` judged queries, judgements naming
            unknown documents or queries, a missing split or file (named).
    """
    missing = [
        name for name, half in (("keyword", index.bm25), ("vector", index.vector)) if half is None
    ]
    if missing:
        flag = " (built with --no-vector)" if missing == ["vector"] else ""
        msg = (
            f"{index.path}: rag tune chooses how the keyword and vector halves are fused, "
            f"and this index has no {missing[0]} half{flag}; rebuild it with both"
        )
        raise IndexStateError(msg)
    root = Path(dataset)
    queries = load_queries(root)
    qrels = {q: j for q, j in load_qrels(root, split).items() if any(v > 0 for v in j.values())}
    where = root / "qrels" / f"{split}.tsv"
    unknown_queries = sorted(set(qrels) - set(queries))
    if unknown_queries:
        msg = (
            f"{where}: judges {len(unknown_queries)} query id(s) that queries.jsonl lacks: "
            f"{', '.join(unknown_queries[:5])}"
        )
        raise ConfigError(msg)
    if len(qrels) < MIN_QUERIES:
        msg = (
            f"{where}: {len(qrels)} judged queries with a relevant document; rag tune needs "
            f"at least {MIN_QUERIES} (and {FEW_QUERIES} or more for a choice that is more "
            "than noise)"
        )
        raise ConfigError(msg)
    key = _judged_key(index, qrels, where)
    warnings = []
    if len(qrels) < FEW_QUERIES:
        warnings.append(
            f"only {len(qrels)} judged queries: differences between settings on so few are "
            f"mostly noise; judge {FEW_QUERIES} or more before trusting the choice"
        )
    deepest = max(max(depths), DEFAULT_CANDIDATE_K)
    halves = [
        _CachedRanker(KeywordRetriever(index), deepest),
        _CachedRanker(VectorRetriever(index), deepest),
    ]

    def hybrid(method: FusionMethod, weights: Sequence[float], depth: int) -> HybridRetriever:
        return HybridRetriever(
            cast(Sequence[Ranker], halves), weights=weights, fusion=method, candidate_k=depth
        )

    default = FusionSettings(
        method=DEFAULT_FUSION, weights=DEFAULT_WEIGHTS, candidate_k=DEFAULT_CANDIDATE_K
    )
    grid: list[dict[str, Any]] = []
    for method, w, depth in itertools.product(METHODS, WEIGHTS, depths):
        weights = (w, round(1 - w, 1))
        rows = _scores(hybrid(method, weights, depth), queries, qrels, key)
        grid.append(
            {"method": method, "weights": list(weights), "candidate_k": depth}
            | {m: _mean(rows, m) for m in _METRICS}
        )
    base_rows = _scores(
        hybrid(default.method, default.weights, default.candidate_k), queries, qrels, key
    )
    base = {m: _mean(base_rows, m) for m in _METRICS}

    def preference(entry: dict[str, Any]) -> tuple[float, ...]:
        is_default = (entry["method"], tuple(entry["weights"]), entry["candidate_k"]) == (
            default.method,
            default.weights,
            default.candidate_k,
        )
        return (
            -round(entry["nDCG@10"], 12),
            0.0 if is_default else 1.0,
            abs(entry["weights"][0] - default.weights[0]),
        )

    best = min(grid, key=preference)  # min() keeps the first of equals: the grid order
    chosen_rows = _scores(
        hybrid(best["method"], best["weights"], best["candidate_k"]), queries, qrels, key
    )
    provenance: dict[str, Any] = {
        "dataset": str(root.resolve()),
        "split": split,
        "queries": len(qrels),
        "train_default": base,
        "train_chosen": {m: _mean(chosen_rows, m) for m in _METRICS},
        "grid": {"methods": list(METHODS), "weights_step": 0.1, "depths": list(depths)},
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    comparison = None
    if test_split and test_split != split and test_split in available_splits(root):
        test_qrels = {
            q: j for q, j in load_qrels(root, test_split).items() if any(v > 0 for v in j.values())
        }
        test_key = _judged_key(index, test_qrels, root / "qrels" / f"{test_split}.tsv")
        plain = HybridRetriever.from_index(
            index, weights=default.weights, fusion=default.method,
            candidate_k=default.candidate_k,
        )  # fmt: skip
        tuned = HybridRetriever.from_index(
            index, weights=best["weights"], fusion=best["method"],
            candidate_k=best["candidate_k"],
        )  # fmt: skip
        comparison = compare_systems(
            {
                "default": _scores(plain, queries, test_qrels, test_key),
                "tuned": _scores(tuned, queries, test_qrels, test_key),
            },
            baseline="default",
        )
        provenance["test"] = {
            "split": test_split,
            "queries": comparison.num_queries,
            "rows": [
                {
                    "metric": r.metric,
                    "default": r.baseline_mean,
                    "tuned": r.mean,
                    "p_t": r.p_t,
                    "p_randomization": r.p_randomization,
                }
                for r in comparison.rows
            ],
        }
    chosen = FusionSettings(
        method=best["method"],
        weights=tuple(best["weights"]),
        candidate_k=best["candidate_k"],
        provenance=provenance,
    )
    train = {"default": base, "chosen": provenance["train_chosen"]}
    return TuneResult(chosen, default, train, comparison, warnings, grid)
