"""Result cache for deterministic tools: TTL, size bound, canonical keys, wrappers."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import inspect
import json
import logging
import random
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ValidationError

from ragtools.indexes.testing import FakeEmbedder
from ragtools.parsers.document import Document
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval import Index, KeywordRetriever
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.integrations.langchain import to_langchain_tool
from ragtools.retrieval.tools import InjectedToolArg, InjectedToolCallId, RunConfig, tool
from ragtools.retrieval.tools.cache import (
    CachedTool,
    ToolResultCache,
    cache_key,
    cached,
    tool_identity,
)
from ragtools.retrieval.tools.classtool import FunctionTool, ModelTool
from ragtools.retrieval.tools.messages import ToolMessage, is_tool_call, make_tool_call
from ragtools.retrieval.tools.node import ToolsNode
from ragtools.retrieval.tools.registry import ToolRegistry
from ragtools.retrieval.tools.retriever_tool import create_retriever_tool, format_hits


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class CountingTool:
    """Doubles ``n``; counts real executions; fails on ``n < 0`` with an error message."""

    name = "double"
    description = "Double a number."
    parameters = [{"name": "n", "type": "integer", "required": True}]

    def __init__(self) -> None:
        self.calls = 0

    def invoke(self, tool_input: Any) -> Any:
        self.calls += 1
        if is_tool_call(tool_input):
            n = tool_input["args"]["n"]
            status = "error" if n < 0 else "success"
            return ToolMessage(
                content=str(2 * n),
                artifact={"n": n},
                tool_call_id=tool_input["id"],
                name=self.name,
                status=status,
            )
        return 2 * tool_input["n"]


class TestToolResultCache:
    def test_ttl_expiry_with_injected_clock(self) -> None:
        clock = FakeClock()
        cache = ToolResultCache(maxsize=10, ttl=60, clock=clock)
        cache.put("k", "v")
        clock.now += 59.9
        assert cache.lookup("k") == (True, "v")
        clock.now += 0.1  # exactly 60 s after storing: expired
        assert cache.lookup("k") == (False, None)
        info = cache.info()
        assert (info.hits, info.misses, info.expirations, info.size) == (1, 1, 1, 0)

    def test_expired_entries_leave_the_size_before_the_cache_is_full(self) -> None:
        clock = FakeClock()
        cache = ToolResultCache(maxsize=10, ttl=5, clock=clock)
        cache.put("a", 1)
        cache.put("b", 2)
        clock.now += 5
        cache.put("c", 3)
        info = cache.info()
        assert (len(cache), info.size, info.expirations, info.evictions) == (1, 1, 2, 0)
        assert cache.lookup("c") == (True, 3)

    def test_no_ttl_keeps_entries(self) -> None:
        clock = FakeClock()
        cache = ToolResultCache(maxsize=2, ttl=None, clock=clock)
        cache.put("k", 1)
        clock.now += 1e9
        assert cache.lookup("k") == (True, 1)

    def test_size_bound_evicts_least_recently_used(self) -> None:
        cache = ToolResultCache(maxsize=2, ttl=None)
        cache.put("a", 1)
        cache.put("b", 2)
        assert cache.lookup("a") == (True, 1)  # "b" is now the least recently used
        cache.put("c", 3)
        assert len(cache) == 2
        assert cache.lookup("b") == (False, None)
        assert cache.lookup("a") == (True, 1) and cache.lookup("c") == (True, 3)
        assert cache.info().evictions == 1

    def test_expired_entries_go_before_live_ones(self) -> None:
        clock = FakeClock()
        cache = ToolResultCache(maxsize=2, ttl=10, clock=clock)
        cache.put("old", 1)
        clock.now += 5
        cache.put("live", 2)
        clock.now += 6  # "old" expired, "live" has 4 s left
        cache.put("new", 3)  # full: the expired entry makes room, the live one stays
        assert cache.lookup("live") == (True, 2) and cache.lookup("new") == (True, 3)
        assert (cache.info().evictions, cache.info().expirations) == (0, 1)

    def test_overwriting_a_key_does_not_evict(self) -> None:
        cache = ToolResultCache(maxsize=2, ttl=None)
        cache.put("a", 1)
        cache.put("b", 2)
        cache.put("a", 10)
        assert cache.lookup("a") == (True, 10) and cache.lookup("b") == (True, 2)

    def test_canonical_keys(self) -> None:
        key = ToolResultCache.make_key
        assert key("t", {"a": 1, "b": [1, "二"]}) == key("t", {"b": [1, "二"], "a": 1})
        assert key("t", {"a": 1}) != key("u", {"a": 1})
        assert key("t", {"a": 1}) != key("t", {"a": "1"})
        assert key("t", {"a": object()}) is None

    @pytest.mark.parametrize(("maxsize", "ttl"), [(0, 1.0), (1, 0.0), (1, -5.0)])
    def test_bad_settings(self, maxsize: int, ttl: float) -> None:
        with pytest.raises(ConfigError):
            ToolResultCache(maxsize=maxsize, ttl=ttl)

    def test_clear(self) -> None:
        cache = ToolResultCache()
        cache.put("a", 1)
        cache.clear()
        assert len(cache) == 0

    def test_thread_safety_keeps_the_bound(self) -> None:
        cache = ToolResultCache(maxsize=16, ttl=None)
        errors: list[BaseException] = []

        def work(offset: int) -> None:
            try:
                for i in range(300):
                    cache.put(f"{(offset + i) % 40}", i)
                    cache.lookup(f"{i % 40}")
            except BaseException as exc:  # pragma: no cover - would fail the test below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert len(cache) == 16
        info = cache.info()
        assert info.hits + info.misses == 8 * 300


class TestCachedTool:
    def test_equal_arguments_hit_whatever_their_order(self) -> None:
        inner = CountingTool()
        tool = CachedTool(inner, ttl=None)
        first = tool.invoke(make_tool_call("double", {"n": 2, "unused": [1]}, id="a"))
        second = tool.invoke(make_tool_call("double", {"unused": [1], "n": 2}, id="b"))
        assert inner.calls == 1
        assert (first.content, first.tool_call_id) == ("4", "a")
        assert (second.content, second.tool_call_id, second.artifact) == ("4", "b", {"n": 2})

    def test_ttl_expiry_reruns_the_tool(self) -> None:
        clock = FakeClock()
        inner = CountingTool()
        tool = CachedTool(inner, ToolResultCache(ttl=30, clock=clock))
        tool.invoke({"n": 1})
        clock.now += 29
        tool.invoke({"n": 1})
        assert inner.calls == 1
        clock.now += 1
        assert tool.invoke({"n": 1}) == 2
        assert inner.calls == 2

    def test_raw_and_message_results_are_kept_apart(self) -> None:
        inner = CountingTool()
        tool = CachedTool(inner)
        assert tool.invoke({"n": 3}) == 6
        message = tool.invoke(make_tool_call("double", {"n": 3}, id="m"))
        assert isinstance(message, ToolMessage)
        assert inner.calls == 2

    def test_error_messages_are_not_cached(self) -> None:
        inner = CountingTool()
        tool = CachedTool(inner)
        tool.invoke(make_tool_call("double", {"n": -1}, id="e1"))
        tool.invoke(make_tool_call("double", {"n": -1}, id="e2"))
        assert inner.calls == 2

    def test_ainvoke_uses_the_cache(self) -> None:
        inner = CountingTool()
        tool = CachedTool(inner)

        async def both() -> list[Any]:
            return [await tool.ainvoke({"n": 5}), await tool.ainvoke({"n": 5})]

        assert asyncio.run(both()) == [10, 10]
        assert inner.calls == 1

    def test_delegates_description_and_schema(self) -> None:
        tool = CachedTool(CountingTool())
        assert (tool.name, tool.description) == ("double", "Double a number.")
        assert tool.parameters == CountingTool.parameters
        assert not hasattr(tool, "stream")

    def test_in_a_tools_node_with_debug_timing(self, caplog: pytest.LogCaptureFixture) -> None:
        inner = CountingTool()
        node = ToolsNode([CachedTool(inner)], execute_sequentially=True)
        calls = [make_tool_call("double", {"n": 21}, id=f"c{i}") for i in range(3)]
        with caplog.at_level(logging.DEBUG, logger="ragtools.retrieval.tools"):
            messages = node.invoke(calls)
        assert [m.content for m in messages] == ["42", "42", "42"]
        assert [m.tool_call_id for m in messages] == ["c0", "c1", "c2"]
        assert inner.calls == 1
        cache_lines = [r.getMessage() for r in caplog.records if "cache" in r.getMessage()]
        assert len(cache_lines) == 3
        assert "cache miss in" in cache_lines[0] and "ms" in cache_lines[0]
        assert all("cache hit in" in line for line in cache_lines[1:])
        assert sum("ran in" in r.getMessage() for r in caplog.records) == 3


class TestCachedDecorator:
    def test_positional_keyword_and_default_arguments_share_a_key(self) -> None:
        runs: list[tuple[str, int]] = []

        @cached(ttl=None)
        def search(query: str, k: int = 3) -> list[str]:
            runs.append((query, k))
            return [query] * k

        assert search("bm25") == ["bm25"] * 3
        assert search(query="bm25", k=3) == ["bm25"] * 3
        assert search("bm25", 3) == ["bm25"] * 3
        assert search("bm25", k=2) == ["bm25"] * 2
        assert runs == [("bm25", 3), ("bm25", 2)]
        assert search.cache.info().hits == 2
        assert search.__name__ == "search"

    def test_ttl_with_injected_clock(self) -> None:
        clock = FakeClock()
        runs = []

        @cached(ToolResultCache(ttl=5, clock=clock))
        def now_upper(text: str) -> str:
            runs.append(text)
            return text.upper()

        now_upper("a")
        clock.now += 5
        now_upper("a")
        assert runs == ["a", "a"]

    def test_async_function(self) -> None:
        runs: list[int] = []

        @cached()
        async def fetch(n: int) -> int:
            runs.append(n)
            await asyncio.sleep(0)
            return n * 10

        async def go() -> list[int]:
            return [await fetch(1), await fetch(1), await fetch(2)]

        assert asyncio.run(go()) == [10, 10, 20]
        assert runs == [1, 2]

    def test_unkeyable_arguments_run_uncached(self) -> None:
        runs = []

        @cached()
        def identity(value: Any) -> Any:
            runs.append(value)
            return value

        marker = object()
        assert identity(marker) is marker and identity(marker) is marker
        assert len(runs) == 2


# ---- two tenants through every cached entry point (issue 32) --------------------------------

SOURCES = {"a": "doc1.md", "b": "doc2.md"}
QUERY = "quarterly revenue"
TENANT: contextvars.ContextVar[str] = contextvars.ContextVar("TENANT")
"""The tenant of a request, where no cache key can see it (the ``namespace`` case)."""


@pytest.fixture(scope="module")
def tenant_index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    """doc1.md (tenant a) and doc2.md (tenant b), both matching :data:`QUERY`."""
    docs = [
        Document(
            id=f"d{n}",
            text=f"Quarterly revenue report of tenant {tenant}: {n}0 million.",
            metadata={"source": source},
        )
        for n, (tenant, source) in enumerate(SOURCES.items(), start=1)
    ]
    path = tmp_path_factory.mktemp("tenants") / "index"
    return Index.from_documents(docs, path, embedder=FakeEmbedder(dim=32))


class CountingRetriever:
    """A keyword retriever over the index that counts the searches that really ran."""

    def __init__(self, index: Index) -> None:
        self.retriever = KeywordRetriever(index)
        self.runs = 0
        self._lock = threading.Lock()

    def invoke(self, query: str, *, k: int | None = None, filter: Any = None) -> list[Hit]:
        with self._lock:
            self.runs += 1
        return self.retriever.invoke(query, k=k, filter=filter)

    async def ainvoke(self, query: str, *, k: int | None = None, filter: Any = None) -> list[Hit]:
        return self.invoke(query, k=k, filter=filter)

    def search(self, query: str, source: str) -> tuple[str, list[Hit]]:
        hits = self.invoke(query, filter={"source": source})
        return format_hits(hits), hits


@dataclass
class Tenant:
    """One tenant's way in: what to call, and how the tenant is told apart."""

    tool: Any
    source: str
    family: str
    """``base`` (BaseTool entry points), ``qwen`` (class-based tools) or ``function``."""
    injected: dict[str, Any] = field(default_factory=dict)
    config: RunConfig | None = None
    context: str | None = None
    """Value of :data:`TENANT` while the tenant calls."""

    @property
    def text(self) -> str:
        """The query as a string input: the query itself, or JSON text for class tools."""
        return json.dumps({"query": QUERY}) if self.family == "qwen" else QUERY

    def call(self, **args: Any) -> dict[str, Any]:
        return {"name": "search", "args": {"query": QUERY, **args}, "type": "tool_call"}


