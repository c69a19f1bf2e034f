"""The behaviour gaps of issue #34, each run against langchain-core side by side.

Every test builds the same tool with LangChain's API and with ours (``impl`` is the module
pair) and asserts the same observable behaviour: the value returned, or the kind of error.
Skipped only where langchain-core is not installed.
"""

from __future__ import annotations

import asyncio
import typing
from types import SimpleNamespace
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, ValidationError
from pydantic.v1 import BaseModel as BaseModelV1

lc_tools = pytest.importorskip("langchain_core.tools")
lc_fc = pytest.importorskip("langchain_core.utils.function_calling")
from langchain_core.documents import Document  # noqa: E402
from langchain_core.messages import ToolMessage as LCToolMessage  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda  # noqa: E402

from ragtools.retrieval import tools as rt  # noqa: E402
from ragtools.retrieval.tools import ToolsNode  # noqa: E402
from ragtools.retrieval.tools.render import convert_to_openai_function  # noqa: E402

_SHARED = (
    "tool",
    "Tool",
    "BaseTool",
    "StructuredTool",
    "InjectedToolArg",
    "InjectedToolCallId",
    "convert_runnable_to_tool",
    "ToolException",
)
LANGCHAIN = SimpleNamespace(
    **{name: getattr(lc_tools, name) for name in _SHARED},
    convert_to_openai_tool=lc_fc.convert_to_openai_tool,
)
RAGTOOLS = SimpleNamespace(
    **{name: getattr(rt, name) for name in _SHARED},
    convert_to_openai_tool=rt.convert_to_openai_tool,
)
both = pytest.mark.parametrize("impl", [LANGCHAIN, RAGTOOLS], ids=["langchain", "ragtools"])


def _call(args: dict[str, Any], name: str = "t", call_id: str = "c1") -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def _typed(func: Any, **hints: Any) -> Any:
    """``func`` with the given annotations evaluated (annotations are postponed here, and a
    marker taken from the ``impl`` under test cannot be named at module level)."""
    func.__annotations__.update(hints)
    return func


class Query(BaseModel):
    query: str


def test_tool_message_is_langchains() -> None:
    assert rt.ToolMessage is LCToolMessage


@both
def test_injected_arg_missing_from_a_custom_args_schema_is_passed(impl: Any) -> None:
    def search(query: str, user: str) -> str:
        """Search."""
        return f"{query}/{user}"

    search = impl.tool(args_schema=Query)(_typed(search, user=Annotated[str, impl.InjectedToolArg]))
    assert search.invoke({"query": "q", "user": "u1"}) == "q/u1"
    assert search.tool_call_schema.model_json_schema()["properties"] == {
        "query": {"title": "Query", "type": "string"}
    }


@pytest.mark.parametrize("impl", [LANGCHAIN, RAGTOOLS], ids=["langchain", "ragtools"])
def test_injected_tool_call_id_missing_from_a_custom_args_schema(impl: Any) -> None:
    # The one deliberate difference here: langchain-core 1.8.3 passes unlisted injected
    # arguments only from the call's args, so an unlisted InjectedToolCallId is never filled
    # and the function gets a TypeError; ragtools fills it from the ToolCall, as it fills a
    # listed one (the issue asks for the call id to reach the function).
    def search(query: str, call_id: str) -> str:
        """Search."""
        return f"{query}/{call_id}"

    search = impl.tool(args_schema=Query)(
        _typed(search, call_id=Annotated[str, impl.InjectedToolCallId])
    )
    if impl is LANGCHAIN:
        with pytest.raises(TypeError, match="call_id"):
            search.invoke(_call({"query": "q"}, "search", "id7"))
        return
    message = search.invoke(_call({"query": "q"}, "search", "id7"))
    assert (message.content, message.tool_call_id) == ("q/id7", "id7")


@both
def test_returned_tool_message_is_kept(impl: Any) -> None:
    def report(topic: str, call_id: str) -> LCToolMessage:
        """Report."""
        return LCToolMessage(content=f"on {topic}", tool_call_id=call_id, artifact={"n": 1})

    report = impl.tool(_typed(report, call_id=Annotated[str, impl.InjectedToolCallId]))
    message = report.invoke(_call({"topic": "AI"}, "report"))
    assert message == LCToolMessage(content="on AI", tool_call_id="c1", artifact={"n": 1})


