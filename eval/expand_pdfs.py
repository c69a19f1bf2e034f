"""Show what an agent reads for one real PDF query, with and without ``expand=``.

SciFact cannot score expansion (one chunk per document), so this prints the retriever tool's
content for a query over ``../shared/pdfs`` three ways: plain hits, ``expand="neighbors"``
and ``expand="section"``, and checks that every passage is an exact span of its document (the
parsed page text). Keyword-only index, so it runs in seconds with no model.

    python eval/expand_pdfs.py [--query "trace tree loop"] [--k 8] [--chars 1500]
                               [--chunk-overlap 200]
"""

from __future__ import annotations

import argparse
import itertools
import logging
import tempfile
from collections import Counter
from pathlib import Path

from ragtools.parsers import load_dir
from ragtools.retrieval import Index, KeywordRetriever, create_retriever_tool

PDFS = Path(__file__).resolve().parents[2] / "shared" / "pdfs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--query", default="trace tree loop")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--chars", type=int, default=1500, help="content shown per mode")
    parser.add_argument("--chunk-overlap", type=int, default=200)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the scanned and encrypted files warn; not our subject
    texts = {doc.id: doc.text for doc in load_dir(PDFS, show_progress=False).documents}
    with tempfile.TemporaryDirectory() as tmp:
        index = Index.build(
            [PDFS], Path(tmp) / "index", vector=False, chunk_overlap=args.chunk_overlap,
            show_progress=False,
        )  # fmt: skip
        print(f"index: {len(index.chunks)} chunks of {len({c.doc_id for c in index.chunks})} "
              f"page documents; query {args.query!r}, k={args.k}")  # fmt: skip
        print(_uncovered(index, texts))
        for expand in (None, "neighbors", "section"):
            retriever = KeywordRetriever(index, k=args.k, expand=expand)
            tool = create_retriever_tool(retriever, "pdfs", "Search the PDFs.")
            content, hits = tool.run_with_artifact({"query": args.query})
            exact = all(texts[h.chunk.doc_id][h.chunk.start : h.chunk.end] == h.chunk.text
                        for h in hits)  # fmt: skip
            merged = sum(len(h.parts) for h in hits) if expand else len(hits)
            print(f"\n=== expand={expand!r}: {len(hits)} passages from {merged} hits, "
                  f"{len(content)} characters of content, exact spans: {exact}")  # fmt: skip
            for hit in hits:
                where = f"{Path(hit.chunk.source).name} page {hit.chunk.metadata.get('page')}"
                print(f"  [{hit.rank}] {where} chars {hit.chunk.start}-{hit.chunk.end}"
                      f" score {hit.score:.3f} parts {[p.rank for p in hit.parts]}")  # fmt: skip
            print("--- content ---")
            print(content[: args.chars] + ("\n[...]" if len(content) > args.chars else ""))


def _uncovered(index: Index, texts: dict[str, str]) -> str:
    """How many boundaries between consecutive chunks of a document leave characters that no
    chunk covers (expansion of an index before format 4, which stores no document texts,
    renders those as newlines), and what those characters really are."""
    by_doc: dict[str, list[tuple[int, int]]] = {}
    for chunk in index.chunks:
        by_doc.setdefault(chunk.doc_id, []).append((chunk.start, chunk.end))
    pairs, gaps = 0, Counter[str]()
    for doc_id, spans in by_doc.items():
        spans.sort()
        for (_, end), (start, _) in itertools.pairwise(spans):
            pairs += 1
            if start > end:
                gaps[repr(texts[doc_id][end:start])] += 1
    return (f"chunk boundaries: {pairs}, with uncovered characters: {sum(gaps.values())} "
            f"({dict(gaps)})")  # fmt: skip


if __name__ == "__main__":
    main()
