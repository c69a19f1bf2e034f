"""ToolsNode (Eino's ToolsNode, SEEDS.md section 2): execution of one message's tool calls."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.errors import ToolInputError
from ragtools.retrieval.tools.classtool import FunctionTool
from ragtools.retrieval.tools.execution import (
    AsyncInvokeEndpoint,
    InvokeEndpoint,
    StreamEndpoint,
    ToolCallbacks,
    ToolCallInput,
    ToolMiddleware,
    collect_messages,
    get_current_tool_call_id,
)
from ragtools.retrieval.tools.messages import ToolCall, ToolMessage, make_tool_call
from ragtools.retrieval.tools.node import ToolsNode, tool_info
from ragtools.retrieval.tools.registry import UnknownToolError

DELAY = 0.3


class SleepyTool:
    """Invokable test tool: sleeps ``delay`` seconds (per call or default), records everything."""

    def __init__(self, name: str = "sleepy", delay: float = 0.0) -> None:
        self.name = name
        self.description = "Sleep, then echo the arguments."
        self.parameters = [{"name": "x", "type": "integer", "description": "a number"}]
        self.delay = delay
        self.lock = threading.Lock()
        self.active = self.max_active = 0
        self.started: list[Any] = []
        self.finished: list[Any] = []
        self.seen_ids: list[str | None] = []

    def _enter(self, args: dict[str, Any]) -> float:
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self.started.append(args.get("x"))
            self.seen_ids.append(get_current_tool_call_id())
        return float(args.get("delay", self.delay))

    def _leave(self, call: ToolCall) -> ToolMessage:
        with self.lock:
            self.active -= 1
            self.finished.append(call["args"].get("x"))
        if call["args"].get("fail"):
            msg = f"boom {call['args'].get('x')}"
            raise RuntimeError(msg)
        content = f"{self.name}:{json.dumps(call['args'], sort_keys=True, ensure_ascii=False)}"
        return ToolMessage(
            content=content,
            artifact=dict(call["args"]),
            tool_call_id=call["id"] or "",
            name=self.name,
        )

    def invoke(self, call: ToolCall) -> ToolMessage:
        time.sleep(self._enter(call["args"]))
        return self._leave(call)

    async def ainvoke(self, call: ToolCall) -> ToolMessage:
        await asyncio.sleep(self._enter(call["args"]))
        return self._leave(call)


class SpellTool:
    """Streaming-only test tool: yields the word letter by letter."""

    name = "spell"
    description = "Spell a word."
    parameters = {
        "type": "object",
        "properties": {"word": {"type": "string"}},
        "required": ["word"],
    }

    def __init__(self) -> None:
        self.seen_ids: list[str | None] = []

    def stream(self, args: dict[str, Any]) -> Iterator[str]:
        for letter in args["word"]:
            self.seen_ids.append(get_current_tool_call_id())
            yield letter
        if args.get("fail"):
            msg = "spelling failed"
            raise ValueError(msg)


def calls(*specs: tuple[str, dict[str, Any]]) -> list[ToolCall]:
    return [make_tool_call(name, args, id=f"call_{i}") for i, (name, args) in enumerate(specs)]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


class TestExecution:
    def test_one_message_per_call_in_order(self) -> None:
        tool = SleepyTool()
        messages = ToolsNode([tool]).invoke(calls(*[("sleepy", {"x": i}) for i in range(4)]))
        assert [m.tool_call_id for m in messages] == [f"call_{i}" for i in range(4)]
        assert [m.content for m in messages] == [f'sleepy:{{"x": {i}}}' for i in range(4)]
        assert [m.artifact for m in messages] == [{"x": i} for i in range(4)]

    def test_parallel_by_default(self) -> None:
        tool = SleepyTool(delay=DELAY)
        node = ToolsNode([tool])
        messages = node.invoke(calls(*[("sleepy", {"x": i}) for i in range(5)]))
        assert len(messages) == 5
        assert tool.max_active == 5  # all five ran at once

    def test_parallel_calls_overlap(self) -> None:
        barrier = threading.Barrier(3, timeout=10)

        class Meeting(SleepyTool):
            def invoke(self, call: ToolCall) -> ToolMessage:
                barrier.wait()  # only returns when all three calls run at once
                return super().invoke(call)

        node = ToolsNode([Meeting("meet")])
        assert len(node.invoke(calls(*[("meet", {"x": i}) for i in range(3)]))) == 3

    def test_results_in_call_order_when_later_calls_finish_first(self) -> None:
        tool = SleepyTool()
        delays = [0.3, 0.2, 0.1, 0.0]
        specs = [("sleepy", {"x": i, "delay": d}) for i, d in enumerate(delays)]
        messages = ToolsNode([tool]).invoke(calls(*specs))
        assert tool.finished == [3, 2, 1, 0]
        assert [m.artifact["x"] for m in messages] == [0, 1, 2, 3]

    def test_sequential_runs_in_order_one_at_a_time(self) -> None:
        tool = SleepyTool()
        specs = [("sleepy", {"x": i, "delay": d}) for i, d in enumerate([0.05, 0.0, 0.02])]
        messages = ToolsNode([tool], execute_sequentially=True).invoke(calls(*specs))
        assert tool.started == [0, 1, 2] and tool.finished == [0, 1, 2]
        assert tool.max_active == 1
        assert [m.tool_call_id for m in messages] == ["call_0", "call_1", "call_2"]

    def test_sequential_stops_at_the_first_error(self) -> None:
        tool = SleepyTool()
        node = ToolsNode([tool], execute_sequentially=True)
        specs = [("sleepy", {"x": 0}), ("sleepy", {"x": 1, "fail": True}), ("sleepy", {"x": 2})]
        with pytest.raises(RuntimeError, match="boom 1"):
            node.invoke(calls(*specs))
        assert tool.started == [0, 1]

    def test_parallel_error_raised_after_all_calls_finish(self) -> None:
        tool = SleepyTool()
        specs = [
            ("sleepy", {"x": 0, "delay": 0.1}),
            ("sleepy", {"x": 1, "fail": True}),
            ("sleepy", {"x": 2, "fail": True}),
            ("sleepy", {"x": 3}),
        ]
        with pytest.raises(RuntimeError, match="boom 1"):
            ToolsNode([tool]).invoke(calls(*specs))
        assert sorted(tool.finished) == [0, 1, 2, 3]

    def test_max_workers_bounds_parallelism(self) -> None:
        tool = SleepyTool(delay=0.05)
        ToolsNode([tool], max_workers=2).invoke(calls(*[("sleepy", {"x": i}) for i in range(4)]))
        assert tool.max_active <= 2

    def test_empty_message(self) -> None:
        assert ToolsNode([SleepyTool()]).invoke([]) == []


class TestErrorHandling:
    @pytest.mark.parametrize(
        ("handling", "expected"),
        [
            (True, "boom 1"),
            ("The tool failed; try again.", "The tool failed; try again."),
            (lambda exc: f"handled {type(exc).__name__}", "handled RuntimeError"),
        ],
    )
    def test_errors_become_error_messages(self, handling: Any, expected: str) -> None:
        node = ToolsNode([SleepyTool()], handle_tool_error=handling)
        messages = node.invoke(calls(("sleepy", {"x": 0}), ("sleepy", {"x": 1, "fail": True})))
        assert [m.status for m in messages] == ["success", "error"]
        assert messages[1].content == expected
        assert messages[1].tool_call_id == "call_1" and messages[1].name == "sleepy"

    def test_bad_argument_json_is_the_calls_error(self) -> None:
        openai_call = {"id": "o1", "function": {"name": "sleepy", "arguments": "{x: "}}
        with pytest.raises(ToolInputError, match="Parameters must be formatted as a valid JSON!"):
            ToolsNode([SleepyTool()], handle_tool_error=False).invoke([openai_call])
        [message] = ToolsNode([SleepyTool()], handle_tool_error=True).invoke([openai_call])
        assert message.status == "error"
        assert message.content.startswith("Parameters must be formatted as a valid JSON!")


class TestUnknownTools:
    def test_error_names_the_tool_and_the_known_ones_before_running_anything(self) -> None:
        tool = SleepyTool()
        node = ToolsNode([tool, SpellTool()], handle_tool_error=False)  # told to raise
        with pytest.raises(UnknownToolError) as info:
            node.invoke(calls(("sleepy", {"x": 1}), ("weather", {"city": "深圳"})))
        assert (
            str(info.value)
            == "Tool 'weather' not found in this ToolsNode; known tools: sleepy, spell"
        )
        assert tool.started == []
        with pytest.raises(UnknownToolError):
            node.stream(calls(("weather", {})))
        with pytest.raises(UnknownToolError):
            run(node.ainvoke(calls(("weather", {}))))

    def test_handler_answers_for_the_missing_tool(self) -> None:
        seen: list[tuple[str, str]] = []

        def handler(name: str, arguments: str) -> str:
            seen.append((name, arguments))
            return f"There is no tool named {name}; use sleepy."

        node = ToolsNode([SleepyTool()], unknown_tools_handler=handler)
        messages = node.invoke(calls(("weather", {"city": "深圳"}), ("sleepy", {"x": 1})))
        assert seen == [("weather", '{"city": "深圳"}')]
        assert messages[0].content == "There is no tool named weather; use sleepy."
        assert messages[0].tool_call_id == "call_0" and messages[0].name == "weather"
        assert messages[1].content == 'sleepy:{"x": 1}'
        [streamed] = collect_messages(node.stream(calls(("weather", {}))))
        assert streamed.content.startswith("There is no tool named weather")
        [awaited] = run(node.ainvoke(calls(("weather", {}))))
        assert awaited.content == streamed.content


class TestArgumentsHandler:
    def test_handler_sees_json_text_and_may_return_text(self) -> None:
        seen: list[tuple[str, str]] = []

        def fix(name: str, arguments: str) -> str:
            seen.append((name, arguments))
            return arguments.replace("```json", "").replace("```", "")

        openai_calls = [
            {
                "id": "a",
                "type": "function",
                "function": {"name": "sleepy", "arguments": "```json{x: 1,}```"},
            },
            {"id": "b", "name": "sleepy", "args": {"x": 2}, "type": "tool_call"},
        ]
        messages = ToolsNode([SleepyTool()], tool_arguments_handler=fix).invoke(openai_calls)
        assert seen == [("sleepy", "```json{x: 1,}```"), ("sleepy", '{"x": 2}')]
        assert [m.artifact for m in messages] == [{"x": 1}, {"x": 2}]

    def test_handler_may_return_a_dict(self) -> None:
        def inject(name: str, arguments: str) -> dict[str, Any]:
            return {**json.loads(arguments), "x": 99}

        [message] = ToolsNode([SleepyTool()], tool_arguments_handler=inject).invoke(
            calls(("sleepy", {"x": 1}))
        )
        assert message.artifact == {"x": 99}

    def test_handler_errors_are_the_calls_errors(self) -> None:
        def refuse(name: str, arguments: str) -> str:
            msg = "arguments refused"
            raise ToolInputError(msg)

        with pytest.raises(ToolInputError, match="refused"):
            ToolsNode(
                [SleepyTool()], tool_arguments_handler=refuse, handle_tool_error=False
            ).invoke(calls(("sleepy", {})))
        node = ToolsNode([SleepyTool()], tool_arguments_handler=refuse, handle_tool_error=True)
        assert node.invoke(calls(("sleepy", {})))[0].content == "arguments refused"


def _recording(label: str, log: list[str]) -> ToolMiddleware:
    def wrap_invoke(next_endpoint: InvokeEndpoint) -> InvokeEndpoint:
        def endpoint(call: ToolCallInput) -> ToolMessage:
            log.append(f"{label} before")
            message = next_endpoint(call)
            log.append(f"{label} after")
            return message

        return endpoint

    def wrap_ainvoke(next_endpoint: AsyncInvokeEndpoint) -> AsyncInvokeEndpoint:
        async def endpoint(call: ToolCallInput) -> ToolMessage:
            log.append(f"{label} async before")
            message = await next_endpoint(call)
            log.append(f"{label} async after")
            return message

        return endpoint

    def wrap_stream(next_endpoint: StreamEndpoint) -> StreamEndpoint:
        def endpoint(call: ToolCallInput) -> Iterator[str]:
            log.append(f"{label} stream before")
            for chunk in next_endpoint(call):
                yield f"{label}({chunk})"
            log.append(f"{label} stream after")

        return endpoint

    return ToolMiddleware(invoke=wrap_invoke, ainvoke=wrap_ainvoke, stream=wrap_stream)


class TestMiddleware:
    def _callbacks(self, log: list[str]) -> ToolCallbacks:
        return ToolCallbacks(
            on_start=lambda call: log.append("tool start"),
            on_end=lambda call, message: log.append("tool end"),
            on_end_stream=lambda call, chunks: log.append("tool stream end"),
        )

    def test_first_middleware_is_outermost(self) -> None:
        log: list[str] = []
        node = ToolsNode(
            [SleepyTool()],
            middlewares=[_recording("A", log), _recording("B", log)],
            callbacks=self._callbacks(log),
        )
        node.invoke(calls(("sleepy", {"x": 1})))
        assert log == ["A before", "B before", "tool start", "tool end", "B after", "A after"]

    def test_middleware_can_change_arguments_and_results(self) -> None:
        def double_x(next_endpoint: InvokeEndpoint) -> InvokeEndpoint:
            def endpoint(call: ToolCallInput) -> ToolMessage:
                changed = dataclasses.replace(call, arguments={"x": call.arguments["x"] * 2})
                message = next_endpoint(changed)
                return message.model_copy(update={"content": message.content.upper()})

            return endpoint

        node = ToolsNode([SleepyTool()], middlewares=[ToolMiddleware(invoke=double_x)])
        [message] = node.invoke(calls(("sleepy", {"x": 21})))
        assert message.content == 'SLEEPY:{"X": 42}'
        assert message.artifact == {"x": 42}

    def test_async_variant_under_ainvoke(self) -> None:
        log: list[str] = []
        node = ToolsNode(
            [SleepyTool()],
            middlewares=[_recording("A", log), _recording("B", log)],
            callbacks=self._callbacks(log),
        )
        run(node.ainvoke(calls(("sleepy", {"x": 1}))))
        assert log == [
            "A async before",
            "B async before",
            "tool start",
            "tool end",
            "B async after",
            "A async after",
        ]

    def test_sync_only_middleware_still_applies_under_ainvoke(self) -> None:
        log: list[str] = []
        sync_only = ToolMiddleware(invoke=_recording("S", log).invoke)
        node = ToolsNode([SleepyTool()], middlewares=[sync_only])
        [message] = run(node.ainvoke(calls(("sleepy", {"x": 1}))))
        assert log == ["S before", "S after"]
        assert message.content == 'sleepy:{"x": 1}'

    def test_stream_variant_wraps_streamable_tools(self) -> None:
        log: list[str] = []
        node = ToolsNode(
            [SpellTool(), SleepyTool()],
            middlewares=[_recording("A", log), _recording("B", log)],
            callbacks=self._callbacks(log),
            execute_sequentially=True,
        )
        chunks = list(node.stream(calls(("spell", {"word": "ok"}), ("sleepy", {"x": 1}))))
        assert [c.content for c in chunks if c.index == 0] == ["A(B(o))", "A(B(k))", ""]
        assert log == [
            "A stream before",
            "B stream before",
            "tool start",
            "tool stream end",
            "B stream after",
            "A stream after",
            # a tool that cannot stream goes through the invoke chain
            "A before",
            "B before",
            "tool start",
            "tool end",
            "B after",
            "A after",
        ]

    def test_middlewares_must_be_tool_middleware(self) -> None:
        with pytest.raises(ConfigError, match="ToolMiddleware"):
            ToolsNode([SleepyTool()], middlewares=[lambda endpoint: endpoint])  # type: ignore[list-item]


class TestCallbacks:
    def _recorder(self, events: list[tuple[str, Any]]) -> ToolCallbacks:
        return ToolCallbacks(
            on_start=lambda call: events.append(("start", (call.name, call.arguments))),
            on_end=lambda call, message: events.append(("end", message.content)),
            on_error=lambda call, exc: events.append(("error", str(exc))),
            on_end_stream=lambda call, chunks: events.append(("stream end", chunks)),
        )

    def test_start_and_end(self) -> None:
        events: list[tuple[str, Any]] = []
        ToolsNode([SleepyTool()], callbacks=self._recorder(events)).invoke(
            calls(("sleepy", {"x": 7}))
        )
        assert events == [("start", ("sleepy", {"x": 7})), ("end", 'sleepy:{"x": 7}')]

    def test_error(self) -> None:
        events: list[tuple[str, Any]] = []
        node = ToolsNode([SleepyTool()], callbacks=self._recorder(events), handle_tool_error=True)
        node.invoke(calls(("sleepy", {"x": 1, "fail": True})))
        assert events == [("start", ("sleepy", {"x": 1, "fail": True})), ("error", "boom 1")]

    def test_stream_end_gets_all_chunks(self) -> None:
        events: list[tuple[str, Any]] = []
        node = ToolsNode([SpellTool()], callbacks=self._recorder(events))
        list(node.stream(calls(("spell", {"word": "汉字"}))))
        assert events == [("start", ("spell", {"word": "汉字"})), ("stream end", ["汉", "字"])]

    def test_stream_error(self) -> None:
        events: list[tuple[str, Any]] = []
        node = ToolsNode([SpellTool()], callbacks=self._recorder(events))
        with pytest.raises(ValueError, match="spelling failed"):
            list(node.stream(calls(("spell", {"word": "ab", "fail": True}))))
        assert events[-1] == ("error", "spelling failed")

    def test_several_handlers_and_a_broken_one(self, caplog: pytest.LogCaptureFixture) -> None:
        events: list[tuple[str, Any]] = []

        def broken(call: ToolCallInput) -> None:
            msg = "observer bug"
            raise RuntimeError(msg)

        node = ToolsNode(
            [SleepyTool()], callbacks=[ToolCallbacks(on_start=broken), self._recorder(events)]
        )
        with caplog.at_level(logging.ERROR, logger="ragtools.retrieval.tools.execution"):
            [message] = node.invoke(calls(("sleepy", {"x": 1})))
        assert message.status == "success"
        assert [kind for kind, _ in events] == ["start", "end"]
        assert "observer bug" in caplog.text

    def test_async_callbacks(self) -> None:
        events: list[tuple[str, Any]] = []
        node = ToolsNode([SleepyTool()], callbacks=self._recorder(events))
        run(node.ainvoke(calls(("sleepy", {"x": 2}))))
        assert events == [("start", ("sleepy", {"x": 2})), ("end", 'sleepy:{"x": 2}')]


class TestCurrentToolCallId:
    def test_inside_tools_and_callbacks_in_parallel(self) -> None:
        tool = SleepyTool(delay=0.05)
        in_callbacks: list[tuple[str, str | None]] = []
        callbacks = ToolCallbacks(
            on_start=lambda call: in_callbacks.append((call.call_id, get_current_tool_call_id())),
            on_end=lambda call, m: in_callbacks.append((call.call_id, get_current_tool_call_id())),
        )
        node = ToolsNode([tool], callbacks=callbacks)
        node.invoke(calls(*[("sleepy", {"x": i}) for i in range(4)]))
        assert sorted(tool.seen_ids) == [f"call_{i}" for i in range(4)]  # type: ignore[type-var]
        assert len(in_callbacks) == 8
        assert all(expected == seen for expected, seen in in_callbacks)
        assert get_current_tool_call_id() is None

    def test_sequential_and_async(self) -> None:
        tool = SleepyTool()
        specs = [("sleepy", {"x": i}) for i in range(3)]
        ToolsNode([tool], execute_sequentially=True).invoke(calls(*specs))
        run(ToolsNode([tool]).ainvoke(calls(*specs)))
        assert tool.seen_ids[:3] == ["call_0", "call_1", "call_2"]
        assert sorted(tool.seen_ids[3:]) == ["call_0", "call_1", "call_2"]  # type: ignore[type-var]
        assert get_current_tool_call_id() is None

    def test_inside_streamed_tools(self) -> None:
        spell = SpellTool()
        specs = [("spell", {"word": "ab"}), ("spell", {"word": "cd"})]
        for sequential in (True, False):
            spell.seen_ids.clear()
            list(ToolsNode([spell], execute_sequentially=sequential).stream(calls(*specs)))
            assert sorted(spell.seen_ids) == ["call_0", "call_0", "call_1", "call_1"]  # type: ignore[type-var]
        assert get_current_tool_call_id() is None


class TestStream:
    def test_chunks_and_collected_messages(self) -> None:
        node = ToolsNode([SpellTool(), SleepyTool()], execute_sequentially=True)
        chunks = list(node.stream(calls(("spell", {"word": "abc"}), ("sleepy", {"x": 5}))))
        assert [(c.index, c.content, c.message is not None) for c in chunks] == [
            (0, "a", False),
            (0, "b", False),
            (0, "c", False),
            (0, "", True),
            (1, 'sleepy:{"x": 5}', True),
        ]
        spelled, slept = collect_messages(chunks)
        assert (spelled.content, spelled.tool_call_id, spelled.name) == ("abc", "call_0", "spell")
        assert slept.artifact == {"x": 5}  # an invoked tool keeps its artifact when streamed

    def test_parallel_stream_collects_like_invoke(self) -> None:
        node = ToolsNode([SpellTool(), SleepyTool()])
        specs = [
            ("sleepy", {"x": 1, "delay": 0.2}),
            ("spell", {"word": "xyz"}),
            ("sleepy", {"x": 2}),
        ]
        chunks = list(node.stream(calls(*specs)))
        assert [c.content for c in chunks if c.index == 1] == ["x", "y", "z", ""]
        assert chunks[-1].index == 0  # the slow first call finished last
        streamed = collect_messages(chunks)
        invoked = node.invoke(calls(*specs))
        assert [m.content for m in streamed] == [m.content for m in invoked]
        assert [m.tool_call_id for m in streamed] == ["call_0", "call_1", "call_2"]

    def test_stream_only_tool_under_invoke(self) -> None:
        [message] = ToolsNode([SpellTool()]).invoke(calls(("spell", {"word": "流式"})))
        assert message.content == "流式"
        [awaited] = run(ToolsNode([SpellTool()]).ainvoke(calls(("spell", {"word": "ab"}))))
        assert awaited.content == "ab"

    def test_stream_error_handled(self) -> None:
        node = ToolsNode([SpellTool()], handle_tool_error=True)
        chunks = list(node.stream(calls(("spell", {"word": "ab", "fail": True}))))
        assert [c.content for c in chunks] == ["a", "b", "spelling failed"]
        assert chunks[-1].message is not None and chunks[-1].message.status == "error"

    def test_parallel_stream_error_propagates(self) -> None:
        node = ToolsNode([SpellTool(), SleepyTool()])
        with pytest.raises(RuntimeError, match="boom 1"):
            list(node.stream(calls(("spell", {"word": "ab"}), ("sleepy", {"x": 1, "fail": True}))))


class TestAsync:
    def test_parallel_with_gather(self) -> None:
        tool = SleepyTool(delay=DELAY)
        node = ToolsNode([tool])
        messages = run(node.ainvoke(calls(*[("sleepy", {"x": i}) for i in range(5)])))
        assert tool.max_active == 5  # all five ran at once
        assert [m.artifact["x"] for m in messages] == [0, 1, 2, 3, 4]

    def test_order_and_errors(self) -> None:
        tool = SleepyTool()
        specs = [("sleepy", {"x": i, "delay": d}) for i, d in enumerate([0.2, 0.1, 0.0])]
        messages = run(ToolsNode([tool]).ainvoke(calls(*specs)))
        assert tool.finished == [2, 1, 0]
        assert [m.tool_call_id for m in messages] == ["call_0", "call_1", "call_2"]
        with pytest.raises(RuntimeError, match="boom 0"):
            run(ToolsNode([tool]).ainvoke(calls(("sleepy", {"x": 0, "fail": True}))))

    def test_sequential(self) -> None:
        tool = SleepyTool()
        specs = [("sleepy", {"x": i, "delay": d}) for i, d in enumerate([0.05, 0.0])]
        run(ToolsNode([tool], execute_sequentially=True).ainvoke(calls(*specs)))
        assert tool.finished == [0, 1] and tool.max_active == 1

    def test_tool_without_ainvoke_runs_in_a_thread(self) -> None:
        class SyncOnly:
            name = "sync_only"
            description = "No async variant."

            def invoke(self, call: ToolCall) -> str:
                return f"id={get_current_tool_call_id()}"

        [message] = run(ToolsNode([SyncOnly()]).ainvoke(calls(("sync_only", {}))))
        assert message.content == "id=call_0" and message.tool_call_id == "call_0"


class TestInputs:
    def test_message_object_and_dict_with_tool_calls(self) -> None:
        node = ToolsNode([SleepyTool()])
        message = SimpleNamespace(tool_calls=calls(("sleepy", {"x": 1})))
        assert node.invoke(message)[0].content == 'sleepy:{"x": 1}'
        assert node.invoke({"role": "assistant", "tool_calls": calls(("sleepy", {"x": 2}))})[
            0
        ].artifact == {"x": 2}

    def test_missing_id_is_generated(self) -> None:
        [message] = ToolsNode([SleepyTool()]).invoke([{"name": "sleepy", "args": {"x": 1}}])
        assert message.tool_call_id.startswith("call_") and len(message.tool_call_id) > 10

    @pytest.mark.parametrize(
        "bad",
        [
            {"name": "sleepy", "args": {}},
            "sleepy",
            ["not a dict"],
            [{"args": {}}],
        ],
    )
    def test_malformed_input(self, bad: Any) -> None:
        with pytest.raises(ConfigError):
            ToolsNode([SleepyTool()]).invoke(bad)

    def test_construction_errors(self) -> None:
        with pytest.raises(ConfigError, match="unique"):
            ToolsNode([SleepyTool("a"), SleepyTool("a")])
        with pytest.raises(ConfigError, match="non-empty string name"):
            ToolsNode([SleepyTool("")])
        with pytest.raises(ConfigError, match="neither an invoke"):
            ToolsNode([SimpleNamespace(name="inert", description="")])  # type: ignore[list-item]
        with pytest.raises(ConfigError, match="max_workers"):
            ToolsNode([SleepyTool()], max_workers=0)


class TestToolInfo:
    def test_list_form_and_json_schema_form(self) -> None:
        class Add(FunctionTool):
            name = "add"
            description = "Add."
            parameters = {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            }

            def call(self, params: Any, **kwargs: Any) -> Any:
                args = self.verify_args(params)
                return args["a"] + args["b"]

        node = ToolsNode([SleepyTool(), SpellTool(), Add()])
        assert node.openai_tools() == [
            {
                "type": "function",
                "function": {
                    "name": "sleepy",
                    "description": "Sleep, then echo the arguments.",
                    "parameters": {
                        "type": "object",
                        "properties": {"x": {"type": "integer", "description": "a number"}},
                        "required": [],
                    },
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "spell",
                    "description": "Spell a word.",
                    "parameters": SpellTool.parameters,
                },
            },
            {
                "type": "function",
                "function": {"name": "add", "description": "Add.", "parameters": Add.parameters},
            },
        ]
        assert list(node.tools) == ["sleepy", "spell", "add"]
        assert node.invoke(calls(("add", {"a": 2, "b": 3})))[0].content == "5"

    def test_pydantic_args_schema_and_no_parameters(self) -> None:
        from pydantic import BaseModel

        class Query(BaseModel):
            query: str

        with_schema = SimpleNamespace(
            name="search", description="Search.", args_schema=Query, invoke=str
        )
        bare = SimpleNamespace(name="now", description="Now.", invoke=str)
        assert tool_info(with_schema).json_schema["required"] == ["query"]  # type: ignore[arg-type]
        assert tool_info(bare).json_schema == {  # type: ignore[arg-type]
            "type": "object",
            "properties": {},
            "required": [],
        }


class TestLangChainStyleTools:
    """The other half of issue 7: tools built with ``@tool`` run unchanged in a ToolsNode."""

    def test_decorated_tools(self) -> None:
        from ragtools.retrieval.tools.decorator import tool

        @tool
        def add(a: int, b: int) -> int:
            """Add two integers.

            Args:
                a: first term.
                b: second term.
            """
            return a + b

        @tool(response_format="content_and_artifact")
        def lookup(query: str) -> tuple[str, dict[str, Any]]:
            """Look something up."""
            return f"found {query} in call {get_current_tool_call_id()}", {"query": query}

        node = ToolsNode([add, lookup])
        messages = node.invoke(
            [
                {"id": "t1", "function": {"name": "add", "arguments": "{a: 2, b: '4'}"}},
                make_tool_call("lookup", {"query": "bm25"}, id="t2"),
            ]
        )
        assert messages[0].content == "6" and messages[0].tool_call_id == "t1"
        assert messages[1].content == "found bm25 in call t2"
        assert messages[1].artifact == {"query": "bm25"}
        functions = {t["function"]["name"]: t["function"] for t in node.openai_tools()}
        assert functions["add"]["parameters"]["required"] == ["a", "b"]
        assert functions["add"]["description"].startswith("Add two integers.")
        awaited = run(node.ainvoke([make_tool_call("add", {"a": 1, "b": 1}, id="t3")]))
        assert awaited[0].content == "2"
