"""Is there a change of the shipped hybrid defaults that is a general gain? Two-fold
cross-validation on SciFact train, and the two hand-judged local sets.

Usage::

    python eval/measure_defaults.py [--index DIR] [--work DIR] [--families a,b,c,d,e]

The default is ``HybridRetriever.from_index``: BM25 (the index's settings) + vectors,
``relative_score`` fusion, weights 0.6 / 0.4, 1,000 candidates each. Each *family* of
candidates changes one thing:

* ``a`` vector pseudo-relevance feedback (``VectorRetriever(prf=Rocchio(...))``, Li et al.
  2021 / Pyserini) on the vector half: a grid of depth x alpha (beta = 1 - alpha), plus
  Pyserini's "Average PRF 3" and "Rocchio 5 A0.4 B0.6" rows;
* ``f`` the same vector feedback fed by the default hybrid's top ``depth`` fused hits
  instead of the vector half's (:class:`FusedFeedback`; hybrid feedback for dense PRF, as
  Li et al. 2022 "To Interpolate or not to Interpolate" study it), the same grid;
* ``b`` RM3 on the keyword half (``KeywordRetriever(rm3=...)``);
* ``c`` BM25 parameters and variant (keyword half of a keyword-only index built with them);
* ``d`` ``title_boost`` (likewise);
* ``e`` fusion: the fixed settings of the literature (convex z-score 0.5 / 0.5, Bruch et al.
  2022; convex min-max 0.5 / 0.5; RRF k = 60, Cormack et al. 2009; DBSF) at 1,000
  candidates, and the default's at 100 and 300 candidates.

Protocol (the test split is never read here): train queries are cut in two fixed halves by
a seeded shuffle (``random.Random(SEED)`` of the sorted ids). For each family, the setting
with the best mean nDCG@10 on one half is scored on the other against the default with
``rag compare``'s paired tests (:func:`~retrieval.evaluation.compare.compare_systems`:
t test and randomisation test, 10,000 sign assignments), both ways. The setting chosen on
all of train is then scored on the Markdown docs folder (``eval/data/md_docs``, 40 queries)
and on this repository's README + ``../shared/pdfs`` (``eval/data/local_docs``, 38 queries),
against the default, the same way. A family qualifies only if its choices gain on both
folds and on both sets, and lose nowhere significantly (p < 0.05).

Every retriever's ranking of a query is computed once and reused by every fusion setting
(:class:`Memo`): fusion itself is ``HybridRetriever``'s, so a hybrid here is exactly the one
``rag search`` runs. Output: a summary, ``WORK/measure_defaults.json`` (every grid point's
means on train and each half) and ``WORK/measure_defaults.md`` (:func:`table`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # measure_context, beside this file
from measure_context import (
    LOCAL,
    MD_DOCS,
    line,
    local_documents,
    markdown_folder,
    markdown_unit,
    unit,
)

from ragtools.indexes.dense.prf import Rocchio
from ragtools.indexes.index import Index
from ragtools.indexes.keyword.rm3 import RM3
from ragtools.indexes.ranking import Ranking
from ragtools.indexes.settings import IndexSettings
from ragtools.parsers import Document, load_dir
from ragtools.retrieval.base import Filter, QueryFilter, RankedChunks, Ranker
from ragtools.retrieval.evaluation.beir import corpus_documents, load_beir, load_qrels, load_queries
from ragtools.retrieval.evaluation.compare import compare_systems
from ragtools.retrieval.evaluation.experiment import EVAL_CHUNK_SIZE, open_or_build
from ragtools.retrieval.evaluation.metrics import Qrels, per_query
from ragtools.retrieval.fusion import FusionMethod
from ragtools.retrieval.hit import Hit, top_by_key
from ragtools.retrieval.hybrid import (
    DEFAULT_CANDIDATE_K,
    DEFAULT_FUSION,
    DEFAULT_WEIGHTS,
    HybridRetriever,
)
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.vector import VectorRetriever

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
SEED = 37
METRICS = ("nDCG@10", "R@100")
DEPTH = DEFAULT_CANDIDATE_K  # the deepest candidate list any setting asks for

Fusion = tuple[FusionMethod, tuple[float, float], int]
DEFAULT: Fusion = (DEFAULT_FUSION, DEFAULT_WEIGHTS, DEFAULT_CANDIDATE_K)
FUSIONS: dict[str, Fusion] = {
    "zscore 0.5/0.5": ("zscore", (0.5, 0.5), 1000),
    "relative_score 0.5/0.5": ("relative_score", (0.5, 0.5), 1000),
    "rrf k=60": ("rrf", (0.5, 0.5), 1000),
    "dbsf 0.5/0.5": ("dbsf", (0.5, 0.5), 1000),
    "default @100": (DEFAULT_FUSION, DEFAULT_WEIGHTS, 100),
    "default @300": (DEFAULT_FUSION, DEFAULT_WEIGHTS, 300),
}
PRF: dict[str, Rocchio] = {
    f"rocchio {d} a{a}": Rocchio(d, a, round(1 - a, 2))
    for d, a in itertools.product((1, 3, 5, 10), (0.4, 0.5, 0.7, 0.9))
} | {"average 3 (a0.25 b0.75)": Rocchio(3, 0.25, 0.75)}
RM3S: dict[str, RM3] = {
    f"rm3 {d} {t} {w}": RM3(d, t, w)
    for d, t, w in itertools.product((3, 10), (5, 10), (0.5, 0.7, 0.9))
}
BM25S: dict[str, dict[str, Any]] = {
    "lucene k1=0.9 b=0.4": {"variant": "lucene", "k1": 0.9, "b": 0.4},
    "lucene k1=1.2 b=0.75": {"variant": "lucene", "k1": 1.2, "b": 0.75},
    "bm25plus k1=0.9 b=0.4": {"k1": 0.9, "b": 0.4},
    "bm25plus k1=1.2 b=0.75": {"k1": 1.2, "b": 0.75},
}
TITLE_BOOSTS = (0, 2)
LITERATURE: dict[str, str] = {
    "a": "rocchio 5 a0.4",  # Pyserini's Rocchio PRF row for dense retrievers (depth 5, 0.4/0.6)
    "f": "rocchio 5 a0.4",
    "b": "rm3 10 10 0.5",  # Anserini's RM3 defaults
    "c": "lucene k1=0.9 b=0.4",  # Anserini's BM25 defaults
    "e": "zscore 0.5/0.5",  # convex combination, equal weights, z-scores (Bruch et al. 2022)
}
"""Each family's point fixed in advance by the literature (no selection): scored on each
half of train and on the local sets as it is, beside the cross-validated choice."""


class Memo:
    """A :class:`~retrieval.base.Ranker` that ranks each query once, at :data:`DEPTH`, and
    answers shallower asks with the prefix (a ranking in hit order is a total order, so its
    first ``k`` rows are the top ``k``)."""

    def __init__(self, ranker: Ranker) -> None:
        self.ranker = ranker
        self.stage = ranker.stage
        self.seen: dict[str, RankedChunks] = {}

    def rank(self, query: str, k: int, filter: Filter | QueryFilter | None) -> RankedChunks:
        """The memoised ranking of ``query`` (unfiltered: this study passes no filter)."""
        ranked = self.seen.get(query)
        if ranked is None:
            ranked = self.seen[query] = self.ranker.rank(query, max(k, DEPTH), None)
        if k >= len(ranked.ranking.rows):
            return ranked
        cut = Ranking(ranked.ranking.rows[:k], ranked.ranking.scores[:k])
        return RankedChunks(cut, ranked.chunks, ranked.keys, ranked.stage)


class FusedFeedback:
    """The vector half searched with :class:`~indexes.dense.prf.Rocchio`'s query moved
    towards the default hybrid's top ``depth`` hits (the fused first pass) rather than the
    vector half's own: :meth:`VectorRetriever.rocchio_query` with other feedback rows."""

    stage = "vector"

    def __init__(self, corpus: Corpus, rocchio: Rocchio) -> None:
        self.index, self.rocchio = corpus.index, rocchio
        self.retriever = VectorRetriever(corpus.index)
        self.first = HybridRetriever(
            [corpus.keyword(), corpus.vector()],
            weights=DEFAULT_WEIGHTS,
            fusion=DEFAULT_FUSION,
            candidate_k=DEFAULT_CANDIDATE_K,
        )
        self.rows = {chunk.id: row for row, chunk in enumerate(corpus.index.state.chunks)}

    def rank(self, query: str, k: int, filter: Filter | QueryFilter | None) -> RankedChunks:
        """The second vector pass of ``query`` (unfiltered, as :class:`Memo` asks)."""
        state = self.index.state
        hits = self.first.invoke(query, k=self.rocchio.depth)
        vector = self.retriever.rocchio_query(
            state,
            self.index.embedder.embed_query(query),
            [self.rows[hit.chunk.id] for hit in hits],
            self.rocchio,
        )
        ranking = top_by_key(
            lambda depth: state.vector_ranking(vector, depth, None), k, state.chunk_keys
        )
        return RankedChunks(ranking, state.chunks, state.chunk_keys, self.stage)


