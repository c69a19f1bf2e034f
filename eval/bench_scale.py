"""BM25 at scale from text: one index vs N shards vs bm25s, synthetic Zipfian documents.

    python eval/bench_scale.py [--docs 200000] [--shards 4] [--out eval/out/bench_scale]

Generates ``--docs`` documents of about 50 words each (Zipf(1.1) over a 200,000-word
vocabulary, Poisson lengths), indexes them BM25 only from their text (``Index.from_documents``
with ``vector=False``: tokenizer, chunk store, BM25 arrays, checksums, an atomic version) as
one index and as ``--shards`` shards built one after another, then bm25s (its own tokenizer,
``bm25s.tokenize`` + ``BM25.index``, in memory, nothing written) on the same texts. Reports
build time, peak RSS of this process after each step (``ru_maxrss``, so it never goes down),
size on disk, and 5-term query latency p50 / p95 over 200 queries of Zipf-drawn words; and
whether the sharded index returns one index's hits (ids, order, scores).

The documents are generated in memory and the build holds them all, so this measures
throughput and latency, not the bounded-memory build the sharded writer allows when its
sources are files.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import bm25s
import numpy as np

from ragtools.indexes.bundle import Index
from ragtools.parsers import Document
from ragtools.retrieval.keyword import KeywordRetriever

ROOT = Path(__file__).resolve().parents[1]
VOCAB = 200_000


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def _documents(n: int, seed: int) -> list[Document]:
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(VOCAB)], dtype=object)
    lengths = np.maximum(rng.poisson(50, n), 1)
    ids = (rng.zipf(1.1, int(lengths.sum())) - 1) % VOCAB
    flat = words[ids].tolist()
    ends = np.cumsum(lengths).tolist()
    starts = [0, *ends[:-1]]
    return [
        Document(id=f"d{i}", text=" ".join(flat[a:b]), metadata={"source": "synthetic"})
        for i, (a, b) in enumerate(zip(starts, ends, strict=True))
    ]


def _latency(search: Any, queries: list[str]) -> tuple[float, float, list[Any]]:
    search(queries[0])
    times, results = [], []
    for query in queries:
        started = time.perf_counter()
        results.append(search(query))
        times.append((time.perf_counter() - started) * 1000)
    return float(np.median(times)), float(np.percentile(times, 95)), results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--out", default=str(ROOT / "eval" / "out" / "bench_scale"))
    args = parser.parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    report: dict[str, Any] = {"docs": args.docs, "shards": args.shards}

    started = time.perf_counter()
    docs = _documents(args.docs, seed=0)
    report["generate_s"] = time.perf_counter() - started
    rng = np.random.default_rng(1)
    queries = [
        " ".join(f"w{(int(rng.zipf(1.1)) - 1) % VOCAB}" for _ in range(5)) for _ in range(200)
    ]
    options: dict[str, Any] = {"vector": False, "chunk_size": 100_000, "chunk_overlap": 0}
    hits: dict[str, list[Any]] = {}
    for name, extra in (("one index", {}), (f"{args.shards} shards", {"shards": args.shards})):
        started = time.perf_counter()
        index = Index.from_documents(docs, out / name.replace(" ", "-"), **options, **extra)
        build_s = time.perf_counter() - started
        retriever = KeywordRetriever(index, k=10)
        p50, p95, results = _latency(retriever.invoke, queries)
        hits[name] = [[(h.chunk_id, h.score) for h in r] for r in results]
        report[name] = {
            "build_s": build_s,
            "peak_rss_mb": _rss_mb(),
            "disk_mb": _size_mb(out / name.replace(" ", "-")),
            "query_p50_ms": p50,
            "query_p95_ms": p95,
        }
        del index, retriever
    texts = [d.text for d in docs]
    started = time.perf_counter()
    model = bm25s.BM25()
    model.index(bm25s.tokenize(texts, show_progress=False), show_progress=False)
    build_s = time.perf_counter() - started

    def bm25s_search(query: str) -> Any:
        return model.retrieve(
            bm25s.tokenize([query], show_progress=False), k=10, show_progress=False
        )

    p50, p95, _ = _latency(bm25s_search, queries)
    report["bm25s"] = {
        "build_s": build_s,
        "peak_rss_mb": _rss_mb(),
        "query_p50_ms": p50,
        "query_p95_ms": p95,
    }
    report["shards_equal_one_index"] = hits["one index"] == hits[f"{args.shards} shards"]

    print(f"{args.docs:,} synthetic documents (~50 words, Zipf vocabulary), BM25 only, from text")
    print(f"  generated in {report['generate_s']:.1f}s")
    print(
        f"  {'':14s} {'build s':>9s} {'peak RSS MB':>12s} {'disk MB':>9s}"
        f" {'p50 ms':>8s} {'p95 ms':>8s}"
    )
    for name in ("one index", f"{args.shards} shards", "bm25s"):
        r = report[name]
        disk = f"{r['disk_mb']:9.1f}" if "disk_mb" in r else f"{'-':>9s}"
        print(
            f"  {name:14s} {r['build_s']:9.1f} {r['peak_rss_mb']:12.0f} {disk}"
            f" {r['query_p50_ms']:8.2f} {r['query_p95_ms']:8.2f}"
        )
    print(f"  sharded hits equal one index's (200 queries): {report['shards_equal_one_index']}")
    (out / "bench_scale.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
