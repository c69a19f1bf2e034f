"""The agent tool layer: LangChain-style tools, schemas, renderings and the retriever tool.

Tools are built with the ``@tool`` decorator, ``StructuredTool.from_function``, ``Tool``,
``convert_runnable_to_tool`` or a ``BaseTool`` subclass; they take a string, a dict or a
``ToolCall`` and answer a ToolCall with a ``ToolMessage``. ``create_retriever_tool`` turns any
retriever into such a tool whose content cites its sources and whose artifact is the full list
of hits. Qwen-Agent's file tools (``retrieval``, ``doc_parser``, ``simple_doc_parser``, in
``ragtools.retrieval.tools.qwen``) are registered when this package is imported, so
``get_tool("retrieval")`` works at once. Framework adapters (LangChain, MCP) live in
``retrieval.integrations`` and import their framework lazily.

The package exports the seed documents' public names (shared/SEEDS.md) and the few types
needed to use them: ``ToolCall``/``make_tool_call`` (the input), ``RunConfig`` (per-call
settings), ``RetrieverInput`` (the retriever tool's fixed schema), ``FunctionTool`` and
``ToolExecutor`` (what ``register_tool`` registers and seed 001's executor), and
``ToolMiddleware``/``ToolCallbacks`` (what ``ToolsNode`` accepts). Every other helper stays
importable from its own module (``ragtools.retrieval.tools.params``, ``.registry``, ...), so
this namespace stays small enough to read at a glance.
"""

from __future__ import annotations

from ragtools.retrieval.tools import qwen  # noqa: F401 (registers Qwen-Agent's file tools)
from ragtools.retrieval.tools.base import BaseTool
from ragtools.retrieval.tools.cache import CachedTool, cached
from ragtools.retrieval.tools.classtool import FunctionTool
from ragtools.retrieval.tools.convert import convert_runnable_to_tool
from ragtools.retrieval.tools.decorator import tool
from ragtools.retrieval.tools.exceptions import ToolException
from ragtools.retrieval.tools.execution import ToolCallbacks, ToolMiddleware
from ragtools.retrieval.tools.injected import InjectedToolArg, InjectedToolCallId, RunConfig
from ragtools.retrieval.tools.messages import ToolCall, ToolMessage, make_tool_call
from ragtools.retrieval.tools.node import ToolsNode
from ragtools.retrieval.tools.registry import ToolExecutor, get_tool, list_tools, register_tool
from ragtools.retrieval.tools.render import (
    convert_to_openai_tool,
    render_text_description,
    render_text_description_and_args,
)
from ragtools.retrieval.tools.retriever_tool import RetrieverInput, create_retriever_tool
from ragtools.retrieval.tools.schema import create_schema_from_function
from ragtools.retrieval.tools.simple import Tool
from ragtools.retrieval.tools.structured import StructuredTool

__all__ = [
    "BaseTool",
    "CachedTool",
    "FunctionTool",
    "InjectedToolArg",
    "InjectedToolCallId",
    "RetrieverInput",
    "RunConfig",
    "StructuredTool",
    "Tool",
    "ToolCall",
    "ToolCallbacks",
    "ToolException",
    "ToolExecutor",
    "ToolMessage",
    "ToolMiddleware",
    "ToolsNode",
    "cached",
    "convert_runnable_to_tool",
    "convert_to_openai_tool",
    "create_retriever_tool",
    "create_schema_from_function",
    "get_tool",
    "list_tools",
    "make_tool_call",
    "register_tool",
    "render_text_description",
    "render_text_description_and_args",
    "tool",
]
