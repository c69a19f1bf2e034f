"""The @tool decorator in its four forms, and each of its options."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel, Field

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.tools import BaseTool, StructuredTool, Tool, make_tool_call, tool


class SearchArgs(BaseModel):
    """Arguments of the search."""

    query: str = Field(description="what to look for")
    k: int = Field(default=3, ge=1)


class FakeRunnable:
    """A runnable-like object: invoke/ainvoke taking one input."""

    description = "Echo the input in upper case."

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def invoke(self, value: Any) -> Any:
        self.seen.append(value)
        return value.upper() if isinstance(value, str) else {"got": value}

    async def ainvoke(self, value: Any) -> Any:
        return ("async", self.invoke(value))


class Adder:
    """Add a fixed offset."""

    def __init__(self, offset: int) -> None:
        self.offset = offset

    def __call__(self, x: int) -> int:
        return x + self.offset


def test_form_1_bare() -> None:
    @tool
    def search(query: str) -> str:
        """Search the web for a query."""
        return f"results for {query}"

    assert isinstance(search, StructuredTool)
    assert (search.name, search.description) == ("search", "Search the web for a query.")
    assert search.args == {"query": {"title": "Query", "type": "string"}}
    assert search.invoke("x") == "results for x"


def test_form_2_named() -> None:
    @tool("web_search")
    def search(query: str) -> str:
        """Search the web for a query."""
        return query

    assert search.name == "web_search"
    assert search.invoke({"query": "q"}) == "q"


def test_form_2_named_with_options() -> None:
    @tool("web_search", return_direct=True, description="Custom text.")
    def search(query: str) -> str:
        return query

    assert (search.name, search.description, search.return_direct) == (
        "web_search",
        "Custom text.",
        True,
    )


def test_form_3_options_parse_docstring_and_artifact() -> None:
    @tool(parse_docstring=True, response_format="content_and_artifact")
    def search(query: str, k: int = 2) -> tuple[str, dict[str, Any]]:
        """Search the web.

        Args:
            query: The search query string.
            k: How many results.
        """
        return "summary", {"full": [query] * k}

    assert search.name == "search"
    assert search.description == "Search the web."
    assert search.args == {
        "query": {"description": "The search query string.", "title": "Query", "type": "string"},
        "k": {"default": 2, "description": "How many results.", "title": "K", "type": "integer"},
    }
    message = search.invoke(make_tool_call("search", {"query": "q"}, id="c1"))
    assert (message.content, message.artifact) == ("summary", {"full": ["q", "q"]})


def test_form_3_invalid_docstring_raises_by_default() -> None:
    with pytest.raises(ValueError, match="no 'Args:' section"):

        @tool(parse_docstring=True)
        def search(query: str) -> str:
            """Search the web."""
            return query

    @tool(parse_docstring=True, error_on_invalid_docstring=False)
    def lenient(query: str) -> str:
        """Search the web."""
        return query

    assert lenient.description == "Search the web."


def test_form_4_runnable_like_single_input() -> None:
    runnable = FakeRunnable()
    upper = tool("uppercase", runnable)
    assert isinstance(upper, Tool)
    assert upper.description == "Echo the input in upper case."
    assert upper.invoke("abc") == "ABC"
    assert asyncio.run(upper.ainvoke("abc")) == ("async", "ABC")


def test_form_4_runnable_like_with_schema_gets_a_dict() -> None:
    runnable = FakeRunnable()
    wrapped = tool("search", runnable, args_schema=SearchArgs, description="Search.")
    assert wrapped.invoke({"query": "q", "k": "5"}) == {"got": {"query": "q", "k": 5}}
    assert wrapped.invoke({"query": "q"}) == {"got": {"query": "q", "k": 3}}
    assert asyncio.run(wrapped.ainvoke({"query": "q"})) == (
        "async",
        {"got": {"query": "q", "k": 3}},
    )


def test_form_4_input_schema_attribute_is_used() -> None:
    class WithSchema(FakeRunnable):
        input_schema = SearchArgs

    wrapped = tool("search", WithSchema())
    assert list(wrapped.args) == ["query", "k"]
    assert wrapped.invoke({"query": "q"}) == {"got": {"query": "q", "k": 3}}


def test_form_4_callable_object() -> None:
    wrapped = tool("add_five", Adder(5))
    assert isinstance(wrapped, StructuredTool)
    assert wrapped.description == "Add a fixed offset."
    assert wrapped.args == {"x": {"title": "X", "type": "integer"}}
    assert wrapped.invoke({"x": "1"}) == 6


def test_form_4_needs_a_description_for_runnables() -> None:
    class Mute:
        def invoke(self, value: Any) -> Any:
            return value

    with pytest.raises(ConfigError, match="pass description="):
        tool("mute", Mute())
    assert tool("mute", Mute(), description="Identity.").invoke("x") == "x"


def test_async_function_decorated() -> None:
    @tool
    async def fetch(url: str) -> str:
        """Fetch a URL."""
        return f"<{url}>"

    assert isinstance(fetch, StructuredTool)
    assert fetch.coroutine is not None
    assert asyncio.run(fetch.ainvoke({"url": "u"})) == "<u>"
    with pytest.raises(NotImplementedError, match="sync_over_async"):  # as in LangChain
        fetch.invoke({"url": "u"})
    fetch.sync_over_async = True  # the option: run it in a fresh event loop
    assert fetch.invoke({"url": "u"}) == "<u>"


def test_args_schema_option() -> None:
    @tool(args_schema=SearchArgs)
    def search(query: str, k: int) -> str:
        """Search."""
        return f"{query}:{k}"

    assert search.args_schema is SearchArgs
    assert search.invoke({"query": "q"}) == "q:3"


def test_infer_schema_false_gives_single_input_tool() -> None:
    @tool(infer_schema=False)
    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    assert isinstance(shout, Tool)
    assert shout.invoke("hey") == "HEY"
    assert list(shout.args) == ["tool_input"]


def test_return_direct_and_response_format_options() -> None:
    @tool(return_direct=True, response_format="content_and_artifact")
    def pair(x: int) -> tuple[str, int]:
        """Pair."""
        return str(x), x

    assert pair.return_direct is True
    assert pair.response_format == "content_and_artifact"
    assert pair.run_with_artifact({"x": 4}) == ("4", 4)


def test_unnameable_callables_are_rejected() -> None:
    with pytest.raises(ConfigError, match="cannot name a tool"):
        tool(lambda x: x)
    with pytest.raises(ConfigError, match="cannot name a tool"):
        tool(Adder(1))
    with pytest.raises(ConfigError, match="needs a string name"):
        tool(Adder(1), Adder(2))  # type: ignore[call-overload]


def test_every_form_returns_a_base_tool() -> None:
    def f(x: int) -> int:
        """F."""
        return x

    forms = [tool(f), tool("g")(f), tool(description="H.")(f), tool("i", Adder(0))]
    assert all(isinstance(t, BaseTool) for t in forms)
    assert [t.name for t in forms] == ["f", "g", "f", "i"]
