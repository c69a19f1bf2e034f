"""The exception a tool raises when the *model's* request cannot be served, and its handler.

:class:`ToolException` is LangChain's name for a recoverable tool failure: bad arguments the
schema could not catch, an empty result the model should hear about, a remote service saying
no. A tool raises it; the ``handle_tool_error`` option turns it into message content (status
``"error"``), so the agent loop continues and the model can try again. Any other exception is a
bug and propagates. Construction mistakes (a bad option, a schema of the wrong kind) are not
tool failures: they raise :class:`~parsers.errors.ConfigError` when the tool is built.

It subclasses :class:`retrieval.errors.ToolInputError`, so ``except RetrievalError`` still
catches everything of ours, and a retriever that raises the plain ``ToolInputError`` is
handled the same way.

``handle_tool_error`` has one spelling and one meaning everywhere (:class:`BaseTool`, the
class-based tools, :class:`ToolsNode`), so :func:`check_error_handler` and
:func:`handled_content` live here, beside the exception they handle: ``False`` or ``None``
raises, ``True`` shows a default text (the exception's), a string replaces it, and a callable
maps the exception to the content.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeAlias

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.errors import ToolInputError

__all__ = [
    "ErrorHandler",
    "SchemaAnnotationError",
    "ToolException",
    "ToolTimeoutError",
    "check_error_handler",
    "handled_content",
]

logger = logging.getLogger(__name__)

ErrorHandler: TypeAlias = bool | str | Callable[[Exception], Any] | None
"""``False``/``None``: raise; ``True``: a default text; a string; or ``exc -> content``."""


class ToolException(ToolInputError):
    """A recoverable tool error whose message is meant to be shown to the model."""


class SchemaAnnotationError(ConfigError, TypeError):
    """A ``BaseTool`` subclass annotates ``args_schema`` as ``BaseModel`` (an instance)
    instead of ``type[BaseModel]``: pydantic would then validate the class default away.
    Raised when the class is defined; LangChain's name, and a ``TypeError`` as there."""


class ToolTimeoutError(ToolException, TimeoutError):
    """A tool run took longer than its timeout; the message names the tool and the limit."""

    def __init__(self, tool: str, timeout: float) -> None:
        super().__init__(
            f"tool {tool!r} did not finish within its timeout of {timeout:g} s; try a simpler "
            "request or another tool"
        )
        self.tool = tool
        self.timeout = timeout


def check_error_handler(owner: str, option: str, value: object) -> None:
    """Refuse an error handler of the wrong kind when the tool (or node) is built.

    Raises:
        ConfigError: ``value`` is not a bool, a string, ``None`` or a callable.
    """
    if not (value is None or isinstance(value, (bool, str)) or callable(value)):
        msg = (
            f"{owner}: {option} must be a bool, a string or a callable exception -> content, "
            f"got {value!r}"
        )
        raise ConfigError(msg)


def handled_content(handler: ErrorHandler, exc: Exception, default: str) -> Any:
    """The content an error message shows for ``exc``; re-raises it when unhandled."""
    if handler is None or handler is False:
        raise exc
    if handler is True:
        return default
    if isinstance(handler, str):
        return handler
    return handler(exc)
