"""The README's main command, after setup: index a folder, then ask the retriever tool.

1. Build (or rebuild) an index with the embedded default model over the given files and
   folders (default: this project's README, so it works anywhere).
2. Wrap a hybrid retriever as an agent tool with ``create_retriever_tool``.
3. Execute a model-style tool call through a ``ToolsNode`` and print what the model would
   read (the content, with citations) and what the application keeps (the artifact).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from ragtools.indexes.index import Index
from ragtools.retrieval.hybrid import HybridRetriever
from ragtools.retrieval.tools import ToolsNode
from ragtools.retrieval.tools.retriever_tool import create_retriever_tool

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", default=[str(ROOT / "README.md")])
    parser.add_argument("--question", default="How do I build an index and search it?")
    parser.add_argument("--index", default=str(ROOT / ".demo-index"))
    parser.add_argument("-k", type=int, default=4)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    started = time.perf_counter()
    index = Index.build(args.sources, args.index)
    counts = index.manifest["counts"]
    print(
        f"==> indexed {counts['chunks']} chunks from {counts['files']} files into {args.index}"
        f" with {index.manifest['embedder']['model_id']} in {time.perf_counter() - started:.1f}s"
    )
    for failure in index.failures:
        print(f"    skipped {failure.path}: {failure.message}")

    retriever = HybridRetriever.from_index(index, k=args.k)
    tool = create_retriever_tool(
        retriever,
        "search_docs",
        "Search the indexed documents. Returns passages with their source and page.",
    )
    node = ToolsNode([tool])
    call = {
        "name": "search_docs",
        "args": {"query": args.question},
        "id": "call_demo_1",
        "type": "tool_call",
    }
    print(f"==> tool call: {call}")
    [message] = node.invoke([call])
    print(
        f"==> ToolMessage(name={message.name!r}, status={message.status!r}, "
        f"tool_call_id={message.tool_call_id!r})"
    )
    print("==> content (what the model reads):")
    print(message.content)
    hits = message.artifact or []
    print(f"==> artifact (what the application keeps): {len(hits)} Hit objects")
    for hit in hits:
        meta = hit.chunk.metadata
        page = f", page {meta['page']}" if meta.get("page") is not None else ""
        stages = ", ".join(f"{name}={value:.4f}" for name, value in sorted(hit.scores.items()))
        print(
            f"    {hit.rank}. score={hit.score:.4f} source={meta.get('source')}{page} "
            f"chunk={hit.chunk.id[:12]} [{stages}]"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
