"""The retriever protocol shared by keyword, vector, hybrid and custom retrievers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from retrieval.hit import Hit

__all__ = ["Filter", "Retriever"]

Filter = Mapping[str, Any]
"""A metadata filter, e.g. ``{"source": "a.pdf", "page": {"$gte": 3}}``."""


@runtime_checkable
class Retriever(Protocol):
    """Anything that turns a query into ranked :class:`Hit` objects."""

    def invoke(
        self, query: str, *, k: int | None = None, filter: Filter | None = None
    ) -> list[Hit]:
        """Return at most ``k`` hits, best first (``hit.rank`` 1, 2, ...)."""
        ...

    async def ainvoke(
        self, query: str, *, k: int | None = None, filter: Filter | None = None
    ) -> list[Hit]:
        """Like :meth:`invoke`, with the CPU work off the event loop."""
        ...

    def batch(
        self, queries: Sequence[str], *, k: int | None = None, filter: Filter | None = None
    ) -> list[list[Hit]]:
        """One result list per query, aligned with ``queries``."""
        ...