class Corpus:
    """One judged collection: its queries, judgements, how a hit maps to a judged unit, and
    the memoised halves each candidate needs (made on first use)."""

    def __init__(
        self,
        name: str,
        index: Index,
        queries: Mapping[str, str],
        qrels: Qrels,
        key: Callable[[Hit], str],
        depth: int,
        rebuild: Callable[[Path, dict[str, Any]], Index],
        work: Path,
    ) -> None:
        self.name, self.index, self.queries, self.qrels = name, index, queries, qrels
        self.key, self.depth, self.rebuild, self.work = key, depth, rebuild, work
        self.halves: dict[tuple[str, str], Memo] = {}

    def half(self, kind: str, label: str, make: Callable[[], Ranker]) -> Memo:
        memo = self.halves.get((kind, label))
        if memo is None:
            memo = self.halves[kind, label] = Memo(make())
        return memo

    def keyword(self, label: str = "default") -> Memo:
        return self.half("keyword", label, lambda: KeywordRetriever(self.index))

    def vector(self, label: str = "default") -> Memo:
        return self.half("vector", label, lambda: VectorRetriever(self.index))

    def scores(
        self, keyword: Memo, vector: Memo, fusion: Fusion = DEFAULT
    ) -> dict[str, dict[str, float]]:
        """Per-query nDCG@10 and R@100 of the hybrid of ``keyword`` and ``vector``."""
        method, weights, candidate_k = fusion
        hybrid = HybridRetriever(
            [keyword, vector], weights=weights, fusion=method, candidate_k=candidate_k
        )
        run: dict[str, dict[str, float]] = {}
        for qid in self.qrels:
            run[qid] = {}
            for hit in hybrid.invoke(self.queries[qid], k=self.depth):
                run[qid].setdefault(self.key(hit), hit.score)
        rows = per_query(self.qrels, run, (10, 100))
        return {q: {m: rows[q][m] for m in METRICS} for q in self.qrels}


