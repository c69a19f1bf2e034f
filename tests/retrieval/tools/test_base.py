"""BaseTool: inputs, outputs, error handling modes, artifacts, batch, Tool's single input."""

from __future__ import annotations

import asyncio
import pickle
import threading
from typing import Annotated, Any

import jsonschema
import pytest
from pydantic import BaseModel, Field, ValidationError

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.errors import ToolInputError
from ragtools.retrieval.tools import (
    BaseTool,
    InjectedToolArg,
    StructuredTool,
    Tool,
    ToolException,
    ToolMessage,
    make_tool_call,
)
from ragtools.retrieval.tools.exceptions import SchemaAnnotationError
from ragtools.retrieval.tools.output import ToolOutput


class Query(BaseModel):
    query: str


class Multiply(BaseTool):
    """A subclass whose schema is inferred from ``_run``."""

    name: str = "multiply"
    description: str = "Multiply two integers."

    def _run(self, a: int, b: int = 2) -> int:  # type: ignore[override]
        return a * b


def _failing(message: str = "index is empty") -> StructuredTool:
    def fail(query: str) -> str:
        """Always fails."""
        raise ToolException(message)

    return StructuredTool.from_function(fail)


def _pair(query: str) -> tuple[str, dict[str, str]]:
    """Return content and an artifact."""
    return f"summary of {query}", {"full": query}


class _Args(BaseModel):
    """Two numbers."""

    a: int = Field(description="first")
    b: int = Field(ge=0, description="second, non-negative")


def _sum(a: int, b: int) -> int:
    return a + b


def test_tool_exception_is_a_tool_input_error() -> None:
    assert issubclass(ToolException, ToolInputError)


def test_subclass_schema_inferred_from_run() -> None:
    tool = Multiply()
    assert tool.args == {
        "a": {"title": "A", "type": "integer"},
        "b": {"default": 2, "title": "B", "type": "integer"},
    }
    assert tool.invoke({"a": 3}) == 6
    assert tool.invoke("4") == 8  # a plain string fills the only required field
    # a dict reaches _run as it is, as in LangChain: no coercion, _run's own TypeError
    assert tool.invoke({"a": "3", "b": 2}) == "33"
    with pytest.raises(TypeError, match="'c'"):
        tool.invoke({"a": 3, "c": 1})
    with pytest.raises(TypeError, match="'a'"):
        tool.invoke({"b": 3})


def test_subclass_validating_its_inferred_schema_is_the_option() -> None:
    tool = Multiply(validate_inferred_args=True)
    assert tool.invoke({"a": "3", "b": "5"}) == 15  # coerced
    assert tool.invoke({"a": 3, "c": 1}) == 6  # an unknown key dropped
    with pytest.raises(ValidationError):
        tool.invoke({"b": 3})
    tool.handle_validation_error = True
    assert tool.invoke({"b": 3}) == "Tool input validation error"


def test_string_input_with_several_fields_is_a_tool_error() -> None:
    tool = StructuredTool.from_function(_sum, description="Add.")
    with pytest.raises(ToolInputError, match="JSON object"):
        tool.invoke("3")


def test_tool_call_in_gives_tool_message_out() -> None:
    message = Multiply().invoke(make_tool_call("multiply", {"a": 4, "b": 5}, id="call_1"))
    assert message == ToolMessage(
        content="20", tool_call_id="call_1", name="multiply", status="success"
    )


def test_plain_input_gives_content() -> None:
    assert Multiply().invoke({"a": 4, "b": 5}) == 20


def test_tool_call_without_id_still_gives_message() -> None:
    call = {"name": "multiply", "args": {"a": 1}, "id": None, "type": "tool_call"}
    message = Multiply().invoke(call)
    assert isinstance(message, ToolMessage)
    assert message.content == "2"
    assert message.tool_call_id == ""


