"""The defects an audit of the tool layer found (issue 20), one test class per defect.

Each test reproduces the defect as the audit drove it; all of them failed before the fix.
"""

from __future__ import annotations

import asyncio
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import InjectedToolArg as LCInjectedToolArg
from langchain_core.tools import InjectedToolCallId as LCInjectedToolCallId
from langchain_core.tools import ToolException as LCToolException
from langchain_core.tools import tool as lc_tool
from pydantic import ValidationError

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.tools import (
    BaseTool,
    CachedTool,
    InjectedToolArg,
    RunConfig,
    ToolMessage,
    ToolsNode,
    cached,
    convert_to_openai_tool,
    create_retriever_tool,
    make_tool_call,
    tool,
)
from ragtools.retrieval.tools.registry import ToolRegistry, UnknownToolError
from ragtools.retrieval.tools.retriever_tool import MAX_QUERY_CHARS
from tests.retrieval.tools.conftest import FakeRetriever


class TestCachedToolKeysEverythingTheToolSees:
    """Defect 1: one tenant's cached result was served to another."""

    @staticmethod
    def _tenant_tool() -> tuple[Any, list[str]]:
        runs: list[str] = []

        @tool
        def account(query: str, tenant: Annotated[str, InjectedToolArg]) -> str:
            """Look up the tenant's account data."""
            runs.append(tenant)
            return f"{tenant}:{query}"

        return account, runs

    def test_injected_values_are_part_of_the_key(self) -> None:
        account, runs = self._tenant_tool()
        wrapped = CachedTool(account)
        assert wrapped.invoke({"query": "balance"}, tenant="acme") == "acme:balance"
        assert wrapped.invoke({"query": "balance"}, tenant="globex") == "globex:balance"
        assert wrapped.invoke({"query": "balance"}, tenant="acme") == "acme:balance"
        assert runs == ["acme", "globex"]  # the third call was a hit, of acme's own entry

    def test_config_is_part_of_the_key(self) -> None:
        @tool
        def whoami(query: str, config: RunConfig) -> str:
            """Answer with the tenant of the run."""
            return f"{config['configurable']['tenant']}:{query}"

        wrapped = CachedTool(whoami)
        acme: RunConfig = {"configurable": {"tenant": "acme"}}
        globex: RunConfig = {"configurable": {"tenant": "globex"}}
        assert wrapped.invoke({"query": "q"}, acme) == "acme:q"
        assert wrapped.invoke({"query": "q"}, config=globex) == "globex:q"
        assert asyncio.run(wrapped.ainvoke({"query": "q"}, globex)) == "globex:q"

    def test_interleaved_tenants_from_threads_never_see_each_other(self) -> None:
        account, _ = self._tenant_tool()
        wrapped = CachedTool(account, maxsize=64)
        rng = random.Random(20)
        jobs = [
            (rng.choice(["acme", "globex", "initech"]), f"q{rng.randrange(6)}") for _ in range(600)
        ]
        start = threading.Barrier(8)

        def run(job: tuple[str, str]) -> tuple[str, str, Any]:
            tenant, query = job
            return (
                tenant,
                query,
                wrapped.invoke(make_tool_call("account", {"query": query}), tenant=tenant),
            )

        def first(job: tuple[str, str]) -> tuple[str, str, Any]:
            start.wait()
            return run(job)

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(first, jobs[:8])) + list(pool.map(run, jobs[8:]))
        for tenant, query, message in results:
            assert message.content == f"{tenant}:{query}"
        assert wrapped.cache.info().hits > 0  # the cache was really used


