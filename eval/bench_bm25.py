"""Benchmark our BM25Index against rank-bm25 and bm25s on the same tokens.

Usage::

    python eval/bench_bm25.py                   # SciFact: speed, memory and quality
    python eval/bench_bm25.py --synthetic 1000000   # Zipfian corpus: build, 5-term query, memory

SciFact (``../shared/data/scifact``, title and text indexed together, read by the parsers' BEIR
loader as ``rag build corpus.jsonl`` reads it) is tokenised once with our default
``Tokenizer``; every system is then built from the same token lists and queried with the same
query tokens. Measured for each system:

* build time from token lists (ours includes the weight computation of the first query);
* single-query QPS: one query per call, one thread, top 10, over all 1,109 SciFact claims
  (60 for rank-bm25); bm25s through its public ``retrieve([tokens])`` and, for reference,
  its internal per-query ``_get_top_k_results``;
* batch QPS: the same queries in one call (rank-bm25 has no batch API: a loop);
* peak traced memory of the build (``tracemalloc``, in a separate untimed build);
* nDCG@10 and Recall@100 on the test split, computed with pytrec_eval.

Timings are the best of ``--repeats`` interleaved runs, to damp the noise of a shared machine.
Results are printed as a table and written to ``eval/out/bench_bm25.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import resource
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragtools.indexes.keyword.bm25 import (
    DEFAULT_PARAMS,
    DEFAULT_VARIANT,
    VARIANT_DEFAULTS,
    BM25Index,
)
from ragtools.indexes.settings import TITLE_BOOST
from ragtools.indexes.text.tokenize import Tokenizer
from ragtools.retrieval.evaluation.studies import evaluate, load_corpus, load_titles, run_split

logger = logging.getLogger("bench_bm25")

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
OUT = ROOT / "eval" / "out" / "bench_bm25.json"
RANK_BM25 = {"okapi": "BM25Okapi", "bm25l": "BM25L", "bm25plus": "BM25Plus"}


# ---------------------------------------------------------------------------- timing


def best_time(fn: Callable[[], object], repeats: int) -> float:
    """Best wall time of ``repeats`` calls."""
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def traced_peak_mb(fn: Callable[[], object]) -> float:
    """Peak memory allocated while ``fn`` runs (tracemalloc sees numpy buffers too)."""
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20


# ------------------------------------------------------------------------- systems


class System:
    """One BM25 implementation behind a common build/search interface."""

    name = ""

    def build(self, corpus: list[list[str]]) -> None:
        raise NotImplementedError

    def search(self, query: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def search_batch(self, queries: list[list[str]], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        return [self.search(q, k) for q in queries]


class Ours(System):
    def __init__(self, variant: str | None) -> None:
        self.variant = variant
        self.name = f"ours {variant}" if variant else "ours default"
        self.index: BM25Index | None = None

    def build(self, corpus: list[list[str]]) -> None:
        self.index = BM25Index(variant=self.variant)  # type: ignore[arg-type]
        self.index.add(corpus)
        self.index.get_scores([])  # computes the weights, part of building

    def search(self, query: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        assert self.index is not None
        return self.index.search(query, k)

    def search_batch(self, queries: list[list[str]], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        assert self.index is not None
        return self.index.search_batch(queries, k)


class RankBM25(System):
    def __init__(self, variant: str) -> None:
        import rank_bm25

        self.cls = getattr(rank_bm25, RANK_BM25[variant])
        self.name = f"rank-bm25 {RANK_BM25[variant]}"

    def build(self, corpus: list[list[str]]) -> None:
        self.model = self.cls(corpus)

    def search(self, query: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        scores = self.model.get_scores(query)
        top = np.argsort(-scores, kind="stable")[:k]
        return top, scores[top]


class BM25S(System):
    def __init__(self, method: str, raw: bool = False) -> None:
        self.method, self.raw = method, raw
        self.name = f"bm25s {method}" + (" (internal top-k)" if raw else "")

    def build(self, corpus: list[list[str]]) -> None:
        import bm25s

        self.model = bm25s.BM25(method=self.method)
        self.model.index(corpus, show_progress=False)

    def search(self, query: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        if self.raw:
            scores, rows = self.model._get_top_k_results(query, k=k, sorted=True)  # noqa: SLF001  bm25s's kernel
            return rows, scores
        rows, scores = self.model.retrieve([query], k=k, show_progress=False)
        return rows[0], scores[0]

    def search_batch(self, queries: list[list[str]], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        rows, scores = self.model.retrieve(queries, k=k, show_progress=False, n_threads=0)
        return list(zip(rows, scores, strict=True))


# --------------------------------------------------------------------------- scifact


def run_scifact(args: argparse.Namespace) -> dict[str, Any]:
    doc_ids, texts, queries, qrels = load_corpus(args.data)
    tokenizer = Tokenizer()
    start = time.perf_counter()
    corpus = tokenizer.tokenize_many(texts)
    tokenize_s = time.perf_counter() - start
    test_ids = sorted(qrels["test"])
    test_tokens = [tokenizer(queries[q]) for q in test_ids]
    timing_tokens = [tokenizer(text) for text in queries.values()]  # all 1,109 claims
    print(
        f"SciFact: {len(corpus)} docs, {sum(map(len, corpus))} tokens, tokenized in "
        f"{tokenize_s:.2f}s; {len(test_ids)} test queries; tokenizer {tokenizer.to_dict()}"
    )

    default = Ours(None)
    systems: list[System] = [default, *(Ours(v) for v in VARIANT_DEFAULTS)]
    systems += [RankBM25(v) for v in RANK_BM25]
    systems += [BM25S("lucene"), BM25S("lucene", raw=True)]
    systems += [BM25S(m) for m in ("robertson", "bm25l", "bm25+")]
    rows: dict[str, dict[str, Any]] = {}
    for system in systems:
        built = best_time(lambda s=system: s.build(corpus), 1 if "rank" in system.name else 3)
        rows[system.name] = {"build_s": built}
    for _ in range(args.repeats):  # interleaved, keeping the best
        for system in systems:
            n_single = 60 if system.name.startswith("rank") else len(timing_tokens)
            subset = timing_tokens[:n_single]
            for query in subset[:20]:  # warm caches and allocator after the previous system
                system.search(query, 10)
            single = best_time(lambda s=system, q=subset: [s.search(x, 10) for x in q], 1)
            batch = best_time(lambda s=system, q=subset: s.search_batch(q, 10), 1)
            row = rows[system.name]
            row["single_qps"] = max(row.get("single_qps", 0.0), n_single / single)
            row["batch_qps"] = max(row.get("batch_qps", 0.0), n_single / batch)
    for system in systems:
        if "internal" in system.name:
            continue
        row = rows[system.name]
        row["peak_build_mb"] = traced_peak_mb(lambda s=system: s.build(corpus))
        run = {}
        for qid, tokens in zip(test_ids, test_tokens, strict=True):
            hits, scores = system.search(tokens, 100)
            run[qid] = {doc_ids[int(r)]: float(s) for r, s in zip(hits, scores, strict=True)}
        row.update(evaluate(qrels["test"], run))
    queries_by_id = dict(zip(test_ids, test_tokens, strict=True))
    index_default = _index_default_quality(
        args.data, tokenizer, corpus, doc_ids, queries_by_id, qrels
    )
    train_tokens = {qid: tokenizer(queries[qid]) for qid in qrels["train"]}
    assert default.index is not None  # built above, on the same corpus
    return {
        "tokenize_s": tokenize_s,
        "systems": rows,
        "index_default": index_default,
        "default_train": run_split(default.index, train_tokens, qrels["train"], doc_ids),
        "n_test": len(test_ids),
    }


def _index_default_quality(
    root: Path,
    tokenizer: Tokenizer,
    corpus: list[list[str]],
    doc_ids: list[str],
    queries: dict[str, list[str]],
    qrels: dict[str, Any],
) -> dict[str, Any]:
    """nDCG@10 / Recall@100 of BM25 as ``rag build`` and ``Index`` index a titled document
    by default: the title ``TITLE_BOOST`` extra times before title and text."""
    title_tokens = tokenizer.tokenize_many(load_titles(root))
    index = BM25Index()
    index.add([t * TITLE_BOOST + body for t, body in zip(title_tokens, corpus, strict=True)])
    return {"title_boost": TITLE_BOOST, **run_split(index, queries, qrels["test"], doc_ids)}


def print_scifact(result: dict[str, Any]) -> None:
    rows = result["systems"]
    header = (
        f"{'system':34s} {'build s':>8s} {'1-query QPS':>12s} {'batch QPS':>10s} "
        f"{'peak MB':>8s} {'nDCG@10':>8s} {'R@100':>7s}"
    )
    print(header)
    print("-" * len(header))
    for name, row in rows.items():
        nan = float("nan")
        print(
            f"{name:34s} {row['build_s']:8.3f} {row['single_qps']:12.0f} "
            f"{row['batch_qps']:10.0f} {row.get('peak_build_mb', nan):8.1f} "
            f"{row.get('nDCG@10', nan):8.4f} {row.get('R@100', nan):7.4f}"
        )
    ours = rows["ours default"]
    bm25s_api, bm25s_raw = rows["bm25s lucene"], rows["bm25s lucene (internal top-k)"]
    rank = rows["rank-bm25 BM25Okapi"]
    ratios = {
        "single QPS / bm25s retrieve": ours["single_qps"] / bm25s_api["single_qps"],
        "single QPS / bm25s internal top-k": ours["single_qps"] / bm25s_raw["single_qps"],
        "single QPS / rank-bm25": ours["single_qps"] / rank["single_qps"],
        "batch QPS / bm25s": ours["batch_qps"] / bm25s_api["batch_qps"],
        "build time bm25s / ours": bm25s_api["build_s"] / ours["build_s"],
    }
    print(f"\nours default = BM25Index(): {DEFAULT_VARIANT} {DEFAULT_PARAMS}")
    print(
        f"ours default nDCG@10 on test {ours['nDCG@10']:.4f} (standard error over its "
        f"{result['n_test']} queries {ours['nDCG@10_se']:.4f}); on train, where it was chosen, "
        f"{result['default_train']['nDCG@10']:.4f}"
    )
    boosted = result["index_default"]
    print(
        f"ours default as Index / rag build index a titled document (title_boost="
        f"{boosted['title_boost']}, chosen on train): nDCG@10 {boosted['nDCG@10']:.4f}, "
        f"R@100 {boosted['R@100']:.4f}"
    )
    print("ratios for ours default:")
    for key, value in ratios.items():
        print(f"  {key:36s} {value:8.2f}x")
    result["ratios"] = ratios


# ------------------------------------------------------------------------- synthetic


def zipf_corpus(n_docs: int, vocab: int, mean_len: int, seed: int) -> list[list[str]]:
    """``n_docs`` token lists with Zipf(1.1)-distributed terms and Poisson lengths."""
    rng = np.random.default_rng(seed)
    terms = np.array([f"t{i}" for i in range(vocab)], dtype=object)
    lengths = rng.poisson(mean_len, n_docs)
    corpus: list[list[str]] = []
    block = 50_000
    for start in range(0, n_docs, block):
        lens = lengths[start : start + block]
        ids = (rng.zipf(1.1, int(lens.sum())) - 1) % vocab
        flat = terms[ids].tolist()
        ends = np.cumsum(lens).tolist()
        begins = [0, *ends[:-1]]
        corpus.extend(flat[a:b] for a, b in zip(begins, ends, strict=True))
    return corpus


def run_synthetic(args: argparse.Namespace) -> dict[str, Any]:
    start = time.perf_counter()
    corpus = zipf_corpus(args.synthetic, args.vocab, 100, seed=0)
    gen_s = time.perf_counter() - start
    n_tokens = sum(map(len, corpus))
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"synthetic: {len(corpus)} docs, {n_tokens} tokens, generated in {gen_s:.1f}s")
    index = BM25Index()
    start = time.perf_counter()
    index.add(corpus)
    add_s = time.perf_counter() - start
    index.get_scores([])
    build_s = time.perf_counter() - start
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    arrays = index.arrays()  # postings, weights and document lengths, as saved
    index_mb = sum(a.nbytes for key, a in arrays.items() if key != "deleted") / 2**20
    rng = np.random.default_rng(1)
    queries = [[f"t{(int(rng.zipf(1.1)) - 1) % args.vocab}" for _ in range(5)] for _ in range(50)]
    times = []
    for query in queries:
        t0 = time.perf_counter()
        index.search(query, 10)
        times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    index.search_batch(queries, 10)
    batch_s = time.perf_counter() - t0
    result = {
        "n_docs": len(corpus),
        "n_tokens": n_tokens,
        "n_postings": len(arrays["docs"]),
        "add_s": add_s,
        "build_s": build_s,
        "query_ms_median": 1e3 * float(np.median(times)),
        "query_ms_p95": 1e3 * float(np.percentile(times, 95)),
        "batch_ms_per_query": 1e3 * batch_s / len(queries),
        "peak_rss_mb_before_build": rss_before,
        "peak_rss_mb_after_build": rss_after,
        "index_mb": index_mb,
    }
    for key, value in result.items():
        print(f"  {key:26s} {value:,.2f}" if isinstance(value, float) else f"  {key:26s} {value:,}")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--synthetic", type=int, default=0, metavar="N")
    parser.add_argument("--vocab", type=int, default=500_000, help="synthetic vocabulary size")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    with contextlib.suppress(ImportError):
        import bm25s  # noqa: F401  -- imported first so that its logger can be quietened

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    if args.synthetic:
        result = {"synthetic": run_synthetic(args)}
    else:
        result = {"scifact": run_scifact(args)}
        print_scifact(result["scifact"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    previous.update(result)
    args.out.write_text(json.dumps(previous, indent=1))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