def test_bad_input_type_is_config_error() -> None:
    with pytest.raises(ConfigError, match="string, a dict or a ToolCall"):
        Multiply().invoke(42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("handler", "expected"),
    [
        (True, "index is empty"),
        ("Search failed, try another query.", "Search failed, try another query."),
        (lambda exc: f"handled: {exc}", "handled: index is empty"),
    ],
)
def test_handle_tool_error_modes(handler: Any, expected: str) -> None:
    tool = _failing()
    tool.handle_tool_error = handler
    message = tool.invoke(make_tool_call("fail", {"query": "x"}, id="c1"))
    assert (message.content, message.status, message.artifact) == (expected, "error", None)
    assert tool.invoke({"query": "x"}) == expected
    output = tool.execute({"query": "x"})
    assert output == ToolOutput(content=expected, status="error")


def test_handle_tool_error_false_raises() -> None:
    tool = _failing()
    with pytest.raises(ToolException, match="index is empty"):
        tool.invoke(make_tool_call("fail", {"query": "x"}))


def test_handle_tool_error_true_with_empty_message() -> None:
    tool = _failing("")
    tool.handle_tool_error = True
    assert tool.invoke({"query": "x"}) == "Tool execution error"


def test_plain_tool_input_error_is_handled_too() -> None:
    def fail(query: str) -> str:
        """Fails with the base class."""
        raise ToolInputError("no terms in query")

    tool = StructuredTool.from_function(fail, handle_tool_error=True)
    assert tool.invoke({"query": "the"}) == "no terms in query"


def test_other_exceptions_propagate_even_when_handling() -> None:
    def buggy(query: str) -> str:
        """Has a bug."""
        raise KeyError("bug")

    tool = StructuredTool.from_function(buggy, handle_tool_error=True)
    with pytest.raises(KeyError):
        tool.invoke(make_tool_call("buggy", {"query": "x"}))


@pytest.mark.parametrize(
    ("handler", "expected"),
    [
        (True, "Tool input validation error"),
        ("Give b as a non-negative integer.", "Give b as a non-negative integer."),
        (
            lambda exc: f"{type(exc).__name__}: {exc.error_count()} error",
            "ValidationError: 1 error",
        ),
    ],
)
def test_handle_validation_error_modes(handler: Any, expected: str) -> None:
    tool = StructuredTool.from_function(
        _sum, description="Add.", args_schema=_Args, handle_validation_error=handler
    )
    message = tool.invoke(make_tool_call("_sum", {"a": 1, "b": -1}, id="c2"))
    assert (message.content, message.status) == (expected, "error")


def test_handle_validation_error_false_raises() -> None:
    tool = StructuredTool.from_function(_sum, description="Add.", args_schema=_Args)
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        tool.invoke({"a": 1, "b": -1})
    with pytest.raises(ValidationError, match="Extra inputs"):
        StructuredTool.from_function(_sum, description="Add.", strict=True).invoke(
            {"a": 1, "b": 2, "c": 3}
        )


def test_validation_handler_does_not_catch_tool_errors() -> None:
    tool = _failing()
    tool.handle_validation_error = True
    with pytest.raises(ToolException):
        tool.invoke({"query": "x"})


def test_content_and_artifact_paths() -> None:
    tool = StructuredTool.from_function(_pair, response_format="content_and_artifact")
    message = tool.invoke(make_tool_call("_pair", {"query": "q"}, id="c3"))
    assert (message.content, message.artifact) == ("summary of q", {"full": "q"})
    assert tool.invoke({"query": "q"}) == "summary of q"
    assert tool.run_with_artifact({"query": "q"}) == ("summary of q", {"full": "q"})
    assert tool.run_with_artifact("q") == ("summary of q", {"full": "q"})
    assert asyncio.run(tool.arun_with_artifact({"query": "q"})) == ("summary of q", {"full": "q"})
    assert tool.execute("q") == ToolOutput("summary of q", {"full": "q"}, "success", None)
    assert asyncio.run(tool.ainvoke(make_tool_call("_pair", {"query": "q"}))).artifact == {
        "full": "q"
    }


def test_content_and_artifact_requires_a_pair() -> None:
    def single(query: str) -> str:
        """Forgets the artifact."""
        return query

    tool = StructuredTool.from_function(single, response_format="content_and_artifact")
    with pytest.raises(ConfigError, match=r"2-tuple.*returned str"):
        tool.invoke({"query": "q"})
    tool.handle_tool_error = True  # a contract bug is never shown to the model
    with pytest.raises(ConfigError):
        tool.invoke(make_tool_call("single", {"query": "q"}))


