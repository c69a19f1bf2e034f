"""Our tools in LangGraph's own ``ToolNode`` through ``to_langgraph_tools`` (issue #20,
defect 4b; since #34 through the explicit adapter in ``retrieval.integrations``).

Every test runs the same calls through a real ``ToolNode`` twice, once over
``to_langgraph_tools(tools)`` and once over each tool's ``to_langchain_tool(tool)``, and
asserts the same messages (content, artifact, status, call id, name) and the same schema
shown to the model; ``BaseTool`` itself no longer passes for a function.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Annotated, Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool as langchain_tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, create_react_agent
from pydantic import BaseModel, Field

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.integrations.langchain import to_langchain_tool
from ragtools.retrieval.integrations.langgraph import to_langgraph_tools
from ragtools.retrieval.tools import (
    BaseTool,
    CachedTool,
    InjectedToolArg,
    InjectedToolCallId,
    StructuredTool,
    Tool,
    ToolException,
    create_retriever_tool,
    get_tool,
    tool,
)
from ragtools.retrieval.tools.classtool import ModelTool
from tests.retrieval.tools.conftest import FakeRetriever


def _graph_messages(tools: list[Any], calls: list[dict[str, Any]], *, use_async: bool) -> list[Any]:
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(to_langgraph_tools(tools)))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    compiled = graph.compile()
    state_in = {"messages": [AIMessage("", tool_calls=calls)]}
    if use_async:
        state = asyncio.run(compiled.ainvoke(state_in))
    else:
        state = compiled.invoke(state_in)
    return list(state["messages"][1:])


def _fields(message: Any) -> tuple[Any, ...]:
    return (
        type(message).__name__,
        message.tool_call_id,
        message.name,
        message.status,
        message.content,
        message.artifact,
    )


def _same_through_both(
    tools: list[BaseTool], calls: list[dict[str, Any]], *, use_async: bool = False
) -> list[Any]:
    """Run ``calls`` over ``to_langgraph_tools`` and over each tool's adapter; assert the same
    messages."""
    native = _graph_messages(tools, calls, use_async=use_async)
    adapted = _graph_messages([to_langchain_tool(t) for t in tools], calls, use_async=use_async)
    assert [_fields(m) for m in native] == [_fields(m) for m in adapted]
    return native


def _model_schema(tools: list[Any]) -> list[dict[str, Any]]:
    node = ToolNode(to_langgraph_tools(tools))
    return [convert_to_openai_tool(t) for t in node.tools_by_name.values()]


@tool
def add(a: int, b: int) -> int:
    """Add two ints."""
    return a + b


@tool(response_format="content_and_artifact")
def add_with_artifact(a: int, b: int = 10) -> tuple[str, dict[str, int]]:
    """Add two ints, keeping the sum as an artifact."""
    return str(a + b), {"sum": a + b}


@tool
def fragile(query: str) -> str:
    """Always fails in a way the model should read."""
    raise ToolException(f"nothing found for {query}")


class TestTheIssueExample:
    def test_tool_node_accepts_our_tool_through_the_adapter(self) -> None:
        node = ToolNode(to_langgraph_tools([add]))
        assert list(node.tools_by_name) == ["add"]
        messages = _same_through_both(
            [add], [{"name": "add", "args": {"a": 1, "b": "2"}, "id": "c1"}]
        )
        assert (messages[0].content, messages[0].status) == ("3", "success")

    def test_base_tool_is_left_alone(self) -> None:
        # no function view: LangChain's tool() and ToolNode refuse the tool as it is, as
        # they refuse any object that is neither a LangChain tool nor a function
        assert not callable(add) and not hasattr(add, "__name__")
        assert add.__doc__ == type(add).__doc__
        with pytest.raises(ValueError, match="callable with a __name__"):
            langchain_tool(add)
        call = {"name": "add", "args": {"a": 2, "b": 3}, "id": "c9", "type": "tool_call"}
        [adapted] = to_langgraph_tools([add])
        assert _fields(adapted.invoke(call)) == _fields(to_langchain_tool(add).invoke(call))

    def test_langchain_tools_and_functions_pass_through(self) -> None:
        def double(x: int) -> int:
            """Double a number."""
            return 2 * x

        theirs = langchain_tool(double)
        adapted = to_langgraph_tools([theirs, double, add])
        assert adapted[:2] == [theirs, double]
        messages = _graph_messages(
            [theirs, add], [{"name": "double", "args": {"x": 4}, "id": "1"}], use_async=False
        )
        assert messages[0].content == "8"


class TestSameMessagesAsTheAdapter:
    @pytest.mark.parametrize("use_async", [False, True])
    def test_content_artifact_status_and_order(
        self, retriever: FakeRetriever, use_async: bool
    ) -> None:
        docs = create_retriever_tool(retriever, "docs", "Search the manuals.")
        calls = [
            {"name": "add_with_artifact", "args": {"a": 1, "b": "2"}, "id": "1"},
            {"name": "docs", "args": {"query": "alpha"}, "id": "2"},
            {"name": "add_with_artifact", "args": {"a": 5}, "id": "3"},
            {"name": "fragile", "args": {"query": "zeta"}, "id": "4"},
        ]
        messages = _same_through_both(
            [add_with_artifact, docs, fragile.model_copy(update={"handle_tool_error": True})],
            calls,
            use_async=use_async,
        )
        assert [m.tool_call_id for m in messages] == ["1", "2", "3", "4"]
        assert (messages[0].content, messages[0].artifact) == ("3", {"sum": 3})
        assert messages[1].artifact == retriever.hits
        assert messages[1].content.startswith("[1] a.pdf, page 3")
        assert messages[2].artifact == {"sum": 15}
        assert (messages[3].status, messages[3].content) == ("error", "nothing found for zeta")

    @pytest.mark.parametrize("use_async", [False, True])
    def test_other_tool_kinds(self, use_async: bool) -> None:
        @tool
        async def slow_add(a: int, b: int) -> int:
            """Add two ints, asynchronously."""
            await asyncio.sleep(0)
            return a + b

        @tool
        def today() -> str:
            """Today's date."""
            return "2026-11-24"

        shout = Tool(name="shout", func=str.upper, description="Upper-case the text.")
        # a sync graph runs the adapter's sync path, which refuses a coroutine-only tool as
        # LangChain does unless the option is set; the tool passed as is works either way
        slow_add.sync_over_async = not use_async
        calls = [
            {"name": "slow_add", "args": {"a": 2, "b": 3}, "id": "1"},
            {"name": "today", "args": {}, "id": "2"},
            {"name": "shout", "args": {"tool_input": "hey"}, "id": "3"},
        ]
        messages = _same_through_both([slow_add, today, shout], calls, use_async=use_async)
        assert [m.content for m in messages] == ["5", "2026-11-24", "HEY"]

    def test_invalid_arguments(self, retriever: FakeRetriever) -> None:
        docs = create_retriever_tool(
            retriever, "docs", "Search.", allow_filters={"source": ["a.pdf", "b.pdf"]}
        )
        calls = [
            {"name": "add", "args": {"a": "x", "b": 2}, "id": "1"},
            {"name": "docs", "args": {"query": "alpha", "filter": {"source": "z.pdf"}}, "id": "2"},
            {"name": "docs", "args": {"query": ""}, "id": "3"},
        ]
        messages = _same_through_both([add, docs], calls)
        assert [m.status for m in messages] == ["error", "error", "error"]
        assert "valid integer" in messages[0].content

    def test_unhandled_tool_error_is_left_to_the_node(self) -> None:
        calls = [{"name": "fragile", "args": {"query": "x"}, "id": "1"}]
        for tools in ([fragile], [to_langchain_tool(fragile)]):
            with pytest.raises(ToolException, match="nothing found for x"):
                _graph_messages(tools, calls, use_async=False)


