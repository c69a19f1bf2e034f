"""What crosses the model/tool boundary: :class:`ToolCall` in, :class:`ToolMessage` out.

Shapes follow LangChain's so adapters are thin: a tool call is a plain dict
``{"name", "args", "id", "type": "tool_call"}``; the reply carries ``content`` (what the model
reads), ``artifact`` (what the application keeps, never sent to the model), the call id, the
tool name and a ``status``.

``ToolMessage`` *is* ``langchain_core.messages.ToolMessage`` when langchain-core is installed,
and a small pydantic model with the same fields otherwise. One class rather than a look-alike
that converts: LangGraph's ``ToolNode``, chat models and LangChain's own tests check
``isinstance(message, ToolMessage)`` against langchain-core's class, and pydantic equality
requires the same class, so a look-alike would need converting at every boundary and would
still compare unequal to the message a LangChain user builds. Without langchain-core the
fallback keeps the package usable with no framework installed. Code here only relies on what
both share: the constructor fields, ``model_copy`` and equality.

A ToolCall is recognised as LangChain recognises one: a dict with ``type == "tool_call"``
and ``args``; ``name`` may be missing (the tool answers with its own name).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict
from typing_extensions import TypedDict  # pydantic's dependency; pydantic needs it < 3.12

__all__ = ["ToolCall", "ToolMessage", "coerce_message", "is_tool_call", "make_tool_call"]


class ToolCall(TypedDict):
    """One call a model asked for."""

    name: str
    args: dict[str, Any]
    id: str | None
    type: Literal["tool_call"]


def make_tool_call(name: str, args: dict[str, Any], id: str | None = None) -> ToolCall:
    """Build a :class:`ToolCall`, inventing an id when none is given."""
    return ToolCall(
        name=name, args=args, id=id or f"call_{uuid.uuid4().hex[:24]}", type="tool_call"
    )


def is_tool_call(value: object) -> bool:
    """True for a dict shaped like a :class:`ToolCall`, as LangChain decides: ``type`` is
    ``"tool_call"`` and ``args`` is present (``name`` and ``id`` may be missing)."""
    return isinstance(value, dict) and value.get("type") == "tool_call" and "args" in value


class _FallbackToolMessage(BaseModel):
    """A tool's reply to one :class:`ToolCall`.

    Attributes:
        content: what the model reads (a string, or a list of content blocks).
        artifact: the full result for the application (e.g. retriever hits); never shown to
            the model.
        tool_call_id: the id of the call this answers.
        name: the tool's name.
        status: ``"error"`` when the tool failed and the error was turned into content.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    content: str | list[Any]
    artifact: Any = None
    tool_call_id: str
    name: str | None = None
    status: Literal["success", "error"] = "success"


if TYPE_CHECKING:
    from langchain_core.messages import ToolMessage
else:
    try:
        from langchain_core.messages import ToolMessage
    except ImportError:  # no framework installed: the look-alike above
        ToolMessage = _FallbackToolMessage


def coerce_message(value: object) -> ToolMessage | None:
    """``value`` as our :class:`ToolMessage`, or ``None`` when it is not a tool message.

    Ours is returned as is; another framework's (LangChain's ``ToolMessage``: same field
    names) is copied field by field, so its artifact and status survive instead of the whole
    message being dumped into ``content``.
    """
    if isinstance(value, ToolMessage):
        return value
    if type(value).__name__ != "ToolMessage" or not hasattr(value, "tool_call_id"):
        return None
    status = getattr(value, "status", "success")
    content = getattr(value, "content", "")
    return ToolMessage(
        content=content if isinstance(content, (str, list)) else str(content),
        artifact=getattr(value, "artifact", None),
        tool_call_id=str(getattr(value, "tool_call_id", "") or ""),
        name=getattr(value, "name", None),
        status=status if status in ("success", "error") else "success",
    )