def family(
    corpus: Corpus, name: str, *, grid_only: bool = True
) -> dict[str, Callable[[], dict[str, dict[str, float]]]]:
    """Each candidate setting of family ``name`` on ``corpus``: label -> per-query scores
    (``grid_only=False``: with its :data:`LITERATURE` point when the grid lacks it)."""
    kw, vec = corpus.keyword, corpus.vector
    if name == "a":
        return {
            label: lambda r=rocchio, label=label: corpus.scores(  # type: ignore[misc]
                kw(), corpus.half("vector", label, lambda: VectorRetriever(corpus.index, prf=r))
            )
            for label, rocchio in PRF.items()
        }
    if name == "f":
        return {
            label: lambda r=rocchio, label=label: corpus.scores(  # type: ignore[misc]
                kw(), corpus.half("fused", label, lambda: FusedFeedback(corpus, r))
            )
            for label, rocchio in PRF.items()
        }
    if name == "b":
        return {
            label: lambda r=rm3, label=label: corpus.scores(  # type: ignore[misc]
                corpus.half("keyword", label, lambda: KeywordRetriever(corpus.index, rm3=r)), vec()
            )
            for label, rm3 in (RM3S | {"rm3 10 10 0.5": RM3(10, 10, 0.5)}).items()
            if label in RM3S or not grid_only
        }
    if name in ("c", "d"):
        changes = (
            {label: {"bm25": params} for label, params in BM25S.items()}
            if name == "c"
            else {f"title_boost {b}": {"title_boost": b} for b in TITLE_BOOSTS}
        )

        def other(label: str, change: dict[str, Any]) -> dict[str, dict[str, float]]:
            def make() -> Ranker:
                path = corpus.work / f"{corpus.name}-{label.replace(' ', '_')}"
                return KeywordRetriever(corpus.rebuild(path, change))

            return corpus.scores(corpus.half("keyword", label, make), vec())

        return {
            label: lambda label=label, c=change: other(label, c)  # type: ignore[misc]
            for label, change in changes.items()
        }
    if name == "e":
        return {
            label: lambda f=fusion: corpus.scores(kw(), vec(), f)  # type: ignore[misc]
            for label, fusion in FUSIONS.items()
        }
    raise SystemExit(f"unknown family {name!r}")


