"""A tool seen as a plain function, so LangChain's ``tool()`` and LangGraph's ``ToolNode`` take it.

LangGraph's ``ToolNode`` keeps LangChain ``BaseTool`` instances as they are and hands anything
else to ``langchain_core.tools.tool()``, which accepts "a callable with a ``__name__``" and
builds a LangChain ``StructuredTool`` from that callable's signature, type hints and
docstring. Our tools are not LangChain tools (whatever their class names say), so they offer
exactly that function view, computed from the tool each time it is asked for:

* ``__name__``/``__qualname__`` are the tool's name and ``__doc__`` its description;
* ``__signature__``/``__annotations__`` list the full argument schema as keyword-only
  parameters, each with the field's type as annotation and the field's ``FieldInfo`` as
  default, so LangChain's schema (what the model is shown) keeps descriptions, constraints
  and defaults; injected arguments are annotated with LangChain's
  ``InjectedToolArg``/``InjectedToolCallId`` so LangChain hides them from the model exactly
  as ``to_langchain_tool`` does;
* one more hidden parameter, annotated ``InjectedToolCallId``, through which LangChain hands
  over the id of the call being answered (unless the tool already has such an argument).

Called with that id, the tool answers with the LangChain ``ToolMessage`` that
``to_langchain_tool(tool)`` gives for the same call (it *is* that adapter's answer), and
LangChain passes a returned ``ToolMessage`` on unchanged: content, artifact (a retriever
tool's ``Hit`` list), status and error handling are the adapter's. The view's parameters
accept a value of the wrong type unchanged, so invalid arguments reach the adapter and our
tool's ``handle_validation_error`` decides, as with the adapter; a *missing* required
argument is refused by LangChain's own check first (then ``ToolNode``'s
``handle_tool_errors`` answers, by default with an error message to the model).

A :class:`~retrieval.tools.cache.CachedTool` over such a tool has the same view and answers
through its cache (its ``execute`` is cached too, so ``to_langchain_tool`` of it caches).

Limits: a tool whose ``args_schema`` is a JSON-schema dict has no Python types to show
(``ConfigError`` naming ``to_langchain_tool`` when the signature is read, so
``ToolNode([tool])`` fails at construction); a CachedTool over a tool without an argument
model is refused with a ``ConfigError`` saying which tools they take; a LangChain tool
built from the view needs a full ToolCall (LangChain's own rule for ``InjectedToolCallId``
tools). Qwen-style tools (:class:`~retrieval.tools.classtool.FunctionTool`: ``retrieval``,
``doc_parser``, ...) have a JSON-schema parameter list and no argument model: they are
callable only to be refused with a ``ConfigError`` that sends them to our ``ToolsNode``.

Called directly in Python, ``tool(a=1)``, a tool returns its content like
``tool.invoke({"a": 1})``. Without ``langchain-core`` installed the view still exists,
annotated with our own markers and with no call-id parameter (no other framework reads them).
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    BaseModel,
    PlainSerializer,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic.fields import FieldInfo

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.tools.concurrency import run_coroutine_sync
from ragtools.retrieval.tools.injected import InjectedToolArg, InjectedToolCallId
from ragtools.retrieval.tools.langchain_adapter import to_langchain_tool
from ragtools.retrieval.tools.schema import injected_fields

__all__ = [
    "FUNCTION_ATTRIBUTES",
    "CallableAsFunction",
    "FunctionView",
    "call_as_function",
    "function_attribute",
]

logger = logging.getLogger(__name__)

FUNCTION_ATTRIBUTES = frozenset(
    {"__name__", "__qualname__", "__doc__", "__signature__", "__annotations__"}
)
"""The attributes a tool answers with its function view instead of its class's."""

_CALL_ID = "tool_call_id"


class CallableAsFunction:
    """Mixin of :class:`~retrieval.tools.base.BaseTool` and :class:`~retrieval.tools.cache.
    CachedTool`: the tool is callable and answers :data:`FUNCTION_ATTRIBUTES` with its view."""

    if not TYPE_CHECKING:  # keep attribute typos visible to mypy

        def __getattribute__(self, name: str) -> Any:
            if name in FUNCTION_ATTRIBUTES:
                return function_attribute(self, name)
            return super().__getattribute__(name)

    def __call__(self, **arguments: Any) -> Any:
        """Call the tool as a function: the content, or LangChain's message for a call id."""
        return call_as_function(self, arguments)


@dataclass(frozen=True)
class FunctionView:
    """A tool's parameters as LangChain reads them off a function.

    Attributes:
        signature: keyword-only parameters, one per schema field plus the call-id parameter.
        annotations: parameter name -> annotation (what ``typing.get_type_hints`` returns).
        call_id: name of the parameter receiving the ToolCall id; ``None`` without LangChain.
        added_call_id: True when that parameter is the view's own (not one of the tool's).
    """

    signature: inspect.Signature
    annotations: dict[str, Any]
    call_id: str | None
    added_call_id: bool


def function_attribute(tool: Any, name: str) -> Any:
    """The value of one of :data:`FUNCTION_ATTRIBUTES` for ``tool``.

    Raises:
        ConfigError: ``__signature__`` of a tool with a JSON-schema dict ``args_schema``.
    """
    if name in ("__name__", "__qualname__"):
        return tool.name
    if name == "__doc__":
        return tool.description
    if name == "__annotations__":
        if not callable(getattr(tool, "get_input_schema", None)) or _input_model(tool) is None:
            return {}
        return dict(function_view(tool).annotations)
    return function_view(tool).signature


