"""What one tool run produced (:class:`ToolOutput`) and how it becomes a ToolMessage.

``ToolOutput`` keeps everything (content, artifact, status, call id) so no entry point has to
drop anything: ``invoke`` picks the content or a ToolMessage from it, ``run_with_artifact``
the pair, executors the whole record. Message content follows LangChain's rule: strings and
lists of content blocks go in as they are; anything else is serialised (JSON when possible),
since a chat message cannot carry arbitrary objects. The artifact is never serialised.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from ragtools.retrieval.tools.messages import ToolMessage

__all__ = ["ToolOutput", "message_content"]

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

    def to_message(self, name: str) -> ToolMessage:
        """This output as a :class:`ToolMessage`; a ToolMessage returned by the tool as is."""
        if isinstance(self.content, ToolMessage):
            return self.content
        return ToolMessage(
            content=message_content(self.content),
            artifact=self.artifact,
            tool_call_id=self.tool_call_id or "",
            name=name,
            status=self.status,
        )


def message_content(content: Any) -> str | list[Any]:
    """Content a ToolMessage can carry: strings and content-block lists as they are."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(item, str) or (isinstance(item, dict) and "type" in item) for item in content
    ):
        return content
    if isinstance(content, BaseModel):
        return content.model_dump_json()
    try:
        return json.dumps(content, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(content)
