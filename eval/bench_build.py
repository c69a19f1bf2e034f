"""Offline index building on SciFact: cold build, warm-cache rebuild, open time, disk size.

    python eval/bench_build.py [--dataset ../shared/data/scifact] [--out eval/out/bench_build]

Builds the corpus (title + text, one chunk per document) as an index with both halves and
the embedded default model, three times in one run:

1. cold: an empty directory, every text embedded by the model;
2. warm: a rebuild into the same directory, every embedding from the cache;
3. update: ``Index.update``-style rebuild with 1% of the documents edited.

Then it times ``Index.open`` (memory-mapped and not) and sums the size on disk.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

from ragtools.indexes.index import Index
from ragtools.parsers import Document
from ragtools.retrieval.evaluation import corpus_documents, load_beir

ROOT = Path(__file__).resolve().parents[1]


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=str(ROOT.parent / "shared" / "data" / "scifact"))
    parser.add_argument("--out", default=str(ROOT / "eval" / "out" / "bench_build"))
    args = parser.parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    docs = corpus_documents(load_beir(args.dataset, "test"))
    settings = {"chunk_size": 12_000, "chunk_overlap": 0}
    results: dict[str, float] = {}

    started = time.perf_counter()
    index = Index.from_documents(docs, out / "index", **settings)
    results["build_cold_s"] = time.perf_counter() - started
    embedder = index.embedder  # keep the loaded model: we time indexing, not model loading

    started = time.perf_counter()
    Index.from_documents(docs, out / "index", embedder=embedder.embedder, **settings)
    results["build_warm_cache_s"] = time.perf_counter() - started

    edited = [
        Document(id=d.id, text=d.text + " (edited)", metadata=d.metadata) if i % 100 == 0 else d
        for i, d in enumerate(docs)
    ]
    started = time.perf_counter()
    Index.from_documents(edited, out / "index", embedder=embedder.embedder, **settings)
    results["build_1pct_changed_s"] = time.perf_counter() - started

    for mmap in (True, False):
        times = []
        for _ in range(5):
            started = time.perf_counter()
            Index.open(out / "index", mmap=mmap, embedder=embedder.embedder)
            times.append(time.perf_counter() - started)
        results[f"open_{'mmap' if mmap else 'read'}_ms"] = statistics.median(times) * 1000
    live = out / "index" / "versions" / (out / "index" / "CURRENT").read_text().strip()
    results["version_size_mb"] = _size(live) / 1e6
    results["embedding_cache_mb"] = _size(out / "index" / "cache") / 1e6
    results["documents"] = len(docs)
    results["vectors"] = len(index.vector or [])  # windows: long abstracts have several

    print(f"SciFact, {len(docs)} documents, both halves, default model (all-MiniLM-L6-v2)")
    for key, value in results.items():
        print(f"  {key:24s} {value:10.2f}")
    (out / "bench_build.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
