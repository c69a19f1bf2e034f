"""Our retrievers as LangChain retrievers: ``to_langchain_retriever(retriever)``.

The adapter is a real ``langchain_core.retrievers.BaseRetriever`` (``langchain-core`` is
imported when it is first made; install ``ragtools[langchain]``), so it is a ``Runnable``: it
works in LCEL chains (``retriever | format_docs``), in ``EnsembleRetriever`` and wherever
LangChain takes a retriever, with LangChain's callbacks and tracing around each search.

Each hit becomes ``Document(page_content=chunk text, metadata=..., id=chunk id)``; the
metadata is the chunk's own plus ``chunk_id``, ``doc_id``, ``start``, ``end``, ``score``,
``rank``, ``stage`` and ``scores`` (every stage's score) and, for an expanded passage,
``parts`` (the original hits' ids, offsets and scores): see
:func:`~retrieval.integrations._hits.hit_metadata`.

``k`` and ``filter`` given to :func:`to_langchain_retriever` are used on every search;
``invoke(query, k=..., filter=...)`` may pass others per call (LangChain hands extra keyword
arguments to the retriever), and a per-call filter is joined with the bound one by ``$and``,
never replacing it. ``ainvoke`` calls our ``ainvoke``, which keeps the event loop free.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ragtools.parsers.optional import require
from ragtools.retrieval.bound_filter import check_bound_filter, combine_filters
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.integrations._hits import check_wrapped, hit_metadata

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever as LangChainRetriever

__all__ = ["hit_to_document", "to_langchain_retriever"]


def hit_to_document(hit: Hit) -> Document:
    """One hit as a LangChain ``Document`` (see the module docstring)."""
    documents = require("langchain_core.documents", "langchain")
    document: Document = documents.Document(
        page_content=hit.chunk.text, metadata=hit_metadata(hit), id=hit.chunk.id
    )
    return document


def to_langchain_retriever(
    retriever: Any, *, k: int | None = None, filter: Mapping[str, Any] | None = None
) -> LangChainRetriever:
    """Wrap one of our retrievers (anything with ``invoke(query, *, k, filter)``) as a
    LangChain ``BaseRetriever``.

    Raises:
        ConfigError: ``retriever`` has no ``invoke``, or ``k`` / ``filter`` is invalid.
        MissingDependencyError: ``langchain-core`` is not installed.
    """
    check_wrapped(retriever, k)
    require("langchain_core.retrievers", "langchain")  # also when the class is already made
    adapted: LangChainRetriever = _adapter_class()(
        retriever=retriever, k=k, filter=check_bound_filter(filter)
    )
    return adapted


@functools.cache
def _adapter_class() -> type:
    """The ``BaseRetriever`` subclass, made once LangChain is imported."""
    retrievers = require("langchain_core.retrievers", "langchain")

    class RagtoolsRetriever(retrievers.BaseRetriever):  # type: ignore[misc,name-defined]
        """One of ragtools' retrievers, searched through LangChain."""

        retriever: Any
        k: int | None = None
        filter: dict[str, Any] | None = None

        def _options(self, k: int | None, filter: Mapping[str, Any] | None) -> dict[str, Any]:
            options: dict[str, Any] = {}
            if k is not None or self.k is not None:
                options["k"] = k if k is not None else self.k
            chosen = combine_filters(self.filter, filter)
            if chosen is not None:
                options["filter"] = chosen
            return options

        def _get_relevant_documents(
            self,
            query: str,
            *,
            run_manager: Any,  # LangChain's CallbackManagerForRetrieverRun
            k: int | None = None,
            filter: Mapping[str, Any] | None = None,
        ) -> list[Document]:
            hits = self.retriever.invoke(query, **self._options(k, filter))
            return [hit_to_document(hit) for hit in hits]

        async def _aget_relevant_documents(
            self,
            query: str,
            *,
            run_manager: Any,  # LangChain's AsyncCallbackManagerForRetrieverRun
            k: int | None = None,
            filter: Mapping[str, Any] | None = None,
        ) -> list[Document]:
            options = self._options(k, filter)
            if hasattr(self.retriever, "ainvoke"):
                hits = await self.retriever.ainvoke(query, **options)
            else:
                hits = await run_in_executor(None, self.retriever.invoke, query, **options)
            return [hit_to_document(hit) for hit in hits]

    run_in_executor = require("langchain_core.runnables.config", "langchain").run_in_executor
    return RagtoolsRetriever
