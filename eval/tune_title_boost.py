"""Choose the index's ``title_boost`` (extra copies of a document's title in its keyword
text) on SciFact *train*, at ``BM25Index()``'s parameters; report the choice on test.

Usage::

    python eval/tune_title_boost.py

Field weighting by repetition is the simplest form of BM25F: a title word counts ``1 +
title_boost`` times. The tokenizer and k3 (how repeated query terms count) are
``BM25Index()``'s defaults (chosen by ``eval/tune_bm25.py``). Every boost is scored at a
grid of variants, k1 and b by mean nDCG@10 over the 809 train queries. An index keeps
``BM25Index()``'s variant, k1 and b, so the boost is chosen at those; the best of the whole
grid is printed to show how flat its top is, and is not scored on test. Only the chosen boost
is scored on the test split, once. Output: a summary and ``eval/out/tune_title_boost.json``
with every train score.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragtools.indexes.keyword.bm25 import DEFAULT_PARAMS, DEFAULT_VARIANT, BM25Index
from ragtools.indexes.text.tokenize import Tokenizer
from ragtools.retrieval.evaluation.studies import load_corpus, load_titles, run_split

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
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
    doc_ids, texts, queries, qrels = load_corpus(args.data)
    tokenizer = Tokenizer()
    body_tokens = tokenizer.tokenize_many(texts)  # title + text, as rag build indexes them
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
        boost: max(s["train"]["nDCG@10"] for s in scores if s["title_boost"] == boost)
        for boost in BOOSTS
    }
    # An index keeps BM25Index()'s parameters (IndexSettings.bm25 is empty by default), so
    # the boost is chosen at those; the rest of the grid shows how flat the top is.
    at_defaults = [
        s
        for s in scores
        if (s["variant"], s["k1"], s["b"])
        == (DEFAULT_VARIANT, DEFAULT_PARAMS["k1"], DEFAULT_PARAMS["b"])
    ]
    chosen = dict(max(at_defaults, key=lambda s: s["train"]["nDCG@10"]))
    settings = (chosen["title_boost"], DEFAULT_VARIANT, DEFAULT_PARAMS["k1"], DEFAULT_PARAMS["b"])
    chosen["test"] = run_split(index(*settings), query_tokens, qrels["test"], doc_ids)
    grid_best = max(scores, key=lambda s: s["train"]["nDCG@10"])
    print("best train nDCG@10 per title_boost, whole grid:", json.dumps(by_boost))
    print("best of the whole grid (train only):", json.dumps(grid_best))
    print(
        "train nDCG@10 per title_boost at BM25Index()'s parameters:",
        json.dumps({s["title_boost"]: s["train"]["nDCG@10"] for s in at_defaults}),
    )
    print("chosen on train:", json.dumps(chosen))
    print(f"({len(scores)} configurations in {time.perf_counter() - started:.0f}s)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    out = {"chosen": chosen, "grid_best": grid_best, "train_scores": scores}
    args.out.write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
