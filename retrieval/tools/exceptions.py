"""The exception a tool raises when the *model's* request cannot be served.

:class:`ToolException` is LangChain's name for a recoverable tool failure: bad arguments the
schema could not catch, an empty result the model should hear about, a remote service saying
no. A tool raises it; :class:`~retrieval.tools.base.BaseTool` turns it into message content
(status ``"error"``) when ``handle_tool_error`` is set, so the agent loop continues and the
model can try again. Any other exception is a bug and propagates.

It subclasses :class:`parsers.errors.ToolInputError`, so ``except RetrievalError`` still
catches everything of ours, and a retriever that raises the plain ``ToolInputError`` is
handled the same way.
"""

from __future__ import annotations

import logging

from ragtools.parsers.errors import ToolInputError

__all__ = ["ToolException"]

logger = logging.getLogger(__name__)


class ToolException(ToolInputError):
    """A recoverable tool error whose message is meant to be shown to the model."""
