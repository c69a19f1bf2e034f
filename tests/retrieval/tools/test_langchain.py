"""The LangChain adapter, checked against the real installed langchain-core."""

from __future__ import annotations

import asyncio
import sys
from typing import Annotated, Any

import pytest
from langchain_core.messages import ToolMessage as LCToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import BaseTool as LCBaseTool
from langchain_core.tools import tool as lc_tool_decorator
from langchain_core.utils.function_calling import convert_to_openai_tool as lc_convert
from pydantic import ValidationError

from ragtools.parsers.errors import MissingDependencyError
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.integrations.langchain import to_langchain_tool
from ragtools.retrieval.tools import (
    InjectedToolArg,
    InjectedToolCallId,
    ToolException,
    convert_to_openai_tool,
    create_retriever_tool,
    tool,
)
from tests.retrieval.tools.conftest import FakeRetriever


def _lc_call(name: str, args: dict[str, Any], call_id: str = "lc_1") -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


@tool(parse_docstring=True)
def search(query: str, max_results: int = 10) -> str:
    """Search the web for information.

    Args:
        query: The search query string.
        max_results: Maximum number of results to return.
    """
    return f"{query}:{max_results}"


def lc_search(query: str, max_results: int = 10) -> str:
    """Search the web for information.

    Args:
        query: The search query string.
        max_results: Maximum number of results to return.
    """
    return f"{query}:{max_results}"


@tool
def report(
    topic: str,
    user: Annotated[str, InjectedToolArg],
    call_id: Annotated[str, InjectedToolCallId],
) -> str:
    """Write a report."""
    return f"{topic}|{user}|{call_id}"


@tool
def fragile(query: str) -> str:
    """Fails on purpose."""
    raise ToolException(f"cannot search {query!r}")


def _without_additional_properties(schema: dict[str, Any]) -> dict[str, Any]:
    params = dict(schema["function"]["parameters"])
    params.pop("additionalProperties", None)
    return {**schema, "function": {**schema["function"], "parameters": params}}


def test_schema_inference_matches_langchain() -> None:
    theirs = lc_tool_decorator("search", parse_docstring=True)(lc_search)
    assert search.args == theirs.args
    assert _without_additional_properties(convert_to_openai_tool(search)) == lc_convert(theirs)


def test_retriever_tool_adapter_metadata_and_schema(retriever: FakeRetriever) -> None:
    ours = create_retriever_tool(retriever, "search_docs", "Search the manuals.")
    adapted = to_langchain_tool(ours)
    assert isinstance(adapted, LCBaseTool)
    assert (adapted.name, adapted.description) == ("search_docs", "Search the manuals.")
    assert adapted.args == ours.args
    assert adapted.response_format == "content_and_artifact"
    # LangChain's tool_call_schema drops pydantic's extra="forbid"; all else is identical.
    assert lc_convert(adapted) == _without_additional_properties(convert_to_openai_tool(ours))


def test_retriever_tool_call_gives_langchain_message_with_our_hits(
    retriever: FakeRetriever, hits: list[Hit]
) -> None:
    ours = create_retriever_tool(retriever, "search_docs", "Search the manuals.")
    adapted = to_langchain_tool(ours)
    message = adapted.invoke(_lc_call("search_docs", {"query": "warranty"}))
    assert isinstance(message, LCToolMessage)
    expected = ours.invoke(_lc_call("search_docs", {"query": "warranty"}))
    assert message.content == expected.content
    assert message.artifact == hits
    assert all(isinstance(h, Hit) for h in message.artifact)
    assert (message.tool_call_id, message.name, message.status) == (
        "lc_1",
        "search_docs",
        "success",
    )


def test_plain_inputs_and_async(retriever: FakeRetriever, hits: list[Hit]) -> None:
    ours = create_retriever_tool(retriever, "search_docs", "Search the manuals.")
    adapted = to_langchain_tool(ours)
    content = ours.invoke({"query": "q"})
    assert adapted.invoke({"query": "q"}) == content
    assert adapted.invoke("q") == content
    message = asyncio.run(adapted.ainvoke(_lc_call("search_docs", {"query": "q"})))
    assert message.artifact == hits
    assert retriever.calls[-1][0] == "ainvoke"


def test_validation_happens_and_is_handled_like_ours(retriever: FakeRetriever) -> None:
    adapted = to_langchain_tool(create_retriever_tool(retriever, "search_docs", "Search."))
    with pytest.raises(ValidationError):
        adapted.invoke({"query": ""})
    handled = to_langchain_tool(
        create_retriever_tool(
            retriever, "search_docs", "Search.", handle_validation_error="Bad query."
        )
    )
    message = handled.invoke(_lc_call("search_docs", {"query": "", "k": 3}))
    assert (message.content, message.status) == ("Bad query.", "error")


def test_tool_errors_keep_their_status() -> None:
    with pytest.raises(ToolException, match="cannot search"):
        to_langchain_tool(fragile).invoke(_lc_call("fragile", {"query": "x"}))
    handled = to_langchain_tool(fragile.model_copy(update={"handle_tool_error": True}))
    message = handled.invoke(_lc_call("fragile", {"query": "x"}))
    assert (message.content, message.status) == ("cannot search 'x'", "error")


def test_injected_arguments_are_translated() -> None:
    adapted = to_langchain_tool(report)
    assert adapted.args == report.args == {"topic": {"title": "Topic", "type": "string"}}
    assert lc_convert(adapted)["function"]["parameters"]["properties"] == {
        "topic": {"type": "string"}
    }
    message = adapted.invoke(_lc_call("report", {"topic": "AI", "user": "amy"}, "lc_9"))
    assert message.content == "AI|amy|lc_9"
    with pytest.raises(ValueError, match="InjectedToolCallId"):
        adapted.invoke({"topic": "AI", "user": "amy"})


def test_content_tool_and_flags_carry_over() -> None:
    ours = search.model_copy(update={"return_direct": True, "extras": {"x": 1}})
    adapted = to_langchain_tool(ours)
    assert adapted.return_direct is True
    assert adapted.extras == {"x": 1}
    assert adapted.invoke({"query": "q", "max_results": "2"}) == "q:2"
    message = adapted.invoke(_lc_call("search", {"query": "q"}))
    assert (message.content, message.artifact) == ("q:10", None)


def test_our_decorator_wraps_a_real_langchain_runnable() -> None:
    def shout(text: str) -> str:
        return text.upper()

    wrapped = tool("shout", RunnableLambda(shout), description="Shout the text.")
    assert wrapped.invoke("hey") == "HEY"
    assert asyncio.run(wrapped.ainvoke("hey")) == "HEY"


def test_missing_langchain_is_a_missing_dependency_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "langchain_core.tools", None)
    with pytest.raises(MissingDependencyError, match=r"ragtools\[langchain\]"):
        to_langchain_tool(search)