Setup = Callable[[CountingRetriever, ToolResultCache], dict[str, Tenant]]


def _bound_filters(r: CountingRetriever, store: ToolResultCache) -> dict[str, Tenant]:
    """Two retriever tools named "search", bound to different filters, one store."""
    return {
        t: Tenant(
            CachedTool(
                create_retriever_tool(r, "search", "Search the reports.", filter={"source": s}),
                store,
            ),
            s,
            "base",
        )
        for t, s in SOURCES.items()
    }


def _injected_tenant(r: CountingRetriever, store: ToolResultCache) -> dict[str, Tenant]:
    """One tool, the tenant an InjectedToolArg."""

    @tool(response_format="content_and_artifact")
    def search(query: str, tenant: Annotated[str, InjectedToolArg]) -> tuple[str, list[Hit]]:
        """Search the tenant's reports."""
        return r.search(query, SOURCES[tenant])

    cached_search = CachedTool(search, store)
    return {t: Tenant(cached_search, s, "base", {"tenant": t}) for t, s in SOURCES.items()}


def _run_config(r: CountingRetriever, store: ToolResultCache) -> dict[str, Tenant]:
    """One tool, the tenant in the run configuration."""

    @tool(response_format="content_and_artifact")
    def search(query: str, config: RunConfig) -> tuple[str, list[Hit]]:
        """Search the tenant's reports."""
        return r.search(query, SOURCES[config["configurable"]["tenant"]])

    cached_search = CachedTool(search, store)
    return {
        t: Tenant(cached_search, s, "base", config={"configurable": {"tenant": t}})
        for t, s in SOURCES.items()
    }


