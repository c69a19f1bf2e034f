"""Retriever names: one set for ``rag search --mode`` and ``rag eval --retrievers``.

``keyword`` (BM25), ``vector`` and ``hybrid`` name the three retrievers everywhere; ``rag
eval`` also knows ``hybrid_rrf`` (plain reciprocal rank fusion, equal weights) and
``front_page``. Older names stay accepted as aliases: ``bm25`` for ``keyword`` (what ``rag
eval`` and its reports called it before), ``dense`` for ``vector``.
"""

from __future__ import annotations

__all__ = ["RETRIEVER_ALIASES", "RETRIEVER_NAMES", "SEARCH_MODES", "canonical_retriever"]

SEARCH_MODES: tuple[str, ...] = ("keyword", "vector", "hybrid")
"""What ``rag search --mode`` offers."""

RETRIEVER_NAMES: tuple[str, ...] = (*SEARCH_MODES, "hybrid_rrf", "front_page")
"""What ``rag eval --retrievers`` offers."""

RETRIEVER_ALIASES: dict[str, str] = {"bm25": "keyword", "dense": "vector"}


def canonical_retriever(name: str) -> str:
    """The canonical retriever name for ``name`` (an alias or, unchanged, anything else:
    callers check membership, so an unknown name is reported with the valid choices)."""
    cleaned = name.strip()
    return RETRIEVER_ALIASES.get(cleaned.lower(), cleaned)
