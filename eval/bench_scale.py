"""BM25 at scale from text: sharded build and query at N documents, bm25s at 1M, Ray throughput.

    python eval/bench_scale.py [--docs 10000000] [--compare-docs 1000000] [--shards 16]
                               [--files 2000] [--steps scale,compare,ray] [--out DIR]

Synthetic documents of about 50 words (Poisson lengths), words drawn Zipf(1.1) over a
200,000-word vocabulary, indexed BM25 only from their text (``Index.from_documents`` with
``vector=False``: tokenizer, chunk store, BM25 arrays, checksums, an atomic version). Each
step runs in its own process, so each peak RSS (``ru_maxrss``) is that step's alone:

* ``scale``: ``--docs`` documents, generated lazily, in ``--shards`` shards. The sharded
  build routes them to per-shard files as they come and builds the shards one after another,
  so memory holds one shard. Then, in a fresh process: open the index and run 200 5-term
  queries (the shards searched concurrently, in threads): p50 / p95. Total time, peak RSS of
  each process, size on disk.
* ``compare``: ``--compare-docs`` documents in memory: one index, the same in ``--shards``
  shards, and bm25s with its own tokenizer (``bm25s.tokenize`` + ``BM25.index``, in memory,
  nothing written): build time and query p50 / p95; and whether the shards return one
  index's hits (ids, order, scores) for every query.
* ``ray``: ``--files`` text files parsed, split and tokenised by Ray Data tasks
  (:func:`indexes.ray_build.parse_and_split`, then the index's tokenizer) on a local Ray
  cluster of 1 worker, then of 2: files and tokens a second.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
VOCAB = 200_000
BLOCK = 100_000
OPTIONS: dict[str, Any] = {"vector": False, "chunk_size": 100_000, "chunk_overlap": 0}


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def texts(n: int, seed: int = 0) -> Iterator[str]:
    """``n`` document texts, made a block at a time (never all in memory)."""
    words = np.array([f"w{i}" for i in range(VOCAB)], dtype=object)
    for block, start in enumerate(range(0, n, BLOCK)):
        rng = np.random.default_rng([seed, block])
        lengths = np.maximum(rng.poisson(50, min(BLOCK, n - start)), 1)
        flat = words[(rng.zipf(1.1, int(lengths.sum())) - 1) % VOCAB].tolist()
        ends = np.cumsum(lengths).tolist()
        for a, b in zip([0, *ends[:-1]], ends, strict=True):
            yield " ".join(flat[a:b])


def documents(n: int) -> Iterator[Any]:
    from ragtools.parsers import Document

    for i, text in enumerate(texts(n)):
        yield Document(id=f"d{i}", text=text, metadata={"source": "synthetic"})


def queries() -> list[str]:
    rng = np.random.default_rng(1)
    return [" ".join(f"w{(int(rng.zipf(1.1)) - 1) % VOCAB}" for _ in range(5)) for _ in range(200)]


def _latency(search: Any, asked: list[str]) -> tuple[float, float, list[Any]]:
    search(asked[0])
    times, results = [], []
    for query in asked:
        started = time.perf_counter()
        results.append(search(query))
        times.append((time.perf_counter() - started) * 1000)
    return float(np.median(times)), float(np.percentile(times, 95)), results


def step_build(args: argparse.Namespace) -> dict[str, Any]:
    from ragtools.indexes.index import Index

    started = time.perf_counter()
    Index.from_documents(documents(args.docs), args.out / "scale", shards=args.shards, **OPTIONS)
    seconds = time.perf_counter() - started
    return {"build_s": seconds, "peak_rss_mb": _rss_mb(), "disk_mb": _size_mb(args.out / "scale")}


def step_query(args: argparse.Namespace) -> dict[str, Any]:
    from ragtools.indexes.index import Index
    from ragtools.retrieval.keyword import KeywordRetriever

    started = time.perf_counter()
    index = Index.open(args.out / "scale")
    open_s = time.perf_counter() - started
    p50, p95, _ = _latency(KeywordRetriever(index, k=10).invoke, queries())
    return {"open_s": open_s, "query_p50_ms": p50, "query_p95_ms": p95, "peak_rss_mb": _rss_mb()}


def step_compare(args: argparse.Namespace) -> dict[str, Any]:
    import bm25s

    from ragtools.indexes.index import Index
    from ragtools.retrieval.keyword import KeywordRetriever

    docs = list(documents(args.compare_docs))
    asked = queries()
    report: dict[str, Any] = {}
    hits = {}
    for name, extra in (("one index", {}), ("shards", {"shards": args.shards})):
        path = args.out / f"compare-{name.replace(' ', '-')}"
        started = time.perf_counter()
        index = Index.from_documents(docs, path, **OPTIONS, **extra)
        build_s = time.perf_counter() - started
        p50, p95, results = _latency(KeywordRetriever(index, k=10).invoke, asked)
        hits[name] = [[(h.chunk_id, h.score) for h in r] for r in results]
        report[name] = {"build_s": build_s, "disk_mb": _size_mb(path), "p50": p50, "p95": p95}
        del index
    corpus = [d.text for d in docs]
    del docs
    started = time.perf_counter()
    model = bm25s.BM25()
    model.index(bm25s.tokenize(corpus, show_progress=False), show_progress=False)
    build_s = time.perf_counter() - started

    def bm25s_search(query: str) -> Any:
        tokens = bm25s.tokenize([query], show_progress=False)
        return model.retrieve(tokens, k=10, show_progress=False)

    p50, p95, _ = _latency(bm25s_search, asked)
    report["bm25s"] = {"build_s": build_s, "p50": p50, "p95": p95}
    report["shards_equal_one_index"] = hits["one index"] == hits["shards"]
    return report


def step_ray(args: argparse.Namespace) -> dict[str, Any]:
    import ray

    from ragtools.indexes.ray_build import parse_and_split
    from ragtools.indexes.settings import IndexSettings

    files = sorted(str(p) for p in (args.out / "files").iterdir())
    settings = IndexSettings()
    kwargs = {"settings": settings.model_dump(mode="json"), "source_root": None, "password": None}
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    items = [{"file": f, "shard": 0, "unit": i} for i, f in enumerate(files)]
    ray.data.from_items(items[:32]).map_batches(parse_and_split, fn_kwargs=kwargs).take_all()
    started = time.perf_counter()
    tokens = (
        ray.data.from_items(items)
        .map_batches(parse_and_split, batch_size=16, fn_kwargs=kwargs)
        .map_batches(tokenise, batch_size=16, fn_kwargs={"spec": settings.tokenizer})
        .sum("tokens")
    )
    seconds = time.perf_counter() - started
    ray.shutdown()
    return {
        "seconds": seconds,
        "files_per_s": len(files) / seconds,
        "tokens_per_s": tokens / seconds,
    }


def tokenise(batch: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """Ray Data task: the BM25 tokens of each file's chunks (the index's tokenizer)."""
    from ragtools.indexes.text.tokenize import Tokenizer

    tokenizer = Tokenizer.from_dict(spec)
    counts = [sum(len(tokenizer(c["text"])) for c in json.loads(one)) for one in batch["chunks"]]
    return {"tokens": np.asarray(counts, np.int64)}


def _write_files(directory: Path, n: int) -> float:
    directory.mkdir(parents=True, exist_ok=True)
    made = texts(n * 20, seed=7)
    for i in range(n):
        body = "\n\n".join(next(made) + "." for _ in range(20))
        (directory / f"file-{i:05d}.md").write_text(f"# File {i}\n\n{body}\n", "utf-8")
    return _size_mb(directory)


def _child(step: str, args: argparse.Namespace, **extra: Any) -> dict[str, Any]:
    command = [sys.executable, __file__, "--step", step, "--out", str(args.out)]
    command += ["--docs", str(args.docs), "--compare-docs", str(args.compare_docs)]
    command += ["--shards", str(args.shards)]
    for key, value in extra.items():
        command += [f"--{key}", str(value)]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000_000)
    parser.add_argument("--compare-docs", type=int, default=1_000_000)
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--steps", default="scale,compare,ray")
    parser.add_argument("--step", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=ROOT / "eval" / "out" / "bench_scale")
    args = parser.parse_args()
    if args.step:  # one step, in its own process: its result as the last line
        step = {"build": step_build, "query": step_query, "compare": step_compare, "ray": step_ray}
        print(json.dumps(step[args.step](args)))
        return 0
    steps = args.steps.split(",")
    report: dict[str, Any] = {"docs": args.docs, "shards": args.shards}
    if "scale" in steps:
        shutil.rmtree(args.out / "scale", ignore_errors=True)
        started = time.perf_counter()
        report["build"] = _child("build", args)
        report["query"] = _child("query", args)
        report["scale_total_s"] = time.perf_counter() - started
        b, q = report["build"], report["query"]
        print(
            f"{args.docs:,} synthetic documents (~50 Zipf words), BM25 only, {args.shards} shards"
        )
        print(f"  build {b['build_s']:.1f}s, peak RSS {b['peak_rss_mb']:,.0f} MB, "
              f"disk {b['disk_mb']:,.1f} MB")  # fmt: skip
        print(f"  open {q['open_s']:.1f}s, peak RSS {q['peak_rss_mb']:,.0f} MB; 5-term query "
              f"p50 {q['query_p50_ms']:.2f} ms, p95 {q['query_p95_ms']:.2f} ms")  # fmt: skip
        print(f"  total (build, open, 200 queries) {report['scale_total_s']:.1f}s", flush=True)
    if "compare" in steps:
        for name in ("compare-one-index", "compare-shards"):
            shutil.rmtree(args.out / name, ignore_errors=True)
        c = report["compare"] = _child("compare", args)
        print(f"{args.compare_docs:,} documents: build s, 5-term query p50 / p95 ms")
        for name in ("one index", "shards", "bm25s"):
            r = c[name]
            print(f"  {name:10s} {r['build_s']:8.1f} {r['p50']:8.2f} {r['p95']:8.2f}")
        print(f"  sharded hits equal one index's (200 queries): {c['shards_equal_one_index']}")
    if "ray" in steps:
        shutil.rmtree(args.out / "files", ignore_errors=True)
        mb = _write_files(args.out / "files", args.files)
        print(f"{args.files:,} files ({mb:.1f} MB): parse, split, tokenise on Ray Data")
        for workers in (1, 2):
            r = report[f"ray_{workers}"] = _child("ray", args, workers=workers)
            print(f"  {workers} worker(s): {r['seconds']:.1f}s, {r['files_per_s']:.0f} files/s, "
                  f"{r['tokens_per_s']:,.0f} tokens/s")  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_scale.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