def mean(rows: Mapping[str, Mapping[str, float]], part: Sequence[str] | None = None) -> float:
    keys = list(rows) if part is None else list(part)
    return sum(rows[q]["nDCG@10"] for q in keys) / len(keys)


def compared(
    base: Mapping[str, Any], system: Mapping[str, Any], part: Sequence[str] | None = None
) -> dict[str, Any]:
    """``rag compare``'s paired figures of ``system`` against ``base`` (on ``part``)."""
    keys = list(base) if part is None else list(part)
    result = compare_systems(
        {"default": {q: base[q] for q in keys}, "system": {q: system[q] for q in keys}},
        baseline="default",
    )
    return {row.metric: asdict(row) for row in result.rows}


def halves(qids: Sequence[str]) -> tuple[list[str], list[str]]:
    """The train queries cut in two fixed halves by a seeded shuffle of the sorted ids."""
    order = sorted(qids)
    random.Random(SEED).shuffle(order)
    middle = len(order) // 2
    return sorted(order[:middle]), sorted(order[middle:])


def cross_validate(corpus: Corpus, name: str) -> dict[str, Any]:
    """Two-fold CV of family ``name`` on SciFact train, and the all-train choice."""
    base = corpus.scores(corpus.keyword(), corpus.vector())
    grid = {label: make() for label, make in family(corpus, name).items()}
    first, second = halves(list(corpus.qrels))
    out: dict[str, Any] = {
        "default": {"train": mean(base), "A": mean(base, first), "B": mean(base, second)},
        "grid": {
            label: {"train": mean(rows), "A": mean(rows, first), "B": mean(rows, second)}
            for label, rows in grid.items()
        },
        "folds": {},
    }
    for tune, held, fold in ((first, second, "A->B"), (second, first, "B->A")):
        chosen = max(grid, key=lambda label: (mean(grid[label], tune), label))
        rows = compared(base, grid[chosen], held)
        out["folds"][fold] = {"chosen": chosen, "held_out": rows}
        print(line(f"  [{name}] SciFact train {fold}: {chosen}", rows))
    chosen = max(grid, key=lambda label: (mean(grid[label]), label))
    out["chosen_on_train"] = chosen
    out["train"] = compared(base, grid[chosen])
    print(line(f"  [{name}] SciFact all train (in-sample): {chosen}", out["train"]))
    return out


def literature(corpus: Corpus, name: str) -> dict[str, Any]:
    """Family ``name``'s :data:`LITERATURE` point on each half of SciFact train, against the
    default (no selection: the point is fixed in advance)."""
    label = LITERATURE[name]
    base = corpus.scores(corpus.keyword(), corpus.vector())
    rows = family(corpus, name, grid_only=False)[label]()
    out: dict[str, Any] = {"setting": label}
    for half, part in zip("AB", halves(list(corpus.qrels)), strict=True):
        out[half] = compared(base, rows, part)
        print(line(f"  [{name}] SciFact train half {half}, fixed {label}", out[half]))
    return out


def on_other(corpus: Corpus, name: str, label: str) -> dict[str, Any]:
    """The setting ``label`` of family ``name`` on a local set, against the default."""
    base = corpus.scores(corpus.keyword(), corpus.vector())
    rows = compared(base, family(corpus, name, grid_only=False)[label]())
    print(line(f"  [{name}] {corpus.name} ({len(corpus.qrels)} queries): {label}", rows))
    return rows