def test_returned_command_passes_through_invoke_and_tools_node() -> None:
    types = pytest.importorskip("langgraph.types")

    def make(impl: Any) -> Any:
        @impl.tool
        def goto(step: str) -> Any:
            """Go to a step."""
            return types.Command(goto=step)

        return goto

    for impl in (LANGCHAIN, RAGTOOLS):
        assert make(impl).invoke(_call({"step": "end"}, "goto")) == types.Command(goto="end")
    [result] = ToolsNode([make(RAGTOOLS)]).invoke([_call({"step": "end"}, "goto")])
    assert result == types.Command(goto="end")


@both
def test_extra_keys_are_ignored_by_default(impl: Any) -> None:
    @impl.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    assert add.invoke({"a": 1, "b": 2, "c": 3}) == 3
    assert "additionalProperties" not in impl.convert_to_openai_tool(add)["function"]["parameters"]


def _variadic(a: int, *rest: int, b: str = "x", **opts: str) -> str:
    """Join the arguments."""
    return f"{a} {rest} {b} {sorted(opts.items())}"


@both
def test_variadic_parameters_are_fields_by_default(impl: Any) -> None:
    tool = impl.tool(_variadic)
    assert set(tool.args) == {"a", "rest", "b", "opts"}
    assert tool.args["rest"] == {
        "default": None,
        "items": {"type": "integer"},
        "title": "Rest",
        "type": "array",
    }
    assert tool.args["opts"] == {
        "additionalProperties": {"type": "string"},
        "default": None,
        "title": "Opts",
        "type": "object",
    }

    class Free(impl.BaseTool):  # type: ignore[misc,name-defined]
        name: str = "free"
        description: str = "Takes anything."

        def _run(self, *args: Any, run_manager: Any = None, **kwargs: Any) -> str:
            return "ok"

    assert set(Free().args) == {"args", "kwargs"}
    assert Free().is_single_input  # 'kwargs' is not counted, as in LangChain


def test_variadic_schema_and_export_equal_langchains() -> None:
    ours = RAGTOOLS.tool(_variadic)
    theirs = LANGCHAIN.tool(_variadic)
    assert ours.tool_call_schema.model_json_schema() == (
        theirs.tool_call_schema.model_json_schema()
    )
    assert rt.convert_to_openai_tool(ours) == lc_fc.convert_to_openai_tool(theirs)
    assert rt.convert_to_openai_tool(_variadic) == lc_fc.convert_to_openai_tool(_variadic)


def test_variadic_fields_are_spread_into_the_call() -> None:
    # LangChain passes the fields by name (into **opts, or a TypeError without it); ours
    # spreads them, so the call does what the schema shown to the model says.
    tool = rt.tool(_variadic)
    args = {"a": 1, "rest": [2, "3"], "b": "y", "opts": {"k": "v"}}
    assert tool.invoke(args) == "1 (2, 3) y [('k', 'v')]"
    assert asyncio.run(tool.ainvoke(args)) == "1 (2, 3) y [('k', 'v')]"
    assert tool.invoke({"a": 1, "rest": [2]}) == "1 (2,) x []"
    # unnamed keys are dropped (LangChain's opts then holds rest=None and opts=None)
    assert tool.invoke({"a": 1, "z": "dropped"}) == "1 () x []"

    @rt.tool
    async def gather(first: str, *more: str) -> str:
        """Join words."""
        return " ".join((first, *more))

    assert asyncio.run(gather.ainvoke({"first": "a", "more": ["b", "c"]})) == "a b c"

    class Free(rt.BaseTool):
        name: str = "free"
        description: str = "Takes anything."
        validate_inferred_args: bool = True

        def _run(self, *args: Any, **kwargs: Any) -> str:
            return f"{args} {kwargs}"

    assert Free().invoke({"args": [1], "kwargs": {"y": 2}}) == "(1,) {'y': 2}"
    assert asyncio.run(Free().ainvoke({"args": [1]})) == "(1,) {}"


