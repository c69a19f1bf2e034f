"""Which global rows each shard of a sharded index holds, as a top version stores them.

A sharded index numbers its rows as one index over the same sources would, and each shard
holds a subsequence of them. A top version stores the shard of every row
(:data:`SHARD_ROWS`, ``int32``, four bytes a row); format 1 stored ``[first, count]`` runs in
the top manifest, but rows routed by a hash form runs of about one row, so at ten million
rows that manifest was 300 MB of JSON and a gigabyte of Python lists once read.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtools.indexes._persist import load_npy
from ragtools.parsers.errors import IndexLoadError

SHARD_ROWS = "shard_rows.npy"

Rows = npt.NDArray[np.int64]


def rows_of(runs: Sequence[Sequence[int]]) -> Rows:
    """The global rows of ``[first, count]`` runs (how format 1 stored each shard's rows)."""
    if not runs:
        return np.zeros(0, np.int64)
    return np.concatenate([np.arange(a, a + n, dtype=np.int64) for a, n in runs])


def rows_by_shard(shard_of_row: npt.NDArray[np.integer], n_shards: int) -> list[Rows]:
    """Each shard's global rows, ascending, from the shard of every global row."""
    return [np.flatnonzero(shard_of_row == s) for s in range(n_shards)]


def read_shard_rows(directory: Path, entries: Sequence[Any]) -> list[Rows]:
    """Each shard's global rows as the top version in ``directory`` stores them: the shard
    of every row in :data:`SHARD_ROWS` (format 2), or runs in each entry of the manifest
    (format 1).

    Raises:
        IndexLoadError: the shard numbers are not an array of this index's shards.
    """
    if all("rows" in entry for entry in entries):
        return [rows_of(entry["rows"]) for entry in entries]
    path = directory / SHARD_ROWS
    owner = load_npy(path)
    if owner.dtype != np.int32 or owner.ndim != 1:
        raise IndexLoadError(path, f"expected a 1-D int32 array, found {owner.dtype}")
    if len(owner) and not (int(owner.min()) >= 0 and int(owner.max()) < len(entries)):
        raise IndexLoadError(path, f"holds shard numbers outside [0, {len(entries)})")
    return rows_by_shard(owner, len(entries))