class TestSchemaShownToTheModel:
    def test_same_as_the_adapter(self, retriever: FakeRetriever) -> None:
        @tool
        def lookup(
            query: Annotated[str, Field(description="what to find", min_length=1)],
            tenant: Annotated[str, InjectedToolArg],
            call_id: Annotated[str, InjectedToolCallId],
            limit: int = 3,
        ) -> str:
            """Look a term up for a tenant."""
            return f"{tenant}:{query}:{limit}:{call_id}"

        docs = create_retriever_tool(
            retriever, "docs", "Search.", allow_filters={"source": ["a.pdf", "b.pdf"]}
        )
        for ours in (add, add_with_artifact, lookup, docs):
            assert _model_schema([ours]) == _model_schema([to_langchain_tool(ours)])
        properties = _model_schema([lookup])[0]["function"]["parameters"]["properties"]
        assert set(properties) == {"query", "limit"}

    def test_the_model_cannot_set_an_injected_argument_like_with_the_adapter(self) -> None:
        @tool
        def whoami(
            greeting: str,
            tenant: Annotated[str, InjectedToolArg],
            call_id: Annotated[str, InjectedToolCallId],
        ) -> str:
            """Greet the tenant."""
            return f"{greeting} {tenant} ({call_id})"

        # LangGraph's ToolNode drops injected values a model put in the call's args.
        calls = [{"name": "whoami", "args": {"greeting": "hi", "tenant": "acme"}, "id": "c7"}]
        messages = _same_through_both([whoami], calls)
        assert messages[0].status == "error" and "tenant" in messages[0].content
        assert "hi acme" not in messages[0].content
        [adapted] = to_langgraph_tools([whoami])
        direct = adapted.invoke({**calls[0], "type": "tool_call"})
        assert (direct.content, direct.status) == ("hi acme (c7)", "success")


