"""Index building benchmarks: a folder of real documents, and SciFact's cache and open times.

    python eval/bench_build.py [folder] [--packages parsers,indexes,retrieval] [--out DIR]
    python eval/bench_build.py scifact [--dataset ../shared/data/scifact] [--out DIR]

``folder`` (the default) is what a new user does first: ``rag build`` over a folder of
Markdown, HTML and PDF files. The folder is generated from this repository's own files
(every Python module of ``--packages``, alternately as a Markdown page and as an HTML page,
each with its docstring as prose and its code as a code block, plus the repository's
Markdown files) and the PDFs of ``../shared/pdfs`` (copied, so their broken and encrypted
members fail as they would in a user's folder). In one run it then:

1. builds the folder with ``--precision fp32`` (the default before #35) and with this
   CPU's default precision (``indexes.dense.precision``), each into an empty directory, so
   every chunk is embedded; the exported models and torch are loaded beforehand, so neither
   build pays a one-time export;
2. prints files, chunks, wall and CPU seconds of each build, chunks per CPU-second, and the
   end-to-end ratio between them;
3. embeds the chunk texts of the build again with ``SentenceTransformer.encode`` (torch,
   fp32, the reference) and with each precision's embedder, in rotating slices
   (``bench_embed.rotated``), and prints each one's chunks per CPU-second and its ratio to
   ``encode``: the embedding speed-up free of parsing and of other processes' load.

``scifact`` builds the SciFact corpus (title + text, one chunk per document) three times:
cold (every text embedded), warm (every embedding from the cache) and with 1% of the
documents edited; then it times ``Index.open`` (memory-mapped and not) and sums the size on
disk.
"""

from __future__ import annotations

import argparse
import ast
import json
import logging
import os
import shutil
import statistics
import sys
import time
from html import escape
from pathlib import Path
from typing import Any

from ragtools.indexes.dense.embed import SentenceTransformerEmbedder
from ragtools.indexes.dense.precision import default_precision, fast_bf16, fast_int8
from ragtools.indexes.index import Index
from ragtools.parsers import Document, Selection
from ragtools.retrieval.evaluation import corpus_documents, load_beir

ROOT = Path(__file__).resolve().parents[1]
PDFS = ROOT.parent / "shared" / "pdfs"


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def scifact(args: argparse.Namespace) -> int:
    """Cold, warm and 1%-edited builds of SciFact, open times and sizes."""
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


def _markdown(relative: str, docstring: str, code: str) -> str:
    return f"# {relative}\n\n{docstring}\n\n```python\n{code}\n```\n"


def _html(relative: str, docstring: str, code: str) -> str:
    return (
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{escape(relative)}</title>"
        f"</head>\n<body><h1>{escape(relative)}</h1>\n<p>{escape(docstring)}</p>\n"
        f"<pre><code class='language-python'>{escape(code)}</code></pre></body></html>\n"
    )


def make_folder(target: Path, packages: list[str]) -> Path:
    """The benchmark folder: this repository's modules as Markdown and HTML pages, its
    Markdown files, and the shared PDFs."""
    shutil.rmtree(target, ignore_errors=True)
    modules = sorted(p for package in packages for p in (ROOT / package).rglob("*.py"))
    for number, module in enumerate(modules):
        relative = module.relative_to(ROOT).as_posix()
        code = module.read_text(encoding="utf-8")
        try:
            docstring = ast.get_docstring(ast.parse(code)) or ""
        except SyntaxError:
            docstring = ""
        stem = target / relative.removesuffix(".py")
        stem.parent.mkdir(parents=True, exist_ok=True)
        if number % 2:
            stem.with_suffix(".html").write_text(_html(relative, docstring, code), "utf-8")
        else:
            stem.with_suffix(".md").write_text(_markdown(relative, docstring, code), "utf-8")
    for page in sorted(ROOT.glob("*.md")):
        shutil.copy(page, target / page.name)
    shutil.copytree(PDFS, target / "pdfs", ignore=shutil.ignore_patterns("*.md"))
    return target


