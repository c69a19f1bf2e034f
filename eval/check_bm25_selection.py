"""Is picking BM25 parameters on SciFact train stable? Compare two ways of choosing, on train only.

Usage::

    python eval/check_bm25_selection.py [--splits 200]

With ``Tokenizer()``'s defaults, every (variant, k1, b, k3) of ``eval/tune_bm25.py``'s grids
is scored per train query (nDCG@10, pytrec_eval). Then, many times, the 809 train queries are
cut into two random halves; each way of choosing picks a configuration on one half and is
scored on the other (and the other way round):

* ``joint``: the argmax over the whole grid;
* ``staged``: the argmax of (variant, k1, b) with rank-bm25's linear query-term count
  (``k3 = inf``), then the best k3 at that point (``eval/tune_bm25.py``'s stages 2 and 3).

Equal held-out means say that the grid's top is flat: the picks differ by noise. The test split
is never read. Output: a summary on stdout and ``eval/out/check_bm25_selection.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ragtools.indexes.keyword.bm25 import BM25Index
from ragtools.indexes.text.tokenize import Tokenizer
from ragtools.retrieval.evaluation.studies import B_GRID, K1_GRID, K3_GRID, bm25_run, load_corpus

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
OUT = ROOT / "eval" / "out" / "check_bm25_selection.json"
VARIANTS = ("bm25plus", "okapi", "lucene")
Config = tuple[str, float, float, float]


def per_query_ndcg(data: Path) -> tuple[list[Config], np.ndarray]:
    """Every grid configuration and its (configs x train queries) nDCG@10 matrix."""
    import pytrec_eval

    doc_ids, texts, queries, qrels = load_corpus(data)
    train = qrels["train"]
    qids = sorted(train)
    tokenizer = Tokenizer()
    corpus = tokenizer.tokenize_many(texts)
    query_tokens = {q: tokenizer(queries[q]) for q in qids}
    evaluator = pytrec_eval.RelevanceEvaluator(train, {"ndcg_cut.10"})
    configs: list[Config] = []
    rows = []
    for variant, k1, b, k3 in itertools.product(VARIANTS, K1_GRID, B_GRID, K3_GRID):
        index = BM25Index(tokenizer, variant=variant, k1=k1, b=b, k3=k3)  # type: ignore[arg-type]
        index.add(corpus)
        scored = evaluator.evaluate(bm25_run(index, qids, query_tokens, doc_ids))
        rows.append([scored.get(q, {}).get("ndcg_cut_10", 0.0) for q in qids])
        configs.append((variant, k1, b, k3))
    return configs, np.array(rows)


def joint(configs: list[Config], means: np.ndarray) -> int:
    return int(np.argmax(means))


def staged(configs: list[Config], means: np.ndarray) -> int:
    linear = [i for i, c in enumerate(configs) if c[3] == math.inf]
    variant, k1, b, _ = configs[max(linear, key=lambda i: means[i])]
    at_point = [i for i, c in enumerate(configs) if c[:3] == (variant, k1, b)]
    return max(at_point, key=lambda i: means[i])


def as_json(config: Config) -> list[str | float | None]:
    """A configuration for JSON, which has no infinity: k3 = inf is ``null``, as in
    ``BM25Index.params``."""
    variant, k1, b, k3 = config
    return [variant, k1, b, None if k3 == math.inf else k3]


WAYS: dict[str, Callable[[list[Config], np.ndarray], int]] = {"joint": joint, "staged": staged}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--splits", type=int, default=200, help="random half-splits of train")
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    configs, matrix = per_query_ndcg(args.data)
    rng = np.random.default_rng(args.seed)
    n = matrix.shape[1]
    held: dict[str, list[float]] = {way: [] for way in WAYS}
    picks: dict[str, Counter[Config]] = {way: Counter() for way in WAYS}
    for _ in range(args.splits):
        order = rng.permutation(n)
        halves = (order[: n // 2], order[n // 2 :])
        for pick_on, score_on in (halves, halves[::-1]):
            means = matrix[:, pick_on].mean(axis=1)
            for way, choose in WAYS.items():
                i = choose(configs, means)
                held[way].append(float(matrix[i, score_on].mean()))
                picks[way][configs[i]] += 1
    full = matrix.mean(axis=1)
    summary = {}
    for way, choose in WAYS.items():
        scores = np.array(held[way])
        pick = choose(configs, full)
        summary[way] = {
            "held_out_ndcg@10_mean": float(scores.mean()),
            "held_out_ndcg@10_sd": float(scores.std()),
            "most_picked": [[as_json(c), count] for c, count in picks[way].most_common(3)],
            "full_train_pick": as_json(configs[pick]),
            "full_train_ndcg@10": float(full[pick]),
        }
        print(
            f"{way:7s} held-out nDCG@10 {scores.mean():.4f} (sd {scores.std():.4f}); "
            f"on all of train picks {configs[pick]} ({full[pick]:.4f}); "
            f"most picked {picks[way].most_common(3)}"
        )
    elapsed = time.perf_counter() - started
    print(f"({len(configs)} configurations, {args.splits} splits, {elapsed:.0f}s)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"splits": args.splits, "seed": args.seed, "ways": summary}, indent=1)
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
