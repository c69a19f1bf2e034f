"""What one tool run produced (:class:`ToolOutput`) and how it becomes a ToolMessage.

``ToolOutput`` keeps everything (content, artifact, status, call id) so no entry point has to
drop anything: ``invoke`` picks the content or a ToolMessage from it, ``run_with_artifact``
the pair, executors the whole record. Message content follows LangChain's rule: strings and
sequences (lists, tuples) of content blocks (strings, or dicts whose ``type`` is one of
:data:`CONTENT_BLOCK_TYPES`) go in as a list; anything else is serialised (JSON when possible),
since a chat message cannot carry arbitrary objects. The artifact is never serialised.

A tool that returns a message itself (a ``ToolMessage``, LangGraph's ``Command``, anything
deriving from langchain-core's ``ToolOutputMixin``, or a non-empty list of them) is answered
with that value unchanged, as LangChain does: the documented ``InjectedToolCallId`` pattern
builds its own ``ToolMessage``, and a ``Command`` must reach LangGraph intact.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from ragtools.retrieval.tools.messages import ToolMessage

__all__ = ["CONTENT_BLOCK_TYPES", "ToolOutput", "is_message_output", "message_content"]

CONTENT_BLOCK_TYPES = frozenset(
    {
        "text",
        "image_url",
        "image",
        "json",
        "search_result",
        "custom_tool_call_output",
        "document",
        "file",
    }
)
"""Content-block ``type`` values a ToolMessage carries as is (langchain-core's list)."""

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolOutput:
    """Everything one tool run produced.

    Attributes:
        content: what the model reads.
        artifact: what the application keeps (``None`` for ``response_format="content"``
            and for handled errors).
        status: ``"error"`` when an error was handled into ``content``.
        tool_call_id: the answered call's id; ``None`` when the input was not a ToolCall.
    """

    content: Any
    artifact: Any = None
    status: Literal["success", "error"] = "success"
    tool_call_id: str | None = None

    def to_message(self, name: str) -> Any:
        """This output as a :class:`ToolMessage`; a message the tool returned, as is."""
        if is_message_output(self.content):
            return self.content
        return ToolMessage(
            content=message_content(self.content),
            artifact=self.artifact,
            tool_call_id=self.tool_call_id or "",
            name=name,
            status=self.status,
        )


def is_message_output(value: Any) -> bool:
    """True for a message a tool may return in place of content (see module docstring)."""
    if isinstance(value, list) and value:
        return all(is_message_output(item) for item in value)
    if isinstance(value, ToolMessage):
        return True
    try:
        from langchain_core.messages.tool import ToolOutputMixin
    except ImportError:
        return False
    return isinstance(value, ToolOutputMixin)


def message_content(content: Any) -> str | list[Any]:
    """Content a ToolMessage can carry: a string, or a sequence of content blocks as a list."""
    if isinstance(content, str):
        return content
    if (
        isinstance(content, Sequence)
        and not isinstance(content, (bytes, bytearray))
        and all(_is_block(item) for item in content)
    ):
        return list(content)
    if isinstance(content, BaseModel):
        return content.model_dump_json()
    try:
        return json.dumps(content, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(content)


def _is_block(item: Any) -> bool:
    return isinstance(item, str) or (
        isinstance(item, dict) and item.get("type") in CONTENT_BLOCK_TYPES
    )
