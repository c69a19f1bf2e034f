"""Our retrievers as LlamaIndex retrievers: ``to_llamaindex_retriever(retriever)``.

The adapter is a real ``llama_index.core.retrievers.BaseRetriever`` (``llama-index-core`` is
imported when it is first made; install ``ragtools[llamaindex]``), so query engines
(``RetrieverQueryEngine``), node postprocessors, routers and fusion retrievers take it as they
take LlamaIndex's own, with its instrumentation events around each search.

Each hit becomes ``NodeWithScore(node=TextNode(...), score=hit.score)``: the node's id is the
chunk id, its text the chunk (or expanded passage) text, ``start_char_idx``/``end_char_idx``
its offsets in the document, ``ref_doc_id`` the document id, and its metadata the chunk's own
plus ``chunk_id``, ``doc_id``, ``start``, ``end``, ``score``, ``rank``, ``stage``, ``scores``
and, for an expanded passage, ``parts`` (see
:func:`~retrieval.integrations._hits.hit_metadata`).

What the LLM and the embedders read is LlamaIndex's own choice of metadata
(``get_content(MetadataMode.LLM)``, which a query engine's prompt uses): the keys we add and
the file's ``path`` (absolute, on the build machine), ``mtime`` and ``size`` are listed in
``excluded_llm_metadata_keys`` and ``excluded_embed_metadata_keys``, so a prompt shows the
source, page and headings, never a directory of the build machine or score dictionaries.
The metadata itself keeps them for the application. ``show_metadata=["mtime"]`` lets the
named file keys through to the LLM (and embedders).

``k`` and ``filter`` are bound when the adapter is made; ``aretrieve`` calls our
``ainvoke``. ``filter`` is our filter language (:mod:`retrieval.filters`) or LlamaIndex's
own ``MetadataFilters``, translated by :func:`llamaindex_filter`:

==========================  ==========================================================
LlamaIndex                  ours
==========================  ==========================================================
``EQ NE GT GTE LT LTE``     ``$eq $ne $gt $gte $lt $lte``
``IN NIN``                  ``$in $nin``
``ANY`` / ``ALL``           ``$in`` / one ``$eq`` per value, joined by ``$and`` (a list
                            field matches when an element does)
``CONTAINS``                ``$contains`` for a string (substring, or a list element),
                            ``$eq`` for a number (a list element)
``TEXT_MATCH``              ``$contains`` (case-sensitive substring)
``IS_EMPTY``                missing, null, ``""`` or ``[]``
``AND`` / ``OR`` / ``NOT``  ``$and`` / ``$or`` / ``$not`` of ``$or`` (none of them, as
                            LlamaIndex reads ``NOT``); nested ``MetadataFilters`` nest
==========================  ==========================================================

``TEXT_MATCH_INSENSITIVE`` has no counterpart (our text operators are case-sensitive) and
raises :class:`~parsers.errors.ConfigError` naming it, rather than filtering differently.
Missing fields follow our language, which agrees with LlamaIndex's simple vector store:
they fail every comparison but ``NE`` and ``NIN``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragtools.parsers.errors import ConfigError
from ragtools.parsers.optional import require
from ragtools.retrieval.bound_filter import check_bound_filter
from ragtools.retrieval.filters import SYMBOL_OPERATORS
from ragtools.retrieval.hit import HIT_KEYS, Hit
from ragtools.retrieval.integrations._hits import (
    check_wrapped,
    hidden_file_keys,
    hit_metadata,
)

if TYPE_CHECKING:
    from llama_index.core.retrievers import BaseRetriever as LlamaIndexRetriever
    from llama_index.core.schema import NodeWithScore

__all__ = ["hit_to_node", "llamaindex_filter", "to_llamaindex_retriever"]

_COMPARISONS = {**SYMBOL_OPERATORS, "nin": "$nin"}
_LIST_OPERATORS = ("in", "nin", "any", "all")


def hit_to_node(hit: Hit, *, show_metadata: Sequence[str] = ()) -> NodeWithScore:
    """One hit as a LlamaIndex ``NodeWithScore`` (see the module docstring).

    Args:
        hit: the hit.
        show_metadata: file keys (``path``, ``mtime``, ``size``) the LLM may read.

    Raises:
        ConfigError: ``show_metadata`` names another key.
    """
    schema = require("llama_index.core.schema", "llamaindex")
    excluded = [*HIT_KEYS, *hidden_file_keys(show_metadata)]
    node = schema.TextNode(
        id_=hit.chunk.id,
        text=hit.chunk.text,
        metadata=hit_metadata(hit),
        start_char_idx=hit.chunk.start,
        end_char_idx=hit.chunk.end,
        excluded_llm_metadata_keys=excluded,
        excluded_embed_metadata_keys=list(excluded),
    )
    node.relationships[schema.NodeRelationship.SOURCE] = schema.RelatedNodeInfo(
        node_id=hit.chunk.doc_id
    )
    result: NodeWithScore = schema.NodeWithScore(node=node, score=hit.score)
    return result


def llamaindex_filter(filters: Any) -> dict[str, Any] | None:
    """LlamaIndex ``MetadataFilters`` translated into our filter language (see the module
    docstring); ``None`` or no filters give ``None`` (everything matches).

    Raises:
        ConfigError: an operator we cannot express (``TEXT_MATCH_INSENSITIVE``), a list
            operator without a list, an empty nested ``MetadataFilters``, or something that
            is not a LlamaIndex filter; the message names the place, e.g. ``filters[1]``.
    """
    if filters is None:
        return None
    types = require("llama_index.core.vector_stores.types", "llamaindex")
    if not isinstance(filters, types.MetadataFilters):
        msg = f"expected llama_index MetadataFilters, got {type(filters).__name__}"
        raise ConfigError(msg)
    if not filters.filters:
        return None
    return _translate_group(filters, "filters", types)


def _translate_group(group: Any, where: str, types: Any) -> dict[str, Any]:
    if not group.filters:
        msg = f"invalid MetadataFilters at {where}: a nested MetadataFilters has no filters"
        raise ConfigError(msg)
    parts = []
    for i, item in enumerate(group.filters):
        here = f"{where}[{i}]"
        if isinstance(item, types.MetadataFilters):
            parts.append(_translate_group(item, here, types))
        elif isinstance(item, types.MetadataFilter):
            parts.append(_translate_one(item.key, _operator(item.operator), item.value, here))
        elif isinstance(item, types.ExactMatchFilter):
            parts.append(_translate_one(item.key, "==", item.value, here))
        else:
            msg = f"invalid MetadataFilters at {here}: unexpected {type(item).__name__}"
            raise ConfigError(msg)
    condition = _operator(group.condition or "and")
    if condition == "not":
        return {"$not": {"$or": parts}}
    if condition not in ("and", "or"):
        msg = f"invalid MetadataFilters at {where}: unknown condition {condition!r}"
        raise ConfigError(msg)
    return parts[0] if len(parts) == 1 else {f"${condition}": parts}


def _operator(value: Any) -> str:
    """An operator or condition enum's value (``FilterOperator.EQ`` is ``"=="``)."""
    return str(getattr(value, "value", value))


