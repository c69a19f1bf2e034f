"""Seed 000's concepts the first summary missed, run side by side with langchain-core.

``is_single_input``, ``stream``/``astream``, ``callbacks`` injected at run time,
``convert_runnable_to_tool`` (and its "Tool input must be str or dict" ``TypeError``), the
seed's own form-4 example, and pydantic v1 argument models. Where langchain-core has the
concept, both run on the same input and must give the same result.
"""

from __future__ import annotations

import asyncio
import typing
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import StructuredTool as LCStructuredTool
from langchain_core.tools import Tool as LCTool
from langchain_core.tools import convert_runnable_to_tool as lc_convert
from langchain_core.tools import tool as lc_tool
from pydantic import BaseModel
from pydantic import v1 as pydantic_v1
from typing_extensions import TypedDict

from ragtools.retrieval.tools import CachedTool, StructuredTool, Tool, make_tool_call, tool
from ragtools.retrieval.tools.convert import RunnableTool, convert_runnable_to_tool
from ragtools.retrieval.tools.node import ToolsNode


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def echo(text: str) -> str:
    """Echo the text."""
    return text


def search(query: str, **kwargs: Any) -> str:
    """Search with free options."""
    return query


class Pair(TypedDict):
    a: int
    b: int


def multiply(pair: Pair) -> int:
    return pair["a"] * pair["b"]


def shout(text: str) -> str:
    return text.upper()


def untyped(mapping: dict[str, int]) -> int:
    return len(mapping)


class PointV1(pydantic_v1.BaseModel):
    x: int
    y: int = 0


class PointV2(BaseModel):
    x: int


class MoveArgsV1(pydantic_v1.BaseModel):
    """Move a point."""

    point: PointV1
    dx: int = pydantic_v1.Field(1, description="Step along x.")


def norm1(point: PointV1) -> int:
    """Manhattan norm of a point."""
    return abs(point.x) + abs(point.y)


def mixed(a: PointV1, b: PointV2) -> int:
    """Mixes pydantic versions."""
    return a.x + b.x


# LangChain reads some annotations without resolving them (``from __future__ import
# annotations`` makes them strings here), so give both libraries the evaluated ones.
for _func in (multiply, shout, untyped, norm1, mixed):
    _func.__annotations__ = typing.get_type_hints(_func)


class TestIsSingleInput:
    @pytest.mark.parametrize("func", [add, echo, search])
    def test_same_as_langchain(self, func: Any) -> None:
        assert tool(func).is_single_input == lc_tool(func).is_single_input

    def test_values(self) -> None:
        assert [tool(f).is_single_input for f in (add, echo, search)] == [False, True, True]
        single = Tool(name="t", func=echo, description="Echo.")
        assert single.is_single_input
        assert LCTool(name="t", func=echo, description="Echo.").is_single_input


class TestStream:
    def test_one_item_like_a_runnable(self) -> None:
        ours, theirs = tool(add), lc_tool(add)
        assert (
            list(ours.stream({"a": 1, "b": "2"})) == list(theirs.stream({"a": 1, "b": "2"})) == [3]
        )

    def test_astream_and_a_tool_call(self) -> None:
        async def collect(tool_obj: Any, value: Any) -> list[Any]:
            return [item async for item in tool_obj.astream(value)]

        call = make_tool_call("add", {"a": 2, "b": 2}, id="s1")
        ours = asyncio.run(collect(tool(add), call))
        theirs = asyncio.run(collect(lc_tool(add), call))
        assert len(ours) == len(theirs) == 1
        assert (ours[0].content, ours[0].tool_call_id) == (
            theirs[0].content,
            theirs[0].tool_call_id,
        )

    def test_node_invokes_a_tool_whose_stream_is_the_default(self) -> None:
        @tool(response_format="content_and_artifact")
        def find(query: str) -> tuple[str, list[str]]:
            """Find things."""
            return f"found {query}", ["a"]

        for node_tool in (find, CachedTool(find)):  # a delegating wrapper is judged the same
            call = make_tool_call("find", {"query": "q"}, id="c")
            chunks = list(ToolsNode([node_tool]).stream([call]))
            assert chunks[-1].message is not None and chunks[-1].message.artifact == ["a"]


class TestCallbacksInjection:
    def test_declared_callbacks_are_injected_not_shown(self) -> None:
        seen: list[Any] = []

        def fetch(url: str, callbacks: Any = None) -> str:
            """Fetch a URL."""
            seen.append(callbacks)
            return url

        marker = object()
        ours = tool(fetch)
        assert list(ours.args) == list(lc_tool(fetch).args) == ["url"]
        assert ours.invoke({"url": "u"}) == "u"
        assert ours.invoke({"url": "u"}, {"callbacks": marker}) == "u"
        assert asyncio.run(ours.ainvoke({"url": "u"}, {"callbacks": marker})) == "u"
        assert seen == [None, marker, marker]

    def test_required_callbacks_no_longer_fail(self) -> None:
        def fetch(url: str, callbacks: Any) -> str:
            """Fetch a URL."""
            return f"{url}:{callbacks is None}"

        assert tool(fetch).invoke({"url": "u"}) == "u:True"
        assert Tool(name="f", func=fetch, description="Fetch.").invoke("u") == "u:True"


