"""The errors the indexes raise, under the package's one root
(:class:`~ragtools.parsers.errors.RetrievalError`, in ``parsers`` because every package may
import it)::

    RetrievalError
    ├── IndexStateError                    operation not valid in the current state
    │   └── DimensionMismatchError         vector dim differs from the index dim
    └── IndexLoadError                     missing, corrupt or tampered file; has ``.path``
        └── IndexVersionError              written by an unknown (newer) format version
"""

from __future__ import annotations

from pathlib import Path

from ragtools.parsers.errors import RetrievalError

__all__ = ["DimensionMismatchError", "IndexLoadError", "IndexStateError", "IndexVersionError"]


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
