"""Arguments the runtime supplies instead of the model, and the run configuration.

A tool argument annotated ``Annotated[T, InjectedToolArg]`` exists in the tool's full argument
schema (so it is validated) but not in ``tool_call_schema`` (so the model never sees it and
cannot set it through the schema it is shown). The application supplies it at run time,
``tool.invoke(call, user_id="u1")``; a value given there always wins over one in the call's
``args``. ``Annotated[str, InjectedToolCallId]`` is filled from the id of the
:class:`~retrieval.tools.messages.ToolCall` being answered, so such a tool can only run from a
full ToolCall.

The marker may be the class itself or an instance (``InjectedToolArg()``), as in LangChain,
and LangChain's own markers (``langchain_core.tools.InjectedToolArg``/``InjectedToolCallId``)
count as ours, so a function annotated for LangChain hides the same arguments here. So do
*directly injected* types, which need no ``Annotated``: a parameter typed with a class deriving
from langchain-core's ``_DirectlyInjectedToolArg`` (LangGraph's ``ToolRuntime``), matched by
class name along the MRO like the markers (:func:`with_direct_marker`).

:class:`RunConfig` is the optional ``config`` mapping of ``invoke``; a tool function receives
it if it declares a parameter annotated ``RunConfig`` (or LangChain's ``RunnableConfig``), and
that parameter is never part of any schema.
"""

from __future__ import annotations

import logging
import typing
from typing import Any, TypedDict

__all__ = [
    "InjectedToolArg",
    "InjectedToolCallId",
    "RunConfig",
    "is_config_annotation",
    "is_injected_annotation",
    "is_injected_metadata",
    "with_direct_marker",
]

logger = logging.getLogger(__name__)

_CONFIG_TYPE_NAMES = frozenset({"RunConfig", "RunnableConfig"})


class InjectedToolArg:
    """Marker: the argument is supplied by the application at run time, not by the model."""


class InjectedToolCallId(InjectedToolArg):
    """Marker: the argument receives the id of the ToolCall being answered."""


class RunConfig(TypedDict, total=False):
    """Per-call settings passed as ``tool.invoke(input, config)``.

    Attributes:
        tags: free labels for logs and tracing.
        metadata: free key/values for logs and tracing.
        run_name: a name for this run in logs.
        max_concurrency: upper bound on parallel calls in ``batch``/``abatch``.
        configurable: application values a tool may read (e.g. a tenant id).
        callbacks: handed to a tool function that declares a ``callbacks`` parameter
            (LangChain's run-time injection; ``None`` when not given).
    """

    tags: list[str]
    metadata: dict[str, Any]
    run_name: str
    max_concurrency: int | None
    configurable: dict[str, Any]
    callbacks: Any


def is_injected_metadata(
    metadata: typing.Iterable[object], marker: type[InjectedToolArg] = InjectedToolArg
) -> bool:
    """True when ``metadata`` (Annotated extras or ``FieldInfo.metadata``) holds ``marker``.

    Args:
        metadata: the objects after the first argument of ``Annotated[...]``.
        marker: ``InjectedToolArg`` (any injected kind) or ``InjectedToolCallId``.
    """
    return any(_is_marker(item, marker) for item in metadata)


def _is_marker(item: object, marker: type[InjectedToolArg]) -> bool:
    """``item`` is ``marker`` (class or instance), ours or LangChain's of the same name.

    LangChain's ``InjectedToolArg``/``InjectedToolCallId`` (and LangGraph's ``InjectedState``,
    a subclass) are matched by class name along the MRO, so a function written for LangChain
    keeps its hidden arguments hidden here, without importing LangChain.
    """
    cls = item if isinstance(item, type) else type(item)
    if issubclass(cls, marker):
        return True
    return any(
        base.__name__ == marker.__name__ and base.__module__.startswith("langchain_core")
        for base in cls.__mro__
    )


def with_direct_marker(annotation: Any) -> Any:
    """``Annotated[annotation, InjectedToolArg()]`` for a directly injected type (LangGraph's
    ``ToolRuntime``, generic or not), else ``annotation`` unchanged."""
    cls = typing.get_origin(annotation) or annotation
    if not isinstance(cls, type):
        return annotation
    direct = any(
        base.__name__ == "_DirectlyInjectedToolArg" and base.__module__.startswith("langchain_core")
        for base in cls.__mro__
    )
    return typing.Annotated[annotation, InjectedToolArg()] if direct else annotation


def is_injected_annotation(
    annotation: Any, marker: type[InjectedToolArg] = InjectedToolArg
) -> bool:
    """True for ``Annotated[T, InjectedToolArg]`` (or a subclass/instance of the marker)."""
    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return is_injected_metadata(typing.get_args(annotation)[1:], marker)


def is_config_annotation(annotation: Any) -> bool:
    """True when ``annotation`` is ``RunConfig``/``RunnableConfig``, possibly ``| None``.

    Matching is by type name so functions written for LangChain (``config: RunnableConfig``)
    work without importing LangChain here.
    """
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    candidates = [annotation, *typing.get_args(annotation)]
    return any(getattr(c, "__name__", None) in _CONFIG_TYPE_NAMES for c in candidates)
