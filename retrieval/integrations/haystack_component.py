"""The Haystack component that :func:`.haystack.to_haystack_component` makes.

It lives in a module of its own that imports Haystack at the top, because Haystack finds a
component class by importing the module a pipeline file names and looking the class up in
its registry: ``Pipeline.loads`` of a pipeline holding this component imports
``ragtools.retrieval.integrations.haystack_component``, which registers
:class:`RagtoolsRetriever`. :mod:`.haystack` imports this module only when a component is
made, so ``import ragtools.retrieval.integrations`` still imports no framework.

The component's settings are JSON: ``retriever`` is the retriever's settings
(:mod:`retrieval.retriever_config`: the index directory, the kind and options), ``top_k`` and
``filters`` (Haystack syntax) as given. ``to_dict`` writes them (Haystack's
``default_to_dict``) and ``from_dict`` opens the index and builds the retriever again, so
``Pipeline.dumps()`` and ``Pipeline.loads()`` round-trip. Haystack loads classes only from
modules on its allowlist: pass ``allowed_modules=["ragtools.retrieval.integrations"]`` to
``Pipeline.loads``/``load`` (or set ``HAYSTACK_DESERIALIZATION_ALLOWLIST``), as for any
component outside Haystack's own packages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from ragtools.retrieval.bound_filter import check_bound_filter, combine_filters
from ragtools.retrieval.integrations._hits import check_wrapped
from ragtools.retrieval.integrations.haystack import (
    check_top_k,
    haystack_filter,
    hit_to_haystack_document,
)
from ragtools.retrieval.retriever_config import retriever_config, retriever_from_config

__all__ = ["RagtoolsRetriever"]


@component
class RagtoolsRetriever:
    """One of ragtools' retrievers as a Haystack retriever component.

    Args:
        retriever: a retriever (anything with ``invoke(query, *, k, filter)``), or the
            settings of one of ours (:func:`~retrieval.retriever_config.retriever_config`),
            whose index is then opened.
        top_k: default number of documents (``None``: the retriever's ``k``).
        filters: a Haystack filter applied to every run.

    Raises:
        ConfigError: a bad retriever, settings, ``top_k`` or ``filters``.
        IndexLoadError: the settings name a missing or damaged index.
    """

    def __init__(
        self,
        retriever: Any,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
    ) -> None:
        if isinstance(retriever, Mapping):
            retriever = retriever_from_config(retriever)
        check_wrapped(retriever)
        check_top_k(top_k)
        self.retriever = retriever
        self.top_k = top_k
        self.filters = filters
        self._bound = check_bound_filter(haystack_filter(filters))

    def to_dict(self) -> dict[str, Any]:
        """Haystack's ``{"type": ..., "init_parameters": ...}`` with the retriever's settings.

        Raises:
            ConfigError: the retriever cannot be written as settings (named).
        """
        data: dict[str, Any] = default_to_dict(
            self, retriever=retriever_config(self.retriever), top_k=self.top_k, filters=self.filters
        )
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RagtoolsRetriever:
        """The component :meth:`to_dict` wrote, its index opened again."""
        made: RagtoolsRetriever = default_from_dict(cls, data)
        return made

    def _options(self, top_k: int | None, filters: Mapping[str, Any] | None) -> dict[str, Any]:
        check_top_k(top_k)
        options: dict[str, Any] = {}
        k = top_k if top_k is not None else self.top_k
        if k is not None:
            options["k"] = k
        chosen = combine_filters(self._bound, haystack_filter(filters))
        if chosen is not None:
            options["filter"] = chosen
        return options

    @component.output_types(documents=list[Document])  # type: ignore[untyped-decorator,misc]
    def run(
        self,
        query: str,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
    ) -> dict[str, list[Any]]:
        """Search ``query``; ``top_k`` and ``filters`` (Haystack syntax) for this run."""
        hits = self.retriever.invoke(query, **self._options(top_k, filters))
        return {"documents": [hit_to_haystack_document(hit) for hit in hits]}

    @component.output_types(documents=list[Document])  # type: ignore[untyped-decorator,misc]
    async def run_async(
        self,
        query: str,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
    ) -> dict[str, list[Any]]:
        """Like :meth:`run`, without blocking the event loop."""
        options = self._options(top_k, filters)
        hits = await self.retriever.ainvoke(query, **options)
        return {"documents": [hit_to_haystack_document(hit) for hit in hits]}