class TestToolOverCached:
    """Defect 2: ``@tool`` over ``@cached`` lost the argument types and the async kind."""

    def test_types_survive(self) -> None:
        @tool
        @cached()
        def forecast(days: int) -> int:
            """Forecast for a number of days."""
            return days * 2

        assert forecast.args == {"days": {"title": "Days", "type": "integer"}}
        assert forecast.invoke({"days": "2"}) == 4  # coerced to int, not "22"

    def test_async_function_stays_async(self) -> None:
        calls: list[int] = []

        @tool
        @cached()
        async def forecast(days: int) -> int:
            """Forecast for a number of days."""
            calls.append(days)
            return days * 2

        assert asyncio.run(forecast.ainvoke({"days": "2"})) == 4
        forecast.sync_over_async = True  # invoke of a coroutine-only tool is the option
        assert forecast.invoke({"days": 2}) == 4  # served from the cache
        assert calls == [2]

    def test_same_schema_as_langchain_over_the_bare_function(self) -> None:
        def forecast(days: int) -> int:
            """Forecast for a number of days."""
            return days

        ours = tool(cached()(forecast))
        theirs = lc_tool(forecast)
        assert ours.args == theirs.args


class TestRegisterBaseToolSubclass:
    """Defect 3: ``register_tool`` refused a subclass of the package's own BaseTool."""

    def test_register_and_get(self) -> None:
        registry = ToolRegistry()

        @registry.register("shout")
        class Shout(BaseTool):
            description: str = "Shout the text."

            def _run(self, text: str) -> str:
                return text.upper()

        shout = registry.get_tool("shout")
        assert isinstance(shout, Shout) and shout.name == "shout"
        assert shout.invoke({"text": "hi"}) == "HI"
        assert registry.get_tool("shout", description="Louder.").description == "Louder."

    def test_conflicting_default_name(self) -> None:
        class Named(BaseTool):
            name: str = "named"

            def _run(self, text: str) -> str:
                return text

        with pytest.raises(ConfigError, match="conflicts"):
            ToolRegistry().add(Named, "other")


class TestForeignToolsInTheNode:
    """Defect 4: a LangChain tool's ToolMessage was dumped as JSON into ``content``."""

    def test_langchain_tool_keeps_content_artifact_and_status(self) -> None:
        @lc_tool(response_format="content_and_artifact")
        def lc_search(query: str) -> tuple[str, list[int]]:
            """Search."""
            if query == "fail":
                raise LCToolException("search backend said no")
            return f"found {query}", [1, 2]

        lc_search.handle_tool_error = True
        node = ToolsNode([lc_search])
        ok, failed = node.invoke(
            [
                make_tool_call("lc_search", {"query": "x"}, id="c1"),
                make_tool_call("lc_search", {"query": "fail"}, id="c2"),
            ]
        )
        assert isinstance(ok, ToolMessage)
        assert (ok.content, ok.artifact, ok.tool_call_id, ok.status) == (
            "found x",
            [1, 2],
            "c1",
            "success",
        )
        assert (failed.content, failed.status) == ("search backend said no", "error")


class TestLangChainInjectedMarkers:
    """Defect 5: LangChain's own injected markers were shown to (and settable by) the model."""

    @staticmethod
    def _who() -> Any:
        def who(
            query: str,
            user: Annotated[str, LCInjectedToolArg],
            call_id: Annotated[str, LCInjectedToolCallId],
        ) -> str:
            """Say who asks."""
            return f"{user}@{call_id}:{query}"

        return who

    def test_hidden_like_in_langchain(self) -> None:
        ours, theirs = tool(self._who()), lc_tool(self._who())
        assert ours.args == theirs.args == {"query": {"title": "Query", "type": "string"}}
        assert convert_to_openai_tool(ours)["function"]["parameters"]["properties"] == {
            "query": {"type": "string"}
        }
        message = ours.invoke(make_tool_call("who", {"query": "q"}, id="c9"), user="alice")
        assert message.content == "alice@c9:q"

    def test_node_drops_model_values_and_supplies_its_own(self) -> None:
        node = ToolsNode([tool(self._who())], injected={"user": "alice"})
        forged = make_tool_call("who", {"query": "q", "user": "mallory", "call_id": "x"}, id="c1")
        [message] = node.invoke([forged])
        assert message.content == "alice@c1:q"
        [message] = node.invoke([forged], injected={"user": "bob"})  # per call, over the node's
        assert message.content == "bob@c1:q"

    def test_node_refuses_forged_values_for_our_markers_too(self) -> None:
        @tool
        def scoped(query: str, tenant: Annotated[str, InjectedToolArg]) -> str:
            """Search the tenant's data."""
            return f"{tenant}:{query}"

        node = ToolsNode([scoped])
        forged = make_tool_call("scoped", {"query": "q", "tenant": "globex"}, id="c1")
        [message] = node.invoke([forged], injected={"tenant": "acme"})
        assert message.content == "acme:q"
        with pytest.raises(ValidationError, match="tenant"):
            ToolsNode([scoped], handle_tool_error=False).invoke([forged])  # never globex


