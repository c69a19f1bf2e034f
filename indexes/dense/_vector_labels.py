"""faiss labels and the caller's row ids, kept apart so that every index kind can delete.

faiss numbers its vectors with internal *labels*; callers add vectors under their own row
ids. ``IndexIDMap2`` cannot bridge the two for all three kinds (its ``remove_ids`` corrupts an
IVF sub-index, HNSW cannot remove at all), so :class:`LabelRows` keeps the map itself: an array
``label -> row`` (``-1`` for a deleted label) and, for the reverse lookup, the live rows in
ascending order with their labels. It also remembers the row space: 1 + the largest row ever
added, which a deletion does not shrink.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ragtools.indexes.ranking import Mask, Rows
from ragtools.parsers.errors import ConfigError


def parse_rows(rows: npt.ArrayLike, name: str = "rows") -> Rows:
    """Caller row ids (any non-negative integers, not bounded by the row space) as int64.

    Raises:
        ConfigError: not a 1-D sequence of integers, or a negative id.
    """
    arr = np.asarray(rows)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.integer)):
        msg = f"{name} must be a 1-D sequence of integers, got dtype {arr.dtype}"
        raise ConfigError(msg)
    out = arr.astype(np.int64)
    if (out < 0).any():
        msg = f"{name} must be non-negative, got {int(out.min())}"
        raise ConfigError(msg)
    return out


class LabelRows:
    """The row of every faiss label, and the label of every live row.

    Args:
        rows: ``label -> row`` (``-1``: deleted); default empty.
        bound: the row space, at least 1 + the largest row in ``rows``.
    """

    def __init__(self, rows: Rows | None = None, bound: int = 0) -> None:
        self.rows: Rows = np.zeros(0, dtype=np.int64) if rows is None else rows
        self.bound = bound
        self._reindex()

    def _reindex(self) -> None:
        labels = np.flatnonzero(self.rows >= 0).astype(np.int64)
        order = np.argsort(self.rows[labels], kind="stable")
        self.sorted_labels: Rows = labels[order]
        self.sorted_rows: Rows = self.rows[self.sorted_labels]

    @property
    def n_live(self) -> int:
        """Live (not deleted) labels."""
        return len(self.sorted_rows)

    def __contains__(self, row: object) -> bool:
        if isinstance(row, bool) or not isinstance(row, int | np.integer):
            return False
        i = int(np.searchsorted(self.sorted_rows, row))
        return i < len(self.sorted_rows) and int(self.sorted_rows[i]) == row

    def labels_of(self, rows: Rows) -> tuple[Rows, npt.NDArray[np.bool_]]:
        """Labels of ``rows`` (where found) and the found mask."""
        if len(self.sorted_rows) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(len(rows), dtype=bool)
        pos = np.minimum(np.searchsorted(self.sorted_rows, rows), len(self.sorted_rows) - 1)
        found = self.sorted_rows[pos] == rows
        return self.sorted_labels[pos[found]], found

    def append(self, rows: Rows) -> Rows:
        """Give new distinct ``rows`` the next labels; returns those labels."""
        labels = np.arange(len(self.rows), len(self.rows) + len(rows), dtype=np.int64)
        self.rows = np.concatenate([self.rows, rows])
        self.bound = max(self.bound, int(rows.max()) + 1)
        merged = np.concatenate([self.sorted_rows, rows])
        order = np.argsort(merged, kind="stable")
        self.sorted_rows = merged[order]
        self.sorted_labels = np.concatenate([self.sorted_labels, labels])[order]
        return labels

    def tombstone(self, labels: Rows) -> None:
        """Mark labels deleted; their numbers stay taken (HNSW, IVF)."""
        self.rows[labels] = -1
        self._reindex()

    def remove(self, labels: Rows) -> None:
        """Drop labels and renumber the rest, as a flat faiss index compacts its storage."""
        self.rows = np.delete(self.rows, labels)
        self._reindex()

    def allowed(self, mask: Mask | None) -> Mask | None:
        """A mask over rows as a mask over live labels; ``None`` stays ``None`` (all live)."""
        if mask is None:
            return None
        ok = self.rows >= 0
        ok[ok] = mask[self.rows[ok]]
        return ok
