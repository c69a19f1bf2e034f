"""``rag``'s arguments: help that shows defaults, global options, sources, filters, queries."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from typing import Any, BinaryIO

import json5

from ragtools.indexes.dense.precision import PRECISIONS
from ragtools.indexes.settings import IndexSettings
from ragtools.parsers.errors import ConfigError
from ragtools.parsers.nesting import nesting_problem, text_too_deep
from ragtools.parsers.text import iter_lines
from ragtools.retrieval.filters import MAX_FILTER_DEPTH
from ragtools.retrieval.query_text import query_problem


def parse_filter(text: str | None) -> dict[str, Any] | None:
    """``--filter``: a JSON5 object (so ``{page: {$gte: 3}}`` works unquoted, as in tools)."""
    if not text:
        return None
    too_deep = f"--filter is nested too deep (at most {MAX_FILTER_DEPTH} levels)"
    if text_too_deep(text, MAX_FILTER_DEPTH):  # json5 recurses: measured before parsing
        raise ConfigError(too_deep)
    try:
        spec = json5.loads(text)
    except ValueError as exc:
        msg = f"--filter is not valid JSON or JSON5 ({exc})"
        raise ConfigError(msg) from exc
    except RecursionError as exc:  # within the bound, but called from a deep stack
        raise ConfigError(too_deep) from exc
    if not isinstance(spec, dict):
        msg = '--filter must be a JSON object, e.g. {"page": {"$gte": 3}}'
        raise ConfigError(msg)
    return spec


def read_queries(source: str) -> Iterator[dict[str, Any]]:
    """``--queries``: one query a line, as text or as a JSON object with ``query`` (and any
    other keys, e.g. an ``id``, echoed in the answer). ``-`` reads standard input.

    Lines are read one at a time and none may be longer than
    :data:`~parsers.text.MAX_LINE_BYTES` (:func:`~parsers.text.iter_lines`), so an endless
    input (``/dev/zero``) costs a few mebibytes and one error line, never all memory. Text
    is UTF-8 (a byte that is not becomes U+FFFD, as in a query given as an argument). A
    query longer than :data:`~retrieval.query_text.LONGEST_QUERY` characters, or a JSON line
    nested past :data:`~parsers.nesting.MAX_NESTING` (measured before parsing, as tool
    arguments are), is a ``ConfigError`` naming the file, the line and the limit; lone
    surrogates in a query are left to the retrievers, which replace them.

    Raises:
        ConfigError: a bad line (see above).
        ParseError: a line over ``MAX_LINE_BYTES`` (naming the file and the line).
        OSError: the file cannot be read.
    """
    handle: BinaryIO = sys.stdin.buffer if source == "-" else open(source, "rb")  # noqa: SIM115
    with handle:
        for number, line in enumerate(iter_lines(handle, source), 1):
            text = line.decode("utf-8", "replace").strip()
            if not text:
                continue
            record = _query_record(text, source, number)
            problem = query_problem(record["query"])
            if problem is not None:
                msg = f"{source}, line {number}: {problem}"
                raise ConfigError(msg)
            yield record


def _query_record(text: str, source: str, number: int) -> dict[str, Any]:
    if not text.startswith("{"):
        return {"query": text}
    if text_too_deep(text):
        msg = f"{source}, line {number}: {nesting_problem()}"
        raise ConfigError(msg)
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"{source}, line {number}: not valid JSON ({exc.msg})"
        raise ConfigError(msg) from exc
    if not isinstance(record, dict) or not isinstance(record.get("query"), str):
        msg = f'{source}, line {number}: a JSON line needs a "query" string'
        raise ConfigError(msg)
    return record


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows every default that is a value; options without one say what happens instead."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False, argparse.SUPPRESS) or action.help is None:
            return action.help
        if "(default:" in action.help:  # said in words (e.g. never echo a password)
            return action.help
        return super()._get_help_string(action)


def package_version() -> str:
    try:
        return version("ragtools")
    except PackageNotFoundError:
        return "0+unknown"


def global_options() -> argparse.ArgumentParser:
    """Options accepted before or after the command (defaults suppressed, so that a
    sub-command's copy never overwrites the value given before it)."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("global options")
    group.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="tracebacks, DEBUG logs of this package, and other libraries' messages",
    )
    group.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=argparse.SUPPRESS,
        help="no progress bars and no warnings, errors only",
    )
    return parent


def add_selection(parser: argparse.ArgumentParser, recorded: bool) -> None:
    also = " (default: the ones recorded in the index)" if recorded else ""
    parser.add_argument(
        "--include",
        action="append",
        metavar="GLOB",
        help=f"read only files matching this .gitignore-style pattern; repeatable{also}",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        metavar="GLOB",
        help=f"skip files and folders matching this pattern; repeatable{also}",
    )
    parser.add_argument(
        "--no-gitignore", action="store_true", help="read files that .gitignore files ignore"
    )
    parser.add_argument(
        "--follow-links",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="follow symbolic links that leave a source folder; they are skipped otherwise "
        + ("(default: as recorded in the index)" if recorded else "(default: skip them)"),
    )
    parser.add_argument(
        "--password",
        default=os.environ.get("RAG_PDF_PASSWORD"),
        help="password for encrypted PDFs (default: $RAG_PDF_PASSWORD)",
    )


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """``--model`` and ``--precision``, the settings of the vector half's model."""
    parser.add_argument(
        "--model", default=None, help="sentence-transformers name or path (default: bundled)"
    )
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        default=IndexSettings().precision,
        help=(
            "the model's precision (default here: %(default)s; bf16 where the CPU has AMX, "
            "int8 where it has VNNI, which embed several times faster, else fp32)"
        ),
    )
