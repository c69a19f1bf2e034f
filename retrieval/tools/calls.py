"""A model's tool calls, as the ToolsNode receives them, and the node's per-call options.

A model's output reaches :class:`~retrieval.tools.node.ToolsNode` in several shapes: a list of
ToolCall dicts, OpenAI's ``{"id", "function": {"name", "arguments"}}`` dicts, an assistant
message carrying them in ``tool_calls`` (attribute or key), or LangGraph's state
``{"messages": [...]}`` whose last message carries them. These helpers take them apart; the
node only sees a list of raw calls.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ragtools.parsers.errors import ConfigError

__all__ = ["Timeout", "call_list", "call_name", "check_timeout", "is_state", "last_calls"]

logger = logging.getLogger(__name__)

Timeout = float | Mapping[str, float] | None
"""Seconds for every call, or per tool name (tools not named: no limit)."""


def check_timeout(timeout: Timeout) -> None:
    """Refuse a timeout that is not positive (``ConfigError``)."""
    limits = timeout.values() if isinstance(timeout, Mapping) else [timeout]
    if any(limit is not None and not limit > 0 for limit in limits):
        msg = f"timeout must be > 0 seconds (or a mapping of them) or None, got {timeout!r}"
        raise ConfigError(msg)


def is_state(value: Any) -> bool:
    """True for LangGraph's ``{"messages": [...]}`` state (not a message with tool calls)."""
    return isinstance(value, Mapping) and "messages" in value and "tool_calls" not in value


def last_calls(state: Mapping[str, Any]) -> Any:
    """The last message of LangGraph's ``{"messages": [...]}`` state (it holds the calls)."""
    messages = state["messages"]
    if not messages:
        msg = "the state's 'messages' list is empty; it must end with the model's tool calls"
        raise ConfigError(msg)
    return messages[-1]


def call_name(raw: Any) -> Any:
    """The tool name of a raw call (ToolCall or OpenAI form), ``None`` if it has none."""
    if not isinstance(raw, Mapping):
        return None
    function = raw.get("function")
    return function.get("name") if isinstance(function, Mapping) else raw.get("name")


def call_list(tool_calls: Any) -> list[Any]:
    """The raw calls of a list, or of a message carrying ``tool_calls``."""
    if isinstance(tool_calls, Mapping):
        if "tool_calls" not in tool_calls:
            msg = "Pass a list of tool calls, or a message with 'tool_calls'; got a single dict"
            raise ConfigError(msg)
        return list(tool_calls["tool_calls"] or [])
    if isinstance(tool_calls, (list, tuple)):
        return list(tool_calls)
    nested = getattr(tool_calls, "tool_calls", None)
    if isinstance(nested, (list, tuple)):
        return list(nested)
    kind = type(tool_calls).__name__
    msg = f"Expected a list of tool calls or an object with .tool_calls, got {kind}"
    raise ConfigError(msg)