def test_non_string_content_is_serialised_in_messages() -> None:
    def as_dict(query: str) -> dict[str, Any]:
        """Returns a dict."""
        return {"query": query, "n": 1}

    tool = StructuredTool.from_function(as_dict)
    assert tool.invoke({"query": "é"}) == {"query": "é", "n": 1}
    message = tool.invoke(make_tool_call("as_dict", {"query": "é"}))
    assert message.content == '{"query": "é", "n": 1}'


def test_returned_tool_message_passes_through() -> None:
    def own(query: str) -> ToolMessage:
        """Builds its own message."""
        return ToolMessage(content=query, tool_call_id="mine", name="own")

    tool = StructuredTool.from_function(own)
    assert tool.invoke(make_tool_call("own", {"query": "q"}, id="c")).tool_call_id == "mine"


def test_fields_carried() -> None:
    tool = StructuredTool.from_function(
        _sum,
        description="Add.",
        return_direct=True,
        extras={"cache_control": {"type": "ephemeral"}},
        metadata={"owner": "search-team"},
    )
    assert tool.return_direct is True
    assert tool.extras == {"cache_control": {"type": "ephemeral"}}
    assert tool.metadata == {"owner": "search-team"}


def test_bad_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="args_schema must be"):
        StructuredTool(name="x", func=_sum, args_schema=int)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="handle_tool_error must be"):
        StructuredTool(name="x", func=_sum, handle_tool_error=3)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="name is empty"):
        StructuredTool(name=" ", func=_sum)
    with pytest.raises(ValidationError, match="Extra inputs"):
        StructuredTool(name="x", func=_sum, retrun_direct=True)  # type: ignore[call-arg]


def test_json_schema_dict_args_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
        "additionalProperties": False,
    }

    def forecast(city: str, days: int = 1) -> str:
        return f"{city}:{days}"

    tool = StructuredTool.from_function(forecast, description="Weather.", args_schema=schema)
    assert tool.tool_call_schema == {**schema, "description": "Weather."}
    assert tool.args == schema["properties"]
    assert tool.invoke({"city": "Oslo", "days": 2}) == "Oslo:2"
    with pytest.raises(jsonschema.ValidationError):
        tool.invoke({"city": "Oslo", "days": 0})
    tool.handle_validation_error = "Bad arguments."
    message = tool.invoke(make_tool_call("forecast", {"days": 2}))
    assert (message.content, message.status) == ("Bad arguments.", "error")


def test_batch_keeps_order_and_can_return_exceptions() -> None:
    tool = Multiply(validate_inferred_args=True)
    assert tool.batch([{"a": i} for i in range(7)], {"max_concurrency": 3}) == [
        0,
        2,
        4,
        6,
        8,
        10,
        12,
    ]
    results = tool.batch([{"a": 1}, {"a": "x"}], return_exceptions=True)
    assert results[0] == 2
    assert isinstance(results[1], ValidationError)
    with pytest.raises(ValidationError):
        tool.batch([{"a": 1}, {"a": "x"}])
    calls = [make_tool_call("multiply", {"a": i}, id=f"c{i}") for i in range(3)]
    assert [m.tool_call_id for m in tool.batch(calls)] == ["c0", "c1", "c2"]


def test_abatch_keeps_order() -> None:
    tool = Multiply(validate_inferred_args=True)
    assert asyncio.run(tool.abatch([{"a": 3}, {"a": 1}, {"a": 2}], {"max_concurrency": 2})) == [
        6,
        2,
        4,
    ]
    results = asyncio.run(tool.abatch([{"a": "x"}, {"a": 1}], return_exceptions=True))
    assert isinstance(results[0], ValidationError)
    assert results[1] == 2


