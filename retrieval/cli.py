"""The ``rag`` command: build, update, search, inspect, roll back, evaluate and serve indexes.

Errors print one line (what failed, which file, what to do, naming ``rag`` flags rather than
Python arguments) and exit with status 2;
``--verbose`` adds the traceback and this package's DEBUG logging. Progress bars appear only
on a terminal (piped: a ``progress:`` line about every 30 s); ``--quiet`` turns them off.
Global options go before or after the command.
"""

from __future__ import annotations

import argparse
import io
import logging
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from ragtools.indexes.index import Index
from ragtools.indexes.settings import IndexSettings
from ragtools.parsers.document import json_text
from ragtools.parsers.errors import ConfigError, RetrievalError
from ragtools.parsers.progress import default_progress
from ragtools.retrieval import _cli_index
from ragtools.retrieval._cli_args import (
    HelpFormatter,
    add_model_arguments,
    add_selection,
    global_options,
    package_version,
    parse_filter,
    read_queries,
)
from ragtools.retrieval._cli_messages import cli_message
from ragtools.retrieval._cli_output import configure, emit, emit_text
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.names import SEARCH_MODES, canonical_retriever, retriever_for

__all__ = ["main"]

logger = logging.getLogger(__name__)

MODES = SEARCH_MODES


def _cmd_build(args: argparse.Namespace) -> int:
    return _cli_index.cmd_build(args)


def _render_hit(hit: Hit) -> tuple[str, str]:
    """Two lines: rank, score and where (source, page, heading path, as the retriever
    tool cites it); then the start of the text."""
    from ragtools.retrieval.tools.retriever_tool import place_of

    where = place_of(hit.chunk)
    text = " ".join(hit.chunk.text.split())
    snippet = text[:240] + ("…" if len(text) > 240 else "")
    return f"{hit.rank:>3}. {hit.score:.4f}  {where}", f"     {snippet}"


def _decoded(argument: str) -> str:
    """A command-line argument with undecodable bytes (``$'\\xff'``) replaced by U+FFFD.

    Python hands such bytes over as lone surrogates, which no tokenizer, model or JSON
    writer accepts.
    """
    return argument.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _cmd_search(args: argparse.Namespace) -> int:
    spec = parse_filter(None if args.filter is None else _decoded(args.filter))
    if (args.query is None) == (args.queries is None):
        msg = "give one query, or --queries FILE (one query a line; - for stdin), not both"
        raise ConfigError(msg)
    index = Index.open(args.index)
    # the default is what the index has: hybrid, or its one half (asked for, hybrid warns)
    halves = [
        name
        for name, half in (("keyword", index.bm25), ("vector", index.vector))
        if half is not None
    ]
    mode = args.mode or ("hybrid" if len(halves) != 1 else halves[0])
    retriever = retriever_for(index, mode, k=args.k)
    if args.queries is not None:
        for record in read_queries(args.queries):
            hits = retriever.invoke(record["query"], k=args.k, filter=spec)
            answer = {**record, "hits": [hit.model_dump(mode="json") for hit in hits]}
            emit(json_text(answer), flush=True)
        return 0
    hits = retriever.invoke(_decoded(args.query), k=args.k, filter=spec)
    if args.json:
        emit(json_text([hit.model_dump(mode="json") for hit in hits]))
    elif not hits:
        emit("no results")
    else:
        emit(*(line for hit in hits for line in _render_hit(hit)))
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    return _cli_index.cmd_info(args)


