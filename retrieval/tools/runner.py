"""Run one tool call for a ToolsNode: arguments, middleware, callbacks, errors, call id.

:class:`~retrieval.tools.node.ToolsNode` decides *when* calls run (threads, ``asyncio.gather``,
in order); :class:`CallRunner` decides *how* one call runs, the same way in every mode:

1. the current tool-call id is set (:func:`~retrieval.tools.execution.get_current_tool_call_id`);
2. a call to an unknown tool is answered by the unknown-tools handler (no middleware, no
   callbacks);
3. the raw arguments go through the arguments handler as JSON text, then are parsed leniently;
4. the middleware chain runs (first middleware outermost), its innermost endpoint firing the
   callbacks around the tool itself and logging the call's duration at DEBUG;
5. any exception of steps 3-4 is re-raised, or turned into an error message
   (``status="error"``) when ``handle_tool_error`` says so (the same option, with the same
   meaning, as on :class:`~retrieval.tools.base.BaseTool`). The node's default,
   :func:`recoverable_error_text`, answers what the model can act on (a ToolException, an
   unknown tool, invalid arguments, a timeout) with ``"Error: ..."`` and re-raises bugs.

Per-call options travel on the :class:`ResolvedCall`: a ``timeout`` (past it the call is a
:class:`~retrieval.tools.exceptions.ToolTimeoutError`, the other calls go on) and the
``injected`` values of the tool's hidden arguments. Hidden arguments are never taken from the
model: any the model sent are dropped before the middleware sees the call, and the node's
values are added only when the tool itself is called.

``invoke`` uses ``tool.invoke`` (or joins ``tool.stream``), ``ainvoke`` uses ``tool.ainvoke`` (or
``tool.invoke`` in a thread); when a middleware has an ``invoke`` variant but no ``ainvoke`` one,
``ainvoke`` runs the synchronous chain in a thread so that the middleware still applies.
``stream`` streams tools that have ``stream`` (stream middlewares) and runs the others through
the invoke chain as a single chunk.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ragtools.retrieval.errors import ToolInputError
from ragtools.retrieval.tools.arguments import is_validation_error
from ragtools.retrieval.tools.base import BaseTool
from ragtools.retrieval.tools.concurrency import acall_with_timeout, call_with_timeout, in_thread
from ragtools.retrieval.tools.exceptions import ErrorHandler, handled_content
from ragtools.retrieval.tools.execution import (
    AsyncInvokeEndpoint,
    CallbackGroup,
    InvokeEndpoint,
    StreamEndpoint,
    ToolCallbacks,
    ToolCallInput,
    ToolChunk,
    ToolMiddleware,
    compose_middlewares,
    context_for_call,
    tool_call_scope,
)
from ragtools.retrieval.tools.messages import ToolMessage, coerce_message
from ragtools.retrieval.tools.output import is_message_output
from ragtools.retrieval.tools.params import format_result, parse_arguments
from ragtools.retrieval.tools.registry import UnknownToolError
from ragtools.retrieval.tools.runnable import streams_natively
from ragtools.retrieval.tools.schema import injected_fields

logger = logging.getLogger(__name__)

__all__ = [
    "CallRunner",
    "ResolvedCall",
    "ToolArgumentsHandler",
    "UnknownToolsHandler",
    "can_stream",
    "hidden_arguments",
    "recoverable_error_text",
]

UnknownToolsHandler = Callable[[str, str], str]
"""``(tool_name, arguments_json) -> content`` for calls naming a tool that does not exist."""
ToolArgumentsHandler = Callable[[str, str], str | Mapping[str, Any]]
"""``(tool_name, arguments_json) -> arguments`` run on each known call before parsing."""


@dataclass(frozen=True)
class ResolvedCall:
    """One tool call matched against the node's tools.

    Attributes:
        index: position in the input list.
        call_id: the model's id (or a generated one).
        name: the tool name the model used.
        raw_arguments: the arguments as sent (JSON text, a dict or ``None``).
        tool: the tool, or ``None`` when the model named an unknown tool.
        timeout: seconds the call may take (``None``: no limit).
        injected: values of the tool's hidden (injected) arguments, from the application.
    """

    index: int
    call_id: str
    name: str
    raw_arguments: Any
    tool: Any
    timeout: float | None = None
    injected: Mapping[str, Any] = field(default_factory=dict)


class CallRunner:
    """Runs single resolved calls with the node's handlers, middleware and callbacks."""

    def __init__(
        self,
        *,
        unknown_tools_handler: UnknownToolsHandler | None = None,
        tool_arguments_handler: ToolArgumentsHandler | None = None,
        middlewares: Sequence[ToolMiddleware] = (),
        callbacks: ToolCallbacks | Sequence[ToolCallbacks] | None = None,
        handle_tool_error: ErrorHandler = False,
        strict_json: bool = False,
    ) -> None:
        self._unknown_handler = unknown_tools_handler
        self._arguments_handler = tool_arguments_handler
        self._middlewares = tuple(middlewares)
        self._callbacks = CallbackGroup(callbacks)
        self._handle_error = handle_tool_error
        self._strict_json = strict_json
        self.known: list[str] = []
        """The node's tool names, for the unknown-tool message."""

    def stream(self, call: ResolvedCall) -> Iterator[ToolChunk]:
        """Run ``call`` as chunks; the last one carries the complete message."""
        return _in_context(call.call_id, self._stream_one(call))

    def _prepare(self, call: ResolvedCall) -> ToolCallInput:
        raw = call.raw_arguments
        if self._arguments_handler is not None:
            raw = self._arguments_handler(call.name, _as_json_text(raw))
        arguments = parse_arguments(raw, strict_json=self._strict_json)
        hidden = hidden_arguments(call.tool)
        dropped = sorted(hidden & set(arguments))
        if dropped:
            logger.warning(
                "tool %r: the model set hidden arguments %s; ignored", call.name, dropped
            )
            arguments = {k: v for k, v in arguments.items() if k not in hidden}
        return ToolCallInput(name=call.name, arguments=arguments, call_id=call.call_id)

    def _unknown(self, call: ResolvedCall) -> ToolMessage:
        handler = self._unknown_handler
        if handler is None:
            msg = f"{call.name} is not a valid tool, try one of [{', '.join(self.known)}]."
            raise UnknownToolError(msg)
        content = handler(call.name, _as_json_text(call.raw_arguments))
        logger.info("unknown tool %r (call %s) answered by the handler", call.name, call.call_id)
        return ToolMessage(content=content, tool_call_id=call.call_id, name=call.name)

    def _on_failure(self, call: ResolvedCall, exc: Exception) -> ToolMessage:
        try:
            content = handled_content(self._handle_error, exc, str(exc) or type(exc).__name__)
        except Exception:
            logger.debug("tool %r (call %s) failed: %r", call.name, call.call_id, exc)
            raise
        logger.warning("tool %r (call %s) failed, error returned: %s", call.name, call.call_id, exc)
        return ToolMessage(
            content=content, tool_call_id=call.call_id, name=call.name, status="error"
        )

    # ---- invoke --------------------------------------------------------------------------

    def invoke(self, call: ResolvedCall) -> ToolMessage:
        """Run ``call`` synchronously."""
        with tool_call_scope(call.call_id):
            try:
                if call.tool is None:
                    return self._unknown(call)
                endpoint = compose_middlewares(
                    self._invoke_endpoint(call), [m.invoke for m in self._middlewares]
                )
                prepared = self._prepare(call)
                return call_with_timeout(lambda: endpoint(prepared), call.timeout, call.name)
            except Exception as exc:
                return self._on_failure(call, exc)

    def _invoke_endpoint(self, call: ResolvedCall) -> InvokeEndpoint:
        tool = call.tool

        def endpoint(tool_input: ToolCallInput) -> ToolMessage:
            with self._observed(tool_input) as started:
                if callable(getattr(tool, "invoke", None)):
                    result = tool.invoke(_with_injected(call, tool_input))
                else:
                    result = "".join(format_result(c) for c in tool.stream(tool_input.arguments))
                message = _as_message(result, tool_input)
            return self._ended(tool_input, message, started)

        return endpoint

    # ---- ainvoke -------------------------------------------------------------------------

    async def ainvoke(self, call: ResolvedCall) -> ToolMessage:
        """Run ``call`` asynchronously."""
        sync_only = any(m.invoke is not None and m.ainvoke is None for m in self._middlewares)
        if sync_only or (
            call.tool is not None and not callable(getattr(call.tool, "invoke", None))
        ):
            return await in_thread(self.invoke, call)
        with tool_call_scope(call.call_id):
            try:
                if call.tool is None:
                    return self._unknown(call)
                endpoint = compose_middlewares(
                    self._ainvoke_endpoint(call), [m.ainvoke for m in self._middlewares]
                )
                prepared = self._prepare(call)
                return await acall_with_timeout(endpoint(prepared), call.timeout, call.name)
            except Exception as exc:
                return self._on_failure(call, exc)

    def _ainvoke_endpoint(self, call: ResolvedCall) -> AsyncInvokeEndpoint:
        tool = call.tool

        async def endpoint(tool_input: ToolCallInput) -> ToolMessage:
            with self._observed(tool_input) as started:
                if callable(getattr(tool, "ainvoke", None)):
                    result = await tool.ainvoke(_with_injected(call, tool_input))
                else:
                    result = await in_thread(tool.invoke, _with_injected(call, tool_input))
                message = _as_message(result, tool_input)
            return self._ended(tool_input, message, started)

        return endpoint

    # ---- stream --------------------------------------------------------------------------

    def _stream_one(self, call: ResolvedCall) -> Iterator[ToolChunk]:
        def chunk(content: str, message: ToolMessage | None = None) -> ToolChunk:
            return ToolChunk(call.index, call.call_id, call.name, content, message)

        try:
            if call.tool is None:
                message = self._unknown(call)
                yield chunk(_text(message), message)
                return
            tool_input = self._prepare(call)
            if not can_stream(call.tool):
                invoke = compose_middlewares(
                    self._invoke_endpoint(call), [m.invoke for m in self._middlewares]
                )
                message = call_with_timeout(lambda: invoke(tool_input), call.timeout, call.name)
                yield chunk(_text(message), message)
                return
            endpoint = compose_middlewares(
                self._stream_endpoint(call.tool), [m.stream for m in self._middlewares]
            )
            pieces: list[str] = []
            for piece in endpoint(tool_input):
                pieces.append(piece)
                yield chunk(piece)
            message = ToolMessage(
                content="".join(pieces), tool_call_id=call.call_id, name=call.name
            )
            yield chunk("", message)
        except Exception as exc:
            message = self._on_failure(call, exc)
            yield chunk(_text(message), message)

    def _stream_endpoint(self, tool: Any) -> StreamEndpoint:
        def endpoint(tool_input: ToolCallInput) -> Iterator[str]:
            pieces: list[str] = []
            with self._observed(tool_input) as started:
                for piece in tool.stream(tool_input.arguments):
                    text = format_result(piece)
                    pieces.append(text)
                    yield text
            _log_timing(tool_input, started)
            self._callbacks.end_stream(tool_input, pieces)

        return endpoint

    @contextmanager
    def _observed(self, tool_input: ToolCallInput) -> Iterator[float]:
        """The start and error callbacks around one run (the error is raised again); yields
        the start time."""
        self._callbacks.start(tool_input)
        try:
            yield time.perf_counter()
        except Exception as exc:
            self._callbacks.error(tool_input, exc)
            raise

    def _ended(
        self, tool_input: ToolCallInput, message: ToolMessage, started: float
    ) -> ToolMessage:
        _log_timing(tool_input, started)
        self._callbacks.end(tool_input, message)
        return message


