"""``KeywordRetriever.invoke(text)`` against bm25s's tokenize-and-retrieve, as users call them.

    python eval/bench_invoke.py [--dataset ../shared/data/scifact] [--repeats 3]
                                [--index eval/out/bench_invoke_index] [--profile]

The BM25 kernels are compared on shared tokens by ``eval/bench_bm25.py``. This script times
what a user pays per query, end to end, text in and results out:

* **ours**: ``KeywordRetriever(index).invoke(text)`` with its default ``k=10``: query checks,
  tokenization, BM25 search, ties put in chunk-key order, ``Hit`` objects built;
* **bm25s**: ``bm25s.tokenize(text, stopwords="en")`` then ``retriever.retrieve(tokens, k=10)``,
  as its README shows (progress bars off, which only makes bm25s faster).

Both index the same chunks: SciFact's ``corpus.jsonl`` built as ``rag build corpus.jsonl
--no-vector`` builds it (reused from ``--index`` when present); bm25s indexes the text of
those chunks. Every SciFact query (all 1,109 claims) is run through both, alternating, after a
warm-up; each call's CPU time (``time.thread_time``, so another process on the machine does
not count) is recorded. Printed: the median (p50) and p95 per system, the ratio of the medians
(bm25s / ours: above 1 means ours is faster) and, with ``--repeats``, the best of the
repeated runs' medians, all from this one run. ``--profile`` adds a cProfile listing of ours.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import bm25s

from ragtools.indexes.errors import IndexLoadError
from ragtools.indexes.index import Index
from ragtools.retrieval.keyword import KeywordRetriever

ROOT = Path(__file__).resolve().parents[1]
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
K = 10


def open_index(dataset: Path, path: Path) -> Index:
    """The keyword-only index of ``dataset/corpus.jsonl`` at ``path``, built if missing."""
    try:
        return Index.open(path)
    except IndexLoadError:
        return Index.build([dataset / "corpus.jsonl"], path, vector=False, show_progress=False)


def queries_of(dataset: Path) -> list[str]:
    """Every query text of ``queries.jsonl``, in file order."""
    with (dataset / "queries.jsonl").open(encoding="utf-8") as lines:
        return [str(json.loads(line)["text"]) for line in lines if line.strip()]


def cpu_times(
    calls: Sequence[Callable[[str], object]], queries: Sequence[str]
) -> list[list[float]]:
    """Each call's CPU seconds per query, the calls alternating query by query."""
    times: list[list[float]] = [[] for _ in calls]
    for query in queries:
        for spent, call in zip(times, calls, strict=True):
            began = time.thread_time()
            call(query)
            spent.append(time.thread_time() - began)
    return times


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-quantile of ``values`` (inclusive method)."""
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=SCIFACT)
    parser.add_argument("--index", type=Path, default=ROOT / "eval" / "out" / "bench_invoke_index")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    index = open_index(args.dataset, args.index)
    queries = queries_of(args.dataset)
    texts = [chunk.text for chunk in index.state.chunks]
    theirs = bm25s.BM25()
    theirs.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    ours = KeywordRetriever(index, k=K)

    def bm25s_call(text: str) -> object:
        tokens = bm25s.tokenize(text, stopwords="en", show_progress=False)
        return theirs.retrieve(tokens, k=K, show_progress=False)

    calls: list[Callable[[str], object]] = [ours.invoke, bm25s_call]
    cpu_times(calls, queries[:100])  # warm-up: lazy weights, caches, allocators
    runs = [cpu_times(calls, queries) for _ in range(max(1, args.repeats))]
    ours_ms = [1e3 * t for run in runs for t in run[0]]
    theirs_ms = [1e3 * t for run in runs for t in run[1]]
    medians = [(statistics.median(r[0]) * 1e3, statistics.median(r[1]) * 1e3) for r in runs]
    print(
        f"SciFact: {len(index.state.chunks)} chunks, "
        f"{len(queries)} queries x {len(runs)} runs, k={K}"
    )
    print(f"{'system':<40} {'p50 ms':>8} {'p95 ms':>8}")
    for name, values in (
        ("ours  KeywordRetriever.invoke(text)", ours_ms),
        ("bm25s tokenize + retrieve", theirs_ms),
    ):
        print(f"{name:<40} {statistics.median(values):8.3f} {percentile(values, 0.95):8.3f}")
    ratio = statistics.median(theirs_ms) / statistics.median(ours_ms)
    print(f"ratio of p50s, bm25s / ours: {ratio:.2f}x (above 1: ours is faster)")
    print("per run p50 (ours, bm25s) ms: " + ", ".join(f"({a:.3f}, {b:.3f})" for a, b in medians))
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(lambda: [ours.invoke(query) for query in queries])
        pstats.Stats(profile).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