def _timed_build(folder: Path, path: Path, precision: str) -> tuple[Index, dict[str, Any]]:
    shutil.rmtree(path, ignore_errors=True)
    wall, cpu = time.perf_counter(), time.process_time()
    # the folder sits under eval/out/, which this repository's .gitignore excludes
    index = Index.build([folder], path, precision=precision, selection=Selection(gitignore=False))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    files = len(index.fingerprints)
    row = {
        "files": files,
        "failures": len(index.failures),
        "chunks": len(index.chunks),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "chunks_per_cpu_s": round(len(index.chunks) / cpu, 2),
    }
    return index, row


def folder(args: argparse.Namespace) -> int:
    """``rag build`` of a real folder at fp32 and at the default precision; embedding alone."""
    from bench_embed import rotated

    out = Path(args.out)
    docs = make_folder(out / "docs", [p.strip() for p in args.packages.split(",") if p.strip()])
    fast = default_precision()
    precisions = list(dict.fromkeys(["fp32", fast]))
    reference = SentenceTransformerEmbedder(onnx=False).model  # torch, loaded before timing
    embedders = {p: SentenceTransformerEmbedder(precision=p) for p in [*precisions, "int8"]}
    for embedder in embedders.values():
        embedder.embed_documents(["warm-up: export or verify the model file"])
    builds: dict[str, dict[str, Any]] = {}
    texts: list[str] = []
    for precision in precisions:
        index, builds[precision] = _timed_build(docs, out / f"index-{precision}", precision)
        texts = [chunk.text for chunk in index.chunks]
    encode_kwargs = {"batch_size": 32, "normalize_embeddings": True, "show_progress_bar": False}
    fns: dict[str, Any] = {
        "SentenceTransformer.encode": lambda part: reference.encode(part, **encode_kwargs)
    }
    fns |= {f"ragtools {p}": e.embed_documents for p, e in embedders.items()}
    rates = rotated(fns, texts, args.slice)
    torch_rate = rates["SentenceTransformer.encode"]["cpu_docs_per_s"]
    embedding = {
        name: {
            "chunks_per_cpu_s": round(rate["cpu_docs_per_s"], 2),
            "chunks_per_wall_s": round(rate["wall_docs_per_s"], 2),
            "ratio_to_encode": round(rate["cpu_docs_per_s"] / torch_rate, 3),
        }
        for name, rate in rates.items()
    }
    report = {
        "cpus": os.cpu_count(),
        "fast_int8": fast_int8(),
        "fast_bf16": fast_bf16(),
        "default_precision": fast,
        "build": builds,
        "build_cpu_speedup": round(builds["fp32"]["cpu_s"] / builds[fast]["cpu_s"], 3),
        "build_wall_speedup": round(builds["fp32"]["wall_s"] / builds[fast]["wall_s"], 3),
        "embedding": embedding,
        "load_average": os.getloadavg(),
    }
    print(
        f"folder {docs}: {len(texts)} chunk texts; CPU: {os.cpu_count()} cores, fast int8 "
        f"{fast_int8()}, fast bf16 {fast_bf16()}, default precision {fast}"
    )
    for precision, row in builds.items():
        print(
            f"  rag build --precision {precision:4}: {row['files']} files "
            f"({row['failures']} failed), {row['chunks']} chunks, {row['wall_s']:.1f} s wall, "
            f"{row['cpu_s']:.1f} s CPU, {row['chunks_per_cpu_s']:.1f} chunks/CPU-s"
        )
    print(
        f"  end to end, {fast} against fp32: {report['build_cpu_speedup']:.2f}x CPU, "
        f"{report['build_wall_speedup']:.2f}x wall"
    )
    for name, row in embedding.items():
        print(
            f"  embedding with {name:26}: {row['chunks_per_cpu_s']:7.1f} chunks/CPU-s "
            f"({row['ratio_to_encode']:.2f}x encode), {row['chunks_per_wall_s']:7.1f} chunks/s"
        )
    (out / "bench_build_folder.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", nargs="?", choices=("folder", "scifact"), default="folder")
    parser.add_argument("--dataset", default=str(ROOT.parent / "shared" / "data" / "scifact"))
    parser.add_argument("--packages", default="parsers,indexes,retrieval")
    parser.add_argument("--slice", type=int, default=200, help="texts per rotation")
    parser.add_argument("--out", default=str(ROOT / "eval" / "out" / "bench_build"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    return folder(args) if args.what == "folder" else scifact(args)


if __name__ == "__main__":
    sys.exit(main())
