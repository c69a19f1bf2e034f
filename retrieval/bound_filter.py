"""A filter bound to a retriever adapter or tool when it is made, narrowed on each call.

The retriever tool (``create_retriever_tool(..., filter=...)``) and the framework adapters
(LangChain, LlamaIndex, Haystack) take a metadata filter when they are made (a tenant, a
collection) and, per call, a filter the caller or the model chose. The two are joined by
``$and``, so a call can narrow the bound filter but never widen or replace it. The bound
filter is compiled when it is bound, so a bad one fails where it is written, not at the first
query.

It lives beside :mod:`retrieval.filters`, not in the tool layer, because the adapters of
:mod:`retrieval.integrations` use it too: they then need no module of ``retrieval.tools``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragtools.retrieval.filters import compile_filter

__all__ = ["check_bound_filter", "combine_filters"]


def combine_filters(*filters: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """All the given filters at once (``$and``), or the one there is, or ``None``."""
    present = [f for f in filters if f]
    if not present:
        return None
    if len(present) == 1:
        return present[0]
    return {"$and": [dict(f) for f in present]}


def check_bound_filter(filter: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """``filter`` itself once it compiles (a bad bound filter fails when the tool is made).

    Raises:
        ConfigError: the filter does not compile (an unknown operator, a bad value...).
    """
    if filter is not None:
        compile_filter(filter)
    return filter
