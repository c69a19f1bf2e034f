"""Injected arguments: hidden from the model, supplied at run time; ToolCall ids."""

from __future__ import annotations

import asyncio
from typing import Annotated

import pytest
from pydantic import BaseModel, ValidationError

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.tools import (
    InjectedToolArg,
    InjectedToolCallId,
    StructuredTool,
    ToolMessage,
    convert_to_openai_tool,
    make_tool_call,
    tool,
)


@tool
def lookup(
    query: str,
    user_id: Annotated[str, InjectedToolArg],
    limit: Annotated[int, InjectedToolArg()] = 3,
) -> str:
    """Look up the user's documents."""
    return f"{query}|{user_id}|{limit}"


@tool
def create_report(topic: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
    """Generate a report on the given topic."""
    return ToolMessage(
        content=f"Report on {topic}", name="create_report", tool_call_id=tool_call_id
    )


@tool
def echo_id(topic: str, call: Annotated[str, InjectedToolCallId]) -> str:
    """Echo the call id."""
    return f"{topic}:{call}"


class ScopedArgs(BaseModel):
    query: str
    tenant: Annotated[str, InjectedToolArg]


def test_injected_args_absent_from_model_facing_schemas() -> None:
    assert list(lookup.args) == ["query"]
    assert lookup.tool_call_json_schema() == {
        "description": "Look up the user's documents.",
        "properties": {"query": {"title": "Query", "type": "string"}},
        "required": ["query"],
        "title": "lookup",
        "type": "object",
    }
    assert convert_to_openai_tool(lookup)["function"]["parameters"]["properties"] == {
        "query": {"type": "string"}
    }
    assert list(create_report.args) == ["topic"]
    full = lookup.get_input_schema()
    assert full is not None
    assert list(full.model_fields) == ["query", "user_id", "limit"]


def test_injected_args_supplied_at_run_time() -> None:
    assert lookup.invoke({"query": "q"}, user_id="u1") == "q|u1|3"
    assert lookup.invoke({"query": "q"}, user_id="u1", limit="5") == "q|u1|5"
    message = lookup.invoke(make_tool_call("lookup", {"query": "q"}, id="c1"), user_id="u2")
    assert message.content == "q|u2|3"
    assert asyncio.run(lookup.ainvoke({"query": "q"}, user_id="u3")) == "q|u3|3"
    assert lookup.batch([{"query": "a"}, {"query": "b"}], user_id="u4") == ["a|u4|3", "b|u4|3"]


def test_run_time_value_overrides_one_in_the_call_args() -> None:
    call = make_tool_call("lookup", {"query": "q", "user_id": "forged"}, id="c")
    assert lookup.invoke(call, user_id="real").content == "q|real|3"
    # Without a run-time value, a value in args is used (LangGraph injects into args).
    assert lookup.invoke(call).content == "q|forged|3"


def test_missing_injected_arg_is_a_validation_error_as_in_langchain() -> None:
    # LangChain: a missing injected value is a missing field of the validation error, so
    # handle_validation_error decides (not handle_tool_error).
    with pytest.raises(ValidationError, match="user_id"):
        lookup.invoke(make_tool_call("lookup", {"query": "q"}))
    handled = lookup.model_copy(update={"handle_validation_error": True})
    message = handled.invoke(make_tool_call("lookup", {"query": "q"}, id="c1"))
    assert (message.content, message.status) == ("Tool input validation error", "error")


def test_unknown_run_time_keyword_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"keyword arguments \['query'\]"):
        lookup.invoke({}, query="q", user_id="u")


def test_tool_call_id_injected_from_tool_call() -> None:
    message = create_report.invoke(make_tool_call("create_report", {"topic": "AI"}, id="call_123"))
    assert message == ToolMessage(
        content="Report on AI", name="create_report", tool_call_id="call_123"
    )
    assert echo_id.invoke(make_tool_call("echo_id", {"topic": "t"}, id="c9")).content == "t:c9"
    forged = make_tool_call("echo_id", {"topic": "t", "call": "forged"}, id="c10")
    assert echo_id.invoke(forged).content == "t:c10"


def test_tool_call_id_without_a_tool_call_is_a_clear_error() -> None:
    with pytest.raises(
        ConfigError, match=r"full model ToolCall.*InjectedToolCallId argument 'tool_call_id'"
    ):
        create_report.invoke({"topic": "AI"})
    with pytest.raises(ConfigError, match="argument 'call'"):
        echo_id.invoke("topic")
    no_id = {"name": "echo_id", "args": {"topic": "t"}, "id": None, "type": "tool_call"}
    with pytest.raises(ConfigError, match="carrying an id"):
        echo_id.invoke(no_id)
    with pytest.raises(ValueError, match="InjectedToolCallId"):
        asyncio.run(echo_id.ainvoke({"topic": "t"}))


def test_injected_field_in_an_explicit_args_schema() -> None:
    def scoped(query: str, tenant: str) -> str:
        return f"{tenant}:{query}"

    scoped_tool = StructuredTool.from_function(
        scoped, args_schema=ScopedArgs, description="Scoped search."
    )
    assert list(scoped_tool.args) == ["query"]
    assert scoped_tool.invoke("q", tenant="acme") == "acme:q"
