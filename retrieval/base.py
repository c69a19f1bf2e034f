"""The retriever protocol shared by keyword, vector, hybrid and custom retrievers."""

from __future__ import annotations

import asyncio
import functools
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ragtools.indexes.bundle import Index
from ragtools.parsers.document import Chunk
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.filters import BoolArray, filter_mask
from ragtools.retrieval.hit import Hit

__all__ = ["BaseRetriever", "Filter", "Retriever", "RowRetriever", "RowRun", "hits_from_rows"]

Filter = Mapping[str, Any]
"""A metadata filter, e.g. ``{"source": "a.pdf", "page": {"$gte": 3}}``."""
RowRun = tuple[npt.NDArray[np.int64], npt.NDArray[np.floating[Any]]]
"""Rows of one index and their scores, best first."""


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


class BaseRetriever(ABC):
    """Shared machinery: ``k`` defaults and validation, ``ainvoke`` and ``batch``.

    Subclasses implement :meth:`_retrieve`; everything else follows from it.
    """

    def __init__(self, *, k: int = 10) -> None:
        self.k = _check_k(k, "k")

    @abstractmethod
    def _retrieve(self, query: str, k: int, filter: Filter | None) -> list[Hit]:
        """Return at most ``k`` hits for ``query``, ranked from 1."""

    def invoke(
        self, query: str, *, k: int | None = None, filter: Filter | None = None
    ) -> list[Hit]:
        """Return at most ``k`` hits (default ``self.k``), best first.

        Raises:
            ConfigError: ``query`` is not a string or ``k`` is not a positive integer.
        """
        if not isinstance(query, str):
            msg = f"query must be a string, got {type(query).__name__}"
            raise ConfigError(msg)
        return self._retrieve(query, self.k if k is None else _check_k(k, "k"), filter)

    async def ainvoke(
        self, query: str, *, k: int | None = None, filter: Filter | None = None
    ) -> list[Hit]:
        """Like :meth:`invoke`, run in a worker thread so the event loop keeps running."""
        return await asyncio.to_thread(functools.partial(self.invoke, query, k=k, filter=filter))

    def batch(
        self, queries: Sequence[str], *, k: int | None = None, filter: Filter | None = None
    ) -> list[list[Hit]]:
        """One result list per query, aligned with ``queries``."""
        return [self.invoke(query, k=k, filter=filter) for query in queries]


class RowRetriever(BaseRetriever):
    """A retriever that ranks the rows of one :class:`indexes.Index`, then wraps them as hits.

    Splitting "rank rows" from "make hits" lets a hybrid over one index fuse plain
    ``(row, score)`` runs and build hits only for the ``k`` it returns, not for every
    candidate (a thousand per retriever by default).
    """

    stage: str
    """The key of this retriever's score in ``hit.scores``."""

    def __init__(self, index: Index, *, k: int = 10) -> None:
        super().__init__(k=k)
        self.index = index

    def search_rows(self, query: str, k: int, filter: Filter | None) -> RowRun:
        """The top ``k`` rows of the index matching ``filter``, best first."""
        return self.rank_rows(query, k, self.allowed_rows(filter))

    def allowed_rows(self, filter: Filter | None) -> BoolArray | None:
        """The filter compiled to a mask over the index's rows (``None``: every row)."""
        return filter_mask(filter, self.index.chunks) if filter else None

    @abstractmethod
    def rank_rows(self, query: str, k: int, allow: BoolArray | None) -> RowRun:
        """The top ``k`` rows allowed by the mask as ``(rows, scores)`` arrays, best first.

        A hybrid over one index compiles its filter once and passes the mask to each half.
        """

    def hits(self, run: RowRun) -> list[Hit]:
        """A run of this retriever's rows as ranked hits tagged with its stage."""
        rows, scores = run
        pairs = list(zip(rows.tolist(), scores.tolist(), strict=True))
        return hits_from_rows(self.index.chunks, pairs, self.stage)

    def _retrieve(self, query: str, k: int, filter: Filter | None) -> list[Hit]:
        return self.hits(self.search_rows(query, k, filter))


def _check_k(k: object, name: str) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        msg = f"{name} must be a positive integer, got {k!r}"
        raise ConfigError(msg)
    return k


def hits_from_rows(
    chunks: Sequence[Chunk], pairs: Sequence[tuple[int, float]], stage: str
) -> list[Hit]:
    """Turn ``(row, score)`` pairs (best first) into ranked hits tagged with ``stage``.

    The values are already valid (chunks from the store, float scores, ranks from 1), so the
    hits are built without re-validation: a hybrid query builds thousands of candidates.
    """
    return [
        Hit.model_construct(
            chunk=chunks[row], score=float(score), rank=rank, scores={stage: float(score)}
        )
        for rank, (row, score) in enumerate(pairs, start=1)
    ]
