"""Measure contextual chunk text (``IndexSettings.context``) against the current default (off).

Usage::

    python eval/measure_context.py [--vector] [--out DIR]

Two corpora, each indexed twice (context off, the default, and on), every difference through
``rag compare``'s paired tests (:func:`~retrieval.evaluation.compare.compare_systems`):

* **SciFact** (BEIR; one chunk per document, as ``rag eval``): train queries decide, test
  figures are reported only. A SciFact chunk has its document's title and no headings, and
  its text already starts with the title, so the header adds the title once more.
* **This repository's README.md plus ../shared/pdfs**, with the hand-judged queries of
  ``eval/data/local_docs`` (a unit is a README section or a PDF page, see its README);
  ``rag build``'s default chunking. Only README sections and ``GeoTopo-komprimiert.pdf``
  (the one PDF with an outline) and PDFs with a title get a header.

Keyword runs by default; ``--vector`` adds the vector half and the default hybrid (the
embedding cache of each index directory makes the second build embed only the windows
whose header changed). Output: a summary and ``DIR/measure_context.json``.
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ragtools.indexes.index import Index
from ragtools.indexes.settings import IndexSettings
from ragtools.parsers import Document, load, load_dir
from ragtools.parsers.document import Chunk
from ragtools.parsers.errors import ParseError, PasswordRequiredError
from ragtools.retrieval.base import Retriever
from ragtools.retrieval.evaluation.beir import corpus_documents, load_beir, load_qrels, load_queries
from ragtools.retrieval.evaluation.compare import compare_systems
from ragtools.retrieval.evaluation.experiment import EVAL_CHUNK_SIZE
from ragtools.retrieval.evaluation.metrics import Qrels, per_query
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.names import retriever_for

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
PDFS = ROOT.parent / "shared" / "pdfs"
LOCAL = ROOT / "eval" / "data" / "local_docs"
MD_DOCS = ROOT / "eval" / "data" / "md_docs"
PACKAGES = ("parsers", "indexes", "retrieval")
METRICS = ("nDCG@10", "R@100")


def unit(hit: Hit) -> str:
    """The judged unit of a local hit: a README section or a PDF page."""
    meta = hit.chunk.metadata
    name = Path(str(meta["source"])).name
    if "page" in meta:
        return f"{name}#p{meta['page']}"
    headings = meta.get("headings") or []
    return f"{name}#{headings[-1] if isinstance(headings, list) and headings else ''}"


def markdown_folder(target: Path) -> Path:
    """A Markdown docs folder made from this repository: its Markdown files (``README.md``,
    ``CHANGELOG.md``, ``local_docs.md``) and an API reference page per public module of
    :data:`PACKAGES` (``api/<package>/<module>.md``: ``# ragtools.<module>`` then the
    module's docstring), as a documentation site generated from docstrings would hold."""
    if target.exists():
        shutil.rmtree(target)
    (target / "api").mkdir(parents=True)
    for name in ("README.md", "CHANGELOG.md"):
        shutil.copyfile(ROOT / name, target / name)
    shutil.copyfile(LOCAL / "README.md", target / "local_docs.md")
    for package in PACKAGES:
        for module in sorted((ROOT / package).rglob("*.py")):
            relative = module.relative_to(ROOT)
            if any(part.startswith("_") for part in relative.parts):
                continue
            docstring = ast.get_docstring(ast.parse(module.read_text("utf-8")))
            if not docstring:
                continue
            page = target / "api" / relative.with_suffix(".md")
            page.parent.mkdir(parents=True, exist_ok=True)
            dotted = ".".join(relative.with_suffix("").parts)
            page.write_text(f"# ragtools.{dotted}\n\n{docstring}\n", "utf-8")
    return target


def markdown_unit() -> Any:
    """The judged unit of a docs-folder chunk: an API page (its path under the folder), or a
    section of the other pages (``README.md#<last heading>``)."""

    def unit(chunk: Chunk) -> str:
        meta = chunk.metadata
        relative = str(meta["source"])  # load_dir: the path relative to the folder
        if relative.startswith("api/"):
            return relative
        headings = meta.get("headings") or []
        return f"{relative}#{headings[-1] if isinstance(headings, list) and headings else ''}"

    return unit


def local_documents() -> list[Document]:
    """README.md and every readable PDF, parsed without a time budget: under load a
    117-page PDF can exceed ``rag build``'s 30 s, and the two builds must hold the same
    files for the comparison to mean anything."""
    documents = load(ROOT / "README.md")
    for pdf in sorted(PDFS.glob("*.pdf")):
        try:
            documents += load(pdf, time_budget=None)
        except (ParseError, PasswordRequiredError) as exc:
            print(f"skipped {pdf.name}: {type(exc).__name__}")
    return documents


def scores(
    retriever: Retriever, queries: Mapping[str, str], qrels: Qrels, key: Any
) -> dict[str, Any]:
    """Per-query nDCG@10 and R@100 (a unit keeps its best hit's score)."""
    run: dict[str, dict[str, float]] = {}
    for qid in qrels:
        run[qid] = {}
        for hit in retriever.invoke(queries[qid], k=200):
            run[qid].setdefault(key(hit), hit.score)
    rows = per_query(qrels, run, (10, 100))
    return {q: {m: rows[q][m] for m in METRICS} for q in qrels}


def compared(base: Mapping[str, Any], system: Mapping[str, Any]) -> dict[str, Any]:
    """nDCG@10 and R@100 of ``system`` against ``base``, paired (``rag compare``)."""
    result = compare_systems({"off": base, "on": system}, baseline="off")
    return {row.metric: asdict(row) for row in result.rows}


def line(label: str, rows: Mapping[str, Any]) -> str:
    r = rows["nDCG@10"]
    return (
        f"{label}: nDCG@10 {r['baseline_mean']:.4f} -> {r['mean']:.4f} ({r['delta']:+.4f}, "
        f"t p={r['p_t']:.3g}, rand. p={r['p_randomization']:.3g}, "
        f"w/t/l {r['wins']}/{r['ties']}/{r['losses']}); R@100 "
        f"{rows['R@100']['baseline_mean']:.4f} -> {rows['R@100']['mean']:.4f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vector", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "eval" / "out" / "context")
    parser.add_argument("--skip-scifact", action="store_true")
    parser.add_argument("--skip-local", action="store_true", help="no README + PDFs run")
    parser.add_argument("--markdown", action="store_true", help="also the Markdown docs folder")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    names = ["keyword", "vector", "hybrid"] if args.vector else ["keyword"]
    out: dict[str, Any] = {}

    if not args.skip_scifact:
        train, test = load_beir(SCIFACT, "train"), load_beir(SCIFACT, "test")
        documents = corpus_documents(train)
        per_setting: dict[bool, dict[str, Any]] = {}
        for context in (False, True):
            settings = IndexSettings.checked(
                {"chunk_size": EVAL_CHUNK_SIZE, "chunk_overlap": 0}
                | {"vector": args.vector, "context": context}
            )
            index = Index.from_documents(
                documents, args.out / "scifact-index", settings=settings, show_progress=False
            )
            per_setting[context] = {
                (name, split): scores(
                    retriever_for(index, name), data.queries, data.qrels, lambda h: h.chunk.doc_id
                )
                for name in names
                for split, data in (("train", train), ("test", test))
            }
        out["scifact"] = {}
        for name in names:
            for split in ("train", "test"):
                rows = compared(per_setting[False][name, split], per_setting[True][name, split])
                out["scifact"][f"{name}/{split}"] = rows
                print(line(f"SciFact {name} {split}", rows))

    if not args.skip_local:
        out["local"] = measure_local(args.out, names)
    if args.markdown:
        out["markdown"] = measure_markdown(args.out, names)
    print(f"({time.perf_counter() - started:.0f}s)")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "measure_context.json").write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out / 'measure_context.json'}")
    return 0


