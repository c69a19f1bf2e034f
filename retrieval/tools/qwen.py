"""Qwen-Agent's file tools: ``retrieval``, ``doc_parser`` and ``simple_doc_parser``.

Registered under those names in the global registry when this module is imported (the
package imports it), so ``get_tool("retrieval", max_ref_token=2000)`` works as in Qwen-Agent.
All three are :class:`FileTool` subclasses (Qwen-Agent's ``BaseToolWithFileAccess``):
``file_access`` is True and ``call(params, files=...)`` takes the files beside the
arguments; files named in the arguments (``"files"``, or ``"url"`` for the parsers) count
too, so the tools also work from a model's tool call in a :class:`~retrieval.tools.node.
ToolsNode`.

* :class:`Retrieval` answers ``call({"query": ..., "files": [...]})``: parse the files
  (through the :class:`~retrieval.tools.parse_cache.ParseCache`), index them (once per set of
  file contents, :class:`~retrieval.tools.file_index.FileIndexer`), search with the configured
  ``rag_searchers`` and return the references, each with its citation (source, page, chunk
  id), that fit ``max_ref_token`` **tokens** of a named tokenizer (the embedder's by default),
  cut at a chunk boundary (:mod:`retrieval.tools.budget`). The default configuration is
  Qwen-Agent's, :data:`DEFAULT_TOOL_CONFIGS`.
* :class:`DocParser` returns a file's chunks (text, metadata, token count) as JSON.
* :class:`SimpleDocParser` returns a file's text.

Searchers (``rag_searchers``): ``keyword_search`` (BM25), ``vector_search``, ``hybrid_search``
(both, fused) and ``front_page_search`` (each document's opening chunks); several are fused
by reciprocal rank. A missing file, one that cannot be parsed or a set without any text is a
:class:`~retrieval.tools.exceptions.ToolException` naming the file: the model sees it (as an
error message through a ToolCall) and can ask again. Only local files are read; a URL is such
an error too (this package never goes to the network).

**What a model may read.** A model writes the paths, and a prompt-injected document can make it
write ``/etc/passwd``. Every file tool reads through a
:class:`~ragtools.retrieval.tools.file_scope.FileScope`: files under the ``roots`` the
application names (``get_tool("retrieval", roots=["docs"])``; default the working directory
when the tool is made, ``roots=[]`` for none), plus the files the application hands over with
``call(params, files=...)``. Paths are resolved (symbolic links included) before the check;
FIFOs, devices and files over ``max_bytes`` are refused before they are opened; a tool
configured with ``file_access=False`` reads nothing.

**Bounded parsing.** Tools run in threads (a ``ToolsNode`` runs each call in one), where no
timer can interrupt a parser, so files are parsed in a worker process that is killed past
``time_budget`` seconds (default :data:`~ragtools.parsers.loading.DEFAULT_TIME_BUDGET`), past
``memory_limit`` bytes (default :data:`~ragtools.parsers.loading.DEFAULT_MEMORY_LIMIT`) or as
soon as the call times out (:class:`~ragtools.retrieval.tools.parse_cache.ParseCache`): the
model gets an error naming the file and the limit, and no parse outlives its call. The
worker is started with ``spawn`` and imports the main script, so a script that calls these
tools keeps its work under ``if __name__ == "__main__":``, as Qwen-Agent's examples do.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, cast

from ragtools.indexes import Embedder, Index
from ragtools.parsers import split
from ragtools.parsers.errors import ConfigError, ParseError
from ragtools.parsers.loading import DEFAULT_MAX_BYTES, DEFAULT_MEMORY_LIMIT, DEFAULT_TIME_BUDGET
from ragtools.retrieval.base import Ranker, Retriever
from ragtools.retrieval.errors import ToolInputError
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.hybrid import HybridRetriever
from ragtools.retrieval.names import retriever_for
from ragtools.retrieval.tools.budget import (
    TokenCounter,
    embedder_counter,
    fit_blocks,
    token_counter,
)
from ragtools.retrieval.tools.classtool import FunctionTool, ToolArguments
from ragtools.retrieval.tools.exceptions import ToolException
from ragtools.retrieval.tools.file_index import FileIndexer
from ragtools.retrieval.tools.file_scope import FileScope
from ragtools.retrieval.tools.output import ToolOutput
from ragtools.retrieval.tools.parse_cache import ParseCache
from ragtools.retrieval.tools.registry import register_tool
from ragtools.retrieval.tools.retriever_tool import MAX_QUERY_CHARS, format_hit

__all__ = [
    "DEFAULT_TOOL_CONFIGS",
    "SEARCHERS",
    "DocParser",
    "FileTool",
    "Retrieval",
    "SimpleDocParser",
    "tool_description",
]

logger = logging.getLogger(__name__)

DEFAULT_TOOL_CONFIGS: dict[str, dict[str, Any]] = {
    "retrieval": {"max_ref_token": 4000, "rag_searchers": ["hybrid_search"]},
}
"""Qwen-Agent's default tool configurations (what ``get_tool(name)`` starts from)."""

