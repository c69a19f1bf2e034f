"""ToolsNode: execute the tool calls of one assistant message (Eino's ``ToolsNode``).

The node does not decide which tool to run: the model did. It takes the tool calls of one
assistant message and returns one :class:`~retrieval.tools.messages.ToolMessage` per call, **in
the calls' order**, whatever order they finish in.

Choices, after Eino's ``ToolsNodeConfig``:

* Parallel by default (a thread pool for :meth:`ToolsNode.invoke`, ``asyncio.gather`` for
  :meth:`ToolsNode.ainvoke`); ``execute_sequentially=True`` runs them one after another in
  input order and stops at the first error.
* A call naming a tool the node does not have goes to ``unknown_tools_handler(name, arguments)``
  whose string becomes the result; without a handler it is an error message naming the known
  tools (LangGraph's ``ToolNode`` wording), or, when the node is told to raise
  (``handle_tool_error=False``), :class:`~retrieval.tools.registry.UnknownToolError` before
  any call runs.
* ``tool_arguments_handler(name, arguments)`` receives each known call's raw arguments as JSON
  text (dict arguments are serialised first, so the handler always sees text, like Eino's) and
  returns text or a dict; the result is parsed leniently (JSON5) by
  :func:`~retrieval.tools.params.parse_arguments`.
* Middleware (:class:`~retrieval.tools.execution.ToolMiddleware`; the first is the outermost)
  wraps each call; callbacks (:class:`~retrieval.tools.execution.ToolCallbacks`) run innermost,
  around the tool itself. :func:`~retrieval.tools.execution.get_current_tool_call_id` gives the
  current call id inside tools, middleware and callbacks.
* Errors keep the agent loop alive by default, as in LangGraph's ``ToolNode``: the default
  ``handle_tool_error`` (:func:`~retrieval.tools.runner.recoverable_error_text`) answers a
  ToolException, invalid arguments, an unknown tool or a timeout with a ``status="error"``
  message ``"Error: ..."``, and raises bugs. ``True`` turns every exception into a message,
  a string or a callable ``exc -> str`` as on every tool, and ``False`` raises everything
  (in parallel mode every call finishes, then the first failure in call order is raised).
  Errors of the arguments handler and of argument parsing count as the call's errors.
* Per-call options (Eino's tool options): ``timeout`` (seconds, or ``{tool name: seconds}``)
  and ``injected`` (values of the tools' ``InjectedToolArg`` arguments, e.g. a tenant), given
  to the node as defaults and to ``invoke``/``ainvoke``/``stream`` per call, the latter
  winning. A call past its timeout becomes an error message naming the tool and the limit;
  the others go on. Injected arguments the model sends are dropped, never used.
* LangGraph's state form works too: ``invoke({"messages": [..., ai_message]})`` runs the last
  message's tool calls and returns ``{"messages": [tool messages]}``.
* :meth:`ToolsNode.stream` yields :class:`~retrieval.tools.execution.ToolChunk` objects tagged
  with the call index; tools with a ``stream`` method stream chunk by chunk, others give one
  chunk; every call's last chunk carries its complete message, so
  :func:`~retrieval.tools.execution.collect_messages` rebuilds what ``invoke`` would return.

A tool is duck-typed (:class:`InvokableTool`, :class:`StreamableTool`): a ``name``, a
``description``, and ``invoke(tool_call) -> ToolMessage`` and/or ``stream(arguments) ->
Iterator[str]``; ``ainvoke`` is used when present, otherwise ``invoke`` runs in a thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import queue
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.tools.base import BaseTool
from ragtools.retrieval.tools.calls import (
    Timeout,
    call_list,
    call_name,
    check_timeout,
    is_state,
    last_calls,
)
from ragtools.retrieval.tools.exceptions import ErrorHandler, check_error_handler
from ragtools.retrieval.tools.execution import ToolCallbacks, ToolChunk, ToolMiddleware
from ragtools.retrieval.tools.messages import ToolMessage
from ragtools.retrieval.tools.params import ToolInfo
from ragtools.retrieval.tools.registry import UnknownToolError
from ragtools.retrieval.tools.render import convert_to_openai_function
from ragtools.retrieval.tools.runner import (
    CallRunner,
    ResolvedCall,
    ToolArgumentsHandler,
    UnknownToolsHandler,
    can_stream,
    recoverable_error_text,
)

logger = logging.getLogger(__name__)

__all__ = ["InvokableTool", "StreamableTool", "ToolsNode", "tool_info"]


@runtime_checkable
class InvokableTool(Protocol):
    """A tool the node can call: ``invoke(tool_call)`` returns a ToolMessage for a ToolCall."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    def invoke(self, tool_input: Any, /) -> Any: ...


