"""The retriever protocol shared by keyword, vector, hybrid and custom retrievers."""

from __future__ import annotations

import asyncio
import copy
import functools
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Self, runtime_checkable

import numpy as np
import numpy.typing as npt

from ragtools.indexes.index import Index, IndexState
from ragtools.indexes.ranking import Ranking, check_k
from ragtools.parsers.document import Chunk
from ragtools.retrieval.expand import (
    ExpandMode,
    Expansion,
    expand_hits,
    expansion_of,
    index_states,
)
from ragtools.retrieval.filters import BoolArray, check_depth, filter_mask
from ragtools.retrieval.hit import Hit, ranked_hits, top_by_key
from ragtools.retrieval.query_text import query_text
from ragtools.retrieval.source_paths import resolve_source_paths
from ragtools.retrieval.threshold import MinScore, apply_min_score, check_min_score

__all__ = [
    "BaseRetriever",
    "Filter",
    "IndexRetriever",
    "QueryFilter",
    "RankedChunks",
    "Ranker",
    "Retriever",
]

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


class BaseRetriever(ABC):
    """Shared machinery: ``k`` defaults and validation, thresholds and expansion,
    ``ainvoke`` and ``batch``.

    Subclasses implement :meth:`_retrieve`; everything else follows from it. :meth:`invoke`
    is the one path of a query: ``_retrieve`` ranks (and a hybrid fuses and reranks), then
    :meth:`finish` applies ``min_score`` and expands, once. A retriever tool hands its own
    ``min_score=``/``expand=`` to this path (:meth:`with_options`) rather than applying
    them again to what comes out of it.

    Args:
        k: default number of hits.
        expand: grow hits into passages (``"neighbors"``, ``"section"``, ``"document"``, an
            :class:`~retrieval.expand.Expansion` or a mapping of its fields), after the
            threshold; see :mod:`retrieval.expand`.
        min_score: drop hits under a score (``hit.score``) or under stage scores
            (``{"vector": 0.3}``) before expansion; fewer than ``k`` hits may come back.
    """

    def __init__(
        self,
        *,
        k: int = 10,
        expand: ExpandMode | Expansion | Mapping[str, Any] | None = None,
        min_score: MinScore | None = None,
    ) -> None:
        self.k = check_k(k)
        self.expand = expansion_of(expand)
        self.min_score = check_min_score(min_score)

    def with_options(
        self,
        *,
        k: int | None = None,
        expand: ExpandMode | Expansion | Mapping[str, Any] | None = None,
        min_score: MinScore | None = None,
    ) -> Self:
        """A copy of this retriever with the options given (``None``: keep this one's).

        The copy shares everything else (index, retrievers, reranker, thread pool), as
        LangChain's ``Runnable.bind`` shares its runnable.

        Raises:
            ConfigError: an invalid option.
        """
        bound = copy.copy(self)
        if k is not None:
            bound.k = check_k(k)
        if expand is not None:
            bound.expand = expansion_of(expand)
        if min_score is not None:
            bound.min_score = check_min_score(min_score)
        return bound

    @abstractmethod
    def _retrieve(self, query: str, k: int, filter: Filter | None) -> list[Hit]:
        """Return at most ``k`` hits for ``query``, ranked from 1."""

    def invoke(
        self, query: str, *, k: int | None = None, filter: Filter | None = None
    ) -> list[Hit]:
        """Return at most ``k`` hits (default ``self.k``), best first.

        The query is checked and its lone surrogates replaced first
        (:func:`~retrieval.query_text.query_text`).

        Raises:
            ConfigError: ``query`` is not a string or longer than
                :data:`~retrieval.query_text.LONGEST_QUERY` characters, or ``k`` is not a
                positive integer.
        """
        query = query_text(query)
        return self.finish(self._retrieve(query, self.k if k is None else check_k(k), filter))

    def finish(self, hits: list[Hit]) -> list[Hit]:
        """Apply ``min_score``, then expand: the last steps of :meth:`invoke`, run once."""
        if self.min_score is not None:
            hits = apply_min_score(hits, self.min_score)
        if self.expand is not None and hits:
            hits = expand_hits(hits, self.expand, self.index_states())
        return hits

    def index_states(self) -> list[IndexState]:
        """The index states this retriever reads, which expansion cuts passages from."""
        return index_states(self)

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


