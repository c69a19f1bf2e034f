"""One index vs N shards in-process vs N shards on Ray: build time, query latency, equality.

    python eval/bench_shards.py [--dataset ../shared/data/scifact] [--shards 4] [--cpus 2]
                                [--queries 300] [--out eval/out/bench_shards]

SciFact's corpus (title + text, one chunk per document, as ``rag eval`` indexes it) is built
three ways: one bundle; ``--shards`` shards one after another in this process; the same shards
as Ray tasks on a local cluster of ``--cpus`` CPUs. Each index has both halves; the vector half
uses the hashing :class:`~indexes.testing.FakeEmbedder` (384 dimensions), so the build times
measure parsing, splitting, BM25, faiss and the writes, not a model (which dominates a real
build and scales with the CPUs or GPUs given to it).

Then SciFact *train* queries are run through the keyword, vector (flat, exact) and hybrid
retrievers of: the one index, the sharded index searched by threads, and the sharded index
served by Ray actors. Latency is per query (p50 / p95, milliseconds). Every configuration's
hits (chunk ids, order, scores) are compared with the one index's and mismatches counted.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import ray

from ragtools.indexes.index import Index
from ragtools.indexes.ray_shards import serve_on_ray
from ragtools.indexes.testing import FakeEmbedder
from ragtools.retrieval.base import BaseRetriever
from ragtools.retrieval.evaluation import corpus_documents, load_beir
from ragtools.retrieval.names import SEARCH_MODES, retriever_for

ROOT = Path(__file__).resolve().parents[1]
MODES = SEARCH_MODES


def _retriever(index: Index, mode: str) -> BaseRetriever:
    return retriever_for(index, mode, k=10)


def _run(index: Index, queries: list[str]) -> dict[str, Any]:
    """Per mode: the hits of every query and the latency percentiles."""
    out: dict[str, Any] = {}
    for mode in MODES:
        retriever = _retriever(index, mode)
        retriever.invoke(queries[0])  # warm-up (lazy weights, thread pools, actors)
        times, hits = [], []
        for query in queries:
            started = time.perf_counter()
            found = retriever.invoke(query)
            times.append((time.perf_counter() - started) * 1000)
            hits.append([(h.chunk_id, h.score) for h in found])
        times.sort()
        out[mode] = {
            "p50_ms": statistics.median(times),
            "p95_ms": times[int(0.95 * (len(times) - 1))],
            "hits": hits,
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=str(ROOT.parent / "shared" / "data" / "scifact"))
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray cluster")
    parser.add_argument("--queries", type=int, default=300, help="train queries to run")
    parser.add_argument("--out", default=str(ROOT / "eval" / "out" / "bench_shards"))
    args = parser.parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    dataset = load_beir(args.dataset, "train")
    docs = corpus_documents(dataset)
    queries = list(dataset.queries.values())[: args.queries]
    embedder = FakeEmbedder(dim=384)
    options: dict[str, Any] = {"chunk_size": 12_000, "chunk_overlap": 0, "embedder": embedder}

    builds: dict[str, float] = {}
    started = time.perf_counter()
    one = Index.from_documents(docs, out / "one", **options)
    builds["one index"] = time.perf_counter() - started
    started = time.perf_counter()
    Index.from_documents(docs, out / "local", shards=args.shards, **options)
    builds[f"{args.shards} shards, in-process"] = time.perf_counter() - started
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    try:
        started = time.perf_counter()
        Index.from_documents(docs, out / "ray", shards=args.shards, engine="ray", **options)
        builds[f"{args.shards} shards, Ray ({args.cpus} CPUs)"] = time.perf_counter() - started

        runs = {"one index": _run(one, queries)}
        threads = Index.open(out / "local", embedder=embedder)
        runs[f"{args.shards} shards, threads"] = _run(threads, queries)
        actors = Index.open(out / "ray", embedder=embedder)
        search = serve_on_ray(actors)  # type: ignore[arg-type]
        runs[f"{args.shards} shards, Ray actors"] = _run(actors, queries)
        search.close()
    finally:
        ray.shutdown()

    print(f"SciFact: {len(docs)} documents, {len(queries)} train queries, k=10")
    print("build (s):")
    for name, seconds in builds.items():
        print(f"  {name:32s} {seconds:8.2f}")
    print("query latency p50 / p95 (ms), and queries whose hits differ from one index:")
    reference = runs["one index"]
    report: dict[str, Any] = {"builds_s": builds, "queries": {}}
    for name, run in runs.items():
        for mode in MODES:
            differ = sum(
                a != b for a, b in zip(run[mode]["hits"], reference[mode]["hits"], strict=True)
            )
            p50, p95 = run[mode]["p50_ms"], run[mode]["p95_ms"]
            print(f"  {name:28s} {mode:8s} {p50:8.2f} {p95:8.2f}   differ: {differ}")
            report["queries"][f"{name} / {mode}"] = {"p50_ms": p50, "p95_ms": p95, "differ": differ}
    (out / "bench_shards.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