def test_variadic_extra_keys_option() -> None:
    tool = rt.tool(variadic="extra_keys")(_variadic)
    assert set(tool.args) == {"a", "b"}
    assert tool.tool_call_json_schema()["additionalProperties"] is True
    assert tool.invoke({"a": 1, "z": "kept"}) == "1 () x [('z', 'kept')]"
    built = rt.StructuredTool.from_function(_variadic, variadic="extra_keys")
    assert (built.variadic, set(built.args)) == ("extra_keys", {"a", "b"})

    class Free(rt.BaseTool):
        name: str = "free"
        description: str = "Takes anything."
        variadic: str = "extra_keys"

        def _run(self, *args: Any, **kwargs: Any) -> str:
            return f"{args} {kwargs}"

    assert Free().args == {}
    assert Free().invoke({"y": 2}) == "() {'y': 2}"


def test_strict_option_forbids_extra_keys_and_closes_the_export() -> None:
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    strict = rt.StructuredTool.from_function(add, strict=True)
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        strict.invoke({"a": 1, "b": 2, "c": 3})
    handled = rt.StructuredTool.from_function(add, strict=True, handle_validation_error=True)
    message = handled.invoke(_call({"a": 1, "b": 2, "c": 3}, "add"))
    assert (message.content, message.status) == ("Tool input validation error", "error")
    assert strict.invoke({"a": 1, "b": 2}) == 3
    exported = rt.convert_to_openai_tool(strict)["function"]
    assert exported["strict"] is True
    assert exported["parameters"]["additionalProperties"] is False
    # The strict export equals LangChain's convert_to_openai_tool(..., strict=True).
    lc_add = LANGCHAIN.tool(add)
    assert exported == LANGCHAIN.convert_to_openai_tool(lc_add, strict=True)["function"]
    assert rt.convert_to_openai_tool(add, strict=True) == LANGCHAIN.convert_to_openai_tool(
        lc_add, strict=True
    )


def test_docstring_parsed_when_exporting_a_plain_function() -> None:
    def search(query: str, k: int = 3) -> str:
        """Search the corpus.

        Args:
            query: what to find.
            k: how many hits.
        """
        return query

    assert rt.convert_to_openai_tool(search) == LANGCHAIN.convert_to_openai_tool(search)
    assert convert_to_openai_function(search)["description"] == "Search the corpus."


@both
def test_missing_injected_arg_goes_through_handle_validation_error(impl: Any) -> None:
    def lookup(query: str, user: str) -> str:
        """Look up."""
        return query

    lookup = impl.tool(_typed(lookup, user=Annotated[str, impl.InjectedToolArg]))
    with pytest.raises(ValidationError, match="user"):
        lookup.invoke({"query": "q"})
    handled = impl.StructuredTool.from_function(
        lookup.func, name="lookup", handle_validation_error="bad input"
    )
    message = handled.invoke(_call({"query": "q"}, "lookup"))
    assert (message.content, message.status) == ("bad input", "error")


@both
def test_ainvoke_over_a_sync_run_taking_a_config(impl: Any) -> None:
    class Tagged(impl.BaseTool):  # type: ignore[misc,name-defined]
        name: str = "tagged"
        description: str = "Tagged."

        def _run(self, x: int, config: RunnableConfig) -> str:
            return f"{x}:{config.get('tags')}"

    assert asyncio.run(Tagged().ainvoke({"x": 1}, {"tags": ["a"]})) == "1:['a']"


@both
def test_convert_runnable_to_tool_passes_the_call_config(impl: Any) -> None:
    def echo_tags(_: dict[str, Any], config: RunnableConfig) -> str:
        return str(config.get("tags"))

    converted = impl.convert_runnable_to_tool(
        RunnableLambda(echo_tags), name="f", description="F.", arg_types={"a": int}
    )
    assert converted.invoke({"a": 1}, {"tags": ["x"]}) == "['x']"


@both
def test_undocumented_class_gets_no_inherited_docstring(impl: Any) -> None:
    @impl.tool
    class Point(BaseModel):
        x: int

    assert Point.description == ""


@both
def test_infer_schema_false_needs_a_description(impl: Any) -> None:
    def shout(text: str) -> str:
        return text.upper()

    with pytest.raises(ValueError, match="description"):
        impl.tool(shout, infer_schema=False)


