"""Evaluate retrievers on a BEIR dataset; ``--tune`` picks the hybrid fusion on the train split.

    python eval/beir.py --dataset ../shared/data/scifact --retrievers bm25,vector,hybrid
    python eval/beir.py --dataset ../shared/data/scifact --tune

Without ``--tune`` this is ``rag eval``. With it, the BM25 and vector runs of the *train*
queries are computed once, every fusion method and weight on a grid is scored on them, and
the best setting is then reported on the test split (never tuned on test).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from ragtools.retrieval.evaluation import evaluate_run, load_beir, render_markdown
from ragtools.retrieval.evaluation.experiment import open_or_build, run_eval
from ragtools.retrieval.fusion import fuse
from ragtools.retrieval.hybrid import DEFAULT_CANDIDATE_K
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.vector import VectorRetriever

ROOT = Path(__file__).resolve().parents[1]

GRID_WEIGHTS = [round(0.1 * i, 1) for i in range(11)]
METHODS = ("rrf", "relative_score", "dbsf")


def _runs(index, queries, depth):  # type: ignore[no-untyped-def]
    keyword, vector = KeywordRetriever(index), VectorRetriever(index)
    out = {}
    for qid, text in queries.items():
        out[qid] = [
            [(h.chunk.id, h.score) for h in retriever.invoke(text, k=depth)]
            for retriever in (keyword, vector)
        ]
    return out


def _score(index, runs, qrels, method, weights, rrf_k=60):  # type: ignore[no-untyped-def]
    doc_of = {c.id: c.doc_id for c in index.chunks}
    run = {}
    for qid, pair in runs.items():
        fused = fuse(method, pair, weights=weights, rrf_k=rrf_k)[:100]
        run[qid] = {doc_of[cid]: score for cid, score in fused}
    return evaluate_run(qrels, run)


def tune(args: argparse.Namespace) -> int:
    train = load_beir(args.dataset, "train")
    test = load_beir(args.dataset, "test")
    index = open_or_build(train, args.index or Path(args.out) / "index")
    started = time.perf_counter()
    train_runs = _runs(index, train.queries, DEFAULT_CANDIDATE_K)
    test_runs = _runs(index, test.queries, DEFAULT_CANDIDATE_K)
    print(f"runs computed in {time.perf_counter() - started:.1f}s")
    rows = []
    for method in METHODS:
        for w in GRID_WEIGHTS:
            weights = [w, round(1 - w, 1)]
            if sum(weights) == 0:
                continue
            m = _score(index, train_runs, train.qrels, method, weights)
            rows.append((m["nDCG@10"], m["R@100"], method, weights))
    rows.sort(key=lambda row: (-row[0], row[2], row[3]))
    print("top settings on the TRAIN split (nDCG@10, Recall@100, method, [w_bm25, w_vector]):")
    for row in rows[:10]:
        print(f"  {row[0]:.4f}  {row[1]:.4f}  {row[2]:<15} {row[3]}")
    best = rows[0]
    for label, weights in (("single bm25", [1.0, 0.0]), ("single vector", [0.0, 1.0])):
        m = _score(index, train_runs, train.qrels, "rrf", weights)
        print(f"  train {label}: nDCG@10 {m['nDCG@10']:.4f}")
    chosen = _score(index, test_runs, test.qrels, best[2], best[3])
    bm25 = _score(index, test_runs, test.qrels, "rrf", [1.0, 0.0])
    vec = _score(index, test_runs, test.qrels, "rrf", [0.0, 1.0])
    result = {
        "chosen": {"fusion": best[2], "weights": best[3], "train_ndcg@10": best[0]},
        "test": {
            "hybrid": {"nDCG@10": chosen["nDCG@10"], "R@100": chosen["R@100"]},
            "bm25": {"nDCG@10": bm25["nDCG@10"], "R@100": bm25["R@100"]},
            "vector": {"nDCG@10": vec["nDCG@10"], "R@100": vec["R@100"]},
        },
    }
    print(json.dumps(result, indent=2))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tune.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=str(ROOT.parent / "shared" / "data" / "scifact"))
    parser.add_argument("--split", default="test")
    parser.add_argument("--retrievers", default="bm25,vector,hybrid")
    parser.add_argument("--out", default=str(ROOT / "eval" / "out" / "beir"))
    parser.add_argument("--index", default=None)
    parser.add_argument("--max-queries", type=int, default=None)
    parser.add_argument("--tune", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    if args.tune:
        return tune(args)
    report = run_eval(
        args.dataset,
        split=args.split,
        retrievers=args.retrievers.split(","),
        out=args.out,
        index_dir=args.index,
        max_queries=args.max_queries,
    )
    print(render_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