def can_stream(tool: Any) -> bool:
    """True when ``tool`` really streams (:func:`~retrieval.tools.runnable.streams_natively`)."""
    return streams_natively(tool)


def hidden_arguments(tool: Any) -> set[str]:
    """Names of ``tool``'s injected arguments: ours, or a LangChain tool's.

    A LangChain tool hides them by leaving them out of ``tool_call_schema``; they are the
    fields of its full input schema that the call schema lacks.
    """
    if isinstance(tool, BaseTool):
        model = tool.get_input_schema()
        return set(injected_fields(model)) if model is not None else set()
    get_schema = getattr(tool, "get_input_schema", None)
    call_fields = getattr(getattr(tool, "tool_call_schema", None), "model_fields", None)
    if not callable(get_schema) or not isinstance(call_fields, Mapping):
        return set()
    try:
        full = get_schema()
    except Exception:  # a tool that cannot describe itself hides nothing
        logger.debug("input schema of %r unavailable", tool, exc_info=True)
        return set()
    return set(getattr(full, "model_fields", {})) - set(call_fields)


def recoverable_error_text(exc: Exception) -> str:
    """The ToolsNode default error handler: ``"Error: ..."`` for what the model can act on.

    A ToolException or any ``ToolInputError`` (an unknown tool included), invalid arguments
    (pydantic or jsonschema) and timeouts become content (Qwen-Agent's ``"Error: ..."``
    form); any other exception is a bug and is raised again.
    """
    if isinstance(exc, (ToolInputError, TimeoutError)) or is_validation_error(exc):
        return f"Error: {exc}"
    raise exc


