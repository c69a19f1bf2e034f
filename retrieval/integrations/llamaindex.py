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
:func:`~retrieval.integrations._hits.hit_metadata`). The keys we add are excluded from what
the LLM and embedders read (``excluded_llm_metadata_keys``), so a prompt shows the source and
page, not score dictionaries.

``k`` and ``filter`` are bound when the adapter is made; ``aretrieve`` calls our
``ainvoke``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ragtools.parsers._optional import require
from ragtools.retrieval.bound_filter import check_bound_filter
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.integrations._hits import HIT_KEYS, check_wrapped, hit_metadata

if TYPE_CHECKING:
    from llama_index.core.retrievers import BaseRetriever as LlamaIndexRetriever
    from llama_index.core.schema import NodeWithScore

__all__ = ["hit_to_node", "to_llamaindex_retriever"]


def hit_to_node(hit: Hit) -> NodeWithScore:
    """One hit as a LlamaIndex ``NodeWithScore`` (see the module docstring)."""
    schema = require("llama_index.core.schema", "llamaindex")
    node = schema.TextNode(
        id_=hit.chunk.id,
        text=hit.chunk.text,
        metadata=hit_metadata(hit),
        start_char_idx=hit.chunk.start,
        end_char_idx=hit.chunk.end,
        excluded_llm_metadata_keys=list(HIT_KEYS),
        excluded_embed_metadata_keys=list(HIT_KEYS),
    )
    node.relationships[schema.NodeRelationship.SOURCE] = schema.RelatedNodeInfo(
        node_id=hit.chunk.doc_id
    )
    result: NodeWithScore = schema.NodeWithScore(node=node, score=hit.score)
    return result


def to_llamaindex_retriever(
    retriever: Any, *, k: int | None = None, filter: Mapping[str, Any] | None = None
) -> LlamaIndexRetriever:
    """Wrap one of our retrievers (anything with ``invoke(query, *, k, filter)``) as a
    LlamaIndex ``BaseRetriever``.

    Raises:
        ConfigError: ``retriever`` has no ``invoke``, or ``k`` / ``filter`` is invalid.
        MissingDependencyError: ``llama-index-core`` is not installed.
    """
    check_wrapped(retriever, k)
    options: dict[str, Any] = {} if k is None else {"k": k}
    if filter is not None:
        options["filter"] = check_bound_filter(filter)
    require("llama_index.core.retrievers", "llamaindex")  # also when the class is already made
    adapted: LlamaIndexRetriever = _adapter_class()(retriever, options)
    return adapted


@functools.cache
def _adapter_class() -> type:
    """The ``BaseRetriever`` subclass, made once LlamaIndex is imported."""
    retrievers = require("llama_index.core.retrievers", "llamaindex")

    class RagtoolsRetriever(retrievers.BaseRetriever):  # type: ignore[misc,name-defined]
        """One of ragtools' retrievers, searched through LlamaIndex."""

        def __init__(self, retriever: Any, options: dict[str, Any]) -> None:
            super().__init__()
            self.retriever = retriever
            self.options = options

        def _retrieve(self, query_bundle: Any) -> list[NodeWithScore]:
            hits = self.retriever.invoke(query_bundle.query_str, **self.options)
            return [hit_to_node(hit) for hit in hits]

        async def _aretrieve(self, query_bundle: Any) -> list[NodeWithScore]:
            if not hasattr(self.retriever, "ainvoke"):
                return self._retrieve(query_bundle)
            hits = await self.retriever.ainvoke(query_bundle.query_str, **self.options)
            return [hit_to_node(hit) for hit in hits]

    return RagtoolsRetriever