@both
def test_summary_paragraphs_are_joined_with_a_space(impl: Any) -> None:
    @impl.tool(parse_docstring=True)
    def find(x: str) -> str:
        """First paragraph.

        Second paragraph.

        Args:
            x: the x.
        """
        return x

    assert find.description == "First paragraph. Second paragraph."


@both
def test_tool_call_without_a_name(impl: Any) -> None:
    @impl.tool
    def double(x: int) -> int:
        """Double."""
        return 2 * x

    message = double.invoke({"args": {"x": 2}, "id": "c1", "type": "tool_call"})
    assert (message.content, message.name, message.tool_call_id) == ("4", "double", "c1")


@both
def test_empty_string_runs_a_tool_without_parameters(impl: Any) -> None:
    @impl.tool
    def now() -> str:
        """Now."""
        return "ok"

    assert now.invoke("") == "ok"


@both
def test_positional_tool_constructor(impl: Any) -> None:
    shout = impl.Tool("shout", str.upper, "Shout.")
    assert (shout.name, shout.description, shout.invoke("a")) == ("shout", "Shout.", "A")


@both
def test_tuple_of_content_blocks_is_kept_as_blocks(impl: Any) -> None:
    @impl.tool
    def picture(x: int) -> Any:
        """Picture."""
        return ({"type": "text", "text": "a"}, "b")

    assert picture.invoke(_call({"x": 1}, "picture")).content == [
        {"type": "text", "text": "a"},
        "b",
    ]


@both
def test_run_arun_and_input_jsonschema(impl: Any) -> None:
    @impl.tool
    def add(a: int, b: int = 1) -> int:
        """Add."""
        return a + b

    assert add.run({"a": 1}) == 2
    assert asyncio.run(add.arun({"a": 1, "b": 2})) == 3
    message = add.run({"a": 1}, tool_call_id="c9")
    assert (message.content, message.tool_call_id) == ("2", "c9")
    assert add.get_input_jsonschema()["properties"] == {
        "a": {"title": "A", "type": "integer"},
        "b": {"default": 1, "title": "B", "type": "integer"},
    }


class PointV1(BaseModelV1):
    x: int
    tag: str = "none"


@both
def test_pydantic_v1_args_schema_is_kept(impl: Any) -> None:
    class Pointer(impl.BaseTool):  # type: ignore[misc,name-defined]
        name: str = "pointer"
        description: str = "Point."
        args_schema: type[BaseModelV1] = PointV1

        def _run(self, x: int, tag: str = "none") -> str:
            return f"{x}:{tag}"

    made = Pointer()
    assert made.args_schema is PointV1
    assert made.invoke({"x": "2"}) == "2:none"
    assert made.get_input_jsonschema()["properties"]["x"] == {"title": "X", "type": "integer"}


@both
def test_convert_runnable_to_tool_over_a_v1_input_schema(impl: Any) -> None:
    class Echo(Runnable[Any, Any]):
        def get_input_schema(self, config: RunnableConfig | None = None) -> Any:
            return PointV1

        def invoke(self, value: Any, config: RunnableConfig | None = None, **_: Any) -> Any:
            return value

    converted = impl.convert_runnable_to_tool(Echo())
    assert set(converted.args) == {"x", "tag"}