def _namespace(r: CountingRetriever, store: ToolResultCache) -> dict[str, Tenant]:
    """One tool object reading the tenant from a context variable; one wrapper per tenant."""

    @tool(response_format="content_and_artifact")
    def search(query: str) -> tuple[str, list[Hit]]:
        """Search the current tenant's reports."""
        return r.search(query, SOURCES[TENANT.get()])

    return {
        t: Tenant(CachedTool(search, store, namespace={"tenant": t}), s, "base", context=t)
        for t, s in SOURCES.items()
    }


def _search_registry(r: CountingRetriever) -> ToolRegistry:
    """A registry with a Qwen-style "search" tool searching the ``source`` of its config."""
    registry = ToolRegistry()

    @registry.register("search")
    class Search(FunctionTool):
        description = "Search the reports."
        parameters = [{"name": "query", "type": "string", "required": True}]

        def call(self, params: Any, **kwargs: Any) -> Any:
            return r.search(self.verify_args(params)["query"], self.config["source"])[0]

    return registry


def _function_tools(r: CountingRetriever, store: ToolResultCache) -> dict[str, Tenant]:
    """Qwen-style class tools from a registry: one name, the source in each one's config."""
    registry = _search_registry(r)
    return {
        t: Tenant(CachedTool(registry.get_tool("search", source=s), store), s, "qwen")
        for t, s in SOURCES.items()
    }


