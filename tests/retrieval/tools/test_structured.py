"""StructuredTool.from_function: sync/async from both entry points, descriptions, config."""

from __future__ import annotations

import asyncio
import functools
import threading
from typing import Any

import pytest
from pydantic import BaseModel

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.tools import RunConfig, StructuredTool, make_tool_call


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def aadd(a: int, b: int) -> int:
    """Add two integers, asynchronously."""
    await asyncio.sleep(0)
    return a + b


def test_coercion_calls_add_2_4() -> None:
    tool = StructuredTool.from_function(add)
    assert tool.invoke({"a": 2, "b": "4"}) == 6
    assert tool.name == "add"
    assert tool.description == "Add two integers."


def test_sync_function_from_invoke_and_ainvoke() -> None:
    caller_thread = threading.get_ident()
    seen: list[int] = []

    def where(x: int) -> int:
        """Record the thread."""
        seen.append(threading.get_ident())
        return x

    tool = StructuredTool.from_function(where)
    assert tool.invoke({"x": 1}) == 1
    assert asyncio.run(tool.ainvoke({"x": 2})) == 2
    assert seen[0] == caller_thread
    assert seen[1] != caller_thread  # ainvoke ran the sync function in a worker thread


def test_async_only_function_refuses_sync_invoke_by_default() -> None:
    tool = StructuredTool.from_function(coroutine=aadd)
    assert asyncio.run(tool.ainvoke({"a": 3, "b": 4})) == 7
    with pytest.raises(NotImplementedError, match="does not support sync invocation"):
        tool.invoke({"a": 1, "b": 2})  # LangChain's behaviour


def test_async_function_from_invoke_and_ainvoke() -> None:
    tool = StructuredTool.from_function(coroutine=aadd, sync_over_async=True)
    assert tool.name == "aadd"
    assert tool.func is None
    assert tool.invoke({"a": 1, "b": "2"}) == 3
    assert asyncio.run(tool.ainvoke({"a": 3, "b": 4})) == 7
    message = tool.invoke(make_tool_call("aadd", {"a": 1, "b": 1}, id="c"))
    assert message.content == "2"


def test_async_only_tool_invoked_synchronously_inside_a_running_loop() -> None:
    tool = StructuredTool.from_function(coroutine=aadd, sync_over_async=True)

    async def main() -> Any:
        return tool.invoke({"a": 5, "b": 6})  # sync call from async code must not deadlock

    assert asyncio.run(main()) == 11


def test_both_functions_each_used_by_its_entry_point() -> None:
    def sync_version(x: int) -> str:
        """Sync."""
        return f"sync {x}"

    async def async_version(x: int) -> str:
        return f"async {x}"

    tool = StructuredTool.from_function(sync_version, async_version)
    assert tool.invoke({"x": 1}) == "sync 1"
    assert asyncio.run(tool.ainvoke({"x": 1})) == "async 1"


def test_description_sources() -> None:
    class Schema(BaseModel):
        """From the schema."""

        a: int
        b: int

    def undocumented(a: int, b: int) -> int:
        return a + b

    assert StructuredTool.from_function(add, description="Given.").description == "Given."
    with_schema = StructuredTool.from_function(undocumented, args_schema=Schema)
    assert with_schema.description == "From the schema."
    with pytest.raises(ConfigError, match=r"must have a docstring.*pass description="):
        StructuredTool.from_function(undocumented)


def test_docstring_is_taken_as_langchain_takes_it() -> None:
    def documented(x: int) -> int:
        """First line.

        Second paragraph, indented in source.
        """
        return x

    def indented(x: int) -> int:
        """
        Both lines indented.
        Second.
        """
        return x

    # textwrap.dedent, then strip: a summary on the first line keeps the rest indented
    tool = StructuredTool.from_function(documented)
    assert tool.description == "First line.\n\n        Second paragraph, indented in source."
    assert StructuredTool.from_function(indented).description == "Both lines indented.\nSecond."


def test_explicit_args_schema_wins_over_inference() -> None:
    class Narrow(BaseModel):
        a: int
        b: int = 10

    tool = StructuredTool.from_function(add, args_schema=Narrow)
    assert tool.args_schema is Narrow
    assert tool.invoke({"a": 1}) == 11


def test_infer_schema_false_passes_arguments_unchecked() -> None:
    def collect(**kwargs: Any) -> dict[str, Any]:
        """Collect."""
        return kwargs

    tool = StructuredTool.from_function(collect, infer_schema=False)
    assert tool.args == {}
    assert tool.invoke({"x": 1, "y": "z"}) == {"x": 1, "y": "z"}


def test_var_keyword_function_accepts_extra_arguments() -> None:
    def tagged(name: str, **tags: str) -> str:
        """Tag a name."""
        return name + "".join(f" {k}={v}" for k, v in sorted(tags.items()))

    tool = StructuredTool.from_function(tagged, variadic="extra_keys")
    assert tool.invoke({"name": "n", "b": "2", "a": "1"}) == "n a=1 b=2"
    assert set(tool.args) == {"name"}
    # the default shows **tags as a field (LangChain's schema) and drops unnamed keys
    default = StructuredTool.from_function(tagged)
    assert set(default.args) == {"name", "tags"}
    assert default.invoke({"name": "n", "b": "2"}) == "n"
    assert default.invoke({"name": "n", "tags": {"b": "2", "a": "1"}}) == "n a=1 b=2"


def test_run_config_is_passed_and_hidden() -> None:
    def configured(query: str, config: RunConfig) -> str:
        """Read the tenant from the config."""
        return f"{query}@{config.get('configurable', {}).get('tenant')}"

    tool = StructuredTool.from_function(configured)
    assert list(tool.args) == ["query"]
    config: RunConfig = {"configurable": {"tenant": "acme"}}
    assert tool.invoke({"query": "q"}, config) == "q@acme"
    assert asyncio.run(tool.ainvoke({"query": "q"}, config)) == "q@acme"
    assert tool.invoke({"query": "q"}) == "q@None"


def test_callable_object_and_partial() -> None:
    class Scaler:
        """Scale a number."""

        def __call__(self, x: float, factor: float = 2.0) -> float:
            return x * factor

    tool = StructuredTool.from_function(Scaler(), name="scale")
    assert list(tool.args) == ["x", "factor"]
    assert tool.description == "Scale a number."
    assert tool.invoke({"x": "1.5"}) == 3.0

    triple = functools.partial(Scaler().__call__, factor=3.0)
    partial_tool = StructuredTool.from_function(triple, name="triple", description="Triple.")
    assert partial_tool.invoke({"x": 2}) == 6.0


def test_from_function_needs_a_function_and_a_name() -> None:
    with pytest.raises(ConfigError, match="func and/or coroutine"):
        StructuredTool.from_function()
    with pytest.raises(ConfigError, match="func and/or coroutine"):
        StructuredTool(name="x")