class TestConvertRunnableToTool:
    def test_string_input_gives_a_single_input_tool(self) -> None:
        ours = convert_runnable_to_tool(RunnableLambda(shout), name="up", description="Upper.")
        theirs = lc_convert(RunnableLambda(shout), name="up", description="Upper.")
        assert isinstance(ours, Tool) and isinstance(theirs, LCTool)
        assert ours.invoke("abc") == theirs.invoke("abc") == "ABC"
        assert ours.is_single_input == theirs.is_single_input

    def test_typed_dict_input_gives_a_structured_tool(self) -> None:
        ours = convert_runnable_to_tool(
            RunnableLambda(multiply), name="mul", description="Multiply."
        )
        theirs = lc_convert(RunnableLambda(multiply), name="mul", description="Multiply.")
        assert isinstance(ours, StructuredTool) and isinstance(theirs, LCStructuredTool)
        assert ours.args == theirs.args
        assert ours.invoke({"a": "3", "b": 4}) == theirs.invoke({"a": "3", "b": 4}) == 12
        assert asyncio.run(ours.ainvoke({"a": 2, "b": 5})) == 10

    def test_arg_types(self) -> None:
        runnable = RunnableLambda(lambda d: d["a"] - d["b"])
        kinds = {"a": int, "b": int}
        ours = convert_runnable_to_tool(runnable, name="sub", description="Sub.", arg_types=kinds)
        theirs = lc_convert(runnable, name="sub", description="Sub.", arg_types=kinds)
        assert ours.args == theirs.args
        assert ours.invoke({"a": "7", "b": 2}) == theirs.invoke({"a": "7", "b": 2}) == 5

    def test_untyped_dict_input_is_the_same_type_error(self) -> None:
        with pytest.raises(TypeError, match="Tool input must be str or dict") as theirs:
            lc_convert(RunnableLambda(untyped), name="n", description="N.")
        with pytest.raises(TypeError, match="Tool input must be str or dict") as ours:
            convert_runnable_to_tool(RunnableLambda(untyped), name="n", description="N.")
        assert type(ours.value) is type(theirs.value) is TypeError

    def test_defaults_name_and_description_like_langchain(self) -> None:
        ours = convert_runnable_to_tool(RunnableLambda(shout))
        theirs = lc_convert(RunnableLambda(shout))
        assert (ours.name, ours.description) == (theirs.name, theirs.description)

    def test_callbacks_reach_the_runnable(self) -> None:
        class Recorder(BaseCallbackHandler):
            def __init__(self) -> None:
                self.starts = 0

            def on_chain_start(self, *args: Any, **kwargs: Any) -> None:
                self.starts += 1

        mul = RunnableLambda(multiply)
        ours = convert_runnable_to_tool(mul, name="mul", description="Multiply.")
        theirs = lc_convert(mul, name="mul", description="Multiply.")
        mine, langchains = Recorder(), Recorder()
        assert ours.invoke({"a": 2, "b": 3}, {"callbacks": [mine]}) == 6
        assert theirs.invoke({"a": 2, "b": 3}, {"callbacks": [langchains]}) == 6
        assert mine.starts >= 1 and langchains.starts >= 1


class TestFormFourSeedExample:
    def test_uppercase_example_from_the_seed(self) -> None:
        runnable = RunnableLambda(lambda x: x["query"].upper())
        uppercase = tool("uppercase", runnable)
        assert isinstance(uppercase, RunnableTool)
        assert uppercase.invoke({"query": "abc"}) == "ABC"
        assert asyncio.run(uppercase.ainvoke({"query": "abc"})) == "ABC"
        assert "RunnableLambda" in uppercase.description  # LangChain's default: the repr
        message = uppercase.invoke(make_tool_call("uppercase", {"query": "hi"}, id="c1"))
        assert message.content == "HI"


class TestPydanticV1:
    def test_v1_annotation_same_as_langchain(self) -> None:
        ours, theirs = tool(norm1), lc_tool(norm1)
        arguments = {"point": {"x": "-3", "y": 4}}
        assert ours.invoke(arguments) == theirs.invoke(arguments) == 7
        # LangChain shows only a dangling "$ref" to v1 definitions; ours inlines the v1 schema.
        assert ours.args["point"]["properties"] == PointV1.schema()["properties"]

    def test_v1_args_schema_same_as_langchain(self) -> None:
        def move(point: PointV1, dx: int = 1) -> int:
            """Move a point."""
            assert isinstance(point, PointV1)
            return point.x + dx

        # langchain-core 1.7 accepts a v1 args_schema but fails calling it (TypeError from
        # BaseModel.validate), so this one is checked against the values v1 itself gives.
        ours = StructuredTool.from_function(move, args_schema=MoveArgsV1)
        for arguments in ({"point": {"x": 1}}, {"point": {"x": "2"}, "dx": "3"}):
            expected = MoveArgsV1.parse_obj(arguments)
            assert ours.invoke(arguments) == expected.point.x + expected.dx
        assert ours.args["dx"]["description"] == "Step along x."
        assert ours.description == "Move a point."

    def test_mixing_v1_and_v2_is_not_implemented(self) -> None:
        with pytest.raises(NotImplementedError):
            lc_tool(mixed)
        with pytest.raises(NotImplementedError, match="mixes pydantic v1 and v2"):
            tool(mixed)