def _model_tools(r: CountingRetriever, store: ToolResultCache) -> dict[str, Tenant]:
    """Two pydantic-model tools named "search", each searching its own source."""

    class SearchA(BaseModel):
        """Search the reports."""

        query: str

        def run(self) -> str:
            return r.search(self.query, SOURCES["a"])[0]

    class SearchB(SearchA):
        def run(self) -> str:
            return r.search(self.query, SOURCES["b"])[0]

    models = {"a": SearchA, "b": SearchB}
    return {
        t: Tenant(CachedTool(ModelTool(models[t], name="search"), store), s, "qwen")
        for t, s in SOURCES.items()
    }


def _make_cached(
    r: CountingRetriever, store: ToolResultCache, source: str, *, use_async: bool
) -> Any:
    """What a factory of per-tenant functions does: same name, same store, another closure."""
    if use_async:

        @cached(store, name="search")
        async def asearch(query: str) -> tuple[str, list[Hit]]:
            """Search the reports."""
            await asyncio.sleep(0)
            return r.search(query, source)

        return asearch

    @cached(store, name="search")
    def search(query: str) -> tuple[str, list[Hit]]:
        """Search the reports."""
        return r.search(query, source)

    return search


def _cached_functions(r: CountingRetriever, store: ToolResultCache) -> dict[str, Tenant]:
    return {
        t: Tenant(_make_cached(r, store, s, use_async=False), s, "function")
        for t, s in SOURCES.items()
    }