def _one_blas_thread() -> None:
    """Run BLAS single-threaded in this (serving) process.

    A server answers one query at a time. Its matrix-vector products (an exact vector scan)
    are too small to gain from BLAS threads, and OpenBLAS's threads stay busy-waiting after
    each call, on the cores the next query's embedding needs. Called once the indexes and
    the model are loaded, so every BLAS library in the process is covered.
    """
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def _cmd_serve(args: argparse.Namespace) -> int:
    from ragtools.retrieval.integrations.mcp import http_url, serve

    where = f"MCP at {http_url(args.host, args.port)}" if args.http else "MCP over stdio"
    count = len(args.indexes)

    def ready() -> None:  # stderr: over stdio, stdout is the protocol channel
        _one_blas_thread()
        plural = "index" if count == 1 else "indexes"
        emit(f"rag: ready: serving {where} ({count} {plural})", err=True, flush=True)

    serve(
        args.indexes,
        names=args.name,
        descriptions=args.description,
        transport="http" if args.http else "stdio",
        host=args.host,
        port=args.port,
        ray=args.ray,
        on_ready=ready,
        show_metadata=args.show_metadata or (),
    )
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    from ragtools.retrieval.evaluation.experiment import run_eval
    from ragtools.retrieval.evaluation.report import render_markdown
    from ragtools.retrieval.evaluation.verify import load_expected, verify_report

    expected = load_expected(args.verify) if args.verify else None  # bad file: fail first
    names = [name.strip() for name in args.retrievers.split(",") if name.strip()]
    report = run_eval(
        args.dataset,
        split=args.split,
        retrievers=names,
        out=args.out,
        index_dir=args.index,
        max_queries=args.max_queries,
        model=args.model,
        precision=args.precision,
        depth=args.depth,
        shards=args.shards,
    )
    emit_text(render_markdown(report))
    emit(f"wrote {args.out}/report.json, report.md, report.png and runs/ (runs, per-query)")
    if expected is None:
        return 0
    problems = verify_report(report, expected)
    for problem in problems:
        emit(f"rag: verify: {problem}", err=True)
    if problems:
        emit(f"rag: verify: {len(problems)} figure(s) of {args.verify} failed", err=True)
        return 1
    emit(f"verify: every figure of {args.verify} for {report['dataset']} holds")
    return 0


def _system_name(name: str | None, systems: dict[str, Any]) -> str | None:
    """``--baseline`` as given when a system has that name, else its canonical retriever name
    (``bm25`` finds ``keyword``)."""
    if name is None or name in systems:
        return name
    return canonical_retriever(name)


def _cmd_compare(args: argparse.Namespace) -> int:
    from ragtools.retrieval.evaluation.beir import load_qrels
    from ragtools.retrieval.evaluation.compare import (
        compare_systems,
        render_comparison,
        write_comparison,
    )
    from ragtools.retrieval.evaluation.metrics import metric_cutoff
    from ragtools.retrieval.evaluation.perquery import load_systems

    qrels = load_qrels(args.dataset, args.split) if args.dataset else None
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    cutoffs = [metric_cutoff(m) for m in metrics] if metrics else None
    systems = load_systems(args.inputs, qrels=qrels, cutoffs=cutoffs)
    tests = ("t", "randomization") if args.test == "both" else (args.test,)
    comparison = compare_systems(
        systems,
        baseline=_system_name(args.baseline, systems),
        metrics=metrics,
        tests=tests,
        permutations=args.permutations,
        seed=args.seed,
    )
    emit_text(render_comparison(comparison))
    write_comparison(comparison, args.out)
    emit(f"wrote {args.out}/compare.json, compare.md and compare.png")
    return 0


def _cmd_tune(args: argparse.Namespace) -> int:
    from ragtools.indexes.writer import IndexWriter
    from ragtools.retrieval.evaluation.compare import render_comparison
    from ragtools.retrieval.evaluation.tune import tune_fusion

    with Index.open(args.index) as index:
        result = tune_fusion(index, args.dataset, split=args.split, test_split=args.test_split)
        for warning in result.warnings:
            emit(f"warning: {warning}", err=True)
        chosen, default = result.chosen, result.default
        emit(
            f"train ({chosen.provenance['queries']} queries, split {args.split}): nDCG@10 "
            f"{result.train['default']['nDCG@10']:.4f} with the default "
            f"({default.method}, weights {list(default.weights)}, {default.candidate_k} "
            f"candidates), {result.train['chosen']['nDCG@10']:.4f} with the best of "
            f"{len(result.grid)} settings: {chosen.method}, weights {list(chosen.weights)}, "
            f"{chosen.candidate_k} candidates"
        )
        if result.test is not None:
            emit(f"test split {args.test_split} (never used to choose): tuned against default")
            emit_text(render_comparison(result.test))
        if args.dry_run:
            emit("--dry-run: the index was not changed")
            return 0
        IndexWriter(index).set_search_settings(fusion=chosen)
        emit(
            f"wrote the fusion into {args.index} as a new version (rag rollback undoes it); "
            "rag search, the tools and MCP use it"
        )
    return 0


