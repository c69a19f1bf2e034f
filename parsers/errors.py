"""One exception tree shared by parsers, indexes and retrieval.

It lives in ``parsers`` because imports flow ``retrieval → indexes → parsers``: the
bottom package is the only one every other package may import.

::

    RetrievalError                         root: catch this to catch everything of ours
    ├── ConfigError(ValueError)            bad argument or setting (k < 1, weights summing to 0)
    ├── ParseError                         a file could not be parsed; has ``.path``
    │   └── PasswordRequiredError          encrypted file, no or wrong password
    ├── IndexStateError                    operation not valid in the current state
    │   └── DimensionMismatchError         vector dim differs from the index dim
    ├── IndexLoadError                     missing, corrupt or tampered file; has ``.path``
    │   └── IndexVersionError              written by an unknown (newer) format version
    ├── MissingDependencyError(ImportError)  optional package missing; names the pip extra
    └── ToolInputError                     recoverable tool-input problem, shown to the model
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "ConfigError",
    "DimensionMismatchError",
    "IndexLoadError",
    "IndexStateError",
    "IndexVersionError",
    "MissingDependencyError",
    "ParseError",
    "PasswordRequiredError",
    "RetrievalError",
    "ToolInputError",
]


class RetrievalError(Exception):
    """Root of every error raised on purpose by this package."""


class ConfigError(RetrievalError, ValueError):
    """An argument or setting is invalid; the message names it and the accepted values."""


class ParseError(RetrievalError):
    """A file could not be turned into documents.

    Attributes:
        path: the file that failed (always named in the message too).
    """

    def __init__(self, path: str | Path, message: str) -> None:
        self.path = str(path)
        super().__init__(f"{self.path}: {message}")


class PasswordRequiredError(ParseError):
    """The file is encrypted and no password, or a wrong one, was given."""


class IndexStateError(RetrievalError):
    """The index cannot do this now (for example: search before anything was added)."""


class DimensionMismatchError(IndexStateError, ValueError):
    """Vectors of one dimension were given to an index of another."""


class IndexLoadError(RetrievalError):
    """An index file is missing, unreadable, truncated or fails its checksum.

    Attributes:
        path: the offending file or directory.
    """

    def __init__(self, path: str | Path, message: str) -> None:
        self.path = str(path)
        super().__init__(f"{self.path}: {message}")


class IndexVersionError(IndexLoadError):
    """The index was written with a format version this package cannot read."""


class MissingDependencyError(RetrievalError, ImportError):
    """An optional dependency is not installed; the message names the pip extra."""


class ToolInputError(RetrievalError):
    """A tool got input it cannot use; the message is meant to be shown to the model."""