class _Docs(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        return [
            Document(page_content=f"about {query}", metadata={"source": "a.md", "score": 0.5}),
            Document(page_content="second", id="d2", metadata={"handle": object()}),
        ]


def test_create_retriever_tool_takes_a_langchain_retriever() -> None:
    from langchain_core.tools import create_retriever_tool as lc_create

    ours = rt.create_retriever_tool(_Docs(), "search", "Search.", document_prompt="{page_content}")
    theirs = lc_create(_Docs(), "search", "Search.")
    assert ours.invoke({"query": "cats"}) == theirs.invoke({"query": "cats"})
    assert asyncio.run(ours.ainvoke({"query": "dogs"})) == "about dogs\n\nsecond"
    hits = ours.invoke(_call({"query": "cats"}, "search")).artifact
    assert [(h.chunk.text, h.rank, h.score, h.chunk.metadata) for h in hits] == [
        ("about cats", 1, 0.5, {"source": "a.md"}),
        ("second", 2, 0.0, {}),  # a value with no JSON form is left out of the chunk
    ]
    assert hits[1].chunk.id == "d2"
    cited = rt.create_retriever_tool(_Docs(), "search", "Search.").invoke({"query": "cats"})
    assert cited.startswith("[1] a.md (chunk ")


class _PlainDocs(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        return [
            Document(page_content=f"about {query}", metadata={"source": "a.md", "score": 0.5}),
            Document(page_content="second", id="d2", metadata={"handle": ("not", "json")}),
        ]


@pytest.mark.parametrize("response_format", ["content", "content_and_artifact"])
def test_retriever_tool_options_give_langchains_tool(response_format: str) -> None:
    from langchain_core.tools import create_retriever_tool as lc_create

    theirs = lc_create(_PlainDocs(), "search", "Search.", response_format=response_format)
    ours = rt.create_retriever_tool(
        _PlainDocs(),
        "search",
        "Search.",
        response_format=response_format,
        artifact="documents",
        document_prompt="{page_content}",
        max_content_chars=None,
    )
    assert ours.invoke("cats") == theirs.invoke("cats") == "about cats\n\nsecond"
    call = _call({"query": "cats"}, "search")
    assert ours.invoke(call) == theirs.invoke(call)
    message = asyncio.run(ours.ainvoke(call))
    assert message == asyncio.run(theirs.ainvoke(call))
    if response_format == "content_and_artifact":
        assert [type(d).__name__ for d in message.artifact] == ["Document", "Document"]
        assert message.artifact[1].metadata["handle"] == ("not", "json")  # as returned


def test_retriever_tool_defaults_keep_the_hits() -> None:
    message = rt.create_retriever_tool(_Docs(), "search", "Search.").invoke(
        _call({"query": "cats"}, "search")
    )
    assert [type(h).__name__ for h in message.artifact] == ["Hit", "Hit"]
    assert message.content.startswith("[1] a.md (chunk ")


def test_retriever_tool_documents_of_our_retriever_through_the_adapter(
    retriever: Any,
) -> None:
    from ragtools.parsers.errors import ConfigError
    from ragtools.retrieval.adapted import AdaptedRetriever
    from ragtools.retrieval.integrations import to_langchain_retriever

    ours = AdaptedRetriever(retriever)  # a retriever of this package: refused when made
    with pytest.raises(ConfigError, match=r"AdaptedRetriever returns hits; pass to_langchain"):
        rt.create_retriever_tool(ours, "docs", "Docs.", artifact="documents")
    hits_tool = rt.create_retriever_tool(retriever, "docs", "Docs.", artifact="documents")
    with pytest.raises(ConfigError, match="FakeRetriever returns hits"):  # duck-typed: at the call
        hits_tool.invoke({"query": "alpha"})
    tool = rt.create_retriever_tool(
        to_langchain_retriever(retriever), "docs", "Docs.", artifact="documents"
    )
    message = tool.invoke(_call({"query": "alpha"}, "docs"))
    documents = message.artifact
    assert [d.id for d in documents] == [hit.chunk.id for hit in retriever.hits]
    assert [d.metadata["score"] for d in documents] == [hit.score for hit in retriever.hits]
    # the content cites as for hits: the documents carry the hit data in their metadata
    plain = rt.create_retriever_tool(retriever, "docs", "Docs.")
    assert message.content == plain.invoke({"query": "alpha"})


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"artifact": "docs"}, "artifact must be 'hits' or 'documents', got 'docs'"),
        ({"artifact": "documents", "min_score": 0.5}, "drop min_score= or use artifact='hits'"),
        ({"artifact": "documents", "expand": "neighbors"}, "drop expand="),
    ],
)
def test_retriever_tool_artifact_option_is_checked(options: dict[str, Any], match: str) -> None:
    from ragtools.parsers.errors import ConfigError

    with pytest.raises(ConfigError, match=match):
        rt.create_retriever_tool(_Docs(), "search", "Search.", **options)


