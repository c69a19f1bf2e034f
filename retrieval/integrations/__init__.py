"""Adapters to other frameworks, each importing its framework only when used.

``to_langchain_retriever``, ``to_llamaindex_retriever`` and ``to_haystack_component`` turn any
of our retrievers into the framework's own retriever type; ``to_langchain_tool`` (in
:mod:`.langchain`) does the same for tools, ``to_langgraph_tools`` (in :mod:`.langgraph`) for
a LangGraph ``ToolNode``'s list, and :mod:`.mcp` serves indexes over MCP. Importing
this package imports none of the frameworks.
"""

from __future__ import annotations

from ragtools.retrieval.integrations.haystack import haystack_filter, to_haystack_component
from ragtools.retrieval.integrations.langchain_retriever import to_langchain_retriever
from ragtools.retrieval.integrations.llamaindex import llamaindex_filter, to_llamaindex_retriever

__all__ = [
    "haystack_filter",
    "llamaindex_filter",
    "to_haystack_component",
    "to_langchain_retriever",
    "to_llamaindex_retriever",
]
