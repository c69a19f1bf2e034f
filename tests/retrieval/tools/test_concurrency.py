"""The abandoned flag of timed tool calls: raised when the caller stops waiting, seen by the
work below it (nested calls included), never raised for a call that finishes in time."""

from __future__ import annotations

import asyncio
import threading

import pytest

from ragtools.retrieval.tools.concurrency import abandoned, call_with_timeout, in_thread
from ragtools.retrieval.tools.exceptions import ToolTimeoutError
from tests.conftest import wait_until


def _waits_to_be_abandoned(seen: threading.Event) -> None:
    """Work that stops when its caller gives up, as the file tools' parse does."""
    if wait_until(abandoned, seconds=20):
        seen.set()


def test_a_call_past_its_timeout_is_flagged_abandoned() -> None:
    seen = threading.Event()
    with pytest.raises(
        ToolTimeoutError, match=r"'slow' did not finish within its timeout of 0\.2 s"
    ):
        call_with_timeout(lambda: _waits_to_be_abandoned(seen), 0.2, "slow")
    assert seen.wait(20)


def test_nested_calls_see_the_outer_flag() -> None:
    """A tool's own timeout inside a node's: the node giving up reaches the inner work."""
    seen = threading.Event()

    def inner() -> None:
        call_with_timeout(lambda: _waits_to_be_abandoned(seen), 60, "inner")

    with pytest.raises(ToolTimeoutError, match="'outer'"):
        call_with_timeout(inner, 0.2, "outer")
    assert seen.wait(20)


def test_a_call_in_time_is_not_abandoned() -> None:
    assert call_with_timeout(abandoned, 30, "quick") is False
    assert abandoned() is False  # outside any timed call


def test_a_cancelled_await_flags_the_thread_abandoned() -> None:
    seen = threading.Event()

    async def main() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(in_thread(_waits_to_be_abandoned, seen), 0.2)

    asyncio.run(main())
    assert seen.wait(20)