def _parser() -> argparse.ArgumentParser:
    common = global_options()
    parser = argparse.ArgumentParser(
        prog="rag", description=__doc__, parents=[common], formatter_class=HelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"rag {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(
            name, help=help, description=help, parents=[common], formatter_class=HelpFormatter
        )

    defaults = IndexSettings()
    build = command("build", "build an index from files and folders")
    build.add_argument("sources", nargs="+", help="files or directories to index")
    build.add_argument("--out", help="index directory to write (required unless --dry-run)")
    build.add_argument(
        "--dry-run",
        action="store_true",
        help="list, by type, the files a build would index and skip (and why); write nothing",
    )
    build.add_argument("--chunk-size", type=int, default=defaults.chunk_size, help="characters")
    build.add_argument(
        "--chunk-overlap", type=int, default=defaults.chunk_overlap, help="characters"
    )
    add_model_arguments(build)
    build.add_argument("--no-vector", action="store_true", help="build the BM25 half only")
    build.add_argument(
        "--context",
        action="store_true",
        help="BM25 and the embedder see each chunk's title and heading path (stored text "
        "unchanged)",
    )
    build.add_argument(
        "--keep-versions",
        type=int,
        default=defaults.keep_versions,
        metavar="N",
        help="versions kept on disk for `rag rollback`",
    )
    build.add_argument(
        "--force",
        action="store_true",
        help="replace an index built from other sources or settings (it stays a version)",
    )
    build.add_argument("--shards", type=int, default=None, help="split the index into N shards")
    build.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help="build the shards as Ray tasks (on ADDRESS, or a local cluster); needs [ray]",
    )
    add_selection(build, recorded=False)
    build.set_defaults(func=_cmd_build)

    update = command("update", "re-read an index's sources; parse only what changed")
    update.add_argument("index")
    update.add_argument(
        "sources", nargs="*", help="files or directories (default: the recorded sources)"
    )
    add_selection(update, recorded=True)
    update.set_defaults(func=_cli_index.cmd_update)

    search = command("search", "query an index")
    search.add_argument("index")
    search.add_argument("query", nargs="?", help="the query (or use --queries)")
    search.add_argument(
        "--mode",
        type=canonical_retriever,
        choices=MODES,
        default=None,
        help="bm25 = keyword (default: hybrid; keyword on an index built with --no-vector)",
    )
    search.add_argument("-k", type=int, default=5, help="hits per query")
    search.add_argument(
        "--filter", default=None, help="JSON or JSON5, e.g. {page: {$gte: 3}} (default: none)"
    )
    search.add_argument("--json", action="store_true", help="print the hits as JSON")
    search.add_argument(
        "--queries",
        metavar="FILE",
        help="one query a line (text, or JSON with a query key); - for stdin; JSON Lines out",
    )
    search.set_defaults(func=_cmd_search)

    evaluate = command("eval", "evaluate retrievers on a BEIR dataset")
    evaluate.add_argument("--dataset", required=True, help="BEIR folder (corpus.jsonl, ...)")
    evaluate.add_argument("--split", default="test")
    evaluate.add_argument(
        "--retrievers",
        default="keyword,vector,hybrid",
        help="comma-separated: keyword (alias bm25), vector, hybrid, hybrid_rrf, front_page",
    )
    evaluate.add_argument(
        "--depth", type=int, default=1000, help="documents per query in the runs (default 1000)"
    )
    evaluate.add_argument(
        "--verify",
        default=None,
        metavar="EXPECTED",
        help="YAML/JSON expected figures; exit 1 on drift",
    )
    evaluate.add_argument("--out", default="eval-out", help="report directory")
    evaluate.add_argument("--index", default=None, help="index directory (default: OUT/index)")
    evaluate.add_argument("--max-queries", type=int, default=None, help="(default: all)")
    add_model_arguments(evaluate)
    evaluate.add_argument("--shards", type=int, default=None, help="index in N shards")
    evaluate.set_defaults(func=_cmd_eval)

    compare = command(
        "compare", "compare systems query by query against a baseline (significance tests)"
    )
    compare.add_argument(
        "inputs", nargs="+", metavar="REPORT_OR_RUN",
        help="report.json (or its folder), NAME.per_query.jsonl or a TREC run (needs --dataset)",
    )  # fmt: skip
    compare.add_argument("--baseline", default=None, help="system name (default: the first)")
    compare.add_argument("--test", choices=("t", "randomization", "both"), default="both")
    compare.add_argument("--metrics", default=None, help="e.g. nDCG@10,R@100 (default: 4 main)")
    compare.add_argument("--dataset", default=None, help="BEIR folder whose qrels score runs")
    compare.add_argument("--split", default="test")
    compare.add_argument("--permutations", type=int, default=10_000)
    compare.add_argument("--seed", type=int, default=42)
    compare.add_argument("--out", default="compare-out", help="output directory")
    compare.set_defaults(func=_cmd_compare)

    tune = command(
        "tune", "choose the hybrid fusion on judged queries and write it as a new version"
    )
    tune.add_argument("index")
    tune.add_argument(
        "--dataset", required=True, help="folder with queries.jsonl and qrels/<split>.tsv"
    )
    tune.add_argument("--split", default="train", help="the judgements the choice is made on")
    tune.add_argument(
        "--test-split", default="test", help="judgements the gain is reported on (if present)"
    )
    tune.add_argument("--dry-run", action="store_true", help="report, change nothing")
    tune.set_defaults(func=_cmd_tune)

    info = command("info", "describe an index")
    info.add_argument("index")
    info.add_argument("--json", action="store_true", help="everything, as JSON")
    info.set_defaults(func=_cmd_info)

    versions = command("versions", "list the kept versions of an index (* marks the live one)")
    versions.add_argument("index")
    versions.add_argument("--json", action="store_true", help="print them as JSON")
    versions.set_defaults(func=_cli_index.cmd_versions)

    rollback = command("rollback", "make an earlier kept version live again")
    rollback.add_argument("index")
    rollback.add_argument(
        "version", nargs="?", help="e.g. v-000002 or 2 (default: the one before the live one)"
    )
    rollback.set_defaults(func=_cli_index.cmd_rollback)

    serve = command("serve", "serve indexes as MCP retriever tools (stdio or HTTP)")
    serve.add_argument("indexes", nargs="+", metavar="INDEX")
    serve.add_argument(
        "--name", action="append", help="tool name, once per index in order (default: search_DIR)"
    )
    serve.add_argument(
        "--description", action="append", help="tool description, in order (default: generated)"
    )
    serve.add_argument("--http", action="store_true", help="Streamable HTTP instead of stdio")
    serve.add_argument("--host", default="127.0.0.1", help="loopback address for --http")
    serve.add_argument("--port", type=int, default=8765, help="port for --http")
    serve.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help="serve sharded indexes from Ray actors (on ADDRESS, or a local cluster)",
    )
    serve.add_argument(
        "--show-metadata",
        action="append",
        metavar="KEY",
        help="keep this file key (path, mtime or size) in the hits sent; once per key "
        "(default: none, so no directory of this machine reaches the model)",
    )
    serve.set_defaults(func=_cmd_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rag`` console script."""
    args = _parser().parse_args(argv)
    if isinstance(sys.stdout, io.TextIOWrapper):  # a source name that is not UTF-8, escaped
        sys.stdout.reconfigure(errors="backslashreplace")
    args.verbose = getattr(args, "verbose", False)
    args.quiet = getattr(args, "quiet", False) and not args.verbose
    configure(verbose=args.verbose, quiet=args.quiet)
    try:
        with default_progress(False if args.quiet else None):  # -q: not even the embedder's
            code: int = args.func(args)
        return code
    except (RetrievalError, OSError) as exc:
        if args.verbose:
            traceback.print_exc()
        emit(f"rag: error: {cli_message(str(exc))}", err=True)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
