"""Our tools in LangGraph: ``ToolNode(to_langgraph_tools(tools))`` (install
``ragtools[langchain]`` and ``langgraph``).

LangGraph's ``ToolNode`` and ``create_react_agent`` run LangChain tools (and turn plain
functions into ones with LangChain's ``tool()``). :func:`to_langgraph_tools` hands them each
of our tools as :func:`~retrieval.integrations.langchain.to_langchain_tool` makes it, so the
model is shown our schema (injected arguments hidden the LangChain way, LangGraph filling
them from the graph's state and the ToolCall id), and every call answers with a LangChain
``ToolMessage`` carrying our content, artifact (a retriever tool's ``Hit`` list) and error
status. A :class:`~retrieval.tools.cache.CachedTool` answers through its cache. LangChain
tools and plain functions in the same list are passed on as they are, so one list can mix
them.

Why an explicit adapter: LangChain's ``BaseTool`` is not a function, and neither is ours. An
earlier version gave ``BaseTool`` a plain-function view (``__name__``, ``__signature__``,
``__call__``) so ``ToolNode`` took our tools as they are; that put one framework's
accommodation into every tool's attribute lookup. It lives here now, and the tool layer knows
no framework.

Qwen-Agent-style tools (``retrieval``, ``doc_parser``, ...) are refused with a
``ConfigError`` that sends them to our :class:`~retrieval.tools.node.ToolsNode`, which runs
them with their own call convention.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ragtools.retrieval.integrations.langchain import to_langchain_tool
from ragtools.retrieval.tools.base import BaseTool
from ragtools.retrieval.tools.cache import CachedTool
from ragtools.retrieval.tools.classtool import FunctionTool, ModelTool

__all__ = ["to_langgraph_tools"]

_OURS = (BaseTool, CachedTool, FunctionTool, ModelTool)


def to_langgraph_tools(tools: Iterable[Any]) -> list[Any]:
    """The tools for LangGraph's ``ToolNode`` or ``create_react_agent``: ours as LangChain
    tools (:func:`~retrieval.integrations.langchain.to_langchain_tool`), anything else as it is.

    Args:
        tools: our tools (``@tool``, ``StructuredTool``, ``Tool``, ``create_retriever_tool``,
            a ``CachedTool`` over one), LangChain tools, plain functions, in any mix.

    Returns:
        A new list, in the same order.

    Raises:
        ConfigError: a Qwen-Agent-style tool, which runs in our ``ToolsNode`` only.
        MissingDependencyError: ``langchain-core`` is not installed.

    Example:
        >>> from langgraph.prebuilt import ToolNode
        >>> docs = create_retriever_tool(retriever, "docs", "Search the manuals.")
        >>> node = ToolNode(to_langgraph_tools([docs]))
        >>> list(node.tools_by_name)
        ['docs']
    """
    return [to_langchain_tool(tool) if _is_ours(tool) else tool for tool in tools]


def _is_ours(tool: object) -> bool:
    """One of our tool kinds (the Qwen-Agent ones included, for the adapter to refuse)."""
    return isinstance(tool, _OURS)