class TestConstructionAndExportAgree:
    """Defect 6: a positional ``document_prompt`` failed on every call; two schema exports."""

    @pytest.mark.parametrize("prompt", ["{}", "{0}: {source}", "{} {text}", "{0.upper}"])
    def test_positional_document_prompt_is_refused_at_creation(self, prompt: str) -> None:
        with pytest.raises(ConfigError, match="positional field"):
            create_retriever_tool(FakeRetriever([]), "search", "Search.", document_prompt=prompt)

    def test_node_exports_the_same_schema_as_convert_to_openai_tool(
        self, retriever: FakeRetriever
    ) -> None:
        @tool(parse_docstring=True)
        def search(query: str, k: int = 5, tenant: Annotated[str, InjectedToolArg] = "") -> str:
            """Search the corpus.

            Args:
                query: what to look for.
                k: how many results.
                tenant: hidden.
            """
            return query

        docs = create_retriever_tool(retriever, "docs", "Search the manuals.")
        node = ToolsNode([search, docs])
        assert node.openai_tools() == [convert_to_openai_tool(search), convert_to_openai_tool(docs)]


class TestErrorsReachTheModel:
    """Defect 7: validation errors and unknown tools raised out of the node."""

    def test_bad_calls_become_error_messages_in_order(self, retriever: FakeRetriever) -> None:
        docs = create_retriever_tool(retriever, "docs", "Search the manuals.")
        node = ToolsNode([docs])
        messages = node.invoke(
            [
                make_tool_call("docs", {"query": "   "}, id="blank"),
                make_tool_call("docs", {"query": "x" * (MAX_QUERY_CHARS + 1)}, id="long"),
                make_tool_call("docs", {"qurey": "typo"}, id="typo"),
                make_tool_call("web_search", {"query": "x"}, id="unknown"),
                make_tool_call("docs", {"query": "alpha"}, id="good"),
            ]
        )
        assert [m.tool_call_id for m in messages] == ["blank", "long", "typo", "unknown", "good"]
        assert [m.status for m in messages] == ["error"] * 4 + ["success"]
        assert "at least 1 character" in messages[0].content
        assert f"at most {MAX_QUERY_CHARS} characters" in messages[1].content
        assert "qurey" in messages[2].content and "Extra inputs" in messages[2].content
        assert messages[3].content == "Error: web_search is not a valid tool, try one of [docs]."
        assert messages[4].artifact == retriever.hits

    def test_told_to_raise_it_raises(self, retriever: FakeRetriever) -> None:
        node = ToolsNode(
            [create_retriever_tool(retriever, "docs", "Search.")], handle_tool_error=False
        )
        with pytest.raises(UnknownToolError):
            node.invoke([make_tool_call("nope", {})])

    def test_bugs_still_raise_by_default(self) -> None:
        @tool
        def broken(query: str) -> str:
            """Always fails."""
            raise RuntimeError("a bug, not the model's fault")

        with pytest.raises(RuntimeError, match="a bug"):
            ToolsNode([broken]).invoke([make_tool_call("broken", {"query": "q"})])

    def test_langgraph_state_in_and_out(self, retriever: FakeRetriever) -> None:
        docs = create_retriever_tool(retriever, "docs", "Search.")
        ai = AIMessage(
            content="", tool_calls=[{"name": "docs", "args": {"query": "a"}, "id": "c1"}]
        )
        state = {"messages": [ai]}
        result = ToolsNode([docs]).invoke(state)
        assert list(result) == ["messages"]
        [message] = result["messages"]
        assert message.tool_call_id == "c1" and message.artifact == retriever.hits
        assert asyncio.run(ToolsNode([docs]).ainvoke(state))["messages"][0].tool_call_id == "c1"