def test_default_arun_runs_in_a_thread_without_blocking_the_loop() -> None:
    released = threading.Event()

    class Waiter(BaseTool):
        name: str = "waiter"

        def _run(self) -> bool:  # type: ignore[override]
            # Only returns True if the event loop kept running while this thread waited.
            return released.wait(timeout=30)

    async def main() -> bool:
        task = asyncio.create_task(Waiter().ainvoke({}))
        await asyncio.sleep(0)
        released.set()
        return bool(await task)

    assert asyncio.run(main()) is True


def test_simple_tool_single_input() -> None:
    tool = Tool(name="shout", func=str.upper, description="Upper-case text.")
    assert tool.invoke("hi") == "HI"
    assert tool.invoke({"anything": "hi"}) == "HI"
    assert tool.args == {"tool_input": {"type": "string"}}  # LangChain's Tool.args
    assert asyncio.run(tool.ainvoke("yo")) == "YO"


def test_simple_tool_rejects_two_arguments() -> None:
    tool = Tool(name="shout", func=str.upper, description="Upper-case text.")
    with pytest.raises(ToolException, match="StructuredTool"):
        tool.invoke({"a": "x", "b": "y"})
    tool.handle_tool_error = True
    message = tool.invoke(make_tool_call("shout", {"a": "x", "b": "y"}))
    assert message.status == "error"
    assert "StructuredTool" in message.content
    adder = Tool(name="add", func=_sum, description="Add.")  # accepted, as in LangChain
    with pytest.raises(ToolException, match="StructuredTool"):  # and fails at the call
        adder.invoke({"a": 1, "b": 2})


def test_simple_tool_from_function_with_coroutine_only() -> None:
    async def echo(text: str) -> str:
        return text * 2

    tool = Tool.from_function(None, name="echo", description="Echo.", coroutine=echo)
    assert asyncio.run(tool.ainvoke("ab")) == "abab"
    with pytest.raises(NotImplementedError, match="sync_over_async"):  # as in LangChain
        tool.invoke("ab")
    tool.sync_over_async = True
    assert tool.invoke("ab") == "abab"


def test_parse_input_gives_what_run_would_get_without_running() -> None:
    runs: list[Any] = []

    def scoped(query: str, tenant: Annotated[str, InjectedToolArg], k: int = 3) -> str:
        """Search within a tenant."""
        runs.append(query)
        return query

    scoped_tool = StructuredTool.from_function(scoped)
    expected = {"query": "q", "tenant": "acme", "k": 3}
    assert scoped_tool.parse_input({"query": "q"}, tenant="acme") == expected
    assert Multiply().parse_input("4") == {"a": 4, "b": 2}  # a string fills the required field
    call = make_tool_call("scoped", {"query": "q", "k": "5", "tenant": "model"}, id="c1")
    assert scoped_tool.parse_input(call, tenant="acme") == {**expected, "k": 5}  # kwargs win
    with pytest.raises(ValidationError):
        scoped_tool.parse_input({"query": "q", "k": "many"}, tenant="acme")
    with pytest.raises(ValidationError, match="tenant"):
        scoped_tool.parse_input({"query": "q"})
    assert runs == []


def test_args_schema_annotated_as_an_instance_is_refused_at_class_creation() -> None:
    with pytest.raises(SchemaAnnotationError, match="type\\[BaseModel\\]") as caught:

        class Misannotated(BaseTool):
            name: str = "m"
            args_schema: BaseModel = Query  # type: ignore[assignment]

            def _run(self, query: str) -> str:  # type: ignore[override]
                return query

    assert isinstance(caught.value, TypeError)  # LangChain's kind
    assert isinstance(caught.value, ConfigError)  # ours: a construction mistake


def test_tool_pickles_after_its_schemas_were_built() -> None:
    """LangChain's tools cross process boundaries by pickle (multiprocessing, Ray), so ours
    must too (an item of LangChain's own suite). In memory only: nothing here, and nothing in
    the package, writes a pickle to disk."""
    tool = Multiply()
    schema = tool.tool_call_schema  # fills the memo with classes built at run time
    restored = pickle.loads(pickle.dumps(tool))
    assert restored.tool_call_json_schema() == tool.tool_call_json_schema()
    assert restored.invoke({"a": 3}) == tool.invoke({"a": 3})
    assert tool.tool_call_schema is schema  # pickling left the live memo alone
