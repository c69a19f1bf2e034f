"""File → Document → Chunk.

Parsers import nothing else of this project; ``indexes`` and ``retrieval`` build on them.
"""

from __future__ import annotations

import logging

from parsers.document import Chunk, Document, stable_id
from parsers.errors import (
    ConfigError,
    DimensionMismatchError,
    IndexLoadError,
    IndexStateError,
    IndexVersionError,
    MissingDependencyError,
    ParseError,
    PasswordRequiredError,
    RetrievalError,
    ToolInputError,
)

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "Chunk",
    "ConfigError",
    "DimensionMismatchError",
    "Document",
    "IndexLoadError",
    "IndexStateError",
    "IndexVersionError",
    "MissingDependencyError",
    "ParseError",
    "PasswordRequiredError",
    "RetrievalError",
    "ToolInputError",
    "stable_id",
]