def measure_markdown(where: Path, names: Sequence[str]) -> dict[str, Any]:
    """The Markdown docs folder (:func:`markdown_folder`) with the hand-judged queries of
    ``eval/data/md_docs``, context off and on, every retriever of ``names``."""
    folder = markdown_folder(where / "md-docs")
    queries, qrels = load_queries(MD_DOCS), load_qrels(MD_DOCS, "test")
    unit = markdown_unit()
    per_setting: dict[bool, dict[str, Any]] = {}
    for context in (False, True):
        index = Index.from_documents(
            load_dir(folder, show_progress=False).documents,
            where / "md-index",
            vector="vector" in names,
            context=context,
            show_progress=False,
        )
        known = {unit(c) for c in index.chunks}
        unknown = sorted({d for j in qrels.values() for d in j} - known)
        if unknown:
            raise SystemExit(f"{MD_DOCS}: judged units the folder lacks: {unknown}")
        per_setting[context] = {
            name: scores(retriever_for(index, name), queries, qrels, lambda h: unit(h.chunk))
            for name in names
        }
    result: dict[str, Any] = {}
    for name in names:
        result[name] = compared(per_setting[False][name], per_setting[True][name])
        print(line(f"Markdown docs {name} ({len(qrels)} queries)", result[name]))
    return result


def measure_local(where: Path, names: Sequence[str]) -> dict[str, Any]:
    """README + PDFs, context off and on, every retriever of ``names``."""
    queries = load_queries(LOCAL)
    qrels = {**load_qrels(LOCAL, "train"), **load_qrels(LOCAL, "test")}  # all 38: nothing tuned
    documents = local_documents()
    local: dict[bool, dict[str, Any]] = {}
    for context in (False, True):
        index = Index.from_documents(
            documents,
            where / "local-index",
            vector="vector" in names,
            context=context,
            show_progress=False,
        )
        local[context] = {
            name: scores(retriever_for(index, name), queries, qrels, unit) for name in names
        }
    result: dict[str, Any] = {}
    for name in names:
        rows = compared(local[False][name], local[True][name])
        result[name] = rows
        print(line(f"README+PDFs {name}", rows))
        for prefix in ("m", "r"):
            part = {q for q in qrels if q.startswith(prefix)}
            sub = compared(
                {q: v for q, v in local[False][name].items() if q in part},
                {q: v for q, v in local[True][name].items() if q in part},
            )
            result[f"{name}/{prefix}*"] = sub
            print(line(f"  of which {prefix}* ({len(part)} queries)", sub))
    return result


if __name__ == "__main__":
    raise SystemExit(main())