SEARCHERS: dict[str, tuple[str, ...]] = {
    "keyword_search": ("keyword",),
    "vector_search": ("vector",),
    "hybrid_search": ("keyword", "vector"),
    "front_page_search": ("front_page",),
}
"""The searcher names ``rag_searchers`` accepts, and the retrievers
(:func:`~retrieval.names.retriever_for`) each one fuses."""


class FileTool(FunctionTool):
    """A tool that reads files it is handed (Qwen-Agent's ``BaseToolWithFileAccess``).

    Subclasses implement :meth:`call_files`; :meth:`call` gathers the files from the
    ``files`` keyword and from the arguments, and turns a file that cannot be read into a
    :class:`ToolException` naming it.
    """

    file_access = True
    files_parameter: ClassVar[str] = "files"

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.file_access = bool(self.config.get("file_access", self.file_access))
        max_bytes = int(self.config.get("max_bytes", DEFAULT_MAX_BYTES))
        self.scope = FileScope(
            self.config.get("roots"), max_bytes=max_bytes, enabled=self.file_access
        )
        self.parse_cache: ParseCache = self.config.get("parse_cache") or ParseCache(
            self.config.get("cache_dir"),
            max_bytes=max_bytes,
            time_budget=self.config.get("time_budget", DEFAULT_TIME_BUDGET),
            memory_limit=self.config.get("memory_limit", DEFAULT_MEMORY_LIMIT),
        )

    def call(self, params: ToolArguments, files: Sequence[str] | None = None, **kwargs: Any) -> Any:
        """Run on ``params`` (JSON text or a dict) and ``files`` (added to the arguments')."""
        return self._timed_run(params, files=files, **kwargs).content

    def _run(self, arguments: ToolArguments, **kwargs: Any) -> ToolOutput:
        values = self.verify_args(arguments)
        given = values.pop(self.files_parameter, None)
        named = [given] if isinstance(given, str) else list(given or [])
        handed = [str(path) for path in kwargs.get("files") or []]
        if not named and not handed:
            msg = f"tool {self.name!r} needs files: give '{self.files_parameter}' a file path"
            raise ToolException(msg)
        for path in [*handed, *named]:
            if "://" in str(path):
                msg = f"{path}: only local files can be read, not URLs"
                raise ToolException(msg)
        paths = self.scope.readable([str(path) for path in named], handed)
        try:
            return self.call_files(values, paths)
        except ParseError as exc:
            raise ToolException(str(exc)) from exc

    def call_files(self, arguments: dict[str, Any], paths: list[str]) -> ToolOutput:
        """Do the work over ``paths`` (validated arguments, files taken out)."""
        raise NotImplementedError


class _OneFileTool(FileTool):
    """A tool over the one file its ``url`` argument names (Qwen-Agent's parsers)."""

    parameters = [
        {"name": "url", "type": "string", "description": "Path of the file.", "required": True}
    ]
    files_parameter = "url"


@register_tool("simple_doc_parser")
class SimpleDocParser(_OneFileTool):
    """A file's text, pages joined (PDF, DOCX, PPTX, TXT, HTML, CSV, XLSX, Markdown, ...)."""

    description = "Extract the text of a document file (PDF, Word, PowerPoint, HTML, text)."

    def call_files(self, arguments: dict[str, Any], paths: list[str]) -> ToolOutput:
        documents = [doc for path in paths for doc in self.parse_cache.load(path)]
        return ToolOutput(content="\n\n".join(doc.text for doc in documents), artifact=documents)


@register_tool("doc_parser")
class DocParser(_OneFileTool):
    """A file's chunks as JSON: text, metadata and token count of each."""

    description = "Parse a document file into chunks with their page and token count."

    def call_files(self, arguments: dict[str, Any], paths: list[str]) -> ToolOutput:
        size = int(self.config.get("chunk_size", 1000))
        overlap = int(self.config.get("chunk_overlap", 200))
        count = token_counter(self.config.get("tokenizer"))
        documents = [doc for path in paths for doc in self.parse_cache.load(path)]
        chunks = split(documents, chunk_size=size, chunk_overlap=overlap)
        rows = [
            {"content": chunk.text, "metadata": chunk.metadata, "token": count(chunk.text)}
            for chunk in chunks
        ]
        return ToolOutput(content=json.dumps(rows, ensure_ascii=False), artifact=chunks)


