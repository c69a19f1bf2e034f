"""The ``rag`` command: build, search, inspect, evaluate and serve indexes.

Errors print one line (what failed, which file, what to do) and exit with status 2;
``--verbose`` adds the traceback and INFO logging. Progress bars appear only on a terminal.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from ragtools.indexes.bundle import Index
from ragtools.parsers.document import json_text
from ragtools.parsers.errors import ConfigError, RetrievalError
from ragtools.retrieval.base import BaseRetriever
from ragtools.retrieval.filters import MAX_FILTER_DEPTH
from ragtools.retrieval.hit import Hit

__all__ = ["main", "make_retriever"]

logger = logging.getLogger(__name__)

MODES = ("keyword", "vector", "hybrid")


def make_retriever(index: Index, mode: str, k: int) -> BaseRetriever:
    """The retriever for ``rag search --mode``; hybrid falls back to the half an index has."""
    from ragtools.retrieval.hybrid import HybridRetriever
    from ragtools.retrieval.keyword import KeywordRetriever
    from ragtools.retrieval.vector import VectorRetriever

    if mode == "keyword":
        return KeywordRetriever(index, k=k)
    if mode == "vector":
        return VectorRetriever(index, k=k)
    if mode == "hybrid":
        return HybridRetriever.from_index(index, k=k)
    msg = f"unknown mode {mode!r}; use one of {', '.join(MODES)}"
    raise ConfigError(msg)


def _cmd_build(args: argparse.Namespace) -> int:
    options: dict[str, Any] = {"vector": not args.no_vector}
    if args.chunk_size is not None:
        options["chunk_size"] = args.chunk_size
    if args.chunk_overlap is not None:
        options["chunk_overlap"] = args.chunk_overlap
    if args.model is not None:
        options["model"] = args.model
    index = Index.build(args.sources, args.out, show_progress=None, **options)
    counts = index.manifest.get("counts", {})
    print(
        f"built {args.out}: {counts.get('chunks')} chunks from {counts.get('files')} files"
        f" ({counts.get('failures')} failed)"
    )
    for failure in index.failures:
        print(f"  skipped {failure.path}: {failure.message}", file=sys.stderr)
    return 0


def _render_hit(hit: Hit) -> str:
    meta = hit.chunk.metadata
    where = str(meta.get("source", ""))
    if meta.get("page") is not None:
        where += f", page {meta['page']}"
    text = " ".join(hit.chunk.text.split())
    snippet = text[:240] + ("…" if len(text) > 240 else "")
    return f"{hit.rank:>3}. {hit.score:.4f}  {where}\n     {snippet}"


def _decoded(argument: str) -> str:
    """A command-line argument with undecodable bytes (``$'\\xff'``) replaced by U+FFFD.

    Python hands such bytes over as lone surrogates, which no tokenizer, model or JSON
    writer accepts.
    """
    return argument.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _cmd_search(args: argparse.Namespace) -> int:
    spec = None
    query = _decoded(args.query)
    if args.filter:
        try:
            spec = json.loads(_decoded(args.filter))
        except json.JSONDecodeError as exc:
            msg = f"--filter is not valid JSON ({exc.msg} at column {exc.colno})"
            raise ConfigError(msg) from exc
        except RecursionError as exc:
            msg = f"--filter is nested too deep (at most {MAX_FILTER_DEPTH} levels)"
            raise ConfigError(msg) from exc
        if not isinstance(spec, dict):
            msg = '--filter must be a JSON object, e.g. {"page": {"$gte": 3}}'
            raise ConfigError(msg)
    index = Index.open(args.index)
    hits = make_retriever(index, args.mode, args.k).invoke(query, k=args.k, filter=spec)
    if args.json:
        print(json_text([hit.model_dump(mode="json") for hit in hits]))
    elif not hits:
        print("no results")
    else:
        print("\n".join(_render_hit(hit) for hit in hits))
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    print(json_text(Index.open(args.index).info(), indent=2))
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from ragtools.retrieval.integrations.mcp import http_url, serve

    if args.http:  # stdout stays silent: over stdio it is the protocol channel
        print(f"rag: serving MCP at {http_url(args.host, args.port)}", file=sys.stderr)
    serve(
        args.indexes,
        names=args.name,
        descriptions=args.description,
        transport="http" if args.http else "stdio",
        host=args.host,
        port=args.port,
    )
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    from ragtools.retrieval.evaluation.experiment import run_eval
    from ragtools.retrieval.evaluation.report import render_markdown

    names = [name.strip() for name in args.retrievers.split(",") if name.strip()]
    report = run_eval(
        args.dataset,
        split=args.split,
        retrievers=names,
        out=args.out,
        index_dir=args.index,
        max_queries=args.max_queries,
        model=args.model,
    )
    print(render_markdown(report))
    print(f"wrote {args.out}/report.json, report.md, report.png and runs/")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rag", description=__doc__)
    parser.add_argument("--verbose", action="store_true", help="tracebacks and INFO logs")
    sub = parser.add_subparsers(dest="command", required=True)

    build = sub.add_parser("build", help="build an index from files and folders")
    build.add_argument("sources", nargs="+", help="files or directories to index")
    build.add_argument("--out", required=True, help="index directory to write")
    build.add_argument("--chunk-size", type=int, default=None)
    build.add_argument("--chunk-overlap", type=int, default=None)
    build.add_argument("--model", default=None, help="sentence-transformers name or path")
    build.add_argument("--no-vector", action="store_true", help="build the BM25 half only")
    build.set_defaults(func=_cmd_build)

    search = sub.add_parser("search", help="query an index")
    search.add_argument("index")
    search.add_argument("query")
    search.add_argument("--mode", choices=MODES, default="hybrid")
    search.add_argument("-k", type=int, default=5)
    search.add_argument("--filter", default=None, help='JSON, e.g. {"page": {"$gte": 3}}')
    search.add_argument("--json", action="store_true", help="print the hits as JSON")
    search.set_defaults(func=_cmd_search)

    evaluate = sub.add_parser("eval", help="evaluate retrievers on a BEIR dataset")
    evaluate.add_argument("--dataset", required=True, help="BEIR folder (corpus.jsonl, ...)")
    evaluate.add_argument("--split", default="test")
    evaluate.add_argument("--retrievers", default="bm25,vector,hybrid")
    evaluate.add_argument("--out", default="eval-out", help="report directory")
    evaluate.add_argument("--index", default=None, help="index directory (default OUT/index)")
    evaluate.add_argument("--max-queries", type=int, default=None)
    evaluate.add_argument("--model", default=None, help="sentence-transformers name or path")
    evaluate.set_defaults(func=_cmd_eval)

    info = sub.add_parser("info", help="describe an index")
    info.add_argument("index")
    info.set_defaults(func=_cmd_info)

    serve = sub.add_parser("serve", help="serve indexes as MCP retriever tools (stdio or HTTP)")
    serve.add_argument("indexes", nargs="+", metavar="INDEX")
    serve.add_argument("--name", action="append", help="tool name, once per index in order")
    serve.add_argument("--description", action="append", help="tool description, in order")
    serve.add_argument("--http", action="store_true", help="Streamable HTTP instead of stdio")
    serve.add_argument("--host", default="127.0.0.1", help="loopback address for --http")
    serve.add_argument("--port", type=int, default=8765, help="port for --http")
    serve.set_defaults(func=_cmd_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rag`` console script."""
    args = _parser().parse_args(argv)
    if isinstance(sys.stdout, io.TextIOWrapper):  # a source name that is not UTF-8, escaped
        sys.stdout.reconfigure(errors="backslashreplace")
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        code: int = args.func(args)
        return code
    except (RetrievalError, OSError) as exc:
        if args.verbose:
            traceback.print_exc()
        print(f"rag: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
