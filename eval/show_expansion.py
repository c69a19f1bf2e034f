"""Show what an agent reads for one question over one real PDF, with and without expansion.

Builds a hybrid index (BM25 + the default embedding model) over one PDF of
``../shared/pdfs``, asks one question through ``create_retriever_tool`` plain and with
``expand="neighbors"``, and prints both tool contents, each hit's page and span, and whether
every passage is exactly ``page_text[start:end]`` of the parsed page.

    python eval/show_expansion.py [--pdf tracemonkey.pdf]
        [--query "How does TraceMonkey handle nested loops?"] [--k 4] [--chars 2500]
        [--chunk-size 1000] [--chunk-overlap 0] [--window 1]

``--chunk-overlap 0`` (the default here) makes expansion add the most: with the index's
default overlap, neighbours repeat part of the hit.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
from pathlib import Path

from ragtools.parsers import load
from ragtools.retrieval import HybridRetriever, Index, create_retriever_tool
from ragtools.retrieval.hit import Hit

PDFS = Path(__file__).resolve().parents[2] / "shared" / "pdfs"


def _describe(hits: list[Hit], pages: dict[object, str]) -> list[str]:
    """One line per passage; ``exact span`` compares it with the page as parsed here."""
    lines = []
    for hit in hits:
        page = hit.chunk.metadata.get("page")
        exact = pages[page][hit.chunk.start : hit.chunk.end] == hit.chunk.text
        parts = [p.rank for p in hit.parts] if hit.parts else [hit.rank]
        lines.append(
            f"  [{hit.rank}] page {page} chars {hit.chunk.start}-{hit.chunk.end} "
            f"({hit.chunk.end - hit.chunk.start} chars) score {hit.score:.4f} "
            f"hits {parts} exact span: {exact}"
        )
    return lines


def _gaps(hits: list[Hit], index: Index) -> tuple[int, int]:
    """Characters of the passages that no chunk covers, and how many of them are not
    newlines (what a passage stitched from chunks, before format 4, got wrong)."""
    uncovered = wrong = 0
    for hit in hits:
        chunks = [c for c in index.chunks if c.doc_id == hit.chunk.doc_id]
        for at in range(hit.chunk.start, hit.chunk.end):
            if not any(c.start <= at < c.end for c in chunks):
                uncovered += 1
                wrong += hit.chunk.text[at - hit.chunk.start] != "\n"
    return uncovered, wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdf", default="tracemonkey.pdf", help="a file of ../shared/pdfs")
    parser.add_argument("--query", default="How does TraceMonkey handle nested loops?")
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--chars", type=int, default=2500, help="content shown per run")
    parser.add_argument("--chunk-size", type=int, default=None, help="default: the index's")
    parser.add_argument("--chunk-overlap", type=int, default=0)
    parser.add_argument("--window", type=int, default=1, help="neighbour chunks each side")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    pdf = PDFS / args.pdf
    pages = load(pdf)
    overrides: dict[str, object] = {"chunk_overlap": args.chunk_overlap}
    if args.chunk_size is not None:
        overrides["chunk_size"] = args.chunk_size
    with tempfile.TemporaryDirectory() as tmp:
        index = Index.build([pdf], Path(tmp) / "index", show_progress=False, **overrides)
        by_page = {p.metadata.get("page"): p.text for p in pages}
        model = (index.manifest.get("embedder") or {}).get("model_id")
        print(
            f"{pdf.name}: {len(pages)} pages, {len(index.chunks)} chunks "
            f"(size {index.settings.chunk_size}, overlap {index.settings.chunk_overlap}), "
            f"model {model}; query {args.query!r}, k={args.k}"
        )
        for expand in (None, {"mode": "neighbors", "window": args.window}):
            retriever = HybridRetriever.from_index(index)
            tool = create_retriever_tool(
                retriever, "search_paper", f"Search {pdf.name}.", k=args.k, expand=expand,
                max_content_chars=None,
            )  # fmt: skip
            content, hits = tool.run_with_artifact({"query": args.query})
            print(f"\n=== expand={expand!r}: {len(hits)} passages, {len(content)} characters")
            print("\n".join(_describe(hits, by_page)))
            uncovered, wrong = _gaps(hits, index)
            print(f"  characters between chunks inside the passages: {uncovered}, "
                  f"of which not a newline: {wrong}")  # fmt: skip
            print("--- content ---")
            print(content[: args.chars] + ("\n[...]" if len(content) > args.chars else ""))


if __name__ == "__main__":
    main()