@register_tool("retrieval")
class Retrieval(FileTool):
    """Search the given files and return references within ``max_ref_token`` tokens.

    Configuration (``get_tool("retrieval", **config)``; defaults in
    :data:`DEFAULT_TOOL_CONFIGS`): ``max_ref_token`` (token budget of the references),
    ``rag_searchers`` (see the module docstring), ``k`` (hits fetched before the budget, 20),
    ``embedder`` (an ``Embedder``; default the bundled model), ``tokenizer`` (see
    :func:`~retrieval.tools.budget.token_counter`), ``chunk_size``/``chunk_overlap``,
    ``cache_dir`` or ``parse_cache``, ``timeout``, and what every file tool takes: the file
    scope (``roots``, ``max_bytes``, ``file_access``) and the parse bounds (``time_budget``,
    ``memory_limit``), see the module docstring.

    Raises:
        ConfigError: an unknown searcher, a budget or ``k`` below 1.
    """

    description = (
        "Search the given document files for passages relevant to a query; returns cited "
        "passages (source, page)."
    )
    parameters = [
        {
            "name": "query",
            "type": "string",
            "description": "Keywords or a question to match in the documents.",
            "required": True,
            "minLength": 1,
            "maxLength": MAX_QUERY_CHARS,
        },
        {
            "name": "files",
            "type": "array",
            "items": {"type": "string"},
            "description": "Paths of the files to search.",
        },
    ]

    def __init__(self, **config: Any) -> None:
        super().__init__(**{**DEFAULT_TOOL_CONFIGS["retrieval"], **config})
        self.max_ref_token = int(self.config["max_ref_token"])
        self.k = int(self.config.get("k", 20))
        self.searchers = list(self.config["rag_searchers"])
        unknown = [name for name in self.searchers if name not in SEARCHERS]
        if not self.searchers or unknown:
            msg = f"rag_searchers must name some of {list(SEARCHERS)}, got {self.searchers!r}"
            raise ConfigError(msg)
        if self.max_ref_token < 1 or self.k < 1:
            msg = f"max_ref_token and k must be >= 1, got {self.max_ref_token} and {self.k}"
            raise ConfigError(msg)
        vector = any(name in ("vector_search", "hybrid_search") for name in self.searchers)
        embedder: Embedder | None = self.config.get("embedder")
        self.indexer = FileIndexer(
            self.parse_cache,
            embedder=embedder,
            vector=vector,
            chunk_size=int(self.config.get("chunk_size", 1000)),
            chunk_overlap=int(self.config.get("chunk_overlap", 200)),
        )
        self._tokenizer = self.config.get("tokenizer")
        self._count: TokenCounter | None = None

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` by the configured tokenizer (loaded on first use)."""
        if self._count is None:
            self._count = (
                embedder_counter(self.indexer.embedder)
                if self._tokenizer is None
                else token_counter(self._tokenizer)
            )
        return self._count(text)

    def search(self, query: str, files: Sequence[str]) -> list[Hit]:
        """The hits for ``query`` over ``files`` (parsed and indexed through the caches)."""
        index = self.indexer.index(list(files))
        return self.retriever(index).invoke(query, k=self.k)

    def call_files(self, arguments: dict[str, Any], paths: list[str]) -> ToolOutput:
        query = str(arguments["query"]).strip()
        if not query:
            msg = "the query is empty; give keywords or a question"
            raise ToolInputError(msg)
        hits = self.search(query, paths)
        if not hits:
            return ToolOutput(content=f'No results found for the query "{query}".', artifact=[])
        blocks = fit_blocks(
            [format_hit(hit) for hit in hits], self.max_ref_token, self.count_tokens
        )
        logger.debug(
            "retrieval: %d of %d hits within %d tokens", len(blocks), len(hits), self.max_ref_token
        )
        return ToolOutput(content="\n\n".join(blocks), artifact=hits)

    def retriever(self, index: Index) -> Retriever:
        """The retriever ``rag_searchers`` name over ``index`` (several are fused by RRF),
        each made by :func:`~retrieval.names.retriever_for`."""
        if self.searchers == ["hybrid_search"]:
            return retriever_for(index, "hybrid", k=self.k)
        halves = {"keyword": index.bm25, "vector": index.vector}
        names = [
            name
            for searcher in self.searchers
            for name in SEARCHERS[searcher]
            if halves.get(name, True) is not None  # a half the index lacks adds nothing
        ]
        parts = [retriever_for(index, name, k=self.k) for name in dict.fromkeys(names)]
        if len(parts) == 1:
            return parts[0]
        return HybridRetriever(cast(list[Ranker], parts), fusion="rrf", k=self.k)


def tool_description(tool: FunctionTool) -> Mapping[str, Any]:
    """Qwen-Agent's tool info: ``name``, ``name_for_human``, ``args_format``, ``file_access``
    and the OpenAI ``function``."""
    return {
        "name": tool.name,
        "name_for_human": tool.name_for_human,
        "args_format": tool.args_format,
        "file_access": tool.file_access,
        "function": tool.function,
    }
