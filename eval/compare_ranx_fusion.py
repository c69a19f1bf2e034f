"""``rag tune`` against ranx's ``optimize_fusion`` on the same SciFact runs.

Usage::

    python eval/compare_ranx_fusion.py [--index DIR] [--dataset DIR] [--out DIR]

The index is ``rag eval``'s SciFact index (one chunk per document, the default settings;
``--index`` reuses one, e.g. ``eval-out/index``). Its keyword and vector halves each give one
run per query, 1,000 documents deep (the default hybrid's candidate depth), on the train and
the test queries. ranx's ``optimize_fusion`` (grid step 0.1, metric nDCG@10, as ``rag tune``)
chooses the weights on the train runs for three of its fusions: ``wsum`` of min-max scores
(what the hybrid's ``relative_score`` computes), ``wsum`` of z-scores (``zmuv``, the closest
ranx has to ``dbsf``'s mean +- 3 standard deviations) and ``rrf`` (ranx tunes its ``k``, not
weights). Each choice is fused on the test runs and scored with this package's metrics and
paired tests (``rag compare``'s :func:`~retrieval.evaluation.compare.compare_systems`)
against the default hybrid retriever, the same baseline as ``rag tune``'s test report.
``rag tune``'s own choice is made by :func:`~retrieval.evaluation.tune.tune_fusion` on the
same index and train split. The test split is never used to choose. Output: a summary and
``DIR/compare_ranx_fusion.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ranx import Qrels as RanxQrels
from ranx import Run as RanxRun
from ranx import fuse, optimize_fusion

from ragtools.retrieval.base import Retriever
from ragtools.retrieval.evaluation.beir import load_beir
from ragtools.retrieval.evaluation.compare import compare_systems
from ragtools.retrieval.evaluation.experiment import open_or_build
from ragtools.retrieval.evaluation.metrics import Qrels, per_query
from ragtools.retrieval.evaluation.tune import tune_fusion
from ragtools.retrieval.hybrid import DEFAULT_CANDIDATE_K
from ragtools.retrieval.names import retriever_for

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
METRICS = ("nDCG@10", "R@100")
FUSIONS = (("min-max", "wsum"), ("zmuv", "wsum"), ("min-max", "rrf"))


def run_of(retriever: Retriever, queries: Mapping[str, str], qrels: Qrels) -> dict[str, Any]:
    """``{query_id: {doc_id: score}}``, :data:`DEFAULT_CANDIDATE_K` documents deep."""
    run: dict[str, dict[str, float]] = {}
    for qid in qrels:
        run[qid] = {}
        for hit in retriever.invoke(queries[qid], k=DEFAULT_CANDIDATE_K):
            run[qid].setdefault(hit.chunk.doc_id, hit.score)
    return run


def rows_of(qrels: Qrels, run: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    rows = per_query(qrels, dict(run), (10, 100))  # type: ignore[arg-type]
    return {q: {m: rows[q][m] for m in METRICS} for q in qrels}


def positive(qrels: Qrels) -> Qrels:
    return {q: j for q, j in qrels.items() if any(v > 0 for v in j.values())}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--index", type=Path, default=ROOT / "eval" / "out" / "scifact-index")
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--out", type=Path, default=ROOT / "eval" / "out")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    train, test = load_beir(args.dataset, "train"), load_beir(args.dataset, "test")
    index = open_or_build(train, args.index, show_progress=False)
    qrels = {"train": positive(train.qrels), "test": positive(test.qrels)}
    queries = {"train": train.queries, "test": test.queries}
    halves = {name: retriever_for(index, name) for name in ("keyword", "vector")}
    runs = {
        (split, name): run_of(retriever, queries[split], qrels[split])
        for split in ("train", "test")
        for name, retriever in halves.items()
    }
    default_test = rows_of(
        qrels["test"], run_of(retriever_for(index, "hybrid"), queries["test"], qrels["test"])
    )
    out: dict[str, Any] = {"ranx": {}}
    for norm, method in FUSIONS:
        label = f"ranx {method}" + (f" ({norm})" if method == "wsum" else "")
        ranx_train = [RanxRun(runs["train", name], name=name) for name in halves]
        params = optimize_fusion(
            RanxQrels(qrels["train"]), ranx_train, norm=norm, method=method, metric="ndcg@10"
        )
        fused_train = fuse(ranx_train, norm=norm, method=method, params=params)
        fused = fuse(
            [RanxRun(runs["test", name], name=name) for name in halves],
            norm=norm,
            method=method,
            params=params,
        )
        train_rows = rows_of(qrels["train"], fused_train.to_dict())
        test_rows = rows_of(qrels["test"], fused.to_dict())
        comparison = compare_systems({"default": default_test, label: test_rows})
        row = next(r for r in comparison.rows if r.metric == "nDCG@10")
        out["ranx"][label] = {
            "params": {k: list(v) if isinstance(v, tuple) else v for k, v in params.items()},
            "train_nDCG@10": sum(r["nDCG@10"] for r in train_rows.values()) / len(train_rows),
            "test": [asdict(r) for r in comparison.rows],
        }
        print(
            f"{label}: params {params}, train nDCG@10 {out['ranx'][label]['train_nDCG@10']:.4f}; "
            f"test nDCG@10 {row.baseline_mean:.4f} (default hybrid) -> {row.mean:.4f} "
            f"({row.delta:+.4f}, rand. p={row.p_randomization:.3g}, "
            f"w/t/l {row.wins}/{row.ties}/{row.losses})"
        )
    result = tune_fusion(index, args.dataset, split="train", test_split="test")
    chosen = result.chosen
    assert result.test is not None
    row = next(r for r in result.test.rows if r.metric == "nDCG@10")
    out["rag tune"] = {
        "chosen": chosen.model_dump(mode="json"),
        "train": result.train,
        "test": [asdict(r) for r in result.test.rows],
    }
    print(
        f"rag tune: {chosen.method}, weights {list(chosen.weights)}, {chosen.candidate_k} "
        f"candidates, train nDCG@10 {result.train['chosen']['nDCG@10']:.4f} (default "
        f"{result.train['default']['nDCG@10']:.4f}); test nDCG@10 {row.baseline_mean:.4f} -> "
        f"{row.mean:.4f} ({row.delta:+.4f}, rand. p={row.p_randomization:.3g}, "
        f"w/t/l {row.wins}/{row.ties}/{row.losses})"
    )
    print(f"({time.perf_counter() - started:.0f}s)")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "compare_ranx_fusion.json").write_text(json.dumps(out, indent=1, default=str))
    print(f"wrote {args.out / 'compare_ranx_fusion.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
