"""Measure RM3 query expansion (``KeywordRetriever(rm3=...)``) on SciFact and decide its default.

Usage::

    python eval/tune_rm3.py [--index DIR] [--hybrid]

Discipline (as ``eval/tune_title_boost.py``): settings are chosen on the *train* queries
only. Train is cut in two halves by a hash of the query id: a grid of ``fb_docs``,
``fb_terms`` and ``original_query_weight`` is scored by mean nDCG@10 on the first half
("tune"), and the best setting is checked on the second ("held out") with ``rag compare``'s
paired tests (:func:`~retrieval.evaluation.compare.compare_systems`) against no expansion.
Anserini's defaults (10, 10, 0.5) are always reported too. The test split is scored once,
for the chosen setting and the defaults, and never looked at to choose. With ``--hybrid`` the
default hybrid (``HybridRetriever.from_index``) is also run with and without the chosen
expansion of its keyword half (this needs the vector half: the index is built with it).
Output: a summary and ``eval/out/tune_rm3.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ragtools.indexes.keyword.rm3 import RM3
from ragtools.retrieval.base import Retriever
from ragtools.retrieval.evaluation.beir import load_beir
from ragtools.retrieval.evaluation.compare import compare_systems
from ragtools.retrieval.evaluation.experiment import open_or_build
from ragtools.retrieval.evaluation.metrics import Qrels, per_query
from ragtools.retrieval.hybrid import DEFAULT_FUSION, DEFAULT_WEIGHTS, HybridRetriever
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.vector import VectorRetriever

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
OUT = ROOT / "eval" / "out" / "tune_rm3.json"
FB_DOCS = (3, 5, 10)
FB_TERMS = (5, 10, 20)
WEIGHTS = (0.5, 0.7, 0.9)
METRICS = ("nDCG@10", "R@100")


def halves(qrels: Qrels) -> tuple[Qrels, Qrels]:
    """Train cut in two by a hash of the query id (stable across runs and machines)."""
    tune: dict[str, Any] = {}
    held: dict[str, Any] = {}
    for qid, judged in qrels.items():
        digest = hashlib.sha256(qid.encode()).digest()[0]
        (tune if digest % 2 == 0 else held)[qid] = judged
    return tune, held


def scores(retriever: Retriever, queries: Mapping[str, str], qrels: Qrels) -> dict[str, Any]:
    """Per-query nDCG@10 and R@100 of ``retriever`` on the judged queries."""
    run = {}
    for qid in qrels:
        hits = retriever.invoke(queries[qid], k=100)
        run[qid] = {}
        for hit in hits:
            run[qid].setdefault(hit.chunk.doc_id, hit.score)
    rows = per_query(qrels, run, (10, 100))
    return {q: {m: rows[q][m] for m in METRICS} for q in qrels}


def mean(rows: Mapping[str, Mapping[str, float]], metric: str = "nDCG@10") -> float:
    return sum(r[metric] for r in rows.values()) / len(rows)


def compared(base: Mapping[str, Any], system: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The paired comparison of ``system`` with ``base`` (``rag compare``'s figures)."""
    result = compare_systems({"base": base, "system": system}, baseline="base")
    return [asdict(row) for row in result.rows]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--index", type=Path, default=ROOT / "eval" / "out" / "scifact-index")
    parser.add_argument("--hybrid", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    train, test = load_beir(args.data, "train"), load_beir(args.data, "test")
    index = open_or_build(train, args.index, vector=args.hybrid)
    tune_qrels, held_qrels = halves(train.qrels)
    print(f"train: {len(tune_qrels)} tune + {len(held_qrels)} held-out queries")

    def keyword(rm3: RM3 | None) -> KeywordRetriever:
        return KeywordRetriever(index, rm3=rm3)

    base_tune = scores(keyword(None), train.queries, tune_qrels)
    grid = []
    for fb_docs, fb_terms, weight in itertools.product(FB_DOCS, FB_TERMS, WEIGHTS):
        rm3 = RM3(fb_docs, fb_terms, weight)
        rows = scores(keyword(rm3), train.queries, tune_qrels)
        grid.append({**rm3.to_dict(), "tune": {m: mean(rows, m) for m in METRICS}})
        print(f"  {fb_docs:>2} {fb_terms:>2} {weight}: tune nDCG@10 {mean(rows):.4f}")
    grid.sort(key=lambda g: -g["tune"]["nDCG@10"])
    best = grid[0]
    chosen = RM3(best["fb_docs"], best["fb_terms"], best["original_query_weight"])
    out: dict[str, Any] = {
        "baseline_tune": {m: mean(base_tune, m) for m in METRICS},
        "grid": grid,
        "chosen_on_tune": chosen.to_dict(),
    }
    print(f"no expansion: tune nDCG@10 {mean(base_tune):.4f}; best {json.dumps(best)}")
    base_held = scores(keyword(None), train.queries, held_qrels)
    base_train = {**base_tune, **base_held}
    base_test = scores(keyword(None), test.queries, test.qrels)
    for label, rm3 in (("chosen", chosen), ("anserini_defaults", RM3())):
        held = scores(keyword(rm3), train.queries, held_qrels)
        tune_rows = scores(keyword(rm3), train.queries, tune_qrels)
        test_rows = scores(keyword(rm3), test.queries, test.qrels)
        out[label] = {
            "settings": rm3.to_dict(),
            "held_out": compared(base_held, held),
            "train": compared(base_train, {**tune_rows, **held}),
            "test": compared(base_test, test_rows),
        }
        for split in ("held_out", "train", "test"):
            row = next(r for r in out[label][split] if r["metric"] == "nDCG@10")
            print(
                f"keyword {label} {split}: nDCG@10 {row['baseline_mean']:.4f} -> "
                f"{row['mean']:.4f} (t p={row['p_t']:.3g}, randomisation p="
                f"{row['p_randomization']:.3g})"
            )
    if args.hybrid:
        plain = HybridRetriever.from_index(index)
        expanded = HybridRetriever(
            [KeywordRetriever(index, rm3=chosen), VectorRetriever(index)],
            weights=DEFAULT_WEIGHTS,
            fusion=DEFAULT_FUSION,
        )
        out["hybrid"] = {}
        for split, queries, qrels in (
            ("train", train.queries, train.qrels),
            ("test", test.queries, test.qrels),
        ):
            a, b = scores(plain, queries, qrels), scores(expanded, queries, qrels)
            out["hybrid"][split] = compared(a, b)
            row = next(r for r in out["hybrid"][split] if r["metric"] == "nDCG@10")
            print(
                f"hybrid + chosen RM3 {split}: nDCG@10 {row['baseline_mean']:.4f} -> "
                f"{row['mean']:.4f} (t p={row['p_t']:.3g}, randomisation p="
                f"{row['p_randomization']:.3g})"
            )
    print(f"({time.perf_counter() - started:.0f}s)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
