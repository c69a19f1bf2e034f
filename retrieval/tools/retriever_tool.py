"""``create_retriever_tool``: any :class:`~retrieval.base.Retriever` as an agent tool.

The model sees one argument, ``query`` (:class:`RetrieverInput`: 1 to 2,000 characters after
stripping whitespace, no other keys). 2,000 characters is far more than any real search query
and well past what our embedders read (MiniLM truncates at 256 tokens), so a longer "query" is
a model pasting a document by mistake, which it should be told about.

The tool returns ``(content, artifact)``:

* ``content`` is what the model reads: each hit rendered with a citation, by default::

      [1] papers/tracemonkey.pdf, page 5 (chunk 1a2b3c4d)
      <chunk text>

      [2] docs/guide.md › Install › From source (chunk 5e6f7a8b)
      <chunk text>

  (``pages 3-4`` when a chunk spans pages; the heading path when the chunk has
  ``headings``; the source alone otherwise). The source is the chunk's relative ``source``;
  an absolute one (an index built before sources were relative) shows its file name only,
  so no directory of the build machine reaches the model. Hits are joined with
  ``document_separator``, or with ``document_prompt``, a ``str.format`` template over
  ``{text}`` (alias ``{page_content}``), ``{source}``, ``{page}``, ``{chunk_id}``,
  ``{doc_id}``, ``{score}``, ``{rank}`` and any metadata key (missing ones render empty).
  The content is cut to ``max_content_chars`` at a hit boundary, in rank order, after
  Qwen-Agent's ``max_ref_token``: the first hit is always included, truncated (ending in
  "…") if it alone exceeds the budget. The budget is in characters, not tokens, so the cut is
  deterministic and needs no tokenizer: the default 8,000 is about 2,000 English tokens
  (about 4 characters per token); CJK text has about one token per character, so lower it
  for Chinese corpora. No hits gives a "No results found" content and an empty artifact.
* ``artifact`` is the full list of :class:`~retrieval.hit.Hit` objects, including hits the
  budget kept out of the content. It reaches the application through a ToolCall's
  ToolMessage, ``run_with_artifact``, ``execute``, or the LangChain adapter; it never reaches
  the model.

A LangChain retriever (``langchain_core.retrievers.BaseRetriever``, or anything whose
``invoke`` returns LangChain ``Document`` objects) works too, as LangChain's own
``create_retriever_tool`` takes one: it is wrapped in an
:class:`~retrieval.adapted.AdaptedRetriever`, which turns each document into a
:class:`~retrieval.hit.Hit` (see :mod:`retrieval.adapted`), so the content cites sources like
any other retriever's and the artifact is hits.

Where LangChain's ``create_retriever_tool`` differs, and the option that gives its behaviour
(this package's contract, DESIGN.md: a retriever tool returns ``(content, artifact)`` with
the hits as artifact, so our defaults stay):

* ``response_format``: ours defaults to ``"content_and_artifact"``, LangChain's to
  ``"content"`` (no artifact); pass ``response_format="content"``.
* the artifact: ours is the list of :class:`~retrieval.hit.Hit` (every stage's score,
  offsets, pages), LangChain's the retriever's ``Document`` objects. ``artifact=
  "documents"`` hands on the documents a LangChain retriever returned, as they are (the
  content is still rendered from them, through the hits they convert to). It needs a
  LangChain retriever (anything whose ``invoke`` returns ``Document`` objects): for one of
  ours, pass ``to_langchain_retriever(retriever)``
  (:mod:`retrieval.integrations.langchain_retriever`), whose documents carry the hit data
  in their metadata. It refuses ``min_score`` and ``expand``, which would make the
  content's hits differ from the documents.
* the content: ours cites each hit (source, page, chunk id) under a character budget,
  LangChain's joins the bare ``page_content``; pass ``document_prompt="{page_content}"``
  and ``max_content_chars=None``. A search with no results says so ('No results found for
  the query "..."') where LangChain's content is empty: an empty string does not tell a
  model that the search ran.
* the schema: ours requires a non-empty query of at most :data:`MAX_QUERY_CHARS`
  characters and refuses other keys (``handle_tool_error=True`` shows a retriever's
  ``ToolInputError`` to the model); LangChain's takes any string.

``tests/retrieval/tools/langchain_suite`` runs LangChain's own ``test_create_retriever_tool``
through a shim that passes these options.

``ToolInputError`` raised by the retriever (a query it cannot use) is shown to the model
(``handle_tool_error=True``); other errors propagate. ``ainvoke`` calls
``retriever.ainvoke``.

Options the model never sees:

* ``filter=`` and ``k=`` are bound: every search uses them, and the schema has no field to
  change them (a ToolCall carrying ``filter`` or ``k`` fails validation, so the retriever
  never runs with it);
* ``allow_filters=`` adds an optional, described ``filter`` field whose choices are checked
  before use and joined with the bound filter (:mod:`retrieval.tools.retriever_filters`);
  with it, validation errors become messages to the model unless told otherwise;
* ``min_score=`` and ``expand=`` are handed to the retriever's own query path
  (:meth:`BaseRetriever.with_options <retrieval.base.BaseRetriever.with_options>`, or an
  :class:`~retrieval.adapted.AdaptedRetriever` around a retriever that is not ours), which
  applies :mod:`retrieval.threshold` and :mod:`retrieval.expand` once per search; the tool
  only formats the hits it is given. Setting either on both the retriever and the tool is a
  :class:`~parsers.errors.ConfigError`. The artifact is then the passages, each keeping its
  original hits in ``hit.parts``; when a threshold leaves fewer than ``k`` hits the content
  says so.
"""

