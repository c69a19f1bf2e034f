"""Benchmark embedding speed and fidelity, and the cold start of ``rag search``.

Usage::

    python eval/bench_embed.py                       # 2,000 SciFact texts, fp32 and int8
    python eval/bench_embed.py --n 600 --cold-runs 3 # quicker
    python eval/bench_embed.py --index eval-out/index  # cold start on an existing index

Measured in one run on the same machine:

* documents per second of sentence-transformers' ``encode`` (torch, fp32, batch 32, the
  reference) and of ``SentenceTransformerEmbedder`` at each ``--precisions`` (ONNX Runtime,
  same batch size), on the same texts: the first ``--n`` SciFact documents as ``rag build``
  reads them, each cut to its first window (``vector_window`` characters) as the index
  embeds it. The machine is shared, so the texts are split into chunks of ``--chunk`` and
  every chunk runs every variant back to back in rotating order; a variant's rate is its
  texts over the sum of its chunk times, both as wall time and as CPU time of this process
  (the latter is less disturbed by other processes' load). The speed-up is each ratio to
  the reference;
* mean and minimum cosine of each variant's vectors against the reference vectors;
* cold start: wall and CPU time of fresh ``rag search INDEX QUERY`` processes in vector and
  hybrid mode (median of ``--cold-runs``, alternating modes), their peak RSS, and whether
  torch was imported (each process runs the ``rag`` script's code and reports both);
* ``rag serve`` with two copies of the index (one model): the same figures while it opens
  both and warms the model up, then exits on end of input.

Prints a table and writes ``eval/out/bench_embed.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ragtools.indexes.dense.embed import SentenceTransformerEmbedder
from ragtools.indexes.settings import IndexSettings
from ragtools.retrieval.evaluation.studies import load_corpus

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
OUT = ROOT / "eval" / "out" / "bench_embed.json"
RAG = Path(sys.executable).with_name("rag")
QUERY = "Vitamin D deficiency is associated with multiple sclerosis."

Encode = Callable[[list[str]], np.ndarray]


def rotated(fns: dict[str, Encode], texts: list[str], chunk: int) -> dict[str, dict[str, Any]]:
    """Wall and CPU docs/s of each function, chunk by chunk in rotating order; and vectors."""
    names = list(fns)
    wall = dict.fromkeys(names, 0.0)
    cpu = dict.fromkeys(names, 0.0)
    vectors: dict[str, list[np.ndarray]] = {name: [] for name in names}
    for number, start in enumerate(range(0, len(texts), chunk)):
        part = texts[start : start + chunk]
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            began_wall, began_cpu = time.perf_counter(), time.process_time()
            vectors[name].append(np.asarray(fns[name](part), dtype=np.float32))
            wall[name] += time.perf_counter() - began_wall
            cpu[name] += time.process_time() - began_cpu
    return {
        name: {
            "wall_docs_per_s": len(texts) / wall[name],
            "cpu_docs_per_s": len(texts) / cpu[name],
            "vectors": np.concatenate(vectors[name]),
        }
        for name in names
    }


def throughput(texts: list[str], precisions: list[str], chunk: int, batch: int) -> dict[str, Any]:
    reference = SentenceTransformerEmbedder(onnx=False, batch_size=batch)
    model = reference.model
    kwargs = {"batch_size": batch, "normalize_embeddings": True, "convert_to_numpy": True}
    fns: dict[str, Encode] = {
        "torch": lambda part: model.encode(part, show_progress_bar=False, **kwargs)
    }
    for precision in precisions:
        emb = SentenceTransformerEmbedder(precision=precision, batch_size=batch)
        assert emb.uses_onnx, "the default model must have an ONNX path"
        fns[f"onnx-{precision}"] = emb.embed_documents
    for fn in fns.values():
        fn(texts[:16])  # warm-up: first calls allocate
    rates = rotated(fns, texts, chunk)
    ref = rates["torch"]
    results: dict[str, Any] = {}
    for name, rate in rates.items():
        cosines = (rate["vectors"] * ref["vectors"]).sum(axis=1)
        results[name] = {
            "wall_docs_per_s": round(rate["wall_docs_per_s"], 2),
            "cpu_docs_per_s": round(rate["cpu_docs_per_s"], 2),
            "wall_speedup": round(rate["wall_docs_per_s"] / ref["wall_docs_per_s"], 3),
            "cpu_speedup": round(rate["cpu_docs_per_s"] / ref["cpu_docs_per_s"], 3),
            "mean_cosine": float(cosines.mean()),
            "min_cosine": float(cosines.min()),
            "max_abs_diff": float(np.abs(rate["vectors"] - ref["vectors"]).max()),
        }
    return results


_WRAPPER = """
import sys
from ragtools.retrieval.cli import main
code = main(sys.argv[1:])
peak = [line for line in open("/proc/self/status") if line.startswith("VmHWM")]
print("TORCH", "torch" in sys.modules, "PEAK", peak[0].split()[1] if peak else 0, file=sys.stderr)
sys.exit(code)
"""
"""What the ``rag`` script runs, plus a report of torch and of the peak RSS (``VmHWM``, which
counts this process only, where the rusage of a child forked from the benchmark's large
process would also count the benchmark's pages)."""


def _cold(args: list[str], stdin: int | None = None) -> dict[str, Any]:
    """Wall seconds, CPU seconds, peak RSS (MB) and torch of one fresh ``rag`` process."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    began = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRAPPER, *args],
        stdin=stdin,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    report = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - began
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0 or "PEAK" not in report:
        msg = f"rag {args} failed with status {proc.returncode}: {report[-2000:]}"
        raise RuntimeError(msg)
    words = report.rsplit("TORCH", 1)[1].split()
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": int(words[2]) / 1024,
        "torch": words[0] == "True",
    }


def cold_start(index: Path, runs: int) -> dict[str, Any]:
    """Fresh ``rag search`` processes (vector and hybrid, alternating) and ``rag serve``."""
    rows: dict[str, list[dict[str, Any]]] = {"vector": [], "hybrid": []}
    for _ in range(runs):
        for mode, done in rows.items():
            done.append(_cold(["search", str(index), QUERY, "--mode", mode]))
    second = index.parent / f"{index.name}-copy"
    if not second.exists():
        shutil.copytree(index, second)
    serve = _cold(["serve", str(index), str(second)], stdin=subprocess.DEVNULL)
    result: dict[str, Any] = {}
    for mode, done in rows.items():
        for field in ("wall_s", "cpu_s"):
            values = [row[field] for row in done]
            result[f"{mode}_median_{field}"] = round(statistics.median(values), 3)
            result[f"{mode}_all_{field}"] = [round(v, 3) for v in values]
        result[f"{mode}_peak_rss_mb"] = round(max(row["peak_rss_mb"] for row in done), 1)
        result[f"{mode}_torch_imported"] = any(row["torch"] for row in done)
    result["serve_two_indexes"] = serve
    return result


def bench_index(texts: list[str], ids: list[str], path: Path) -> Path:
    """An index of the benchmark's documents (built once, reused by later runs)."""
    from ragtools.indexes.index import Index
    from ragtools.parsers import Document

    if (path / "CURRENT").exists():
        return path
    documents = [
        Document(id=i, text=t, metadata={"source": i}) for i, t in zip(ids, texts, strict=True)
    ]
    Index.from_documents(documents, path, chunk_size=1000, chunk_overlap=0)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="SciFact texts to embed")
    parser.add_argument("--chunk", type=int, default=250, help="texts per rotation")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--precisions", default="fp32,int8")
    parser.add_argument("--cold-runs", type=int, default=5)
    parser.add_argument("--index", type=Path, default=None, help="index for the cold start")
    parser.add_argument("--skip-throughput", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    ids, texts, _, _ = load_corpus(SCIFACT)
    window = IndexSettings().vector_window
    ids, texts = ids[: args.n], [t[:window] for t in texts[: args.n]]
    report: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load_average_before": os.getloadavg(),
        "n_texts": len(texts),
    }
    if not args.skip_throughput:
        precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
        report["throughput"] = throughput(texts, precisions, args.chunk, args.batch_size)
    index = args.index or bench_index(texts, ids, OUT.parent / "bench_embed-index")
    report["cold_start"] = cold_start(index, args.cold_runs)
    report["load_average_after"] = os.getloadavg()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=1), encoding="utf-8")
    for name, row in report.get("throughput", {}).items():
        print(
            f"{name:>11}: {row['wall_docs_per_s']:8.1f} docs/s wall ({row['wall_speedup']:.2f}x)"
            f" {row['cpu_docs_per_s']:8.1f} docs/CPU-s ({row['cpu_speedup']:.2f}x)"
            f"  cosine mean {row['mean_cosine']:.6f} min {row['min_cosine']:.6f}"
        )
    cold = report["cold_start"]
    for mode in ("vector", "hybrid"):
        print(
            f"cold rag search --mode {mode}: {cold[f'{mode}_median_wall_s']:.2f} s wall, "
            f"{cold[f'{mode}_median_cpu_s']:.2f} s CPU (median of {args.cold_runs}); peak RSS "
            f"{cold[f'{mode}_peak_rss_mb']:.0f} MB; torch imported: "
            f"{cold[f'{mode}_torch_imported']}"
        )
    serve = cold["serve_two_indexes"]
    print(
        f"rag serve, two indexes of one model: peak RSS {serve['peak_rss_mb']:.0f} MB, "
        f"{serve['wall_s']:.1f} s wall, {serve['cpu_s']:.1f} s CPU; torch imported: "
        f"{serve['torch']}"
    )
    print(
        f"load average before {report['load_average_before']} after "
        f"{report['load_average_after']}; wrote {OUT}"
    )


if __name__ == "__main__":
    main()
