"""File → Document → Chunk.

``load`` parses one file, ``load_dir`` a tree (in parallel, never stopping on a bad file),
``split`` cuts documents into chunks that are exact spans of their text, and
``register_parser`` adds a format. Parsers import nothing else of this project; ``indexes``
and ``retrieval`` build on them.
"""

from __future__ import annotations

import logging

from ragtools.parsers.document import Chunk, Document, stable_id
from ragtools.parsers.errors import (
    ConfigError,
    MissingDependencyError,
    ParseError,
    PasswordRequiredError,
    RetrievalError,
)
from ragtools.parsers.loading import FileError, LoadResult, load, load_dir, load_files
from ragtools.parsers.registry import register_parser
from ragtools.parsers.selection import Selection
from ragtools.parsers.splitting import split

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "Chunk",
    "ConfigError",
    "Document",
    "FileError",
    "LoadResult",
    "MissingDependencyError",
    "ParseError",
    "PasswordRequiredError",
    "RetrievalError",
    "Selection",
    "load",
    "load_dir",
    "load_files",
    "register_parser",
    "split",
    "stable_id",
]