def function_view(tool: Any) -> FunctionView:
    """The (memoised) function view of ``tool`` (a BaseTool, or a CachedTool over one).

    Raises:
        ConfigError: the tool's ``args_schema`` is a JSON-schema dict, or the tool has no
            argument model at all (a CachedTool over a Qwen-style tool).
    """
    model = _input_model(tool)
    if model is None:
        msg = (
            f"tool {tool.name!r} has a JSON-schema dict args_schema, which cannot be shown as "
            "a Python signature, so LangChain's tool() and LangGraph's ToolNode cannot read it; "
            "give them to_langchain_tool(tool) (ragtools.retrieval.integrations.langchain)"
        )
        raise ConfigError(msg)
    view: FunctionView = tool.memoized(
        ("function_view", model, tool.name), lambda: _build_view(model, _langchain_markers())
    )
    return view


def call_as_function(tool: Any, arguments: dict[str, Any]) -> Any:
    """Run ``tool`` called as a function: LangChain's ToolMessage when a call id came along.

    Args:
        tool: the tool.
        arguments: the keyword arguments of the call (the call-id parameter included when
            LangChain supplied it).

    Returns:
        With a call id, the LangChain ``ToolMessage`` of ``to_langchain_tool(tool)`` for that
        call; without, the content, as ``tool.invoke(arguments)``.
    """
    view = function_view(tool)
    call_id = None
    if view.call_id is not None:
        call_id = arguments.get(view.call_id)
        if view.added_call_id:
            arguments = {k: v for k, v in arguments.items() if k != view.call_id}
    target: Any = tool
    payload: Any = arguments
    if call_id is not None:
        # Built per call, never kept: a tool's settings may be reassigned between calls.
        target = to_langchain_tool(tool)
        payload = {"name": tool.name, "args": arguments, "id": str(call_id), "type": "tool_call"}
    if getattr(getattr(tool, "tool", tool), "func", True) is None:
        # coroutine-only: LangChain's tool() made a sync function of this view, which
        # LangGraph calls from a worker thread even under ainvoke, so it is awaited here
        return run_coroutine_sync(lambda: target.ainvoke(payload))
    return target.invoke(payload)


def _input_model(tool: Any) -> type[BaseModel] | None:
    get_schema = getattr(tool, "get_input_schema", None)
    if not callable(get_schema):
        msg = (
            f"tool {tool.name!r} ({tool!r}) has no argument model to show as a function "
            "signature (a Qwen-style tool's parameters are a JSON schema), so LangChain's "
            "tool() and LangGraph's ToolNode cannot read it; run it in ragtools' ToolsNode, or "
            "give them tools made with @tool, StructuredTool, Tool or create_retriever_tool "
            "(or a CachedTool over one)"
        )
        raise ConfigError(msg)
    model: type[BaseModel] | None = get_schema()
    return model


def _langchain_markers() -> tuple[Any, Any] | None:
    """LangChain's (InjectedToolArg, InjectedToolCallId), or None when it is not installed."""
    try:
        lc_tools = importlib.import_module("langchain_core.tools")
    except ImportError:
        return None
    return lc_tools.InjectedToolArg, lc_tools.InjectedToolCallId


def _build_view(model: type[BaseModel], markers: tuple[Any, Any] | None) -> FunctionView:
    fields = model.model_fields
    hidden = injected_fields(model)
    arg_marker, id_marker = markers or (InjectedToolArg, InjectedToolCallId)
    parameters = []
    annotations: dict[str, Any] = {}
    for name, field in fields.items():
        info = FieldInfo.merge_field_infos(field)
        if name in hidden:
            marker = id_marker if hidden[name] else arg_marker
            annotation: Any = Annotated[field.annotation, marker]  # type: ignore[name-defined]
        else:
            annotation = Annotated[field.annotation, _KEEP_INVALID, _DUMP_AS_IS]  # type: ignore[name-defined]
        annotations[name] = annotation
        parameters.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation
            )
        )
    call_id = next((name for name, is_id in hidden.items() if is_id), None)
    added = call_id is None and markers is not None
    if added:
        call_id = _free_name(_CALL_ID, fields)
        annotation = Annotated[str, id_marker]
        annotations[call_id] = annotation
        parameters.append(
            inspect.Parameter(call_id, inspect.Parameter.KEYWORD_ONLY, annotation=annotation)
        )
    return FunctionView(inspect.Signature(parameters), annotations, call_id, added)


def _free_name(wanted: str, taken: Mapping[str, Any]) -> str:
    name = wanted
    while name in taken:
        name = f"{name}_"
    return name


def _keep_invalid(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """Validate as the field does, but hand an invalid value on for the tool to judge."""
    try:
        return handler(value)
    except ValidationError:
        return value


def _as_is(value: Any) -> Any:
    return value


# LangChain dumps the validated arguments once (for their names); dumping a kept invalid value
# as its declared type would warn, so the view's fields dump their values as they are.
_KEEP_INVALID = WrapValidator(_keep_invalid)
_DUMP_AS_IS = PlainSerializer(_as_is)
