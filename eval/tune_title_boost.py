"""Choose the index's ``title_boost`` (extra copies of a document's title in its keyword
text) together with BM25's variant, k1 and b, on SciFact *train*; report the choice on test.

Usage::

    python eval/tune_title_boost.py

Field weighting by repetition is the simplest form of BM25F: a title word counts ``1 +
title_boost`` times. The tokenizer and k3 (how repeated query terms count) are
``BM25Index()``'s defaults (chosen by ``eval/tune_bm25.py``). Every configuration is scored
by mean nDCG@10 over the 809 train queries; only the best one is then scored on the test
split, once. Output: a summary and ``eval/out/tune_title_boost.json`` with every train score.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "eval"))

from bench_bm25 import SCIFACT, load_scifact, load_titles, run_split  # noqa: E402

from indexes.bm25 import DEFAULT_PARAMS, BM25Index  # noqa: E402
from indexes.tokenize import Tokenizer  # noqa: E402

OUT = ROOT / "eval" / "out" / "tune_title_boost.json"
BOOSTS = (0, 1, 2)
VARIANTS = ("bm25plus", "lucene", "okapi")
K1_GRID = (0.9, 1.2, 1.5, 1.8)
B_GRID = (0.5, 0.6, 0.7, 0.75, 0.8)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    doc_ids, texts, queries, qrels = load_scifact(args.data)
    tokenizer = Tokenizer()
    body_tokens = tokenizer.tokenize_many(texts)  # title + text, as bench_bm25 indexes them
    title_tokens = tokenizer.tokenize_many(load_titles(args.data))
    query_tokens = {q: tokenizer(text) for q, text in queries.items()}

    def corpus(boost: int) -> list[list[str]]:
        return [t * boost + body for t, body in zip(title_tokens, body_tokens, strict=True)]

    def index(boost: int, variant: str, k1: float, b: float) -> BM25Index:
        built = BM25Index(
            tokenizer,
            variant=variant,  # type: ignore[arg-type]
            k1=k1,
            b=b,
            k3=DEFAULT_PARAMS["k3"],
        )
        built.add(corpus(boost))
        return built

    scores: list[dict[str, Any]] = []
    for boost, variant, k1, b in itertools.product(BOOSTS, VARIANTS, K1_GRID, B_GRID):
        ndcg = run_split(index(boost, variant, k1, b), query_tokens, qrels["train"], doc_ids)
        scores.append(
            {"title_boost": boost, "variant": variant, "k1": k1, "b": b, **{"train": ndcg}}
        )
    by_boost = {
        boost: max(s["train"]["ndcg@10"] for s in scores if s["title_boost"] == boost)
        for boost in BOOSTS
    }
    best = max(scores, key=lambda s: s["train"]["ndcg@10"])
    chosen = dict(best)
    settings = (best["title_boost"], best["variant"], best["k1"], best["b"])
    chosen["test"] = run_split(index(*settings), query_tokens, qrels["test"], doc_ids)
    print("best train nDCG@10 per title_boost:", json.dumps(by_boost))
    print("chosen on train:", json.dumps(chosen))
    print(f"({len(scores)} configurations in {time.perf_counter() - started:.0f}s)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"chosen": chosen, "train_scores": scores}, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