class TestTheAdapter:
    def test_attributes(self) -> None:
        [adapted] = to_langgraph_tools([add])
        assert (adapted.name, adapted.description) == ("add", "Add two ints.")
        assert list(adapted.tool_call_schema.model_json_schema()["properties"]) == ["a", "b"]

    def test_a_field_named_like_the_call_id_parameter_is_kept(self) -> None:
        @tool
        def echo(tool_call_id: str) -> str:
            """Echo the argument."""
            return tool_call_id

        calls = [{"name": "echo", "args": {"tool_call_id": "mine"}, "id": "theirs"}]
        assert _same_through_both([echo], calls)[0].content == "mine"

    def test_invoked_without_a_call_it_returns_the_content(self) -> None:
        adapted_add, adapted_pair = to_langgraph_tools([add, add_with_artifact])
        assert adapted_add.invoke({"a": 2, "b": "5"}) == 7
        assert adapted_pair.invoke({"a": 1}) == "11"

    def test_settings_changed_after_the_first_call_are_honoured(self) -> None:
        @tool
        def flaky(query: str) -> str:
            """Fail in a way the model should read."""
            raise ToolException(f"no {query}")

        calls = [{"name": "flaky", "args": {"query": "x"}, "id": "1"}]
        adapted = to_langgraph_tools([flaky])  # made once, read the tool's settings per call
        with pytest.raises(ToolException):
            _graph_messages(adapted, calls, use_async=False)
        flaky.handle_tool_error = True
        [message] = _graph_messages(adapted, calls, use_async=False)
        assert (message.status, message.content) == ("error", "no x")
        assert [_fields(m) for m in _same_through_both([flaky], calls)] == [_fields(message)]

    def test_a_copy_shows_its_own_description(self) -> None:
        renamed = add.model_copy(update={"description": "Sum."})
        node = ToolNode(to_langgraph_tools([renamed, add.model_copy(update={"name": "plus"})]))
        assert node.tools_by_name["add"].description == "Sum."
        assert node.tools_by_name["plus"].description == "Add two ints."

    def test_json_schema_dict_tool_runs_through_the_adapter(self) -> None:
        raw = StructuredTool(
            name="raw",
            description="Raw schema.",
            func=lambda q: q.upper(),
            args_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        )
        assert list(ToolNode(to_langgraph_tools([raw])).tools_by_name) == ["raw"]
        messages = _same_through_both([raw], [{"name": "raw", "args": {"q": "hi"}, "id": "1"}])
        assert messages[0].content == "HI"