class QueryFilter:
    """One query's filter, compiled to a row mask once per index version it meets.

    A hybrid hands one ``QueryFilter`` to all its retrievers, so those over the same index
    share a single mask instead of each evaluating the filter over every chunk. ``source``
    paths typed relative to the working directory or absolute are first put in the index's
    stored form (:mod:`retrieval.source_paths`).
    """

    def __init__(self, spec: Filter | None) -> None:
        check_depth(spec)  # before resolve_source_paths, which recurses, sees it
        self.spec = spec
        self._masks: dict[int, tuple[IndexState, BoolArray | None]] = {}
        self._lock = threading.Lock()

    @classmethod
    def of(cls, filter: Filter | QueryFilter | None) -> QueryFilter:
        """``filter`` itself if it is one already, else one for it (without a filter, the
        one shared :data:`NO_FILTER`: a query without one builds nothing)."""
        if isinstance(filter, QueryFilter):
            return filter
        return NO_FILTER if filter is None else cls(filter)

    def mask(self, state: IndexState) -> BoolArray | None:
        """The rows of ``state`` that match (``None``: no filter, every row)."""
        if not self.spec:
            return None
        with self._lock:  # the retrievers of a hybrid ask from several threads at once
            held = self._masks.get(id(state))
            if held is None or held[0] is not state:
                spec = resolve_source_paths(self.spec, state.manifest.get("source_root"))
                held = (state, filter_mask(spec, state.chunks))
                self._masks[id(state)] = held
            return held[1]


NO_FILTER = QueryFilter(None)
"""The filter of a query without one: every row, no mask (stateless, so shared)."""


@dataclass(frozen=True)
class RankedChunks:
    """A :class:`~indexes.ranking.Ranking` with the chunks its rows index into, its rows in
    hit order (score descending, then chunk key ascending: :mod:`retrieval.hit`).

    ``keys[row]`` is a 64-bit key of ``chunks[row].id`` (the same for the same id in any
    index), so rankings of several retrievers fuse by chunk id over integer arrays.
    """

    ranking: Ranking
    chunks: Sequence[Chunk]
    keys: npt.NDArray[np.int64]
    stage: str

    def hits(self, k: int | None = None) -> list[Hit]:
        """The first ``k`` rows as ranked hits tagged with this ranking's stage."""
        ranking = self.ranking if k is None else self.ranking.head(k)
        chunks = self.chunks
        return ranked_hits(
            [chunks[row] for row in ranking.rows.tolist()], ranking.scores.tolist(), self.stage
        )


@runtime_checkable
class Ranker(Protocol):
    """What :class:`~retrieval.hybrid.HybridRetriever` needs of each of its retrievers."""

    stage: str
    """The key of this retriever's score in ``hit.scores``."""

    def rank(self, query: str, k: int, filter: Filter | QueryFilter | None) -> RankedChunks:
        """The top ``k`` chunks matching ``filter`` in hit order, with the chunks of the
        rows (the ``k`` first by the rule of :mod:`retrieval.hit`, ties at the cut too)."""
        ...


class IndexRetriever(BaseRetriever):
    """A retriever that ranks the rows of one :class:`indexes.Index`, then makes hits.

    Splitting "rank rows" from "make hits" lets a hybrid fuse plain rankings and build hits
    only for the ``k`` it returns, not for every candidate (a thousand per retriever).
    Subclasses implement :meth:`rank_state`.
    """

    stage: str
    """The key of this retriever's score in ``hit.scores``."""

    def __init__(self, index: Index, *, k: int = 10, **options: Any) -> None:
        super().__init__(k=k, **options)
        self.index = index

    @classmethod
    def from_index(cls, index: Index, *, k: int = 10, **options: Any) -> Self:
        """The retriever over ``index`` returning ``k`` hits by default; ``options`` are
        the constructor's (``expand=``, ``min_score=``, ...)."""
        return cls(index, k=k, **options)

    def rank(self, query: str, k: int, filter: Filter | QueryFilter | None) -> RankedChunks:
        """Rank one state of the index: rows, scores and chunks all of one version, in hit
        order (:func:`~retrieval.hit.top_by_key` over :meth:`rank_state`)."""
        state = self.index.state
        allow = QueryFilter.of(filter).mask(state)
        keys = state.chunk_keys
        ranking = top_by_key(self.ranker(state, query, allow), k, keys)
        return RankedChunks(ranking, state.chunks, keys, self.stage)

    def ranker(
        self, state: IndexState, query: str, allow: BoolArray | None
    ) -> Callable[[int], Ranking]:
        """``depth`` → the top ``depth`` rows of ``state`` for one query: :meth:`rank_state`,
        unless a subclass prepares the query once first (e.g. query expansion), since
        :meth:`rank` may ask for several depths."""
        return lambda depth: self.rank_state(state, query, depth, allow)

    @abstractmethod
    def rank_state(self, state: IndexState, query: str, k: int, allow: BoolArray | None) -> Ranking:
        """The top ``k`` rows of ``state`` allowed by the mask, best first by score (ties
        in any order: :meth:`rank` puts them in hit order)."""

    def _retrieve(self, query: str, k: int, filter: Filter | None) -> list[Hit]:
        return self.rank(query, k, filter).hits()
