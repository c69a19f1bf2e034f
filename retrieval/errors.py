"""The error retrieval raises for a model's input, under the package's one root
(:class:`~ragtools.parsers.errors.RetrievalError`); the tool layer's
:class:`~ragtools.retrieval.tools.exceptions.ToolException` derives from it."""

from __future__ import annotations

from ragtools.parsers.errors import RetrievalError

__all__ = ["ToolInputError"]


class ToolInputError(RetrievalError):
    """A tool got input it cannot use; the message is meant to be shown to the model."""