def _cached_coroutines(r: CountingRetriever, store: ToolResultCache) -> dict[str, Tenant]:
    return {
        t: Tenant(_make_cached(r, store, s, use_async=True), s, "function")
        for t, s in SOURCES.items()
    }


def _tools_over_cached(r: CountingRetriever, store: ToolResultCache) -> dict[str, Tenant]:
    """``@tool`` over ``@cached`` closures: the tools are plain, their functions cached."""
    return {
        t: Tenant(
            tool(
                _make_cached(r, store, s, use_async=False), response_format="content_and_artifact"
            ),
            s,
            "base",
        )
        for t, s in SOURCES.items()
    }


SETUPS: dict[str, tuple[str, Setup]] = {
    # name: (family of entry points, how the tenants are made)
    "bound-filter": ("base", _bound_filters),
    "injected-tenant": ("base", _injected_tenant),
    "run-config": ("base", _run_config),
    "namespace": ("base", _namespace),
    "function-tool": ("qwen", _function_tools),
    "model-tool": ("qwen", _model_tools),
    "cached-function": ("function", _cached_functions),
    "cached-coroutine": ("function", _cached_coroutines),
    "tool-over-cached": ("base", _tools_over_cached),
}


def _kwargs(t: Tenant) -> dict[str, Any]:
    return {**t.injected, **({"config": t.config} if t.config is not None else {})}


def _node(t: Tenant) -> ToolsNode:
    return ToolsNode([t.tool], injected=t.injected)


def _call_function(t: Tenant, *args: Any, **kwargs: Any) -> Any:
    result = t.tool(*args, **kwargs)
    return asyncio.run(result) if inspect.isawaitable(result) else result


async def _agen(items: Any) -> list[Any]:
    return [item async for item in items]


