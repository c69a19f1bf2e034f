"""The per-call vocabulary of :class:`~retrieval.tools.node.ToolsNode`.

Kept apart from the node so that middleware and callbacks can be written (and imported by
tools) without pulling in the executor. Modelled on Eino's ``compose`` package:

* :class:`ToolCallInput` — one call as middleware and callbacks see it: tool name, parsed
  arguments, call id (Eino's ``ToolInput``).
* :class:`ToolMiddleware` — wrappers around a call, Eino style: each variant takes the next
  endpoint and returns a new one. ``invoke`` wraps synchronous calls, ``ainvoke`` asynchronous
  ones, ``stream`` calls whose result is an iterator of text chunks. In a list of middlewares
  the **first is the outermost**: it sees the call first and the result last, like the first
  entry of a decorator stack.
* :class:`ToolCallbacks` — observers on start, end, error and streamed end (Eino's
  ``ToolCallbackHandler``). An exception raised by a callback is logged and ignored: a broken
  observer never changes a tool's outcome.
* :class:`ToolChunk` — one piece of :meth:`ToolsNode.stream <retrieval.tools.node.ToolsNode.stream>`
  output; :func:`collect_messages` turns a chunk stream back into one message per call.
* :func:`get_current_tool_call_id` — the id of the call being executed, readable inside the tool,
  its middleware and its callbacks (Eino's ``compose.GetToolCallID``). It is a
  :mod:`contextvars` variable, so it is right in threads and asyncio tasks run by the node.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import Context, ContextVar, copy_context
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ragtools.retrieval.tools.messages import ToolCall, ToolMessage

logger = logging.getLogger(__name__)

__all__ = [
    "AsyncInvokeEndpoint",
    "InvokeEndpoint",
    "StreamEndpoint",
    "ToolCallInput",
    "ToolCallbacks",
    "ToolChunk",
    "ToolMiddleware",
    "collect_messages",
    "compose_middlewares",
    "context_for_call",
    "get_current_tool_call_id",
    "tool_call_scope",
]

_CURRENT_TOOL_CALL_ID: ContextVar[str | None] = ContextVar("ragtools_tool_call_id", default=None)


def get_current_tool_call_id() -> str | None:
    """The id of the tool call being executed by a ToolsNode, or ``None`` outside one."""
    return _CURRENT_TOOL_CALL_ID.get()


def context_for_call(call_id: str) -> Context:
    """A copy of the current context in which ``call_id`` is the current tool-call id.

    Used to run the steps of a generator (a streamed tool) under the right id: a generator
    runs in the context of whoever calls ``next``, so each step runs in this context instead.
    """
    context = copy_context()
    context.run(_CURRENT_TOOL_CALL_ID.set, call_id)
    return context


@contextmanager
def tool_call_scope(call_id: str) -> Iterator[None]:
    """Make ``call_id`` the current tool-call id inside the ``with`` block."""
    token = _CURRENT_TOOL_CALL_ID.set(call_id)
    try:
        yield
    finally:
        _CURRENT_TOOL_CALL_ID.reset(token)


@dataclass(frozen=True)
class ToolCallInput:
    """One tool call as middleware and callbacks see it.

    Middleware may pass a changed copy on (``dataclasses.replace(call, arguments=...)``).

    Attributes:
        name: the tool's name.
        arguments: the parsed arguments (after the node's arguments handler).
        call_id: the model's id for this call; the result message carries it back.
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    call_id: str = ""

    def to_tool_call(self) -> ToolCall:
        """This call as a :class:`~retrieval.tools.messages.ToolCall` dict."""
        return ToolCall(
            name=self.name, args=dict(self.arguments), id=self.call_id, type="tool_call"
        )


InvokeEndpoint = Callable[[ToolCallInput], ToolMessage]
"""Runs one call synchronously and returns its message."""
AsyncInvokeEndpoint = Callable[[ToolCallInput], Awaitable[ToolMessage]]
"""Runs one call asynchronously and returns its message."""
StreamEndpoint = Callable[[ToolCallInput], Iterator[str]]
"""Runs one call and yields its result as text chunks."""

_E = TypeVar("_E")


@dataclass(frozen=True)
class ToolMiddleware:
    """Wrappers around each tool call; set the variants you need.

    Each variant is ``wrapper(next_endpoint) -> endpoint``. ``invoke`` applies to
    ``ToolsNode.invoke``, ``ainvoke`` to ``ToolsNode.ainvoke`` and ``stream`` to tools streamed
    by ``ToolsNode.stream`` (tools that cannot stream are run through the ``invoke`` chain
    there). A middleware with ``invoke`` but no ``ainvoke`` still applies under ``ainvoke``: the
    call then runs its synchronous chain in a worker thread.

    Example:
        >>> def upper(next_endpoint):
        ...     def endpoint(call):
        ...         message = next_endpoint(call)
        ...         return message.model_copy(update={"content": message.content.upper()})
        ...     return endpoint
        >>> middleware = ToolMiddleware(invoke=upper)
    """

    invoke: Callable[[InvokeEndpoint], InvokeEndpoint] | None = None
    ainvoke: Callable[[AsyncInvokeEndpoint], AsyncInvokeEndpoint] | None = None
    stream: Callable[[StreamEndpoint], StreamEndpoint] | None = None


def compose_middlewares(endpoint: _E, wrappers: Sequence[Callable[[_E], _E] | None]) -> _E:
    """Wrap ``endpoint`` so that ``wrappers[0]`` is the outermost layer; ``None`` entries skip."""
    for wrap in reversed(wrappers):
        if wrap is not None:
            endpoint = wrap(endpoint)
    return endpoint


@dataclass(frozen=True)
class ToolCallbacks:
    """Observers of tool executions; every field is optional.

    They run inside the middleware chain, around the tool itself, with the current tool-call id
    set. The unknown-tools handler is not a tool execution and fires none of them.

    Attributes:
        on_start: ``(call) -> None`` before the tool runs.
        on_end: ``(call, message) -> None`` after an invoked tool returned.
        on_error: ``(call, exception) -> None`` when the tool raised.
        on_end_stream: ``(call, chunks) -> None`` after a streamed tool's last chunk, with all
            its chunks in order.
    """

    on_start: Callable[[ToolCallInput], None] | None = None
    on_end: Callable[[ToolCallInput, ToolMessage], None] | None = None
    on_error: Callable[[ToolCallInput, BaseException], None] | None = None
    on_end_stream: Callable[[ToolCallInput, list[str]], None] | None = None


class CallbackGroup:
    """Fires a sequence of :class:`ToolCallbacks` in order, logging and ignoring their errors."""

    def __init__(self, callbacks: ToolCallbacks | Sequence[ToolCallbacks] | None) -> None:
        if callbacks is None:
            self._handlers: tuple[ToolCallbacks, ...] = ()
        elif isinstance(callbacks, ToolCallbacks):
            self._handlers = (callbacks,)
        else:
            self._handlers = tuple(callbacks)

    def start(self, call: ToolCallInput) -> None:
        """Fire ``on_start``."""
        for handler in self._handlers:
            if handler.on_start is not None:
                self._safely(handler.on_start, call)

    def end(self, call: ToolCallInput, message: ToolMessage) -> None:
        """Fire ``on_end``."""
        for handler in self._handlers:
            if handler.on_end is not None:
                self._safely(handler.on_end, call, message)

    def error(self, call: ToolCallInput, exc: BaseException) -> None:
        """Fire ``on_error``."""
        for handler in self._handlers:
            if handler.on_error is not None:
                self._safely(handler.on_error, call, exc)

    def end_stream(self, call: ToolCallInput, chunks: list[str]) -> None:
        """Fire ``on_end_stream``."""
        for handler in self._handlers:
            if handler.on_end_stream is not None:
                self._safely(handler.on_end_stream, call, list(chunks))

    @staticmethod
    def _safely(func: Callable[..., None], *args: Any) -> None:
        try:
            func(*args)
        except Exception:
            logger.exception("tool callback %r raised; ignored", func)


@dataclass(frozen=True)
class ToolChunk:
    """One piece of a ToolsNode stream.

    Chunks of different calls may interleave when calls run in parallel; ``index`` says which
    call a chunk belongs to. Each call's **last** chunk carries ``message``, the complete
    :class:`~retrieval.tools.messages.ToolMessage` (its content is the joined text chunks; for a
    tool that cannot stream it also carries the artifact).

    Attributes:
        index: position of the call in the input list.
        tool_call_id: the call's id.
        name: the tool's name.
        content: the text of this chunk (``""`` on a closing chunk after a stream).
        message: the call's complete result, on its last chunk only.
    """

    index: int
    tool_call_id: str
    name: str
    content: str = ""
    message: ToolMessage | None = None


def collect_messages(chunks: Iterable[ToolChunk]) -> list[ToolMessage]:
    """The complete message of every call in a chunk stream, in the calls' order."""
    finished = [chunk for chunk in chunks if chunk.message is not None]
    finished.sort(key=lambda chunk: chunk.index)
    return [chunk.message for chunk in finished if chunk.message is not None]
