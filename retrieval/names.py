"""Retrievers by name: one set of names and one factory, :func:`retriever_for`.

``rag search --mode``, ``rag eval --retrievers``, ``rag serve`` (MCP), the Qwen-Agent tools,
pipeline settings (:mod:`retrieval.retriever_config`) and the benchmarks all turn a name into
a retriever through :func:`retriever_for`, so a name means the same retriever everywhere:

* ``keyword`` (BM25, :class:`~retrieval.keyword.KeywordRetriever`);
* ``vector`` (:class:`~retrieval.vector.VectorRetriever`);
* ``hybrid``: :meth:`HybridRetriever.from_index <retrieval.hybrid.HybridRetriever.from_index>`,
  the tuned fusion of both halves, or the one half an index has;
* ``hybrid_rrf``: the same with plain reciprocal rank fusion and equal weights;
* ``front_page`` (:class:`~retrieval.frontpage.FrontPageRetriever`).

``rag search --mode`` offers the first three (:data:`SEARCH_MODES`); ``rag eval`` all of
them (:data:`RETRIEVER_NAMES`). Older names stay accepted as aliases: ``bm25`` for
``keyword`` (what ``rag eval`` and its reports called it before), ``dense`` for ``vector``.
"""

from __future__ import annotations

from typing import Any

from ragtools.indexes.index import Index
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.base import BaseRetriever
from ragtools.retrieval.frontpage import FrontPageRetriever
from ragtools.retrieval.hybrid import HybridRetriever
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.vector import VectorRetriever

__all__ = [
    "RETRIEVER_ALIASES",
    "RETRIEVER_NAMES",
    "SEARCH_MODES",
    "canonical_retriever",
    "retriever_for",
]

SEARCH_MODES: tuple[str, ...] = ("keyword", "vector", "hybrid")
"""What ``rag search --mode`` offers."""

RETRIEVER_NAMES: tuple[str, ...] = (*SEARCH_MODES, "hybrid_rrf", "front_page")
"""Every name :func:`retriever_for` knows (what ``rag eval --retrievers`` offers)."""

RETRIEVER_ALIASES: dict[str, str] = {"bm25": "keyword", "dense": "vector"}


def canonical_retriever(name: str) -> str:
    """The canonical retriever name for ``name`` (an alias or, unchanged, anything else:
    callers check membership, so an unknown name is reported with the valid choices)."""
    cleaned = name.strip()
    return RETRIEVER_ALIASES.get(cleaned.lower(), cleaned)


def retriever_for(index: Index, name: str, **options: Any) -> BaseRetriever:
    """The retriever called ``name`` (or an alias) over ``index``.

    Args:
        index: the index to search.
        name: one of :data:`RETRIEVER_NAMES` or :data:`RETRIEVER_ALIASES`.
        **options: the retriever's keyword arguments: ``k``, ``min_score``, ``expand`` for
            every one; ``weights``, ``fusion``, ``candidate_k``, ``reranker``, ... for the
            hybrids.

    Raises:
        ConfigError: an unknown name, listing the valid ones; or an invalid option.

    Example:
        >>> retriever_for(index, "bm25", k=5)  # doctest: +SKIP
        <ragtools.retrieval.keyword.KeywordRetriever object at ...>
    """
    canonical = canonical_retriever(name) if isinstance(name, str) else name
    if canonical == "keyword":
        return KeywordRetriever(index, **options)
    if canonical == "vector":
        return VectorRetriever(index, **options)
    if canonical == "hybrid":
        return HybridRetriever.from_index(index, **options)
    if canonical == "hybrid_rrf":
        return HybridRetriever.from_index(index, **{"fusion": "rrf", "weights": None, **options})
    if canonical == "front_page":
        return FrontPageRetriever(index, **options)
    aliases = ", ".join(f"{alias} = {target}" for alias, target in RETRIEVER_ALIASES.items())
    msg = f"unknown retriever {name!r}; choose one of {', '.join(RETRIEVER_NAMES)} ({aliases})"
    raise ConfigError(msg)
