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
* cold start: wall time of fresh ``rag search INDEX QUERY`` processes in vector and hybrid
  mode (median of ``--cold-runs``, alternating modes), their peak RSS, and whether torch was
  imported (checked by a separate fresh process that runs the same CLI code path);
* ``rag serve`` with two copies of the index (one model): peak RSS while it opens both and
  warms the model up, then exits on end of input.

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

from ragtools.indexes.embed import SentenceTransformerEmbedder
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


def _timed(args: list[str], stdin: int | None = None) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MB) and exit status of one fresh process."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    began = time.perf_counter()
    proc = subprocess.Popen(
        args, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - began, usage.ru_maxrss / 1024, proc.returncode


def cold_start(index: Path, runs: int) -> dict[str, Any]:
    """Fresh ``rag search`` processes (vector and hybrid, alternating) and ``rag serve``."""
    times: dict[str, list[float]] = {"vector": [], "hybrid": []}
    rss: dict[str, float] = {"vector": 0.0, "hybrid": 0.0}
    for _ in range(runs):
        for mode in times:
            seconds, peak, status = _timed([str(RAG), "search", str(index), QUERY, "--mode", mode])
            if status != 0:
                msg = f"rag search --mode {mode} failed with status {status}"
                raise RuntimeError(msg)
            times[mode].append(seconds)
            rss[mode] = max(rss[mode], peak)
    probe = (
        "import sys\nfrom ragtools.retrieval.cli import main\n"
        f"main(['search', {str(index)!r}, {QUERY!r}, '--mode', 'hybrid'])\n"
        "print('TORCH', 'torch' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    second = index.parent / f"{index.name}-copy"
    if not second.exists():
        shutil.copytree(index, second)
    serve_s, serve_rss, status = _timed(
        [str(RAG), "serve", str(index), str(second)], stdin=subprocess.DEVNULL
    )
    return {
        **{f"{mode}_median_s": round(statistics.median(t), 3) for mode, t in times.items()},
        **{f"{mode}_all_s": [round(x, 3) for x in t] for mode, t in times.items()},
        **{f"{mode}_peak_rss_mb": round(peak, 1) for mode, peak in rss.items()},
        "torch_imported_by_hybrid_search": "TORCH True" in done.stdout,
        "serve_two_indexes_peak_rss_mb": round(serve_rss, 1),
        "serve_two_indexes_s": round(serve_s, 2),
        "serve_status": status,
    }


def bench_index(texts: list[str], ids: list[str], path: Path) -> Path:
    """An index of the benchmark's documents (built once, reused by later runs)."""
    from ragtools.indexes.bundle import Index
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
    print(
        f"cold rag search: vector {cold['vector_median_s']:.2f} s, hybrid "
        f"{cold['hybrid_median_s']:.2f} s (median of {args.cold_runs}); peak RSS "
        f"{cold['hybrid_peak_rss_mb']:.0f} MB; torch imported: "
        f"{cold['torch_imported_by_hybrid_search']}"
    )
    print(
        f"rag serve, two indexes: peak RSS {cold['serve_two_indexes_peak_rss_mb']:.0f} MB "
        f"in {cold['serve_two_indexes_s']:.1f} s (exit {cold['serve_status']})"
    )
    print(
        f"load average before {report['load_average_before']} after "
        f"{report['load_average_after']}; wrote {OUT}"
    )


if __name__ == "__main__":
    main()