def test_langgraph_tool_runtime_is_a_directly_injected_argument() -> None:
    prebuilt = pytest.importorskip("langgraph.prebuilt")
    runtime_type = prebuilt.ToolRuntime

    def make(impl: Any) -> Any:
        def count(query: str, runtime: Any) -> str:
            """Count."""
            return f"{query}:{type(runtime).__name__}"

        return impl.tool(_typed(count, runtime=runtime_type))

    for impl in (LANGCHAIN, RAGTOOLS):
        made = make(impl)
        assert set(made.args) == {"query"}  # hidden from the model, as an injected argument
        assert made._injected_args_keys == frozenset({"runtime"})
        with pytest.raises(ValidationError, match="ToolRuntime"):  # validated, not forged
            made.invoke({"query": "q", "runtime": object()})


# --- the differences left after the first passes (#34, second round) -----------------------


@both
def test_unresolvable_sibling_hint_does_not_hide_an_injected_arg(impl: Any) -> None:
    def echo(query: Any, user: Any) -> str:
        """Echo."""
        return f"{query}/{user}"

    hints = {"query": "NotDefinedAnywhere", "user": Annotated[str, impl.InjectedToolArg]}
    echo = impl.tool(args_schema=Query)(_typed(echo, **hints))
    assert echo._injected_args_keys == frozenset({"user"})
    assert echo.invoke({"query": "q", "user": "u1"}) == "q/u1"


@both
def test_class_with_new_is_read_through_new(impl: Any) -> None:
    class Echo:
        def __new__(cls, query: str, user: str) -> Any:
            return f"{query}/{user}"

    Echo.__new__.__annotations__["user"] = Annotated[str, impl.InjectedToolArg]
    echo = impl.StructuredTool.from_function(
        func=Echo, name="echo", description="Echo.", args_schema=Query
    )
    assert echo._injected_args_keys == frozenset({"user"})
    assert echo.invoke({"query": "q", "user": "u1"}) == "q/u1"


@both
def test_async_only_base_tool_declares_injected_args_on_arun(impl: Any) -> None:
    class Echo(impl.BaseTool):  # type: ignore[misc,name-defined]
        name: str = "echo"
        description: str = "Echo."
        args_schema: type[BaseModel] = Query

        def _run(self, *args: Any, **kwargs: Any) -> str:
            raise NotImplementedError

        async def _arun(self, query: str, user: str) -> str:
            return f"{query}/{user}"

    Echo._arun.__annotations__["user"] = Annotated[str, impl.InjectedToolArg]
    assert "user" in Echo()._injected_args_keys
    assert asyncio.run(Echo().ainvoke({"query": "q", "user": "u1"})) == "q/u1"


@both
def test_description_is_the_dedented_docstring(impl: Any) -> None:
    def foo(bar: int) -> str:
        """Docstring thing.

        Args:
            bar: the bar value
        """
        return str(bar)

    description = impl.StructuredTool.from_function(foo).description
    assert description == "Docstring thing.\n\n        Args:\n            bar: the bar value"


@both
def test_simple_tool_without_schema_is_one_string(impl: Any) -> None:
    shout = impl.Tool(name="shout", func=str.upper, description="Shout.")
    assert shout.args == {"tool_input": {"type": "string"}}
    parameters = impl.convert_to_openai_tool(shout)["function"]["parameters"]
    assert parameters["properties"] == {"__arg1": {"title": "__arg1", "type": "string"}}
    assert shout.invoke({"__arg1": "hi"}) == "HI"


@both
def test_simple_tool_over_two_arguments_fails_at_the_call(impl: Any) -> None:
    add = impl.Tool(name="add", func=lambda a, b: a + b, description="Add.")
    with pytest.raises(impl.ToolException, match="StructuredTool"):
        add.invoke({"a": 1, "b": 2})


@both
def test_coroutine_only_tool_refuses_sync_invoke(impl: Any) -> None:
    async def echo(query: str) -> str:
        return query

    tool = impl.StructuredTool(name="echo", description="Echo.", args_schema=Query, coroutine=echo)
    assert asyncio.run(tool.ainvoke({"query": "q"})) == "q"
    with pytest.raises(NotImplementedError):
        tool.invoke({"query": "q"})