@runtime_checkable
class StreamableTool(Protocol):
    """A tool whose result is an iterator of text chunks: ``stream(arguments)``."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    def stream(self, tool_input: Any, /) -> Iterator[str]: ...


def tool_info(tool: InvokableTool | StreamableTool) -> ToolInfo:
    """Describe a tool for a model, from whichever form its parameters are given in.

    Looks, in order, for one of our tools (the very schema :func:`convert_to_openai_tool`
    exports), a Qwen-style ``function`` dict, a ``tool_call_schema`` or ``args_schema``
    (pydantic model class or JSON-schema dict), then ``parameters`` (list form or JSON
    schema); a tool with none of them takes no arguments.
    """
    name, description = tool.name, getattr(tool, "description", "") or ""
    if isinstance(tool, BaseTool):
        return ToolInfo(name, description, convert_to_openai_function(tool)["parameters"])
    function = getattr(tool, "function", None)
    if isinstance(function, Mapping):
        return ToolInfo(name, description, function.get("parameters"))
    for attr in ("tool_call_schema", "args_schema"):
        schema = getattr(tool, attr, None)
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            return ToolInfo(name, description, schema.model_json_schema())
        if isinstance(schema, Mapping):
            return ToolInfo(name, description, schema)
    parameters = getattr(tool, "parameters", None)
    if isinstance(parameters, (Mapping, list, tuple)):
        return ToolInfo(name, description, parameters)
    return ToolInfo(name, description, None)


class _Failure:
    def __init__(self, exc: Exception) -> None:
        self.exc = exc


_DONE = object()


class ToolsNode:
    """Runs a model's tool calls and returns one message per call, in the calls' order.

    Args:
        tools: the tools the model may call (unique names).
        execute_sequentially: run calls one by one in input order instead of in parallel.
        unknown_tools_handler: ``(name, arguments_json) -> str`` for calls to missing tools.
        tool_arguments_handler: ``(name, arguments_json) -> str | dict`` run before each call.
        middlewares: wrappers around each call; the first is the outermost.
        callbacks: one or several :class:`ToolCallbacks`.
        handle_tool_error: default: recoverable errors become ``"Error: ..."`` messages, bugs
            raise; ``False`` raises all; ``True``, a string or ``exc -> str`` turns every
            error into a message.
        max_workers: thread-pool size for parallel sync calls (default: one per call).
        strict_json: parse argument text as strict JSON instead of JSON5.
        timeout: default per-call timeout (seconds, or by tool name).
        injected: default values of the tools' injected arguments.

    Raises:
        ConfigError: duplicate or empty tool names, a tool with neither ``invoke`` nor
            ``stream``, a middleware that is not a ToolMiddleware, ``max_workers < 1``, or a
            ``handle_tool_error`` that is not a bool, a string or a callable.

    Example:
        >>> node = ToolsNode([weather])  # doctest: +SKIP
        >>> node.invoke([make_tool_call("weather", {"city": "深圳"}, id="1")])  # doctest: +SKIP
        [ToolMessage(content='晴', tool_call_id='1', name='weather', status='success', ...)]
    """

    def __init__(
        self,
        tools: Sequence[InvokableTool | StreamableTool],
        *,
        execute_sequentially: bool = False,
        unknown_tools_handler: UnknownToolsHandler | None = None,
        tool_arguments_handler: ToolArgumentsHandler | None = None,
        middlewares: Sequence[ToolMiddleware] = (),
        callbacks: ToolCallbacks | Sequence[ToolCallbacks] | None = None,
        handle_tool_error: ErrorHandler = recoverable_error_text,
        max_workers: int | None = None,
        strict_json: bool = False,
        timeout: Timeout = None,
        injected: Mapping[str, Any] | None = None,
    ) -> None:
        self._tools: dict[str, Any] = {}
        for tool in tools:
            name = getattr(tool, "name", None)
            if not isinstance(name, str) or not name:
                msg = f"Every tool needs a non-empty string name; {tool!r} has {name!r}"
                raise ConfigError(msg)
            if name in self._tools:
                msg = f"Two tools are named {name!r}; tool names in a ToolsNode must be unique"
                raise ConfigError(msg)
            if not callable(getattr(tool, "invoke", None)) and not can_stream(tool):
                msg = f"Tool {name!r} has neither an invoke() nor a stream() method"
                raise ConfigError(msg)
            self._tools[name] = tool
        for middleware in middlewares:
            if not isinstance(middleware, ToolMiddleware):
                msg = f"middlewares must be ToolMiddleware objects, got {middleware!r}"
                raise ConfigError(msg)
        if max_workers is not None and max_workers < 1:
            msg = f"max_workers must be >= 1 or None, got {max_workers}"
            raise ConfigError(msg)
        check_error_handler("ToolsNode", "handle_tool_error", handle_tool_error)
        check_timeout(timeout)
        self.execute_sequentially = execute_sequentially
        self.timeout = timeout
        self.injected = dict(injected or {})
        self._raise_unknown = unknown_tools_handler is None and handle_tool_error in (None, False)
        self._max_workers = max_workers
        self._runner = CallRunner(
            unknown_tools_handler=unknown_tools_handler,
            tool_arguments_handler=tool_arguments_handler,
            middlewares=middlewares,
            callbacks=callbacks,
            handle_tool_error=handle_tool_error,
            strict_json=strict_json,
        )
        self._runner.known = sorted(self._tools)

    @property
    def tools(self) -> dict[str, InvokableTool | StreamableTool]:
        """The node's tools by name (a copy)."""
        return dict(self._tools)

    def tool_infos(self) -> list[ToolInfo]:
        """What the model should be told about each tool, in the order given."""
        return [tool_info(tool) for tool in self._tools.values()]

    def openai_tools(self) -> list[dict[str, Any]]:
        """The tools as OpenAI tool schemas (``{"type": "function", "function": {...}}``)."""
        return [info.to_openai_tool() for info in self.tool_infos()]

    # ---- public entry points -------------------------------------------------------------

    def invoke(
        self, tool_calls: Any, *, timeout: Timeout = None, injected: Mapping[str, Any] | None = None
    ) -> Any:
        """Run the calls; one message per call, in the calls' order.

        Args:
            tool_calls: a list of ToolCall dicts (``args`` a dict or JSON text) or OpenAI-style
                ``{"id", "function": {"name", "arguments"}}`` dicts, or a message carrying them
                in ``.tool_calls`` / ``["tool_calls"]``, or LangGraph's ``{"messages": [...]}``
                state (its last message's calls; the result is then ``{"messages": [...]}``).
            timeout: this call's timeout (seconds or by tool name); default the node's.
            injected: values of injected arguments for this call, over the node's.

        Returns:
            ``list[ToolMessage]`` (``{"messages": list[ToolMessage]}`` for a state dict).

        Raises:
            UnknownToolError: a call names a missing tool and the node raises errors.
            Exception: a failing call's exception the error handler does not answer.
        """
        if is_state(tool_calls):
            return {
                "messages": self.invoke(last_calls(tool_calls), timeout=timeout, injected=injected)
            }
        calls = self._resolve(tool_calls, timeout, injected)
        if self.execute_sequentially or len(calls) <= 1:
            return [self._runner.invoke(call) for call in calls]
        with ThreadPoolExecutor(self._workers(calls), thread_name_prefix="ToolsNode") as pool:
            futures = [
                pool.submit(contextvars.copy_context().run, self._runner.invoke, call)
                for call in calls
            ]
        return [future.result() for future in futures]

    async def ainvoke(
        self, tool_calls: Any, *, timeout: Timeout = None, injected: Mapping[str, Any] | None = None
    ) -> Any:
        """Async :meth:`invoke`: calls run concurrently with ``asyncio.gather``."""
        if is_state(tool_calls):
            answers = await self.ainvoke(last_calls(tool_calls), timeout=timeout, injected=injected)
            return {"messages": answers}
        calls = self._resolve(tool_calls, timeout, injected)
        if self.execute_sequentially:
            return [await self._runner.ainvoke(call) for call in calls]
        results = await asyncio.gather(
            *(self._runner.ainvoke(call) for call in calls), return_exceptions=True
        )
        messages: list[ToolMessage] = []
        for result in results:
            if isinstance(result, BaseException):
                raise result
            messages.append(result)
        return messages

    def stream(
        self, tool_calls: Any, *, timeout: Timeout = None, injected: Mapping[str, Any] | None = None
    ) -> Iterator[ToolChunk]:
        """Run the calls and yield their results as :class:`ToolChunk` objects.

        Unknown tools are detected before anything runs (so this raises immediately); tool
        errors are raised from the iterator when they occur (or become an error message with
        ``handle_tool_error``). In parallel mode chunks of different calls interleave.
        """
        calls = self._resolve(tool_calls, timeout, injected)
        if self.execute_sequentially or len(calls) <= 1:
            return self._stream_sequential(calls)
        return self._stream_parallel(calls)

    # ---- resolution ----------------------------------------------------------------------

    def _resolve(
        self, tool_calls: Any, timeout: Timeout, injected: Mapping[str, Any] | None
    ) -> list[ResolvedCall]:
        check_timeout(timeout)
        limits = timeout if timeout is not None else self.timeout
        values = {**self.injected, **(injected or {})}
        calls = [
            replace(
                self._to_call(i, raw),
                timeout=limits.get(name) if isinstance(limits, Mapping) else limits,
                injected=values,
            )
            for i, raw in enumerate(call_list(tool_calls))
            for name in [call_name(raw)]
        ]
        missing = [call.name for call in calls if call.tool is None]
        if missing and self._raise_unknown:
            known = ", ".join(sorted(self._tools)) or "(none)"
            msg = f"Tool {missing[0]!r} not found in this ToolsNode; known tools: {known}"
            raise UnknownToolError(msg)
        return calls

    def _to_call(self, index: int, raw: Any) -> ResolvedCall:
        if not isinstance(raw, Mapping):
            msg = f"A tool call must be a dict, got {type(raw).__name__}: {raw!r}"
            raise ConfigError(msg)
        function = raw.get("function")
        if isinstance(function, Mapping):  # OpenAI wire format
            name, arguments = function.get("name"), function.get("arguments")
        else:
            name, arguments = raw.get("name"), raw.get("args", raw.get("arguments"))
        if not isinstance(name, str) or not name:
            msg = f"Tool call #{index} has no tool name: {raw!r}"
            raise ConfigError(msg)
        call_id = raw.get("id") or f"call_{uuid.uuid4().hex[:24]}"
        return ResolvedCall(index, str(call_id), name, arguments, self._tools.get(name))

    # ---- stream --------------------------------------------------------------------------

    def _workers(self, calls: list[ResolvedCall]) -> int:
        return min(len(calls), self._max_workers or len(calls))

    def _stream_sequential(self, calls: list[ResolvedCall]) -> Iterator[ToolChunk]:
        for call in calls:
            yield from self._runner.stream(call)

    def _stream_parallel(self, calls: list[ResolvedCall]) -> Iterator[ToolChunk]:
        inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()

        def pump(call: ResolvedCall) -> None:
            try:
                for chunk in self._runner.stream(call):
                    inbox.put(chunk)
            except Exception as exc:
                inbox.put(_Failure(exc))
            finally:
                inbox.put(_DONE)

        pool = ThreadPoolExecutor(self._workers(calls), thread_name_prefix="ToolsNode")
        for call in calls:
            pool.submit(pump, call)
        pool.shutdown(wait=False)  # workers finish on their own; nothing left to submit
        running = len(calls)
        while running:
            item = inbox.get()
            if item is _DONE:
                running -= 1
            elif isinstance(item, _Failure):
                raise item.exc
            else:
                yield item