Entry = Callable[[Tenant], Any]
ENTRIES: dict[str, tuple[frozenset[str], bool, Entry]] = {
    # name: (families, takes a run config, the call)
    "invoke-dict": (
        frozenset({"base", "qwen"}),
        True,
        lambda t: t.tool.invoke({"query": QUERY}, **_kwargs(t)),
    ),
    "invoke-string": (
        frozenset({"base", "qwen"}),
        True,
        lambda t: t.tool.invoke(t.text, **_kwargs(t)),
    ),
    "invoke-toolcall": (
        frozenset({"base", "qwen"}),
        True,
        lambda t: t.tool.invoke(make_tool_call("search", {"query": QUERY}), **_kwargs(t)),
    ),
    "ainvoke-dict": (
        frozenset({"base", "qwen"}),
        True,
        lambda t: asyncio.run(t.tool.ainvoke({"query": QUERY}, **_kwargs(t))),
    ),
    "ainvoke-toolcall": (
        frozenset({"base", "qwen"}),
        True,
        lambda t: asyncio.run(
            t.tool.ainvoke(make_tool_call("search", {"query": QUERY}), **_kwargs(t))
        ),
    ),
    "execute": (frozenset({"base"}), True, lambda t: t.tool.execute(QUERY, **_kwargs(t))),
    "aexecute": (
        frozenset({"base"}),
        True,
        lambda t: asyncio.run(t.tool.aexecute(t.call() | {"id": "x"}, **_kwargs(t))),
    ),
    "run-with-artifact": (
        frozenset({"base"}),
        True,
        lambda t: t.tool.run_with_artifact({"query": QUERY}, **_kwargs(t)),
    ),
    "arun-with-artifact": (
        frozenset({"base"}),
        True,
        lambda t: asyncio.run(t.tool.arun_with_artifact(QUERY, **_kwargs(t))),
    ),
    "batch": (
        frozenset({"base"}),
        True,
        lambda t: t.tool.batch([{"query": QUERY}, t.call() | {"id": "b"}], **_kwargs(t)),
    ),
    "abatch": (
        frozenset({"base"}),
        True,
        lambda t: asyncio.run(t.tool.abatch([QUERY, t.call() | {"id": "b"}], **_kwargs(t))),
    ),
    "stream": (frozenset({"base"}), True, lambda t: list(t.tool.stream(QUERY, **_kwargs(t)))),
    "astream": (
        frozenset({"base"}),
        True,
        lambda t: asyncio.run(_agen(t.tool.astream(t.call() | {"id": "s"}, **_kwargs(t)))),
    ),
    "node-invoke": (
        frozenset({"base", "qwen"}),
        False,
        lambda t: _node(t).invoke([t.call()]),
    ),
    "node-ainvoke": (
        frozenset({"base", "qwen"}),
        False,
        lambda t: asyncio.run(_node(t).ainvoke([t.call()])),
    ),
    "node-stream": (
        frozenset({"base", "qwen"}),
        False,
        lambda t: list(_node(t).stream([t.call()])),
    ),
    "langchain-adapter": (
        frozenset({"base"}),
        False,
        lambda t: to_langchain_tool(t.tool).invoke(t.call(**t.injected) | {"id": "lc"}),
    ),
    "call-positional": (frozenset({"function"}), False, lambda t: _call_function(t, QUERY)),
    "call-keyword": (frozenset({"function"}), False, lambda t: _call_function(t, query=QUERY)),
}


def _entries(setup: str) -> list[str]:
    """The entry points of a setup's family; with the tenant in the run configuration, those
    that take one."""
    family = SETUPS[setup][0]
    return [
        name
        for name, (families, takes_config, _) in ENTRIES.items()
        if family in families and (takes_config or setup != "run-config")
    ]


CASES = [(setup, entry) for setup in SETUPS for entry in _entries(setup)]


def _enter(entry: str, t: Tenant) -> Any:
    token = TENANT.set(t.context) if t.context is not None else None
    try:
        return ENTRIES[entry][2](t)
    finally:
        if token is not None:
            TENANT.reset(token)


def _sources(result: Any) -> set[str]:
    """Every source a result shows: in its text, its artifact's hits, its messages."""
    if isinstance(result, str):
        return set(re.findall(r"doc\d\.md", result))
    if isinstance(result, Hit):
        return {result.chunk.source}
    if isinstance(result, (list, tuple)):
        return set().union(*map(_sources, result))
    parts = [getattr(result, name, None) for name in ("content", "artifact", "message")]
    assert any(part is not None for part in parts), f"unexpected result {result!r}"
    return _sources([part for part in parts if part is not None])


