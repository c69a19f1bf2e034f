"""Every shard's BM25 scored with the global statistics, as a top version holds it.

The global statistics change whenever any shard changes, so a shard's own BM25 (scored with
its own counts) cannot serve a sharded index. Each top version therefore holds, for every
shard, its postings and weights re-expressed with the global statistics
(:func:`indexes._bm25_global.with_global_stats`), written when the version is written and
memory-mapped when it is opened (:func:`indexes._bm25_global.load_scored`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ragtools.indexes._bm25_global import GlobalStats, load_scored, save_scored, with_global_stats
from ragtools.indexes._bm25_math import Vocabulary
from ragtools.indexes.bm25 import BM25Index


class GlobalScoring:
    """The global statistics with what every shard's BM25 shares: the vocabulary (one
    dict for all shards of a process) and the idf, built once per variant.

    A top version holds every shard's postings and weights so scored, under
    ``bm25/shard-NNN/`` (:func:`scored_dir`): written by :meth:`save` when the version is
    written, memory-mapped by :meth:`load` when it is opened.
    """

    def __init__(self, stats: GlobalStats) -> None:
        self.stats = stats
        self.vocab = Vocabulary(stats.terms)
        self._idf: dict[tuple[str, float], tuple[np.ndarray, bool, int]] = {}

    def _idf_of(self, bm25: BM25Index) -> tuple[np.ndarray, bool, int]:
        key = (bm25.variant, bm25.epsilon)
        if key not in self._idf:
            self._idf[key] = self.stats.idf(variant=bm25.variant, epsilon=bm25.epsilon)
        return self._idf[key]

    def save(self, bm25: BM25Index, top: Path, number: int, where: Path) -> list[str]:
        """Write shard ``number``'s ``bm25`` scored globally into the top version ``top``;
        returns the files written, relative to ``top``."""
        scored = with_global_stats(bm25, self.stats, self.vocab, self._idf_of(bm25), where=where)
        directory = scored_dir(top, number)
        names = save_scored(scored, directory)
        return [str((directory / n).relative_to(top)) for n in names]

    def load(self, template: BM25Index, top: Path, number: int, n_rows: int) -> BM25Index:
        """Shard ``number``'s BM25 as :meth:`save` wrote it in ``top``, memory-mapped."""
        directory = scored_dir(top, number)
        return load_scored(directory, template, self.vocab, self._idf_of(template), n_rows)


def scored_dir(top: Path, number: int) -> Path:
    """Where the top version ``top`` holds shard ``number``'s globally scored BM25."""
    return top / "bm25" / f"shard-{number:03d}"