from __future__ import annotations

import logging
import string
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from ragtools.parsers.document import Chunk
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.adapted import AdaptedRetriever
from ragtools.retrieval.base import BaseRetriever, Filter, Retriever
from ragtools.retrieval.bound_filter import check_bound_filter, combine_filters
from ragtools.retrieval.expand import ExpandMode, Expansion, expansion_of
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.threshold import MinScore, check_min_score
from ragtools.retrieval.tools.base import ResponseFormat
from ragtools.retrieval.tools.budget import TokenCounter, fit_blocks, token_counter
from ragtools.retrieval.tools.retriever_filters import (
    allowed_filter_schema,
    describe_invalid_arguments,
    filter_of_choice,
)
from ragtools.retrieval.tools.structured import StructuredTool

__all__ = [
    "DEFAULT_MAX_CONTENT_CHARS",
    "MAX_QUERY_CHARS",
    "RetrieverInput",
    "create_retriever_tool",
    "format_hit",
    "format_hits",
]

logger = logging.getLogger(__name__)

MAX_QUERY_CHARS = 2000
"""Longest accepted query, in characters (see the module docstring)."""

DEFAULT_MAX_CONTENT_CHARS = 8000
"""Default content budget in characters: about 2,000 English tokens."""

Artifact: TypeAlias = Literal["hits", "documents"]
"""What a retriever tool's artifact holds (see the module docstring)."""

_QUERY_DESCRIPTION = (
    "The search query: a short natural-language question or a few keywords describing the "
    "information to look up in the document collection."
)