def test_dict_schema_input_type_and_input_jsonschema() -> None:
    schema = {"properties": {"a": {"type": "integer"}}, "required": ["a"], "type": "object"}
    found = []
    for impl in (LANGCHAIN, RAGTOOLS):
        add = impl.StructuredTool(name="add", description="A.", args_schema=schema, func=abs)
        assert [getattr(t, "__name__", "") for t in typing.get_args(add.InputType)] == [
            "str",
            "dict",
            "ToolCall",
        ]
        jsonschema = add.get_input_jsonschema()
        assert jsonschema.pop("$defs").keys() == {"ToolCall"}
        found.append(jsonschema)
    assert found[0] == found[1]  # {"anyOf": [string, object, ToolCall], "title": "add_input"}


def test_convert_to_openai_tool_takes_a_langchain_tool() -> None:
    @lc_tools.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    assert rt.convert_to_openai_tool(add) == lc_fc.convert_to_openai_tool(add)


@both
def test_subclass_without_args_schema_gets_the_dict_unvalidated(impl: Any) -> None:
    class Repeat(impl.BaseTool):  # type: ignore[misc,name-defined]
        name: str = "repeat"
        description: str = "Repeat a text."

        def _run(self, text: Any, times: Any = 2) -> Any:
            return text * times

    assert Repeat().invoke({"text": "ab", "times": 3}) == "ababab"
    assert Repeat().invoke({"text": 3, "times": "2"}) == "222"  # no coercion
    with pytest.raises(TypeError):
        Repeat().invoke({"times": 3})  # _run's own error, not a validation error
    with pytest.raises(TypeError):
        Repeat().invoke({"text": "a", "other": 1})


class _Pet(BaseModel):
    """A pet to register."""

    name: str = Field(description="its name")
    kind: typing.Literal["cat", "dog"] = "cat"
    owners: list[Query] = Field(default_factory=list)


class _PetDict(typing.TypedDict):
    """A pet to register.

    Args:
        name: its name
    """

    name: str
    age: typing.Annotated[int, 3, "years"]


@pytest.mark.parametrize(
    "described",
    [
        _Pet,
        _PetDict,
        {"name": "pet", "description": "A pet.", "parameters": {"type": "object"}},
        {"name": "pet", "input_schema": {"type": "object", "properties": {}}},
        {"title": "pet", "description": "A pet.", "type": "object", "properties": {}},
        {"type": "file_search", "vector_store_ids": ["vs1"]},
    ],
    ids=["pydantic", "typeddict", "openai", "anthropic", "json-schema", "built-in"],
)
def test_convert_to_openai_tool_takes_schemas_as_langchain(described: Any) -> None:
    assert rt.convert_to_openai_tool(described) == lc_fc.convert_to_openai_tool(described)
    if described.get("type") == "file_search" if isinstance(described, dict) else False:
        return  # a built-in tool is no function
    for strict in (True, False):
        theirs = lc_fc.convert_to_openai_function(described, strict=strict)
        assert convert_to_openai_function(described, strict=strict) == theirs


class _Owner(typing.TypedDict):
    name: str


class _OwnedPet(typing.TypedDict):
    """A pet."""

    owners: list[_Owner]
    vet: Annotated[_Owner | None, None, "its vet"]


def test_nested_typed_dicts_become_nested_objects() -> None:
    # (LangChain 1.8.3 wraps a nested TypedDict in allOf with dict's own docstring)
    parameters = rt.convert_to_openai_tool(_OwnedPet)["function"]["parameters"]
    owner = {"properties": {"name": {"type": "string"}}, "required": ["name"], "type": "object"}
    assert parameters["properties"]["owners"] == {"items": owner, "type": "array"}
    assert parameters["properties"]["vet"]["description"] == "its vet"
    assert parameters["required"] == ["owners"]


def test_convert_to_openai_tool_refuses_an_untitled_json_schema() -> None:
    untitled = {"type": "object", "properties": {"a": {"type": "string"}}}
    for convert in (rt.convert_to_openai_tool, lc_fc.convert_to_openai_tool):
        with pytest.raises(ValueError, match="must have a top-level 'title' key"):
            convert(untitled)
