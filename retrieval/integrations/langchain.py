"""Our tools as LangChain tools: ``to_langchain_tool(tool)``.

The adapter is a real ``langchain_core.tools.StructuredTool`` (``langchain-core`` is imported
lazily; install ``ragtools[langchain]``), so it works in LangChain agents and LangGraph's
``ToolNode`` unchanged. What carries over:

* name, description, ``return_direct``, ``response_format``, ``metadata``, ``extras``;
* the argument schema: our ``tool_call_schema`` when the tool has no injected arguments; else
  our full schema with our ``InjectedToolArg``/``InjectedToolCallId`` markers translated to
  LangChain's, so LangChain hides them from the model, fills the ToolCall id itself, and takes
  injected values from the call's ``args`` (LangGraph's way);
* content and artifact: invoked with a LangChain tool call, the adapter returns a LangChain
  ``ToolMessage`` whose ``artifact`` is our artifact (for a retriever tool: our ``Hit`` list);
* errors: our tool's ``handle_tool_error``/``handle_validation_error`` decide as before; an
  error our tool turned into content comes out as a ToolMessage with ``status="error"``.

LangChain validates the arguments once with the translated schema, then our tool validates
them again; the second pass is cheap and keeps our tool's behaviour identical either way.

LangGraph's ``ToolNode`` and ``create_react_agent`` take these adapters
(:func:`~retrieval.integrations.langgraph.to_langgraph_tools` makes them for a list). Our
tools do not pass for LangChain tools or for functions, so LangChain's ``tool()`` and
``ToolNode`` do not take one as it is: they take this adapter.

Qwen-Agent-style tools (``retrieval``, ``doc_parser``, ``simple_doc_parser``, any
:class:`~retrieval.tools.classtool.FunctionTool`) and Eino-style
:class:`~retrieval.tools.classtool.ModelTool` s have their own call convention and no argument
model; they run in our :class:`~retrieval.tools.node.ToolsNode`, and the adapter refuses them
with a ``ConfigError`` saying so.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, create_model
from pydantic.fields import FieldInfo

from ragtools.parsers.errors import ConfigError
from ragtools.parsers.optional import require
from ragtools.retrieval.tools.messages import make_tool_call
from ragtools.retrieval.tools.schema import injected_fields

if TYPE_CHECKING:
    from langchain_core.tools import StructuredTool as LangChainStructuredTool

    from ragtools.retrieval.tools.base import BaseTool
    from ragtools.retrieval.tools.cache import CachedTool
    from ragtools.retrieval.tools.output import ToolOutput

__all__ = ["to_langchain_tool"]

logger = logging.getLogger(__name__)


def to_langchain_tool(tool: BaseTool | CachedTool) -> LangChainStructuredTool:
    """Wrap one of our tools as a LangChain ``StructuredTool``.

    Args:
        tool: any of our tools (``@tool`` functions, ``create_retriever_tool``, ...), or a
            ``CachedTool`` over one.

    Returns:
        A LangChain tool with the same name, description, model-facing schema, content and
        artifact.

    Raises:
        ConfigError: a Qwen-Agent-style tool (or a CachedTool over one), which has no
            argument model; run it in our ``ToolsNode``.
        MissingDependencyError: ``langchain-core`` is not installed.

    Example:
        >>> lc_tool = to_langchain_tool(create_retriever_tool(retriever, "docs", "Manuals."))
        >>> message = lc_tool.invoke(
        ...     {"name": "docs", "args": {"query": "warranty"}, "id": "c1", "type": "tool_call"})
        >>> type(message).__name__, type(message.artifact[0]).__name__
        ('ToolMessage', 'Hit')
    """
    _check_has_argument_model(tool)
    lc_tools = require("langchain_core.tools", "langchain")
    call_id_field = _call_id_field(tool)

    def prepare(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if args:
            return args[0]
        call_id = kwargs.get(call_id_field) if call_id_field else None
        if call_id:
            return make_tool_call(tool.name, kwargs, id=str(call_id))
        return kwargs

    def finish(output: ToolOutput) -> Any:
        if output.status == "error":
            raise lc_tools.ToolException(output.content)
        if tool.response_format == "content_and_artifact":
            return output.content, output.artifact
        return output.content

    def run(*args: Any, **kwargs: Any) -> Any:
        return finish(tool.execute(prepare(args, kwargs)))

    async def arun(*args: Any, **kwargs: Any) -> Any:
        return finish(await tool.aexecute(prepare(args, kwargs)))

    adapted: LangChainStructuredTool = lc_tools.StructuredTool(
        name=tool.name,
        description=tool.description,
        args_schema=_langchain_schema(tool, lc_tools),
        func=run,
        coroutine=arun,
        return_direct=tool.return_direct,
        response_format=tool.response_format,
        handle_tool_error=True,
        handle_validation_error=tool.handle_validation_error,
        metadata=tool.metadata,
        extras=tool.extras,
    )
    return adapted


def _check_has_argument_model(tool: Any) -> None:
    """Refuse a tool without an argument model (:class:`ConfigError` naming our ToolsNode)."""
    if not callable(getattr(tool, "get_input_schema", None)):
        msg = (
            f"tool {tool.name!r} ({tool!r}) has no argument model (a Qwen-style or model "
            "tool has its own call convention), so LangChain and LangGraph cannot run it; run "
            "it in ragtools' ToolsNode, or give them tools made with @tool, StructuredTool, "
            "Tool or create_retriever_tool (or a CachedTool over one)"
        )
        raise ConfigError(msg)


def _call_id_field(tool: BaseTool | CachedTool) -> str | None:
    model = tool.get_input_schema()
    if model is None:
        return None
    return next((name for name, is_id in injected_fields(model).items() if is_id), None)


def _langchain_schema(
    tool: BaseTool | CachedTool, lc_tools: Any
) -> type[BaseModel] | dict[str, Any]:
    """Our schema, with injected markers translated to LangChain's when there are any."""
    model = tool.get_input_schema()
    hidden = injected_fields(model) if model is not None else {}
    if model is None or not hidden:
        return tool.tool_call_schema
    fields: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        info = FieldInfo.merge_field_infos(field)
        if name in hidden:
            marker = lc_tools.InjectedToolCallId if hidden[name] else lc_tools.InjectedToolArg
            fields[name] = (Annotated[field.annotation, marker], info)  # type: ignore[name-defined]
        else:
            fields[name] = (field.annotation, info)
    translated: type[BaseModel] = create_model(  # type: ignore[call-overload]
        tool.name, __config__=model.model_config, __doc__=tool.description, **fields
    )
    return translated
