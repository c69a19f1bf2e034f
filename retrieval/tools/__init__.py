"""The agent tool layer: LangChain-style tools, schemas, renderings and the retriever tool.

Tools are built with the ``@tool`` decorator, ``StructuredTool.from_function``, ``Tool`` or a
``BaseTool`` subclass; they take a string, a dict or a ``ToolCall`` and answer a ToolCall with
a ``ToolMessage``. ``create_retriever_tool`` turns any retriever into such a tool whose content
cites its sources and whose artifact is the full list of hits. Framework adapters (LangChain,
MCP) live in ``retrieval.integrations`` and import their framework lazily.
"""

from __future__ import annotations

from ragtools.retrieval.tools.base import ArgsSchema, BaseTool
from ragtools.retrieval.tools.cache import CachedTool, CacheInfo, ToolResultCache, cached
from ragtools.retrieval.tools.classtool import FunctionTool, ModelTool
from ragtools.retrieval.tools.decorator import tool
from ragtools.retrieval.tools.exceptions import ToolException
from ragtools.retrieval.tools.execution import (
    ToolCallbacks,
    ToolCallInput,
    ToolChunk,
    ToolMiddleware,
    collect_messages,
    get_current_tool_call_id,
)
from ragtools.retrieval.tools.injected import InjectedToolArg, InjectedToolCallId, RunConfig
from ragtools.retrieval.tools.messages import ToolCall, ToolMessage, is_tool_call, make_tool_call
from ragtools.retrieval.tools.node import InvokableTool, StreamableTool, ToolsNode, tool_info
from ragtools.retrieval.tools.output import ToolOutput
from ragtools.retrieval.tools.params import (
    INVALID_JSON_MESSAGE,
    ToolInfo,
    format_result,
    parse_arguments,
    to_json_schema,
    validate_arguments,
    verify_arguments,
)
from ragtools.retrieval.tools.registry import (
    TOOL_REGISTRY,
    ToolExecutor,
    ToolRegistry,
    UnknownToolError,
    get_tool,
    list_tools,
    register_tool,
    unregister_tool,
)
from ragtools.retrieval.tools.render import (
    convert_to_openai_function,
    convert_to_openai_tool,
    render_text_description,
    render_text_description_and_args,
)
from ragtools.retrieval.tools.retriever_tool import (
    RetrieverInput,
    create_retriever_tool,
    format_hit,
    format_hits,
)
from ragtools.retrieval.tools.schema import create_schema_from_function
from ragtools.retrieval.tools.simple import Tool
from ragtools.retrieval.tools.structured import StructuredTool

__all__ = [
    "INVALID_JSON_MESSAGE",
    "TOOL_REGISTRY",
    "ArgsSchema",
    "BaseTool",
    "CacheInfo",
    "CachedTool",
    "FunctionTool",
    "InjectedToolArg",
    "InjectedToolCallId",
    "InvokableTool",
    "ModelTool",
    "RetrieverInput",
    "RunConfig",
    "StreamableTool",
    "StructuredTool",
    "Tool",
    "ToolCall",
    "ToolCallInput",
    "ToolCallbacks",
    "ToolChunk",
    "ToolException",
    "ToolExecutor",
    "ToolInfo",
    "ToolMessage",
    "ToolMiddleware",
    "ToolOutput",
    "ToolRegistry",
    "ToolResultCache",
    "ToolsNode",
    "UnknownToolError",
    "cached",
    "collect_messages",
    "convert_to_openai_function",
    "convert_to_openai_tool",
    "create_retriever_tool",
    "create_schema_from_function",
    "format_hit",
    "format_hits",
    "format_result",
    "get_current_tool_call_id",
    "get_tool",
    "is_tool_call",
    "list_tools",
    "make_tool_call",
    "parse_arguments",
    "register_tool",
    "render_text_description",
    "render_text_description_and_args",
    "to_json_schema",
    "tool",
    "tool_info",
    "unregister_tool",
    "validate_arguments",
    "verify_arguments",
]
