"""Seed details read line by line: seed 001's ToolExecutor names, Eino's per-call options and
Qwen-Agent's tool attributes, parameter fallback, error formatting and timeouts.

Timeouts are tested without timing thresholds: the slow tool blocks on an event that the test
releases only after the timeout has been observed, so the outcome never depends on speed.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel, Field

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.errors import ToolInputError
from ragtools.retrieval.tools import (
    FunctionTool,
    ToolExecutor,
    ToolsNode,
    get_tool,
    make_tool_call,
    tool,
)
from ragtools.retrieval.tools.exceptions import ToolTimeoutError
from ragtools.retrieval.tools.output import ToolOutput
from ragtools.retrieval.tools.params import format_result, parse_arguments
from ragtools.retrieval.tools.qwen import DEFAULT_TOOL_CONFIGS, FileTool, tool_description
from ragtools.retrieval.tools.registry import UnknownToolError


class TestSeed001ToolExecutor:
    @staticmethod
    def _executor() -> ToolExecutor:
        executor = ToolExecutor()

        @executor.register_tool(
            name="ip_is_internal", description="Check whether IPs are internal."
        )
        class IPIsInternal(BaseModel):
            ips: list[str] = Field(description="Deduplicated IP addresses to check.")

            @staticmethod
            def run(ips: list[str]) -> dict[str, bool]:
                return {ip: ip.startswith(("10.", "192.168.")) for ip in ips}

        return executor

    def test_execute_tool_and_export_metadata(self) -> None:
        executor = self._executor()
        result = executor.execute_tool("ip_is_internal", {"ips": ["10.0.0.1", "8.8.8.8"]})
        assert result == {"10.0.0.1": True, "8.8.8.8": False}
        metadata = executor.export_metadata()
        assert metadata["ip_is_internal"]["description"] == "Check whether IPs are internal."
        properties = metadata["ip_is_internal"]["parameters"]["properties"]
        assert properties["ips"]["description"] == "Deduplicated IP addresses to check."

    def test_unknown_name_is_a_message_not_an_exception(self) -> None:
        message = self._executor().execute_tool("nslookup", {"host": "x"})
        assert message.startswith("Tool 'nslookup' is not registered")
        assert "ip_is_internal" in message

    @pytest.mark.parametrize("kind", ["not a model", "no run"])
    def test_bad_classes_are_value_errors(self, kind: str) -> None:
        class NoRun(BaseModel):
            x: int

        class Plain:
            def run(self) -> None: ...

        target = Plain if kind == "not a model" else NoRun
        with pytest.raises(ValueError, match=r"pydantic BaseModel|run"):
            ToolExecutor().register_tool("bad", "Bad.")(target)  # type: ignore[type-var]


class TestQwenToolDetails:
    def test_get_tool_of_an_unknown_name_is_a_value_error(self) -> None:
        with pytest.raises(ValueError, match="not registered") as info:
            get_tool("no_such_tool")
        assert isinstance(info.value, (UnknownToolError, KeyError, ToolInputError))

    def test_format_result_of_an_exception(self) -> None:
        assert format_result(RuntimeError("disk full")) == "Error: disk full"
        assert format_result({"城市": "深圳"}) == '{\n  "城市": "深圳"\n}'

    def test_key_value_fallback(self) -> None:
        assert parse_arguments("city=Shenzhen&days=3") == {"city": "Shenzhen", "days": "3"}
        assert parse_arguments("query=a=b") == {"query": "a=b"}
        with pytest.raises(ToolInputError, match="valid JSON"):
            parse_arguments("city=Shenzhen&oops")
        with pytest.raises(ToolInputError, match="valid JSON"):
            parse_arguments("city=Shenzhen", strict_json=True)

    def test_key_value_arguments_are_validated_by_the_schema(self) -> None:
        class Forecast(FunctionTool):
            name = "forecast_kv"
            description = "Forecast."
            parameters = [
                {"name": "city", "type": "string", "required": True},
                {"name": "days", "type": "string"},
            ]

            def call(self, params: Any, **kwargs: Any) -> Any:
                return self.verify_args(params)

        assert Forecast().call("city=Shenzhen&days=3") == {"city": "Shenzhen", "days": "3"}

    def test_descriptive_attributes_and_default_config(self) -> None:
        retrieval = get_tool("retrieval")
        info = tool_description(retrieval)
        assert info["name"] == info["name_for_human"] == "retrieval"
        assert info["file_access"] is True and isinstance(info["args_format"], str)
        assert info["function"]["parameters"]["required"] == ["query"]
        assert DEFAULT_TOOL_CONFIGS["retrieval"] == {
            "max_ref_token": 4000,
            "rag_searchers": ["hybrid_search"],
        }
        assert retrieval.config == DEFAULT_TOOL_CONFIGS["retrieval"]
        assert get_tool("retrieval", max_ref_token=500).max_ref_token == 500
        assert get_tool("simple_doc_parser").file_access is True

    def test_plain_function_tool_attributes(self) -> None:
        class Plain(FunctionTool):
            name = "plain_attrs"
            description = "Plain."

            def call(self, params: Any, **kwargs: Any) -> Any:
                return "ok"

        plain = Plain()
        assert (plain.name_for_human, plain.file_access) == ("plain_attrs", False)


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # release any thread still blocked, whatever the test did


class TestTimeouts:
    def test_tool_level_timeout_becomes_a_handled_error(self, gate: threading.Event) -> None:
        @tool
        def slow(query: str) -> str:
            """Wait for the gate."""
            gate.wait()
            return query

        limited = slow.model_copy(update={"timeout": 0.05})
        with pytest.raises(
            ToolTimeoutError, match=re.escape("'slow' did not finish within its timeout of 0.05 s")
        ):
            limited.invoke({"query": "q"})
        handled = slow.model_copy(update={"timeout": 0.05, "handle_tool_error": True})
        message = handled.invoke(make_tool_call("slow", {"query": "q"}, id="t1"))
        assert message.status == "error" and "0.05 s" in message.content
        with pytest.raises(ToolTimeoutError):
            asyncio.run(limited.ainvoke({"query": "q"}))

    def test_bad_timeout_is_a_config_error(self) -> None:
        @tool
        def quick(query: str) -> str:
            """Return at once."""
            return query

        with pytest.raises(ConfigError, match="timeout"):
            type(quick)(**{**quick.__dict__, "timeout": 0})
        with pytest.raises(ConfigError, match="timeout"):
            ToolsNode([quick], timeout=-1)

    def test_node_per_call_timeout_lets_the_others_finish(self, gate: threading.Event) -> None:
        @tool
        def slow(query: str) -> str:
            """Wait for the gate."""
            gate.wait()
            return query

        @tool
        def quick(query: str) -> str:
            """Return at once."""
            return query.upper()

        node = ToolsNode([slow, quick])
        calls = [
            make_tool_call("quick", {"query": "a"}, id="1"),
            make_tool_call("slow", {"query": "b"}, id="2"),
            make_tool_call("quick", {"query": "c"}, id="3"),
        ]
        messages = node.invoke(calls, timeout={"slow": 0.05})
        assert [m.tool_call_id for m in messages] == ["1", "2", "3"]
        assert [m.status for m in messages] == ["success", "error", "success"]
        assert messages[1].content == (
            "Error: tool 'slow' did not finish within its timeout of 0.05 s; try a simpler "
            "request or another tool"
        )
        assert (messages[0].content, messages[2].content) == ("A", "C")
        [late] = asyncio.run(ToolsNode([slow], timeout=0.05).ainvoke(calls[1:2]))
        assert late.status == "error" and "'slow'" in late.content
        gate.set()
        [done] = node.invoke(calls[1:2])  # no timeout this time: the gate is open
        assert done.content == "b"

    def test_function_tool_timeout_from_config(self, gate: threading.Event) -> None:
        class Waiter(FunctionTool):
            name = "waiter"
            description = "Wait."

            def call(self, params: Any, **kwargs: Any) -> Any:
                gate.wait()
                return "done"

        message = Waiter(timeout=0.05).invoke(make_tool_call("waiter", {}, id="w"))
        assert message.status == "error" and "'waiter'" in message.content
        with pytest.raises(ConfigError, match="timeout"):
            Waiter(timeout=0)

    def test_file_tool_call_honours_the_timeout(self, gate: threading.Event, tmp_path: Any) -> None:
        class SlowFiles(FileTool):
            name = "slow_files"
            description = "Read files slowly."
            parameters = [{"name": "files", "type": "array", "items": {"type": "string"}}]

            def call_files(self, arguments: dict[str, Any], paths: list[str]) -> ToolOutput:
                gate.wait()
                return ToolOutput(content=", ".join(paths))

        for name in ("a.pdf", "b.pdf"):
            (tmp_path / name).write_bytes(b"%PDF-1.4")
        a, b = str(tmp_path / "a.pdf"), str(tmp_path / "b.pdf")
        with pytest.raises(ToolTimeoutError, match="'slow_files'"):
            SlowFiles(timeout=0.05, cache_dir=str(tmp_path)).call({}, files=[a])
        gate.set()
        tool = SlowFiles(cache_dir=str(tmp_path), roots=[tmp_path])
        assert tool.call({"files": [a]}, files=[b]) == f"{a}, {b}"