def _translate_one(key: str, operator: str, value: Any, where: str) -> dict[str, Any]:
    if operator in _LIST_OPERATORS and not isinstance(value, list):
        msg = (
            f"invalid MetadataFilters at {where}: {operator.upper()} on {key!r} takes a list "
            f"of values, got {value!r}"
        )
        raise ConfigError(msg)
    if operator in _COMPARISONS:
        return {key: {_COMPARISONS[operator]: value}}
    if operator == "any":
        return {key: {"$in": value}}
    if operator == "all":
        if not value:
            msg = f"invalid MetadataFilters at {where}: ALL on {key!r} needs at least one value"
            raise ConfigError(msg)
        clauses = [{key: {"$eq": item}} for item in value]
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}
    if operator in ("contains", "text_match"):
        if isinstance(value, str):
            return {key: {"$contains": value}}
        if operator == "contains" and isinstance(value, (int, float)):
            return {key: {"$eq": value}}
        msg = (
            f"invalid MetadataFilters at {where}: {operator.upper()} on {key!r} takes a "
            f"string, got {value!r}"
        )
        raise ConfigError(msg)
    if operator == "is_empty":
        return {"$or": [{key: None}, {key: ""}, {key: {"$eq": []}}]}
    msg = (
        f"MetadataFilters at {where}: operator {operator.upper()} on {key!r} cannot be "
        "expressed in ragtools' filter language (its text operators are case-sensitive); "
        "use TEXT_MATCH, or filter the nodes after retrieval"
    )
    raise ConfigError(msg)


