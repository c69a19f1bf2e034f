"""``Ranking``: the one result type below ``Hit``, with the only top-k, row filter and k check.

Every ranked answer inside the package (a BM25 search, a vector search, a fused run) is a
:class:`Ranking`: row ids and their scores, sorted by score descending, then row ascending,
so ties come back in the same order whichever half produced them. Hits are built from a
ranking only for the ``k`` rows a caller returns.

What ``allow`` means, for both halves and every caller (:func:`allow_mask`):

* ``None``: every row is allowed;
* a boolean array: one flag per row, exactly ``n_rows`` long (a mask of another length is a
  caller's mistake, not a filter, and raises :class:`ConfigError`);
* anything else: a 1-D collection of integer row ids, each in ``[0, n_rows)`` (an id outside
  that range raises :class:`ConfigError`; an empty collection allows nothing).

``n_rows`` is the size of the row space the caller searches: the number of rows ever added
(deleted rows keep their ids).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtools.parsers.errors import ConfigError

__all__ = ["Mask", "Ranking", "Rows", "allow_mask", "check_k", "row_ids"]

Rows = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class Ranking:
    """Rows and scores, best first: score descending, then row ascending.

    Build one with :meth:`top` (which sorts) or :meth:`empty`; the constructor trusts that
    its arrays are already in that order.
    """

    rows: Rows
    scores: npt.NDArray[np.float64]

    @classmethod
    def empty(cls) -> Ranking:
        """A ranking without rows."""
        return cls(np.zeros(0, np.int64), np.zeros(0, np.float64))

    @classmethod
    def top(cls, scores: npt.ArrayLike, k: int, rows: npt.ArrayLike | None = None) -> Ranking:
        """The ``k`` best of ``scores`` (``rows[i]`` scored ``scores[i]``; default ``i``).

        Linear selection (``np.partition``) finds the k-th score; only the rows at or above
        it are sorted, so ties at the boundary resolve by row like every other tie.
        """
        values = np.asarray(scores)
        if values.dtype.kind != "f":
            values = values.astype(np.float64)
        ids = np.arange(len(values), dtype=np.int64) if rows is None else np.asarray(rows)
        if len(values) > k:  # select in the input's precision; only the k kept become float64
            kth = np.partition(values, len(values) - k)[len(values) - k]
            keep = np.flatnonzero(values >= kth)
            values, ids = values[keep], ids[keep]
        order = np.lexsort((ids, -values))[:k]
        best_ids, best = ids[order], values[order]
        return cls(best_ids.astype(np.int64, copy=False), best.astype(np.float64, copy=False))

    def __iter__(self) -> Iterator[npt.NDArray[Any]]:
        """Unpacks as ``rows, scores = ranking``, the pair of arrays peers return."""
        return iter((self.rows, self.scores))

    def head(self, k: int) -> Ranking:
        """The first ``k`` entries."""
        return Ranking(self.rows[:k], self.scores[:k])

    def pairs(self) -> list[tuple[int, float]]:
        """``(row, score)`` pairs as Python numbers, best first."""
        return list(zip(self.rows.tolist(), self.scores.tolist(), strict=True))


def check_k(k: object, name: str = "k") -> int:
    """``k`` as an int, if it is a positive integer (``bool`` is not).

    Raises:
        ConfigError: anything else.
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        msg = f"{name} must be a positive integer, got {k!r}"
        raise ConfigError(msg)
    return int(k)


def row_ids(rows: object, n_rows: int, name: str = "rows") -> Rows:
    """A 1-D collection of row ids in ``[0, n_rows)`` as int64.

    Raises:
        ConfigError: not 1-D integers, or an id outside the range.
    """
    ids: npt.NDArray[Any] = np.asarray(rows)
    if ids.ndim == 0:
        ids = ids.reshape(1)
    if ids.size == 0:
        return np.zeros(0, np.int64)
    if ids.ndim != 1 or ids.dtype.kind not in "iu":
        msg = f"{name} must be a 1-D collection of integer row ids, got dtype {ids.dtype}"
        raise ConfigError(msg)
    out = ids.astype(np.int64, copy=False)
    outside = (out < 0) | (out >= n_rows)
    if outside.any():
        msg = f"{name} contains row {int(out[outside][0])}, outside [0, {n_rows})"
        raise ConfigError(msg)
    return out


def allow_mask(allow: object, n_rows: int) -> Mask | None:
    """``allow`` (see the module docstring) as a boolean mask of ``n_rows``, or ``None``.

    Raises:
        ConfigError: a mask of another shape, or invalid row ids.
    """
    if allow is None:
        return None
    array = np.asarray(allow)
    if array.dtype == np.bool_:
        if array.shape != (n_rows,):
            msg = f"an allow mask needs one flag per row, shape ({n_rows},); got {array.shape}"
            raise ConfigError(msg)
        return array
    mask = np.zeros(n_rows, np.bool_)
    mask[row_ids(array, n_rows, "allow")] = True
    return mask
