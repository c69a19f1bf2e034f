"""Our tools inside LangGraph's own ``ToolNode``, through the LangChain adapter.

Ours reach LangGraph's ``ToolNode`` through ``to_langchain_tool``, which keeps the content, the
artifact and the error status (``to_langgraph_tools`` does it for a list:
``test_langgraph_native.py``). The test runs a real compiled graph, as an agent does.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from ragtools.retrieval.integrations.langchain import to_langchain_tool
from ragtools.retrieval.tools import create_retriever_tool, tool
from tests.retrieval.tools.conftest import FakeRetriever


def _run(tools: list[Any], calls: list[dict[str, Any]]) -> list[Any]:
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    state = graph.compile().invoke({"messages": [AIMessage("", tool_calls=calls)]})
    return list(state["messages"][1:])


def test_content_artifact_and_errors_survive_a_langgraph_tool_node(
    retriever: FakeRetriever,
) -> None:
    @tool(response_format="content_and_artifact")
    def add(a: int, b: int) -> tuple[str, dict[str, int]]:
        """Add two integers."""
        return str(a + b), {"sum": a + b}

    docs = create_retriever_tool(retriever, "docs", "Search the manuals.")
    messages = _run(
        [to_langchain_tool(add), to_langchain_tool(docs)],
        [
            {"name": "add", "args": {"a": 1, "b": "2"}, "id": "1"},
            {"name": "docs", "args": {"query": "alpha"}, "id": "2"},
            {"name": "add", "args": {"a": "x", "b": 2}, "id": "3"},
        ],
    )
    assert [m.tool_call_id for m in messages] == ["1", "2", "3"]
    assert (messages[0].content, messages[0].artifact) == ("3", {"sum": 3})
    assert messages[1].artifact == retriever.hits
    assert messages[1].content.startswith("[1] a.pdf, page 3")
    assert messages[2].status == "error" and "valid integer" in messages[2].content
