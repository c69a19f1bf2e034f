"""One exception tree shared by parsers, indexes and retrieval.

Its root lives in ``parsers`` because imports flow ``retrieval → indexes → parsers``: the
bottom package is the only one every other package may import. Each error lives beside the
package that raises it: the index errors in :mod:`ragtools.indexes.errors`, the tool-input
error in :mod:`ragtools.retrieval.errors` (and the tool layer's own in
:mod:`ragtools.retrieval.tools.exceptions`); errors every package raises stay here.

::

    RetrievalError                         root: catch this to catch everything of ours
    ├── ConfigError(ValueError)            bad argument or setting (k < 1, weights summing to 0)
    ├── ParseError                         a file could not be parsed; has ``.path``
    │   └── PasswordRequiredError          encrypted file, no or wrong password
    ├── IndexStateError                    (ragtools.indexes.errors) not valid in this state
    │   └── DimensionMismatchError         vector dim differs from the index dim
    ├── IndexLoadError                     (ragtools.indexes.errors) missing, corrupt or
    │   │                                  tampered file; has ``.path``
    │   └── IndexVersionError              written by an unknown (newer) format version
    ├── MissingDependencyError(ImportError)  optional package missing; names the pip extra
    └── ToolInputError                     (ragtools.retrieval.errors) recoverable tool-input
                                           problem, shown to the model
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "ConfigError",
    "MissingDependencyError",
    "ParseError",
    "PasswordRequiredError",
    "RetrievalError",
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


class MissingDependencyError(RetrievalError, ImportError):
    """An optional dependency is not installed; the message names the pip extra."""
