"""Running tool calls across threads and event loops: batches and sync-over-async.

Kept apart from :mod:`retrieval.tools.base` because none of it depends on what a tool is:
``batch``/``abatch`` only need an ``invoke``/``ainvoke`` callable, and an async-only tool
called from sync code only needs a coroutine factory. Each thread pool task runs in a copy of
the caller's context, so context variables (the current tool-call id) reach the tool.

**Abandoned calls.** Python cannot stop a thread, so a sync tool past its timeout runs on.
Each call run under a timeout gets a flag in its context that is raised when its caller stops
waiting (:func:`call_with_timeout` past the timeout, :func:`in_thread` when its await is
cancelled); :func:`abandoned` reads it, nested calls included. Work that can be stopped
checks it: the file tools' parse runs in a worker process that is killed as soon as the flag
is raised (:class:`~ragtools.retrieval.tools.parse_cache.ParseCache`), so a timed-out call
leaves no parse behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar, cast

from ragtools.retrieval.tools.exceptions import ToolTimeoutError

__all__ = [
    "abandoned",
    "abatch_calls",
    "acall_with_timeout",
    "batch_calls",
    "call_with_timeout",
    "in_thread",
    "run_coroutine_sync",
]

_T = TypeVar("_T")

_ABANDONED: contextvars.ContextVar[tuple[threading.Event, ...]] = contextvars.ContextVar(
    "ragtools_tool_call_abandoned", default=()
)
"""The flags of the timed calls this context runs inside, innermost last."""


def abandoned() -> bool:
    """Whether a caller of the code running here has stopped waiting for it (a tool call
    past its timeout, or a cancelled await); such work should stop."""
    return any(flag.is_set() for flag in _ABANDONED.get())


def _flagged_context() -> tuple[contextvars.Context, threading.Event]:
    """A copy of the caller's context with one more abandonment flag, and that flag."""
    context = contextvars.copy_context()
    flag = threading.Event()
    context.run(_ABANDONED.set, (*_ABANDONED.get(), flag))
    return context, flag


def batch_calls(
    invoke: Callable[[Any], Any],
    inputs: Sequence[Any],
    max_concurrency: int | None,
    *,
    return_exceptions: bool,
) -> list[Any]:
    """``invoke`` each input in a thread pool (at most ``max_concurrency`` threads), in order."""
    workers = max_concurrency or min(32, max(1, len(inputs)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [
            pool.submit(contextvars.copy_context().run, partial(invoke, item)) for item in inputs
        ]
        results: list[Any] = []
        for future in futures:
            try:
                results.append(future.result())
            except Exception as exc:
                if not return_exceptions:
                    raise
                results.append(exc)
    return results


async def abatch_calls(
    ainvoke: Callable[[Any], Awaitable[Any]],
    inputs: Sequence[Any],
    max_concurrency: int | None,
    *,
    return_exceptions: bool,
) -> list[Any]:
    """``ainvoke`` each input concurrently (at most ``max_concurrency`` at once), in order."""
    semaphore = asyncio.Semaphore(max_concurrency) if max_concurrency else None

    async def one(item: Any) -> Any:
        if semaphore is None:
            return await ainvoke(item)
        async with semaphore:
            return await ainvoke(item)

    gathered = await asyncio.gather(
        *(one(item) for item in inputs), return_exceptions=return_exceptions
    )
    return list(gathered)


def run_coroutine_sync(factory: Callable[[], Awaitable[_T]]) -> _T:
    """Run a coroutine to completion from sync code, even inside a running event loop.

    With no loop in this thread it uses :func:`asyncio.run`; inside a loop (sync ``invoke``
    called from async code) it runs a fresh loop in a worker thread, since blocking the
    caller's loop on itself would deadlock.
    """

    async def main() -> _T:
        return await factory()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    with ThreadPoolExecutor(max_workers=1) as pool:
        context = contextvars.copy_context()
        return pool.submit(context.run, asyncio.run, main()).result()


def call_with_timeout(func: Callable[[], _T], timeout: float | None, tool: str) -> _T:
    """``func()``, or :class:`ToolTimeoutError` if it has not returned after ``timeout`` s.

    With a timeout the call runs in a daemon thread (in a copy of the caller's context) so the
    caller can stop waiting; Python cannot stop the thread itself, so a timed-out call runs
    on (its :func:`abandoned` flag raised) and its result is discarded. Daemon, so a stuck
    tool never blocks interpreter exit.
    """
    if timeout is None:
        return func()
    outcome: dict[str, Any] = {}
    context, flag = _flagged_context()

    def target() -> None:
        try:
            outcome["value"] = context.run(func)
        except BaseException as exc:  # handed to the caller, whatever it is
            outcome["error"] = exc

    worker = threading.Thread(target=target, name=f"tool-{tool}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        flag.set()
        raise ToolTimeoutError(tool, timeout)
    if "error" in outcome:
        raise outcome["error"]
    return cast(_T, outcome["value"])


async def acall_with_timeout(awaitable: Awaitable[_T], timeout: float | None, tool: str) -> _T:
    """``await awaitable``, or :class:`ToolTimeoutError` after ``timeout`` s (it is cancelled)."""
    if timeout is None:
        return await awaitable
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except asyncio.TimeoutError as exc:
        raise ToolTimeoutError(tool, timeout) from exc


async def in_thread(func: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
    """Await ``func(*args, **kwargs)`` run in its own daemon thread (context copied).

    Unlike :func:`asyncio.to_thread`, the thread is not in the loop's default executor, which
    :func:`asyncio.run` joins on exit: a sync tool still running after its timeout must not
    keep the program from finishing. Cancelling the await abandons the result and raises the
    call's :func:`abandoned` flag.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[_T] = loop.create_future()
    context, flag = _flagged_context()

    def settle(setter: Callable[[Any], None], value: Any) -> None:
        if not future.done():
            setter(value)

    def target() -> None:
        try:
            value = context.run(func, *args, **kwargs)
        except BaseException as exc:  # handed to the awaiting task, whatever it is
            outcome: tuple[Callable[[Any], None], Any] = (future.set_exception, exc)
        else:
            outcome = (future.set_result, value)
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=target, name="tool-worker", daemon=True).start()
    try:
        return await future
    except asyncio.CancelledError:
        flag.set()
        raise