def to_llamaindex_retriever(
    retriever: Any,
    *,
    k: int | None = None,
    filter: Mapping[str, Any] | Any | None = None,
    show_metadata: Sequence[str] = (),
) -> LlamaIndexRetriever:
    """Wrap one of our retrievers (anything with ``invoke(query, *, k, filter)``) as a
    LlamaIndex ``BaseRetriever``.

    Args:
        retriever: the retriever.
        k: hits per search (default: the retriever's ``k``).
        filter: applied to every search: our filter (``{"page": {"$gte": 3}}``) or a
            LlamaIndex ``MetadataFilters``.
        show_metadata: file keys (``path``, ``mtime``, ``size``) the LLM may read; by
            default none of them (see the module docstring).

    Raises:
        ConfigError: ``retriever`` has no ``invoke``, or ``k``, ``filter`` or
            ``show_metadata`` is invalid (an untranslatable ``MetadataFilters`` operator
            is named).
        MissingDependencyError: ``llama-index-core`` is not installed.
    """
    check_wrapped(retriever, k)
    shown = tuple(show_metadata) if not isinstance(show_metadata, str) else show_metadata
    hidden_file_keys(shown)  # a bad key fails now, not at the first search
    require("llama_index.core.retrievers", "llamaindex")  # also when the class is already made
    options: dict[str, Any] = {} if k is None else {"k": k}
    if filter is not None:
        ours = filter if isinstance(filter, Mapping) else llamaindex_filter(filter)
        if ours is not None:
            options["filter"] = check_bound_filter(ours)
    adapted: LlamaIndexRetriever = _adapter_class()(retriever, options, shown)
    return adapted


@functools.cache
def _adapter_class() -> type:
    """The ``BaseRetriever`` subclass, made once LlamaIndex is imported."""
    retrievers = require("llama_index.core.retrievers", "llamaindex")

    class RagtoolsRetriever(retrievers.BaseRetriever):  # type: ignore[misc,name-defined]
        """One of ragtools' retrievers, searched through LlamaIndex."""

        def __init__(
            self, retriever: Any, options: dict[str, Any], show_metadata: Sequence[str]
        ) -> None:
            super().__init__()
            self.retriever = retriever
            self.options = options
            self.show_metadata = tuple(show_metadata)

        def _nodes(self, hits: Sequence[Hit]) -> list[NodeWithScore]:
            return [hit_to_node(hit, show_metadata=self.show_metadata) for hit in hits]

        def _retrieve(self, query_bundle: Any) -> list[NodeWithScore]:
            return self._nodes(self.retriever.invoke(query_bundle.query_str, **self.options))

        async def _aretrieve(self, query_bundle: Any) -> list[NodeWithScore]:
            if not hasattr(self.retriever, "ainvoke"):
                return self._retrieve(query_bundle)
            hits = await self.retriever.ainvoke(query_bundle.query_str, **self.options)
            return self._nodes(hits)

    return RagtoolsRetriever
