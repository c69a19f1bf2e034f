"""The Runnable half of a tool: batches, streams and the ``(content, artifact)`` entry points.

LangChain tools are Runnables, so besides ``invoke``/``ainvoke`` they have ``batch``,
``abatch``, ``stream`` and ``astream``. Everything here is written in terms of a tool's
``invoke``/``ainvoke``/``execute``/``aexecute`` (defined by :class:`~retrieval.tools.base.
BaseTool`), so it is a mixin with no state of its own, kept apart to keep the base class short.

``stream``/``astream`` follow the Runnable default: a tool computes its result at once, so the
stream yields exactly one item, what ``invoke`` returns (a ToolMessage for a ToolCall, the
content otherwise). A tool that can really produce its result piece by piece overrides
``stream``; :func:`streams_natively` tells a :class:`~retrieval.tools.node.ToolsNode` whether
it did, so the node does not trade a tool's artifact for a one-chunk stream.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from ragtools.retrieval.tools.concurrency import abatch_calls, batch_calls

if TYPE_CHECKING:
    from ragtools.retrieval.tools.injected import RunConfig
    from ragtools.retrieval.tools.output import ToolOutput

__all__ = ["RunnableMethods", "streams_natively"]

logger = logging.getLogger(__name__)


class RunnableMethods:
    """``batch``, ``abatch``, ``stream``, ``astream`` and the artifact entry points."""

    if TYPE_CHECKING:  # provided by the tool class; not fields (pydantic reads annotations)
        invoke: Callable[..., Any]
        ainvoke: Callable[..., Awaitable[Any]]
        execute: Callable[..., ToolOutput]
        aexecute: Callable[..., Awaitable[ToolOutput]]

    def run_with_artifact(
        self, input: Any, config: RunConfig | None = None, **kwargs: Any
    ) -> tuple[Any, Any]:
        """Run the tool and return ``(content, artifact)`` whatever the input kind."""
        output = self.execute(input, config, **kwargs)
        return output.content, output.artifact

    async def arun_with_artifact(
        self, input: Any, config: RunConfig | None = None, **kwargs: Any
    ) -> tuple[Any, Any]:
        """Async :meth:`run_with_artifact`."""
        output = await self.aexecute(input, config, **kwargs)
        return output.content, output.artifact

    def batch(
        self,
        inputs: Sequence[Any],
        config: RunConfig | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """``invoke`` each input in a thread pool; results in input order.

        Args:
            inputs: the inputs.
            config: shared by every call; ``max_concurrency`` bounds the threads.
            return_exceptions: put an exception in its slot instead of raising it.
            **kwargs: injected argument values, shared by every call.
        """
        call = partial(self.invoke, config=config, **kwargs)
        limit = (config or {}).get("max_concurrency")
        return batch_calls(call, inputs, limit, return_exceptions=return_exceptions)

    async def abatch(
        self,
        inputs: Sequence[Any],
        config: RunConfig | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """``ainvoke`` each input concurrently; results in input order."""
        call = partial(self.ainvoke, config=config, **kwargs)
        limit = (config or {}).get("max_concurrency")
        return await abatch_calls(call, inputs, limit, return_exceptions=return_exceptions)

    def stream(self, input: Any, config: RunConfig | None = None, **kwargs: Any) -> Iterator[Any]:
        """Yield the result: one item, what ``invoke`` returns (LangChain's Runnable default)."""
        yield self.invoke(input, config, **kwargs)

    async def astream(
        self, input: Any, config: RunConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """Async :meth:`stream`: one item, what ``ainvoke`` returns."""
        yield await self.ainvoke(input, config, **kwargs)


def streams_natively(tool: Any) -> bool:
    """True when ``tool.stream`` really streams (not the one-item Runnable default).

    The one-item defaults are ours (:class:`RunnableMethods`) and LangChain's
    (``Runnable.stream``); a tool with such a ``stream`` and an ``invoke`` is better invoked,
    which keeps its artifact. Wrappers that delegate attributes (``CachedTool``) are judged
    by the method they hand out.
    """
    stream = getattr(tool, "stream", None)
    if not callable(stream):
        return False
    if not callable(getattr(tool, "invoke", None)):
        return True
    func = getattr(stream, "__func__", stream)
    return func is not RunnableMethods.stream and getattr(func, "__qualname__", "") != (
        "Runnable.stream"
    )