def table(out: Mapping[str, Any]) -> str:
    """The results as a Markdown table: per family, each fold's choice on its held-out half,
    the all-train choice in-sample and on the two local sets; then each fixed literature
    point on each half and on the local sets (nDCG@10 against the default)."""
    lines = [
        "| family | where (queries) | setting | default | setting's | Δ | p (t) | p (rand.) "
        "| w/t/l |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    places: list[tuple[str, str, str, Mapping[str, Any]]] = []
    for name, result in out["families"].items():
        chosen = result["chosen_on_train"]
        places += [
            (name, f"SciFact train, fold {fold} held out", f["chosen"], f["held_out"])
            for fold, f in result["folds"].items()
        ]
        places.append((name, "SciFact train, in-sample", chosen, result["train"]))
        places += [(name, where, chosen, rows) for where, rows in result["other"].items()]
    for name, result in out.get("literature", {}).items():
        fixed, setting = f"{name} (fixed)", result["setting"]
        places += [(fixed, f"SciFact train, half {h}", setting, result[h]) for h in "AB"]
        places += [(fixed, where, setting, rows) for where, rows in result["other"].items()]
    for name, where, setting, rows in places:
        r = rows["nDCG@10"]
        n = r["wins"] + r["ties"] + r["losses"]
        lines.append(
            f"| {name} | {where} ({n}) | {setting} | {r['baseline_mean']:.4f} | "
            f"{r['mean']:.4f} | {r['delta']:+.4f} | {r['p_t']:.3g} | "
            f"{r['p_randomization']:.3g} | {r['wins']}/{r['ties']}/{r['losses']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--index", type=Path, default=ROOT / "eval" / "out" / "scifact-index")
    parser.add_argument("--work", type=Path, default=ROOT / "eval" / "out" / "defaults")
    parser.add_argument("--families", default="a,f,b,c,d,e")
    parser.add_argument(
        "--literature-only",
        action="store_true",
        help="only each family's fixed literature point (no cross-validation)",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    args.work.mkdir(parents=True, exist_ok=True)
    names = args.families.split(",")

    train = load_beir(SCIFACT, "train")
    sf_docs = corpus_documents(train)

    def sf_rebuild(path: Path, change: dict[str, Any]) -> Index:
        settings = IndexSettings.checked(
            {"chunk_size": EVAL_CHUNK_SIZE, "chunk_overlap": 0, "vector": False} | change
        )
        return Index.from_documents(sf_docs, path, settings=settings, show_progress=False)

    scifact = Corpus(
        "scifact",
        open_or_build(train, args.index),
        train.queries,
        train.qrels,
        lambda hit: hit.chunk.doc_id,
        100,
        sf_rebuild,
        args.work,
    )
    md_documents = load_dir(markdown_folder(args.work / "md-docs"), show_progress=False).documents
    local = local_documents()
    md_key = markdown_unit()

    def builder(documents: list[Document]) -> Callable[[Path, dict[str, Any]], Index]:
        def build(path: Path, change: dict[str, Any]) -> Index:
            return Index.from_documents(documents, path, show_progress=False, **change)

        return build

    others = [
        Corpus(
            "Markdown docs",
            builder(md_documents)(args.work / "md-index", {}),
            load_queries(MD_DOCS),
            load_qrels(MD_DOCS, "test"),
            lambda hit: md_key(hit.chunk),
            200,
            builder(md_documents),
            args.work,
        ),
        Corpus(
            "README+PDFs",
            builder(local)(args.work / "local-index", {}),
            load_queries(LOCAL),
            {**load_qrels(LOCAL, "train"), **load_qrels(LOCAL, "test")},
            unit,
            200,
            builder(local),
            args.work,
        ),
    ]
    for corpus in others:
        corpus.rebuild = lambda path, change, build=corpus.rebuild: build(  # type: ignore[misc]
            path, {"vector": False, **change}
        )
    path = args.work / "measure_defaults.json"
    out: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    out = {"seed": SEED, "families": {}, "literature": {}} | out
    for name in names:
        print(f"family {name} ({time.perf_counter() - started:.0f}s)")
        if args.literature_only:
            if name in LITERATURE:
                result = literature(scifact, name)
                result["other"] = {c.name: on_other(c, name, LITERATURE[name]) for c in others}
                out["literature"][name] = result
        else:
            result = cross_validate(scifact, name)
            result["other"] = {c.name: on_other(c, name, result["chosen_on_train"]) for c in others}
            out["families"][name] = result
        path.write_text(json.dumps(out, indent=1))
        path.with_suffix(".md").write_text(table(out))
    print(f"({time.perf_counter() - started:.0f}s); wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