class TestTwoTenants:
    """Issue 32: two tenants through every cached entry point never see each other's results."""

    @pytest.mark.parametrize("first", ["a", "b"])
    @pytest.mark.parametrize(("setup", "entry"), CASES, ids=[f"{s}-{e}" for s, e in CASES])
    def test_each_tenant_sees_only_its_own_results(
        self, tenant_index: Index, setup: str, entry: str, first: str
    ) -> None:
        store = ToolResultCache(ttl=None)
        retriever = CountingRetriever(tenant_index)
        tenants = SETUPS[setup][1](retriever, store)
        other, own = tenants[first], tenants["b" if first == "a" else "a"]
        for name in _entries(setup):  # the other tenant fills the cache through every way in
            assert _sources(_enter(name, other)) == {other.source}, name
        filled = retriever.runs
        assert _sources(_enter(entry, own)) == {own.source}
        assert retriever.runs > filled  # nothing of the other tenant's answered this tenant
        searched, hits = retriever.runs, store.info().hits
        assert _sources(_enter(entry, own)) == {own.source}
        assert retriever.runs == searched and store.info().hits > hits  # its own entry hit

    def test_every_entry_point_is_exercised(self) -> None:
        assert {entry for _, entry in CASES} == set(ENTRIES)
        assert {setup for setup, _ in CASES} == set(SETUPS)


