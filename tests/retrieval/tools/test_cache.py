"""Result cache for deterministic tools: TTL, size bound, canonical keys, wrappers."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.tools.cache import CachedTool, ToolResultCache, cached
from ragtools.retrieval.tools.messages import ToolMessage, is_tool_call, make_tool_call
from ragtools.retrieval.tools.node import ToolsNode


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