def _in_context(call_id: str, chunks: Iterator[ToolChunk]) -> Iterator[ToolChunk]:
    """Advance ``chunks`` step by step in a context where ``call_id`` is the current call id."""
    context = context_for_call(call_id)
    try:
        while True:
            try:
                item = context.run(next, chunks)
            except StopIteration:
                return
            yield item
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            context.run(close)


def _as_json_text(arguments: Any) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, default=str)


def _with_injected(call: ResolvedCall, tool_input: ToolCallInput) -> Any:
    """The ToolCall the tool gets: the (stripped) model arguments plus the hidden values."""
    tool_call = tool_input.to_tool_call()
    hidden = hidden_arguments(call.tool)
    tool_call["args"].update({k: v for k, v in call.injected.items() if k in hidden})
    return tool_call


def _as_message(result: Any, tool_input: ToolCallInput) -> Any:
    """``result`` as a ToolMessage; a LangGraph ``Command`` (or list of them) as is."""
    if is_message_output(result) and not isinstance(result, ToolMessage):
        return result
    message = coerce_message(result)
    if message is not None:
        return message
    return ToolMessage(
        content=format_result(result), tool_call_id=tool_input.call_id, name=tool_input.name
    )


def _text(message: Any) -> str:
    content = getattr(message, "content", "")
    return content if isinstance(content, str) else format_result(content)


def _log_timing(tool_input: ToolCallInput, started: float) -> None:
    elapsed_ms = (time.perf_counter() - started) * 1000
    logger.debug(
        "tool %r (call %s) ran in %.1f ms", tool_input.name, tool_input.call_id, elapsed_ms
    )
