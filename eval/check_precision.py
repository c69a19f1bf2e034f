"""Which embedding precision keeps retrieval quality: fp32 against int8 on SciFact.

Usage::

    python eval/check_precision.py              # train and test, both precisions
    python eval/check_precision.py --splits train

For each precision (``IndexSettings.precision``: the model run by ONNX Runtime at fp32, or
fused and with its attention and MatMul weights quantised to int8 per channel, texts of up
to ``onnx_encoder.SHORT_TOKENS`` tokens staying fp32), ``rag eval``'s own path
(:func:`~retrieval.evaluation.experiment.run_eval`) builds one SciFact index under
``--out`` (reused by later runs while the corpus and settings are unchanged) and scores the
vector and hybrid retrievers. The default precision is the fastest one whose nDCG@10 stays
within ``--tolerance`` of fp32's for both retrievers; it is chosen on *train* and the test
split is reported, not tuned on. Prints a table and writes ``eval/out/check_precision.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ragtools.indexes.dense.precision import PRECISIONS
from ragtools.retrieval.evaluation.experiment import run_eval

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
OUT = ROOT / "eval" / "out" / "check_precision.json"
RETRIEVERS = ("vector", "hybrid")


def scores(precision: str, split: str, out: Path) -> dict[str, float]:
    """nDCG@10 of each retriever at ``precision`` on ``split``."""
    report = run_eval(
        SCIFACT,
        split=split,
        retrievers=RETRIEVERS,
        out=out / f"{precision}-{split}",
        index_dir=out / f"index-{precision}",
        precision=precision,
        depth=100,
    )
    return {name: report["results"][name]["nDCG@10"] for name in RETRIEVERS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--splits", default="train,test")
    parser.add_argument("--tolerance", type=float, default=0.003)
    parser.add_argument("--out", type=Path, default=ROOT / "eval" / "out" / "precision")
    args = parser.parse_args()
    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    table: dict[str, Any] = {
        split: {p: scores(p, split, args.out) for p in PRECISIONS} for split in splits
    }
    print(f"{'split':6} {'retriever':9} " + " ".join(f"{p:>8}" for p in PRECISIONS) + "  delta")
    verdict: dict[str, Any] = {}
    for split, by_precision in table.items():
        for name in RETRIEVERS:
            values = [by_precision[p][name] for p in PRECISIONS]
            deltas = " ".join(f"{v - values[0]:+.4f}" for v in values[1:])
            cells = " ".join(f"{v:8.4f}" for v in values)
            print(f"{split:6} {name:9} {cells} {deltas}")
        for reduced in PRECISIONS[1:]:
            worst = min(by_precision[reduced][n] - by_precision["fp32"][n] for n in RETRIEVERS)
            ok = worst >= -args.tolerance
            verdict[f"{split}-{reduced}"] = {"within_tolerance": ok, "worst": worst}
            print(f"{split}: {reduced} within {args.tolerance} of fp32: {ok}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"ndcg@10": table, "verdict": verdict}, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
