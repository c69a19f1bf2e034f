"""Our tools as LangChain tools: ``to_langchain_tool(tool)`` (install ``ragtools[langchain]``).

The adapter is a real ``langchain_core.tools.StructuredTool``: name, description, the
model-facing schema (injected arguments hidden the LangChain way), content and artifact, and
our tool's error handling carry over. It is written in
:mod:`retrieval.tools.langchain_adapter`, because the tools' own function view (how LangGraph's
``ToolNode`` takes our tools as they are) answers with it, and the tool layer imports nothing
of the integrations; this module is its public home beside the other framework adapters.
"""

from __future__ import annotations

from ragtools.retrieval.tools.langchain_adapter import to_langchain_tool

__all__ = ["to_langchain_tool"]