class _ScriptedModel(GenericFakeChatModel):
    """A chat model answering from a script, recording the tool schemas it is bound to."""

    bound: list[dict[str, Any]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.bound.extend(convert_to_openai_tool(t) for t in tools)
        return self


class TestPrebuiltAgent:
    def _agent_run(self, docs: Any) -> tuple[list[Any], list[dict[str, Any]]]:
        script = [
            AIMessage("", tool_calls=[{"name": "docs", "args": {"query": "alpha"}, "id": "q1"}]),
            AIMessage("Alpha is on page 3 of a.pdf [1]."),
        ]
        model = _ScriptedModel(messages=iter(script))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # create_react_agent's move
            agent = create_react_agent(model, to_langgraph_tools([docs]))
        state = agent.invoke({"messages": [HumanMessage("Where is alpha?")]})
        return list(state["messages"]), model.bound

    def test_react_agent_with_our_retriever_tool(self, retriever: FakeRetriever) -> None:
        docs = create_retriever_tool(retriever, "docs", "Search the manuals.")
        native, native_schemas = self._agent_run(docs)
        adapted, adapted_schemas = self._agent_run(to_langchain_tool(docs))
        assert native_schemas == adapted_schemas
        assert [type(m).__name__ for m in native] == [
            "HumanMessage",
            "AIMessage",
            "ToolMessage",
            "AIMessage",
        ]
        assert _fields(native[2]) == _fields(adapted[2])
        assert native[2].artifact == retriever.hits
        assert native[-1].content == "Alpha is on page 3 of a.pdf [1]."


class TestCachedTool:
    def test_tool_node_takes_it_and_repeats_are_hits(self, retriever: FakeRetriever) -> None:
        docs = create_retriever_tool(retriever, "docs", "Search the manuals.")
        cached = CachedTool(docs)
        first = {"name": "docs", "args": {"query": "alpha"}, "id": "1"}
        again = {**first, "id": "2"}
        native = [_graph_messages([cached], [call], use_async=False)[0] for call in (first, again)]
        assert len(retriever.calls) == 1 and cached.cache.info().hits == 1
        reference = CachedTool(create_retriever_tool(retriever, "docs", "Search the manuals."))
        adapted = [
            _graph_messages([to_langchain_tool(reference)], [call], use_async=False)[0]
            for call in (first, again)
        ]
        assert [_fields(m) for m in native] == [_fields(m) for m in adapted]
        assert [m.tool_call_id for m in native] == ["1", "2"]
        assert native[1].artifact == retriever.hits
        assert len(retriever.calls) == 2  # the adapter's cache also ran the search once

    def test_the_adapter_caches_per_tenant(self) -> None:
        runs: list[str] = []

        @tool
        def account(query: str, tenant: Annotated[str, InjectedToolArg]) -> str:
            """Look up the tenant's account data."""
            runs.append(tenant)
            return f"{tenant}:{query}"

        adapted = to_langchain_tool(CachedTool(account))
        results = [
            adapted.invoke(
                {"name": "account", "args": {"query": "q", "tenant": tenant}, "id": str(n)}
                | {"type": "tool_call"}
            ).content
            for n, tenant in enumerate(["acme", "globex", "acme", "globex"])
        ]
        assert results == ["acme:q", "globex:q", "acme:q", "globex:q"]
        assert runs == ["acme", "globex"]

    def test_over_a_tool_without_an_argument_model_is_refused_clearly(self) -> None:
        with pytest.raises(ConfigError, match="no argument model"):
            to_langgraph_tools([CachedTool(get_tool("simple_doc_parser"))])


class TestQwenStyleTools:
    @pytest.mark.parametrize("name", ["retrieval", "doc_parser", "simple_doc_parser"])
    def test_refused_with_an_error_naming_our_tools_node(self, name: str, tmp_path: Any) -> None:
        qwen_tool = get_tool(name, cache_dir=str(tmp_path))
        with pytest.raises(ConfigError, match=f"tool '{name}'.*ToolsNode"):
            to_langgraph_tools([qwen_tool])
        with pytest.raises(ConfigError, match=f"tool '{name}'.*ToolsNode"):
            to_langchain_tool(qwen_tool)

    def test_model_tool_is_refused_too(self) -> None:
        class Multiply(BaseModel):
            """Multiply two integers."""

            x: int
            y: int

            def run(self) -> int:
                return self.x * self.y

        with pytest.raises(ConfigError, match=r"tool 'multiply'.*ToolsNode"):
            to_langgraph_tools([ModelTool(Multiply, name="multiply")])
