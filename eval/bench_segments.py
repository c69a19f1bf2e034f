"""Query latency over one segment against several unmerged segments, and their equality.

    python eval/bench_segments.py [--dataset ../shared/data/scifact] [--segments 8]
                                  [--split train] [--queries 300] [--json OUT]

SciFact's corpus (title + text, one chunk per document, as ``rag eval`` indexes it) is
indexed twice with both halves (the vector half with the hashing
:class:`~indexes.testing.FakeEmbedder`, 384 dimensions, so no model time is counted):

* **one segment**: ``Index.from_documents`` of the whole corpus;
* **N segments**: the first N-th of the corpus, then ``IndexWriter.add`` of each further
  N-th: N segments of one shard, all unmerged (the merge policy starts folding at
  ``SEGMENTS_PER_SHARD`` + 1), whose BM25 halves score with the collection statistics.

Then the queries run through ``KeywordRetriever``, ``VectorRetriever`` and
``HybridRetriever`` of each, as users call them (text in, hits out), and the script prints
per mode the p50 / p95 latency (milliseconds; the two indexes take turns query by query, for
``--rounds`` rounds, so that a busy machine slows both alike), the ratio of the N-segment p50 to
the one-segment p50, and how many queries' hits (chunk ids, order, scores) differ.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ragtools.indexes.index import Index
from ragtools.indexes.testing import FakeEmbedder
from ragtools.indexes.writer import IndexWriter
from ragtools.parsers import split
from ragtools.retrieval.base import BaseRetriever
from ragtools.retrieval.evaluation import corpus_documents, load_beir
from ragtools.retrieval.hybrid import HybridRetriever
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.vector import VectorRetriever

ROOT = Path(__file__).resolve().parents[1]
MODES = ("keyword", "vector", "hybrid")
OPTIONS: dict[str, Any] = {"chunk_size": 100_000, "chunk_overlap": 0}


def _retriever(index: Index, mode: str) -> BaseRetriever:
    if mode == "keyword":
        return KeywordRetriever(index, k=10)
    if mode == "vector":
        return VectorRetriever(index, k=10)
    return HybridRetriever.from_index(index, k=10)


def _run(indexes: dict[str, Index], queries: list[str], rounds: int) -> dict[str, Any]:
    """Per index and mode: the hits of every query and the latency percentiles. The indexes
    take turns query by query, so that a busy machine slows them alike."""
    out: dict[str, Any] = {name: {} for name in indexes}
    for mode in MODES:
        retrievers = {name: _retriever(index, mode) for name, index in indexes.items()}
        for retriever in retrievers.values():
            retriever.invoke(queries[0])  # warm-up: thread pools, first key computations
        times: dict[str, list[float]] = {name: [] for name in indexes}
        hits: dict[str, list[Any]] = {name: [] for name in indexes}
        for round_ in range(rounds):
            for query in queries:
                for name, retriever in retrievers.items():
                    start = time.perf_counter()
                    found = retriever.invoke(query)
                    times[name].append((time.perf_counter() - start) * 1000)
                    if round_ == 0:
                        hits[name].append([(h.chunk_id, h.score) for h in found])
        for name in indexes:
            ordered = sorted(times[name])
            out[name][mode] = {
                "p50_ms": statistics.median(ordered),
                "p95_ms": ordered[int(0.95 * (len(ordered) - 1))],
                "hits": hits[name],
            }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=ROOT.parent / "shared/data/scifact")
    parser.add_argument("--segments", type=int, default=8)
    parser.add_argument("--split", default="train")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    dataset = load_beir(args.dataset, split=args.split)
    documents = corpus_documents(dataset)
    queries = list(dataset.queries.values())[: args.queries]
    embedder = FakeEmbedder(dim=384)
    with tempfile.TemporaryDirectory() as tmp:
        one = Index.from_documents(documents, Path(tmp) / "one", embedder=embedder, **OPTIONS)
        n = args.segments
        size = -(-len(documents) // n)
        many = Index.from_documents(
            documents[:size], Path(tmp) / "many", embedder=embedder, **OPTIONS
        )
        writer = IndexWriter(many)
        for start in range(size, len(documents), size):
            part = documents[start : start + size]
            writer.add(split(part, **OPTIONS))
        segments = len(many.segments)
        results = _run({"one": one, "many": many}, queries, args.rounds)
    report: dict[str, Any] = {"documents": len(documents), "queries": len(queries)}
    report["segments"] = segments
    for mode in MODES:
        a, b = results["one"][mode], results["many"][mode]
        differ = sum(x != y for x, y in zip(a["hits"], b["hits"], strict=True))
        report[mode] = {
            "one_p50_ms": round(a["p50_ms"], 3),
            "one_p95_ms": round(a["p95_ms"], 3),
            "many_p50_ms": round(b["p50_ms"], 3),
            "many_p95_ms": round(b["p95_ms"], 3),
            "p50_ratio": round(b["p50_ms"] / a["p50_ms"], 2),
            "queries_whose_hits_differ": differ,
        }
        print(
            f"{mode:8s} 1 segment p50 {a['p50_ms']:.3f} ms (p95 {a['p95_ms']:.3f}); "
            f"{segments} segments p50 {b['p50_ms']:.3f} ms (p95 {b['p95_ms']:.3f}); "
            f"ratio {b['p50_ms'] / a['p50_ms']:.2f}; hits differ in {differ} of {len(queries)}"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
