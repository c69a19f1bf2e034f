"""Segments: the immutable parts every version of an index is made of.

As in Lucene, Tantivy and Elasticsearch, a version of an index is a list of immutable
segments plus the rows deleted from them, and BM25's collection statistics are computed over
the live rows of all of them (:mod:`indexes.keyword.collection`). A fresh single index is one
segment; ``--shards N`` places groups of segments on N workers (the ``shard`` of each
segment); an update writes a segment for the files that changed and records the replaced
rows as deleted, so no existing segment file is touched.

Layout::

    INDEX/segments/s-<12 hex>/   one segment: an ordinary bundle (``manifest.json`` with
                                 every file's SHA-256, ``chunks.jsonl``, document texts,
                                 ``bm25/``, the faiss vectors), written once, never changed
    INDEX/versions/v-N/version.json   the sealed version manifest: settings, what the index
                                 tracks (sources, fingerprints, ...), and its segments in
                                 row order, each with its shard, its manifest's SHA-256 and
                                 the file of its deleted rows (``deleted/<segment>.npy``)

Segment names are random (``uuid4``), so a name is never reused, and a version pins each of
its segments by the SHA-256 of the segment's manifest: a version never reads a segment other
than the one it was written with (the defect of issue 38, item 1, cannot recur). Segments no
kept version names are collected after the versions (:func:`collect_segments`).

**Rows.** A version's rows are the live rows of its segments, segment after segment; a
search sees only those (:class:`LiveRows` maps them to each segment's own rows).

**Ties.** Every ranking of an index orders equal scores by the chunk's 64-bit key (the
BLAKE2b of its id), never by row: rows depend on the history of the index (an updated file's
chunks move to the newest segment), keys do not, so an updated index and a fresh build of the
same files return the same hits in the same order. :func:`merged_top` applies that rule over
any number of segments exactly: a segment whose last returned score ties the cut-off is asked
again for more rows, so no tied row hides behind a segment's own top ``k``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtools.indexes.errors import IndexLoadError
from ragtools.indexes.ranking import Mask, Ranking
from ragtools.indexes.store.persist import (
    fsync_dir,
    load_npy,
    read_json,
    save_npy,
    sha256_file,
)

__all__ = [
    "DELETED_DIR",
    "SEGMENTS",
    "LiveRows",
    "SegmentEntry",
    "collect_segments",
    "merged_top",
    "new_segment_dir",
    "publish_segment",
    "read_deleted",
    "shard_of",
    "write_deleted",
]

logger = logging.getLogger(__name__)

SEGMENTS = "segments"
DELETED_DIR = "deleted"
_TMP = ".tmp-"

Rows = npt.NDArray[np.int64]
Keys = npt.NDArray[np.int64]


@dataclass(frozen=True)
class SegmentEntry:
    """One segment as a version names it.

    Attributes:
        path: the segment's folder, relative to the index root (``segments/s-...``; an index
            written before segments existed names its version folders here).
        shard: the worker group the segment is placed on (0 without shards).
        manifest_sha256: the SHA-256 of the segment's ``manifest.json`` (``None``: not pinned,
            an older index).
        rows: rows the segment holds, deleted ones included.
        deleted: the version's file of this segment's deleted rows, or ``None``.
        n_deleted: how many of its rows are deleted.
        canonical: its BM25 weights were computed with its own statistics in the canonical
            term order (:mod:`indexes.keyword.collection`), so a version made of this segment alone,
            without deletions, scores with them as stored.
    """

    path: str
    shard: int
    manifest_sha256: str | None
    rows: int
    deleted: str | None = None
    n_deleted: int = 0
    canonical: bool = False

    @property
    def name(self) -> str:
        """The segment folder's name."""
        return Path(self.path).name

    @property
    def live(self) -> int:
        """Rows not deleted."""
        return self.rows - self.n_deleted

    def to_json(self) -> dict[str, Any]:
        """The entry as the version manifest stores it."""
        return {
            "path": self.path,
            "shard": self.shard,
            "manifest_sha256": self.manifest_sha256,
            "rows": self.rows,
            "deleted": self.deleted,
            "n_deleted": self.n_deleted,
            "canonical": self.canonical,
        }

    @classmethod
    def from_json(cls, data: Any, where: Path) -> SegmentEntry:
        """Read :meth:`to_json`'s output back, checked.

        Raises:
            IndexLoadError: a malformed entry (naming ``where``), or a path that leaves the
                index root.
        """
        try:
            entry = cls(
                path=str(data["path"]),
                shard=int(data["shard"]),
                manifest_sha256=data["manifest_sha256"],
                rows=int(data["rows"]),
                deleted=data.get("deleted"),
                n_deleted=int(data.get("n_deleted", 0)),
                canonical=bool(data.get("canonical", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexLoadError(where, f"invalid segment entry ({exc})") from exc
        parts = Path(entry.path).parts
        if Path(entry.path).is_absolute() or ".." in parts or not parts:
            raise IndexLoadError(where, f"segment path {entry.path!r} leaves the index")
        if not 0 <= entry.n_deleted <= entry.rows or entry.shard < 0:
            raise IndexLoadError(where, f"invalid counts in segment entry {entry.path!r}")
        return entry


# ------------------------------------------------------------------ writing


def shard_of(key: str, n_shards: int) -> int:
    """The shard of a file path or document id: BLAKE2b, the same in every process."""
    if n_shards == 1:
        return 0
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % n_shards


def new_segment_dir(root: Path) -> Path:
    """A fresh temporary folder to write a segment into (under ``segments/``)."""
    folder = root / SEGMENTS
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f"{_TMP}{uuid.uuid4().hex[:12]}"
    tmp.mkdir()
    return tmp


def publish_segment(tmp: Path) -> tuple[str, str]:
    """Fsync and rename a written segment into place; returns its relative path and the
    SHA-256 of its manifest."""
    for dirpath, _, names in os.walk(tmp):
        for name in names:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    final = tmp.parent / f"s-{tmp.name[len(_TMP) :]}"
    os.rename(tmp, final)
    fsync_dir(tmp.parent)
    return f"{SEGMENTS}/{final.name}", sha256_file(final / "manifest.json")


def write_deleted(directory: Path, name: str, deleted: Mask) -> str:
    """Write the deleted rows of segment ``name`` into a version folder; returns the file."""
    (directory / DELETED_DIR).mkdir(exist_ok=True)
    relative = f"{DELETED_DIR}/{name}.npy"
    save_npy(directory / relative, np.flatnonzero(deleted).astype(np.int64))
    return relative


def read_deleted(directory: Path, entry: SegmentEntry) -> Mask:
    """The deleted-row mask of ``entry`` as its version (``directory``) records it.

    Raises:
        IndexLoadError: the file does not hold ``n_deleted`` distinct rows of the segment.
    """
    mask = np.zeros(entry.rows, np.bool_)
    if entry.deleted is None:
        if entry.n_deleted:
            raise IndexLoadError(directory, f"segment {entry.name}: deleted rows not recorded")
        return mask
    path = directory / entry.deleted
    rows = np.asarray(load_npy(path))
    if rows.ndim != 1 or rows.dtype.kind not in "iu" or len(rows) != entry.n_deleted:
        raise IndexLoadError(path, f"expected {entry.n_deleted} deleted row ids")
    if len(rows) and (rows.min() < 0 or rows.max() >= entry.rows):
        raise IndexLoadError(path, f"a deleted row lies outside the segment's {entry.rows}")
    mask[rows] = True
    if int(mask.sum()) != entry.n_deleted:
        raise IndexLoadError(path, "deleted row ids repeat")
    return mask


def collect_segments(root: Path, versions: Iterable[Path]) -> list[str]:
    """Delete the segments that none of ``versions`` (every version still on disk) names,
    and what killed writers left under ``segments/``. Call under the writer lock, after the
    versions were collected. Returns the deleted names."""
    folder = root / SEGMENTS
    if not folder.is_dir():
        return []
    named: set[str] = set()
    for version in versions:
        manifest = version / "version.json"
        if not manifest.is_file():
            continue
        try:
            data = read_json(manifest)
            named |= {Path(str(s["path"])).name for s in data["segments"]}
        except (IndexLoadError, KeyError, TypeError):
            return []  # unreadable: keep everything rather than guess
    gone = []
    for path in folder.iterdir():
        if path.name in named:
            continue
        doomed = folder / f"{_TMP}gc-{path.name}"
        if not path.name.startswith(_TMP):
            os.rename(path, doomed)
        else:
            doomed = path
        shutil.rmtree(doomed, ignore_errors=True)
        gone.append(path.name)
    if gone:
        fsync_dir(folder)
        logger.debug("index %s: collected segments %s", root, ", ".join(gone))
    return gone


# ------------------------------------------------------------------ reading


class LiveRows:
    """The live rows of a version, segment after segment, and each segment's own rows.

    Attributes:
        offsets: the first live row of each segment (and the total at the end).
        local: per segment, its own row of each of its live rows.
    """

    def __init__(self, deleted: Sequence[Mask]) -> None:
        self.local: list[Rows] = [np.flatnonzero(~d).astype(np.int64) for d in deleted]
        self.deleted = list(deleted)
        counts = [len(rows) for rows in self.local]
        self.offsets = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=self.offsets[1:])
        self._to_live: list[Rows | None] = [None] * len(deleted)

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def to_live(self, segment: int, rows: Rows) -> Rows:
        """Live rows of ``segment``'s own (live) ``rows``."""
        if not self.deleted[segment].any():
            return rows + int(self.offsets[segment])
        table = self._to_live[segment]
        if table is None:
            table = np.full(len(self.deleted[segment]), -1, np.int64)
            table[self.local[segment]] = np.arange(len(self.local[segment])) + int(
                self.offsets[segment]
            )
            self._to_live[segment] = table
        return table[rows]

    def segment_mask(self, segment: int, allow: Mask | None) -> Mask | None:
        """The mask over ``segment``'s own rows: live and (if given) allowed."""
        deleted = self.deleted[segment]
        if allow is None:
            return ~deleted if deleted.any() else None
        start, end = int(self.offsets[segment]), int(self.offsets[segment + 1])
        mask = np.zeros(len(deleted), np.bool_)
        mask[self.local[segment]] = allow[start:end]
        return mask


SegmentSearch = Callable[[int, int], Ranking]
"""``search(segment, k)``: that segment's top ``k`` in live rows (any order of ties)."""


def first_depth(k: int) -> int:
    """How deep :func:`merged_top` first asks each segment for a top ``k``."""
    return k + 1


def merged_top(
    n_segments: int, search: SegmentSearch, keys: Callable[[Rows], Keys], k: int
) -> Ranking:
    """The ``k`` best live rows over every segment: score descending, then chunk key.

    Each segment is asked for its ``k + 1`` best (:func:`first_depth`); a segment that
    returned as many rows as asked whose last score ties the merged ``k``-th score may hold
    more rows of that score, so it is asked again with twice the depth until it does not.
    The result is then exact whatever order the segments broke ties in. The one row more
    than needed shows, in the common case, that nothing ties across the cut: asked for
    exactly ``k``, a segment's last row would tie the cut whenever it holds the merged
    ``k``-th row (always, with one segment), and be asked again.
    """
    depth = [first_depth(k)] * n_segments
    found = [search(s, depth[s]) for s in range(n_segments)]
    while True:
        rows = np.concatenate([np.zeros(0, np.int64), *(r.rows for r in found)])
        scores = np.concatenate([np.zeros(0, np.float64), *(r.scores for r in found)])
        if len(rows) == 0:
            return Ranking.empty()
        row_keys = keys(rows)
        order = np.lexsort((row_keys, -scores))[:k]
        cut = scores[order[-1]]
        again = [
            s
            for s, r in enumerate(found)
            if len(r.rows) == depth[s] and len(order) == k and r.scores[-1] == cut
        ]
        if not again:
            return Ranking(rows[order], scores[order])
        for s in again:
            depth[s] *= 2
            found[s] = search(s, depth[s])
