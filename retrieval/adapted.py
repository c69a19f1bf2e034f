"""Another framework's retriever on this package's one query path.

:func:`~retrieval.tools.retriever_tool.create_retriever_tool` takes any retriever, as
LangChain's does: one of ours, anything with ``invoke(query, *, k=None, filter=None)``
returning hits, or a LangChain retriever returning ``Document`` objects. The tool formats
hits and nothing else, so a retriever that is not one of ours is wrapped in an
:class:`AdaptedRetriever`, whose :meth:`~AdaptedRetriever.invoke` turns what it returns into
hits and then runs the same finishing step as every retriever of this package
(:meth:`BaseRetriever.finish <retrieval.base.BaseRetriever.finish>`: ``min_score``, then
``expand``), once.

A LangChain ``Document`` becomes a :class:`~retrieval.hit.Hit` in the order the retriever
returned it: its text is ``page_content``; the JSON-valued metadata is kept; ``doc_id``,
``chunk_id`` and ``score`` are read back from metadata when an adapter such as
``to_langchain_retriever`` put them there, else the document's ``id``/``source`` and score 0,
stage ``"retriever"``. Their order is the retriever's: it may have no scores to order by.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from ragtools.indexes.index import IndexState
from ragtools.parsers.document import Chunk
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.base import BaseRetriever, Filter
from ragtools.retrieval.expand import ExpandMode, Expansion, index_states
from ragtools.retrieval.hit import HIT_KEYS, Hit, ranked_hits
from ragtools.retrieval.threshold import MinScore

__all__ = ["AdaptedRetriever"]


class AdaptedRetriever(BaseRetriever):
    """Wrap ``retriever`` so its results come back as hits through the one finishing path.

    Args:
        retriever: anything with ``invoke(query, **options)`` returning ``list[Hit]`` or
            LangChain ``Document`` objects (and optionally ``ainvoke``).
        min_score: as on every retriever (:mod:`retrieval.threshold`).
        expand: as on every retriever (:mod:`retrieval.expand`); passages are cut from the
            index states the wrapped retriever reads, if it exposes them (an ``index`` or
            ``retrievers``), else each hit is its own passage.

    ``k`` and ``filter`` reach the wrapped retriever only when given, so its own defaults
    apply otherwise (``self.k`` mirrors its ``k`` when it has one).

    Raises:
        ConfigError: ``retriever`` has no ``invoke``.
    """

    def __init__(
        self,
        retriever: Any,
        *,
        min_score: MinScore | None = None,
        expand: ExpandMode | Expansion | Mapping[str, Any] | None = None,
    ) -> None:
        if not callable(getattr(retriever, "invoke", None)):
            msg = f"retriever must have invoke(query, *, k=None) -> list[Hit], got {retriever!r}"
            raise ConfigError(msg)
        own_k = getattr(retriever, "k", None)
        if isinstance(own_k, bool) or not isinstance(own_k, int) or own_k < 1:
            own_k = 10
        super().__init__(k=own_k, min_score=min_score, expand=expand)
        self.retriever = retriever

    def invoke(
        self, query: str, *, k: int | None = None, filter: Filter | None = None
    ) -> list[Hit]:
        """The wrapped retriever's results as hits, thresholded and expanded once."""
        return self.invoke_returned(query, k=k, filter=filter)[0]

    async def ainvoke(
        self, query: str, *, k: int | None = None, filter: Filter | None = None
    ) -> list[Hit]:
        """Like :meth:`invoke`, through the wrapped retriever's ``ainvoke`` if it has one."""
        return self.finish(_as_hits(await self._areturned(query, k, filter)))

    def invoke_returned(
        self, query: str, *, k: int | None = None, filter: Filter | None = None
    ) -> tuple[list[Hit], list[Any]]:
        """The hits of :meth:`invoke` and what the wrapped retriever returned for them (its
        LangChain ``Document`` objects, as they are): for a caller that hands the originals
        on, as LangChain's retriever tool does in its artifact."""
        found = self.retriever.invoke(query, **_options(k, filter))
        return self.finish(_as_hits(found)), found

    async def ainvoke_returned(
        self, query: str, *, k: int | None = None, filter: Filter | None = None
    ) -> tuple[list[Hit], list[Any]]:
        """Async :meth:`invoke_returned`."""
        found = await self._areturned(query, k, filter)
        return self.finish(_as_hits(found)), found

    async def _areturned(self, query: str, k: int | None, filter: Filter | None) -> Any:
        options = _options(k, filter)
        inner = getattr(self.retriever, "ainvoke", None)
        if callable(inner):
            return await inner(query, **options)
        return await asyncio.to_thread(self.retriever.invoke, query, **options)

    def _retrieve(self, query: str, k: int | None, filter: Filter | None) -> list[Hit]:
        return _as_hits(self.retriever.invoke(query, **_options(k, filter)))

    def index_states(self) -> list[IndexState]:
        return index_states(self.retriever)


def _options(k: int | None, filter: Filter | None) -> dict[str, Any]:
    options: dict[str, Any] = {} if k is None else {"k": k}
    if filter is not None:
        options["filter"] = filter
    return options


def _as_hits(found: Any) -> list[Hit]:
    """``found`` as hits: LangChain documents converted, anything but hits refused."""
    if isinstance(found, list) and found and all(_is_langchain_document(d) for d in found):
        return _hits_of_documents(found)
    if not isinstance(found, list) or not all(isinstance(h, Hit) for h in found):
        msg = (
            f"the retriever returned {type(found).__name__}, expected list[Hit] "
            "(see retrieval.base.Retriever) or LangChain Documents"
        )
        raise ConfigError(msg)
    return found


def _is_langchain_document(value: Any) -> bool:
    return hasattr(value, "page_content") and isinstance(getattr(value, "metadata", None), dict)


def _hits_of_documents(documents: list[Any]) -> list[Hit]:
    """LangChain ``Document`` objects as hits, in their order (see the module docstring)."""
    chunks, scores, stages = [], [], []
    for doc in documents:
        metadata: dict[str, Any] = {}
        for key, value in doc.metadata.items():
            try:  # in its JSON form: a tuple becomes the list a chunk accepts
                metadata[key] = json.loads(json.dumps(value, allow_nan=False))
            except (TypeError, ValueError):
                continue  # a chunk carries JSON metadata only
        doc_ids = (metadata.get("doc_id"), getattr(doc, "id", None), metadata.get("source"))
        chunks.append(
            Chunk(
                id=str(metadata.get("chunk_id") or getattr(doc, "id", None) or ""),
                doc_id=str(next((v for v in doc_ids if v), "langchain")),
                text=str(doc.page_content),
                metadata={k: v for k, v in metadata.items() if k not in HIT_KEYS},
            )
        )
        score = metadata.get("score")
        scores.append(float(score) if isinstance(score, (int, float)) else 0.0)
        stages.append(str(metadata.get("stage") or "retriever"))
    return ranked_hits(chunks, scores, stages)