class RetrieverInput(BaseModel):
    """Search the document collection with one query."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description=_QUERY_DESCRIPTION)


class _Blank(dict[str, Any]):
    """Template values where a missing metadata key renders as an empty string."""

    def __missing__(self, key: str) -> str:
        return ""


def format_hit(hit: Hit, document_prompt: str | None = None) -> str:
    """Render one hit for a model: the default citation header, or ``document_prompt``."""
    chunk = hit.chunk
    page = _page_text(chunk.metadata)
    source = _shown_source(chunk.source)
    if document_prompt is None:
        return f"[{hit.rank}] {place_of(chunk)} (chunk {chunk.id[:8]})\n{chunk.text}"
    values = _Blank(chunk.metadata)
    values.update(
        text=chunk.text,
        page_content=chunk.text,
        source=source,
        page=page.split(" ", 1)[1] if page else "",
        chunk_id=chunk.id,
        doc_id=chunk.doc_id,
        score=hit.score,
        rank=hit.rank,
    )
    return document_prompt.format_map(values)


def place_of(chunk: Chunk) -> str:
    """Where a chunk is, as a citation names it: ``docs/guide.md › Install › From source``,
    ``papers/x.pdf, page 5`` (its source, page and heading path)."""
    page = _page_text(chunk.metadata)
    where = _shown_source(chunk.source) + (f", {page}" if page else "")
    headings = chunk.metadata.get("headings")
    if isinstance(headings, list) and headings:
        where = " › ".join([where, *map(str, headings)])
    return where


def format_hits(
    hits: Sequence[Hit],
    *,
    document_prompt: str | None = None,
    document_separator: str = "\n\n",
    max_chars: int | None = DEFAULT_MAX_CONTENT_CHARS,
) -> str:
    """Render hits in order, joined, cut to ``max_chars`` at a hit boundary.

    Args:
        hits: the hits, best first.
        document_prompt: per-hit template (see the module docstring); default citation form.
        document_separator: text between two hits.
        max_chars: content budget in characters; ``None`` for no limit. The first hit is
            always included, truncated to the budget if needed.

    Returns:
        The content; empty for no hits.
    """
    parts: list[str] = []
    used = 0
    for hit in hits:
        block = format_hit(hit, document_prompt)
        extra = len(block) + (len(document_separator) if parts else 0)
        if max_chars is None or used + extra <= max_chars:
            parts.append(block)
            used += extra
            continue
        if not parts:
            parts.append(block[: max_chars - 1] + "…")
        logger.debug(
            "content budget %d chars: %d of %d hits shown", max_chars, len(parts), len(hits)
        )
        break
    return document_separator.join(parts)


def create_retriever_tool(
    retriever: Retriever,
    name: str,
    description: str,
    *,
    document_prompt: str | None = None,
    document_separator: str = "\n\n",
    response_format: ResponseFormat = "content_and_artifact",
    max_content_chars: int | None = DEFAULT_MAX_CONTENT_CHARS,
    k: int | None = None,
    max_content_tokens: int | None = None,
    tokenizer: str | TokenCounter | None = None,
    filter: Filter | None = None,
    allow_filters: Mapping[str, Any] | None = None,
    min_score: MinScore | None = None,
    expand: ExpandMode | Expansion | Mapping[str, Any] | None = None,
    artifact: Artifact = "hits",
    **tool_kwargs: Any,
) -> StructuredTool:
    """Wrap a retriever as a tool with the fixed :class:`RetrieverInput` schema.

    Args:
        retriever: anything with ``invoke(query, *, k=None)`` (and ideally ``ainvoke``)
            returning ``list[Hit]``.
        name: the tool name the model calls.
        description: tells the model what the collection holds and when to search it.
        document_prompt: per-hit ``str.format`` template; default citation form.
        document_separator: text between two rendered hits.
        response_format: ``"content_and_artifact"`` (content plus all hits) or ``"content"``
            (content only: the caller then chose to have no artifact).
        max_content_chars: content budget in characters (``None``: unlimited).
        k: number of hits to ask the retriever for, bound; ``None`` uses its default.
        max_content_tokens: a budget in tokens instead (Qwen-Agent's ``max_ref_token``):
            whole hits while they fit, counted by ``tokenizer`` (see
            :func:`~retrieval.tools.budget.token_counter`; default the embedder's).
        filter: a filter every search uses, bound (the model cannot see or change it).
        allow_filters: metadata keys the model may filter on, each with its allowed values
            (a list) or range (``{"min": 1, "max": 40}``); see
            :mod:`retrieval.tools.retriever_filters`.
        min_score: drop hits under this score, or under these stage scores.
        expand: grow hits into passages (``"neighbors"``, ``"section"``, ``"document"``).
        artifact: ``"hits"`` (the list of hits) or ``"documents"`` (a LangChain retriever's
            ``Document`` objects as it returned them, as LangChain's retriever tool gives).
        **tool_kwargs: further :class:`StructuredTool` fields (``return_direct``,
            ``handle_validation_error``, ``extras``, ``metadata``, ...).

    Returns:
        The tool.

    Raises:
        ConfigError: a bad budget, ``k``, template or retriever; ``artifact="documents"``
            with one of our retrievers, ``min_score`` or ``expand``.

    Example:
        >>> tool = create_retriever_tool(retriever, "search_docs", "Search the manuals.")
        >>> message = tool.invoke(
        ...     {"name": "search_docs", "args": {"query": "warranty"}, "id": "c1",
        ...      "type": "tool_call"})
        >>> message.content.splitlines()[0]
        '[1] manual.pdf, page 12 (chunk 9f3a2b1c)'
        >>> [hit.rank for hit in message.artifact]
        [1, 2, 3, 4]
    """
    _check_arguments(retriever, document_prompt, max_content_chars, k)
    if max_content_tokens is not None and max_content_tokens < 1:
        msg = f"max_content_tokens must be >= 1 or None, got {max_content_tokens}"
        raise ConfigError(msg)
    count = token_counter(tokenizer) if max_content_tokens is not None else None
    bound = check_bound_filter(filter)
    _check_artifact(artifact, retriever, min_score, expand)
    target = _searched(retriever, check_min_score(min_score), expansion_of(expand))
    schema: type[BaseModel] = RetrieverInput
    if allow_filters is not None:
        schema = allowed_filter_schema(RetrieverInput, allow_filters)
        tool_kwargs.setdefault("handle_validation_error", describe_invalid_arguments)
    thresholded = target.min_score is not None
    wanted = k if k is not None else getattr(retriever, "k", None)

    def search_kwargs(choice: Any) -> dict[str, Any]:
        options: dict[str, Any] = {} if k is None else {"k": k}
        chosen = combine_filters(bound, filter_of_choice(choice))
        if chosen is not None:
            options["filter"] = chosen
        return options

    def finish(query: str, hits: list[Hit], returned: list[Any] | None = None) -> Any:
        note = ""
        passed = sum(len(hit.parts) or 1 for hit in hits)  # an expanded passage holds its hits
        if thresholded and isinstance(wanted, int) and passed < wanted:
            note = f"Only {passed} of the {wanted} requested results passed the score threshold."
        if hits and count is not None and max_content_tokens is not None:
            blocks = [format_hit(hit, document_prompt) for hit in hits]
            kept = fit_blocks(blocks, max_content_tokens, count, document_separator)
            content = document_separator.join(kept)
            content = f"{content}{document_separator}{note}" if note else content
        elif hits:
            content = format_hits(
                hits,
                document_prompt=document_prompt,
                document_separator=document_separator,
                max_chars=max_content_chars,
            )
            content = f"{content}{document_separator}{note}" if note else content
        else:
            content = f'No results found for the query "{query}".'
            content = f"{content} {note}" if note else content
        if response_format != "content_and_artifact":
            return content
        return content, (hits if returned is None else _documents(returned, retriever))

    def search(query: str, filter: Any = None) -> Any:
        if isinstance(target, AdaptedRetriever) and artifact == "documents":
            return finish(query, *target.invoke_returned(query, **search_kwargs(filter)))
        return finish(query, target.invoke(query, **search_kwargs(filter)))

    async def asearch(query: str, filter: Any = None) -> Any:
        if isinstance(target, AdaptedRetriever) and artifact == "documents":
            returned = await target.ainvoke_returned(query, **search_kwargs(filter))
            return finish(query, *returned)
        return finish(query, await target.ainvoke(query, **search_kwargs(filter)))

    tool_kwargs.setdefault("handle_tool_error", True)
    return StructuredTool(
        name=name,
        description=description,
        func=search,
        coroutine=asearch,
        args_schema=schema,
        response_format=response_format,
        **tool_kwargs,
    )


def _check_artifact(artifact: object, retriever: Any, min_score: object, expand: object) -> None:
    if artifact not in ("hits", "documents"):
        msg = f"artifact must be 'hits' or 'documents', got {artifact!r}"
        raise ConfigError(msg)
    if artifact != "documents":
        return
    if isinstance(retriever, BaseRetriever):
        _refuse_hits(retriever)
    for name, value in (("min_score", min_score), ("expand", expand)):
        if value is not None:
            msg = (
                f"artifact='documents' hands on the retriever's documents as they are, so "
                f"{name} cannot change them; drop {name}= or use artifact='hits'"
            )
            raise ConfigError(msg)


def _documents(returned: list[Any], retriever: Any) -> list[Any]:
    """What the retriever returned, as the ``"documents"`` artifact (hits refused)."""
    if any(isinstance(item, Hit) for item in returned):
        _refuse_hits(retriever)
    return returned


def _refuse_hits(retriever: Any) -> None:
    msg = (
        f"artifact='documents' hands on a LangChain retriever's Documents, but "
        f"{type(retriever).__name__} returns hits; pass to_langchain_retriever(retriever) "
        "(ragtools.retrieval.integrations), or artifact='hits'"
    )
    raise ConfigError(msg)


def _searched(
    retriever: Any, min_score: MinScore | None, expansion: Expansion | None
) -> BaseRetriever:
    """The retriever the tool searches: ``retriever`` with the tool's ``min_score`` and
    ``expand`` on its own query path, so they run once per call (see the module docstring).

    Raises:
        ConfigError: an option set on both the retriever and the tool.
    """
    for name, value in (("expand", expansion), ("min_score", min_score)):
        if value is not None and getattr(retriever, name, None) is not None:
            msg = f"{name} is set on both the retriever and the tool; set it on one of them"
            raise ConfigError(msg)
    if not isinstance(retriever, BaseRetriever):
        return AdaptedRetriever(retriever, min_score=min_score, expand=expansion)
    if min_score is None and expansion is None:
        return retriever
    return retriever.with_options(min_score=min_score, expand=expansion)


def _shown_source(source: str) -> str:
    """The source as a model may read it: relative as stored, else the file name only."""
    if PurePosixPath(source).is_absolute() or PureWindowsPath(source).is_absolute():
        return PureWindowsPath(source).name
    return source


def _page_text(metadata: dict[str, Any]) -> str:
    start = metadata.get("page_start", metadata.get("page"))
    end = metadata.get("page_end", start)
    if start is None or start == "":
        return ""
    return f"page {start}" if end in (None, start) else f"pages {start}-{end}"


def _check_arguments(
    retriever: Any, document_prompt: str | None, max_content_chars: int | None, k: int | None
) -> None:
    if not callable(getattr(retriever, "invoke", None)):
        msg = f"retriever must have invoke(query, *, k=None) -> list[Hit], got {retriever!r}"
        raise ConfigError(msg)
    if max_content_chars is not None and max_content_chars < 1:
        msg = f"max_content_chars must be >= 1 or None, got {max_content_chars}"
        raise ConfigError(msg)
    if k is not None and k < 1:
        msg = f"k must be >= 1 or None, got {k}"
        raise ConfigError(msg)
    if document_prompt is not None:
        try:
            parsed = list(string.Formatter().parse(document_prompt))
        except ValueError as exc:
            msg = f"document_prompt {document_prompt!r} is not a valid str.format template: {exc}"
            raise ConfigError(msg) from exc
        fields = [field for _, field, _, _ in parsed if field is not None]
        if any(not f or f.split(".")[0].split("[")[0].isdigit() for f in fields):
            msg = (
                f"document_prompt {document_prompt!r} has a positional field ('{{}}' or "
                "'{0}'); name the fields, e.g. '{source}: {text}'"
            )
            raise ConfigError(msg)
