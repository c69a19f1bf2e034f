"""Our retrievers as Haystack components: ``to_haystack_component(retriever)``.

The adapter is a real Haystack component (``haystack-ai`` is imported when it is first made;
install ``ragtools[haystack]``): ``run(query, top_k=None, filters=None)`` returns
``{"documents": [Document, ...]}`` like Haystack's own retrievers, so it connects to prompt
builders, joiners and rankers inside a ``Pipeline``; ``run_async`` serves ``AsyncPipeline``.

Each hit becomes ``Document(id=chunk id, content=chunk text, score=hit.score, meta=...)``
with the chunk's metadata plus ``chunk_id``, ``doc_id``, ``start``, ``end``, ``score``,
``rank``, ``stage``, ``scores`` and, for an expanded passage, ``parts`` (see
:func:`~retrieval.integrations._hits.hit_metadata`).

Filters are written in Haystack's syntax and translated into ours
(:func:`haystack_filter`): ``{"field": "meta.source", "operator": "==", "value": "a.pdf"}``
becomes ``{"source": {"$eq": "a.pdf"}}``; the operators ``== != > >= < <= in "not in"`` and
the logical ``AND``, ``OR`` and ``NOT`` (not all of its conditions, as Haystack reads it)
carry over; ``id`` is the chunk id. Fields a chunk does not have (``content``,
``embedding``, ...) and unknown operators are errors naming them. Missing metadata fields
follow our filter language (:mod:`retrieval.filters`). Filters given when the component is
made are always applied; filters given to ``run`` are joined with them (Haystack's ``merge``
filter policy), never replacing them.

``Pipeline.dumps()`` writes the component as settings (its index directory, the retriever's
kind and options, ``top_k`` and ``filters``), and ``Pipeline.loads(...,
allowed_modules=["ragtools.retrieval.integrations"])`` opens the index and builds it again
(:mod:`.haystack_component`, :mod:`retrieval.retriever_config`). A retriever the settings
cannot describe (another class, a reranker) still runs, and ``dumps`` raises a
:class:`~parsers.errors.ConfigError` saying why.

Haystack sends anonymous usage telemetry over the network unless
``HAYSTACK_TELEMETRY_ENABLED`` says otherwise; this package makes no network call at run
time, so making the component sets it to ``False`` when it is unset (set it yourself to opt
in).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ragtools.parsers.errors import ConfigError
from ragtools.parsers.optional import require
from ragtools.retrieval.bound_filter import check_bound_filter
from ragtools.retrieval.filters import SYMBOL_OPERATORS
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.integrations._hits import check_wrapped, hit_metadata

__all__ = ["haystack_filter", "hit_to_haystack_document", "to_haystack_component"]

_COMPARISONS = {**SYMBOL_OPERATORS, "not in": "$nin"}
_LOGICAL = {"AND": "$and", "OR": "$or", "NOT": "$not"}


def haystack_filter(filters: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A Haystack 2 filter translated into ours (see the module docstring).

    Raises:
        ConfigError: a malformed condition, an unknown operator or a field chunks lack.
    """
    if not filters:
        return None
    return _translate(filters, "filters")


def _translate(condition: Any, where: str) -> dict[str, Any]:
    if not isinstance(condition, Mapping) or "operator" not in condition:
        msg = f"invalid Haystack filter at {where}: expected a dict with an 'operator'"
        raise ConfigError(msg)
    operator = condition["operator"]
    if "field" not in condition:
        conditions = condition.get("conditions")
        if operator not in _LOGICAL or not isinstance(conditions, list) or not conditions:
            msg = (
                f"invalid Haystack filter at {where}: a logical condition needs operator "
                f"AND, OR or NOT and a non-empty 'conditions' list, got operator {operator!r}"
            )
            raise ConfigError(msg)
        parts = [_translate(c, f"{where}.conditions[{i}]") for i, c in enumerate(conditions)]
        if operator == "NOT":
            return {"$not": parts[0] if len(parts) == 1 else {"$and": parts}}
        return {_LOGICAL[operator]: parts}
    if operator not in _COMPARISONS or "value" not in condition:
        msg = (
            f"invalid Haystack filter at {where}: operator {operator!r} is not one of "
            f"{', '.join(_COMPARISONS)}, or the 'value' is missing"
        )
        raise ConfigError(msg)
    return {_field(condition["field"], where): {_COMPARISONS[operator]: condition["value"]}}


def _field(field: Any, where: str) -> str:
    if field == "id":
        return "chunk_id"
    if isinstance(field, str) and field.startswith("meta.") and len(field) > len("meta."):
        return field.removeprefix("meta.")
    msg = (
        f"invalid Haystack filter at {where}: field {field!r} cannot be filtered here; use "
        "'id' or 'meta.<key>'"
    )
    raise ConfigError(msg)


def hit_to_haystack_document(hit: Hit) -> Any:
    """One hit as a Haystack ``Document`` (see the module docstring)."""
    haystack = require("haystack", "haystack")
    return haystack.Document(
        id=hit.chunk.id, content=hit.chunk.text, meta=hit_metadata(hit), score=hit.score
    )


def to_haystack_component(
    retriever: Any, *, top_k: int | None = None, filters: Mapping[str, Any] | None = None
) -> Any:
    """Wrap one of our retrievers (anything with ``invoke(query, *, k, filter)``) as a Haystack
    component with ``run(query, top_k=None, filters=None) -> {"documents": [...]}``.

    Args:
        retriever: the retriever.
        top_k: default number of documents (``None``: the retriever's ``k``).
        filters: a Haystack filter applied to every run.

    Raises:
        ConfigError: ``retriever`` has no ``invoke``, or ``top_k`` / ``filters`` is invalid.
        MissingDependencyError: ``haystack-ai`` is not installed.
    """
    check_wrapped(retriever)
    check_top_k(top_k)
    check_bound_filter(haystack_filter(filters))
    require("haystack", "haystack")  # also when the class is already imported
    return _component_class()(retriever, top_k, None if filters is None else dict(filters))


def check_top_k(top_k: object) -> None:
    """Refuse a ``top_k`` that is neither ``None`` nor a positive integer (:class:`ConfigError`)."""
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        msg = f"top_k must be a positive integer or None, got {top_k!r}"
        raise ConfigError(msg)


def _component_class() -> type:
    """The component class (:mod:`.haystack_component`), imported once Haystack may be."""
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # before Haystack reads it
    from ragtools.retrieval.integrations.haystack_component import RagtoolsRetriever

    return RagtoolsRetriever