class TestCacheKey:
    """The one key rule: what counts as the tool, the arguments, the injected values."""

    def test_tools_made_per_request_never_inherit_a_dead_tools_entries(
        self, tenant_index: Index
    ) -> None:
        # Tools made and dropped per request free their memory, and a new tool often lands
        # at a dead one's address: a key on id() would hand it the dead tool's results.
        # The allocator decides when an address comes back, so requests alternate tenants
        # until one has (at least 8, at most 200): the rule is then put to the test.
        store = ToolResultCache(ttl=None)
        retriever = CountingRetriever(tenant_index)
        addresses: set[int] = set()
        requests = 0
        while requests < 200 and (requests < 8 or len(addresses) == requests):
            tenant = "ab"[requests % 2]
            search = create_retriever_tool(
                retriever, "search", "Search.", filter={"source": SOURCES[tenant]}
            )
            addresses.add(id(search))
            assert _sources(CachedTool(search, store).invoke(QUERY)) == {SOURCES[tenant]}
            requests += 1
            del search
            gc.collect()
        assert retriever.runs == requests and store.info().hits == 0
        assert len(addresses) < requests  # addresses were reused

    def test_calls_the_tool_cannot_tell_apart_share_one_entry(self, tenant_index: Index) -> None:
        retriever = CountingRetriever(tenant_index)
        search = CachedTool(create_retriever_tool(retriever, "search", "Search."))
        answers = [
            search.invoke(QUERY),
            search.invoke({"query": QUERY}),
            search.invoke({"query": f"  {QUERY} "}),  # the schema strips whitespace
        ]
        assert answers[0] == answers[1] == answers[2]
        assert _sources(answers[0]) == {"doc1.md", "doc2.md"}
        assert retriever.runs == 1 and search.cache.info().hits == 2

    def test_rejected_input_is_never_cached(self, tenant_index: Index) -> None:
        retriever = CountingRetriever(tenant_index)
        search = CachedTool(create_retriever_tool(retriever, "search", "Search."))
        bad = make_tool_call("search", {"query": QUERY, "filter": {"source": "doc2.md"}})
        for _ in range(2):
            with pytest.raises(ValidationError):  # the tool's own error, each time
                search.invoke(bad)
        assert len(search.cache) == 0 and retriever.runs == 0

    def test_the_call_id_is_not_part_of_the_key(self) -> None:
        runs: list[str] = []

        @tool
        def echo(text: str, call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Echo the text."""
            runs.append(call_id)
            return text

        cached_echo = CachedTool(echo)
        first = cached_echo.invoke(make_tool_call("echo", {"text": "hi"}, id="one"))
        second = cached_echo.invoke(make_tool_call("echo", {"text": "hi"}, id="two"))
        assert runs == ["one"]
        assert (first.tool_call_id, second.tool_call_id, second.content) == ("one", "two", "hi")

    def test_a_setting_changed_on_the_same_tool_is_a_miss(self, tenant_index: Index) -> None:
        retriever = CountingRetriever(tenant_index)
        search = _search_registry(retriever).get_tool("search", source="doc1.md")
        wrapped = CachedTool(search)
        assert _sources(wrapped.invoke({"query": QUERY})) == {"doc1.md"}
        search.config["source"] = "doc2.md"
        assert _sources(wrapped.invoke({"query": QUERY})) == {"doc2.md"}
        assert retriever.runs == 2

    def test_identity_is_the_tool_object_not_its_name(self, tenant_index: Index) -> None:
        retriever = CountingRetriever(tenant_index)
        one = create_retriever_tool(retriever, "search", "Search.")
        two = create_retriever_tool(retriever, "search", "Search.")
        assert tool_identity(one) == tool_identity(one) != tool_identity(two)
        store = ToolResultCache()
        CachedTool(one, store).invoke(QUERY)
        CachedTool(one, store).invoke(QUERY)  # another wrapper over the same tool: a hit
        assert store.info().hits == 1 and retriever.runs == 1

    def test_namespace_is_part_of_the_key(self) -> None:
        runs: list[str] = []

        @cached(ToolResultCache(), namespace="a")
        def ping(text: str) -> str:
            runs.append(text)
            return text

        key_a = cache_key(ping, (("x",), {}), entry="call", namespace="a")
        assert key_a == cache_key(ping, ((), {"text": "x"}), entry="call", namespace="a")
        assert key_a != cache_key(ping, (("x",), {}), entry="call", namespace="b")
        assert ping("x") == ping(text="x") == "x" and runs == ["x"]

    @pytest.mark.parametrize("namespace", [object(), {"tenant": {1, 2}}])
    def test_a_namespace_json_cannot_encode_is_refused(self, namespace: Any) -> None:
        with pytest.raises(ConfigError, match=r"namespace .* cannot be part of a cache key"):
            CachedTool(CountingTool(), namespace=namespace)
        with pytest.raises(ConfigError, match="namespace"):
            cached(namespace=namespace)


@pytest.mark.stress
def test_two_tenants_from_threads_with_tools_made_per_request(tenant_index: Index) -> None:
    """Threads, a small shared store (evictions), tools kept and tools made per request (so
    dead tools' addresses are reused): no call ever sees the other tenant's source."""
    store = ToolResultCache(maxsize=8, ttl=None)
    retriever = CountingRetriever(tenant_index)
    kept = _bound_filters(retriever, store)
    rng = random.Random(32)
    jobs = [(rng.choice("ab"), rng.randrange(4), rng.random() < 0.5) for _ in range(2400)]

    def run(job: tuple[str, int, bool]) -> tuple[str, set[str]]:
        tenant, how, per_request = job
        source = SOURCES[tenant]
        if per_request:
            made = create_retriever_tool(retriever, "search", "S.", filter={"source": source})
            search = CachedTool(made, store)
        else:
            search = kept[tenant].tool
        if how == 0:
            result = search.invoke(QUERY)
        elif how == 1:
            result = search.invoke(make_tool_call("search", {"query": QUERY}))
        elif how == 2:
            result = ToolsNode([search]).invoke([make_tool_call("search", {"query": QUERY})])
        else:
            result = asyncio.run(search.ainvoke({"query": QUERY}))
        return source, _sources(result)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(run, jobs))
    assert all(seen == {source} for source, seen in results)
    assert store.info().hits > 0 and store.info().evictions > 0
