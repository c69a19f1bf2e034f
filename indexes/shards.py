"""Sharded indexes: N ordinary bundles plus a top manifest with the global BM25 statistics.

Layout on disk::

    INDEX/
      CURRENT, versions/v-N/   top versions, written and switched like any version
                               (:mod:`indexes.versions`); each holds
        shards.json            the sealed top manifest: settings, every shard's directory
                               and the version of it this top version uses
        shard_rows.npy         the shard of every row (int32, in global row order)
        global_bm25.json       the global statistics (:class:`~indexes._bm25_global.GlobalStats`)
        bm25/shard-000/        that shard's BM25 postings and weights in the global term
                               space (``.npy``, mapped at open; :mod:`indexes._shard_scoring`)
      shards/shard-000/        an ordinary index bundle, with its own versions
      cache/embeddings/        the query embedding cache

A top version names the shard versions it was built with, and pins each by the SHA-256 of
its manifest, so an update that stops half-way (shards rewritten, top manifest not yet
switched) leaves the previous top version, and the shard versions it names, live and
complete. Shard version numbers are never reused (:mod:`indexes.versions`), and a shard
version whose manifest is not the pinned one raises
:class:`~parsers.errors.IndexLoadError`, as does a damaged shard, naming the shard's file.
Shard versions are collected by the sharded writer, which keeps every one that a kept top
version names (:mod:`indexes.shard_writer`).

**Exactly one index.** Searches return what one index over the same sources returns, the
same chunk ids in the same order with the same scores:

* every shard scores BM25 with the global statistics (:mod:`indexes._bm25_global`), so its
  scores are the single index's, bit for bit;
* vectors are searched per shard (flat: exact) and give the same scores;
* rows are numbered as one index numbers them (files in sorted order, documents in the order
  given), each shard's rows being a subsequence, stored as the shard of every row. The
  merge keeps the ``k`` best by score, ties by that global row: the rule of
  :class:`~indexes.ranking.Ranking` in a single index.

Shards are searched concurrently: by a thread per shard in this process, or by Ray actors
(:mod:`indexes.ray_shards`). Files go to shards by a hash of their path
(:func:`shard_of`), documents given directly by a hash of their id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
import numpy.typing as npt

from ragtools.indexes._bm25_global import GlobalStats
from ragtools.indexes._chunk_file import ShardedChunks
from ragtools.indexes._persist import read_json, read_manifest, sha256_file
from ragtools.indexes._shard_rows import SHARD_ROWS, read_shard_rows, rows_by_shard
from ragtools.indexes._shard_scoring import GlobalScoring, scored_dir
from ragtools.indexes.bm25 import BM25Index
from ragtools.indexes.bundle import MANIFEST, Index, IndexState, chunk_keys_of, load_state
from ragtools.indexes.doc_texts import ChainedTexts
from ragtools.indexes.embed import Embedder
from ragtools.indexes.ranking import Mask, Ranking
from ragtools.indexes.settings import IndexSettings
from ragtools.indexes.versions import VERSIONS, reading
from ragtools.indexes.windows import WindowedVectorIndex
from ragtools.parsers.document import Chunk
from ragtools.parsers.errors import IndexLoadError

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ragtools.indexes.writer import UpdateOptions, UpdateReport

__all__ = [
    "GLOBAL_BM25",
    "SHARDED_FORMAT",
    "SHARDED_FORMAT_VERSION",
    "SHARDS_MANIFEST",
    "SHARD_ROWS",
    "GlobalScoring",
    "Shard",
    "ShardSearch",
    "ShardedIndex",
    "is_sharded",
    "open_shard",
    "read_shard_rows",
    "rows_by_shard",
    "scored_dir",
    "shard_dir",
    "shard_of",
]

SHARDS_MANIFEST = "shards.json"
GLOBAL_BM25 = "global_bm25.json"
SHARDED_FORMAT = "ragtools-sharded-index"
SHARDED_FORMAT_VERSION = 2

Rows = npt.NDArray[np.int64]


def shard_of(key: str, n_shards: int) -> int:
    """The shard of a file path or document id: BLAKE2b, the same in every process."""
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % n_shards


def shard_dir(root: str | Path, number: int) -> Path:
    """The bundle directory of shard ``number``."""
    return Path(root) / "shards" / f"shard-{number:03d}"


def is_sharded(version_dir: Path) -> bool:
    """True when a top version directory holds a sharded index."""
    return (version_dir / SHARDS_MANIFEST).is_file()


@dataclass(frozen=True)
class Shard:
    """One shard as a search sees it: its state (``None`` when it holds no rows) and the
    global row of each of its rows."""

    number: int
    path: Path
    version: str | None
    state: IndexState | None
    global_rows: Rows


def open_shard(
    path: Path,
    version: str,
    scoring: GlobalScoring | None,
    *,
    top: Path,
    number: int,
    mmap: bool = True,
    manifest_sha256: str | None = None,
) -> IndexState:
    """Load one version of a shard, its BM25 scoring with the global statistics (as the top
    version ``top`` holds it for shard ``number``).

    ``manifest_sha256`` is the checksum of the shard version's manifest that the top version
    recorded: the top version pins its shards by content, so a shard version that is not the
    one it was built with is an error, never a silent mix of old statistics and new chunks.
    (Top versions written before this check record none.)

    Raises:
        IndexLoadError: a missing or damaged file of the shard (named), or a shard version
            other than the one the top version was built with.
    """
    directory = path / VERSIONS / version
    with reading(path):
        if not directory.is_dir():
            msg = "the shard version named by the top manifest is missing"
            raise IndexLoadError(directory, msg)
        if manifest_sha256 is not None:
            _check_pinned(directory / MANIFEST, manifest_sha256, top)
        try:
            state = load_state(directory, mmap=mmap, lazy_chunks=mmap, keyword=False)
        except OSError as exc:
            raise IndexLoadError(directory, f"unreadable ({exc})") from exc
    if not state.settings.keyword or scoring is None:
        return state
    template = state.settings.new_bm25()
    return replace(state, bm25=scoring.load(template, top, number, len(state.chunks)))


def _check_pinned(manifest: Path, expected: str, top: Path) -> None:
    try:
        found = sha256_file(manifest)
    except OSError as exc:
        raise IndexLoadError(manifest, f"unreadable ({exc})") from exc
    if found != expected:
        msg = (
            f"this shard version is not the one top version {top.name} was built with "
            "(manifest checksum differs); roll back to another version or rebuild the index"
        )
        raise IndexLoadError(manifest, msg)


class ShardSearch(Protocol):
    """How the shards of an index are searched: each returns its own top ``k`` (its rows)."""

    def keyword(self, query: str, k: int, masks: Sequence[Mask | None]) -> list[Ranking]:
        """BM25 top ``k`` of every non-empty shard, in shard order."""
        ...

    def vector(self, query: npt.ArrayLike, k: int, masks: Sequence[Mask | None]) -> list[Ranking]:
        """Vector top ``k`` of every non-empty shard, in shard order."""
        ...


class ThreadSearch:
    """Searches the shards held in this process.

    BM25 shards are searched in a thread each (numpy releases the GIL in the gathers and
    sums). Vector shards are scanned one after another in the calling thread: each scan is a
    BLAS product that BLAS already spreads over the cores, and Python threads on top of it
    oversubscribe them (``eval/bench_shards.py`` measured 4 threaded flat scans at several
    times the cost of 4 sequential ones).
    """

    def __init__(self, shards: Sequence[Shard]) -> None:
        self.states = [s.state for s in shards if s.state is not None]
        self._pool = ThreadPoolExecutor(max(1, len(self.states)), thread_name_prefix="shard")

    def keyword(self, query: str, k: int, masks: Sequence[Mask | None]) -> list[Ranking]:
        def one(state: IndexState, mask: Mask | None) -> Ranking:
            return state.keyword_ranking(query, k, mask)

        if len(self.states) == 1:
            return [one(self.states[0], masks[0])]
        return list(self._pool.map(one, self.states, masks))

    def vector(self, query: npt.ArrayLike, k: int, masks: Sequence[Mask | None]) -> list[Ranking]:
        return [s.vector_ranking(query, k, m) for s, m in zip(self.states, masks, strict=True)]


class _Merged:
    """What the halves of a sharded state share: the shards' global rows and their search."""

    def __init__(self, shards: Sequence[Shard], search: ShardSearch) -> None:
        self.shards = [s for s in shards if s.state is not None]
        self.search = search

    def masks(self, allow: Mask | None) -> list[Mask | None]:
        return [None if allow is None else allow[s.global_rows] for s in self.shards]

    def merge(self, rankings: Sequence[Ranking], k: int) -> Ranking:
        """The ``k`` best over all shards, score descending, then global row ascending."""
        rows = [s.global_rows[r.rows] for s, r in zip(self.shards, rankings, strict=True)]
        if not rows:
            return Ranking.empty()
        scores = np.concatenate([r.scores for r in rankings])
        return Ranking.top(scores, k, np.concatenate(rows))


class ShardedBM25:
    """The keyword half of a sharded index, with :class:`~indexes.bm25.BM25Index`'s
    ``search`` over global rows."""

    def __init__(self, merged: _Merged) -> None:
        self._merged = merged
        first = merged.shards[0].state
        assert first is not None and first.bm25 is not None
        self.params = first.bm25.params
        self.shard_indexes = [s.state.bm25 for s in merged.shards if s.state is not None]

    def __len__(self) -> int:
        return sum(len(b) for b in self.shard_indexes if b is not None)

    def search(self, query: str, k: int = 10, allow: Mask | None = None) -> Ranking:
        merged = self._merged
        return merged.merge(merged.search.keyword(query, k, merged.masks(allow)), k)


class ShardedVectors:
    """The vector half of a sharded index, with
    :class:`~indexes.windows.WindowedVectorIndex`'s ``search`` over global rows."""

    def __init__(self, merged: _Merged) -> None:
        self._merged = merged
        self.shard_indexes = [s.state.vector for s in merged.shards if s.state is not None]

    def __len__(self) -> int:
        return sum(len(v) for v in self.shard_indexes if v is not None)

    def search(self, query: npt.ArrayLike, k: int, allow: Mask | None = None) -> Ranking:
        merged = self._merged
        return merged.merge(merged.search.vector(query, k, merged.masks(allow)), k)


class RowKeys:
    """The chunk keys of a sharded index's rows (:attr:`IndexState.chunk_keys`), computed
    for the rows asked: all of them would parse every chunk of every shard (minutes and
    gigabytes at ten million rows) when a query needs the keys of its hits only."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self._chunks = chunks

    def __len__(self) -> int:
        return len(self._chunks)

    def __getitem__(self, rows: npt.ArrayLike) -> npt.NDArray[np.int64]:
        wanted = np.asarray(rows, dtype=np.int64)
        keys = chunk_keys_of(self._chunks[row] for row in wanted.reshape(-1).tolist())
        return keys.reshape(wanted.shape)


@dataclass(frozen=True)
class ShardedState(IndexState):
    """A sharded index's :class:`~indexes.bundle.IndexState`: its chunk keys are
    :class:`RowKeys`, indexed like the array of a single index's state."""

    @property
    def chunk_keys(self) -> npt.NDArray[np.int64]:  # type: ignore[override]
        return cast(npt.NDArray[np.int64], RowKeys(self.chunks))


def sharded_state(
    settings: IndexSettings,
    shards: Sequence[Shard],
    manifest: dict[str, Any],
    search: ShardSearch | None = None,
) -> IndexState:
    """The state a search sees: every chunk in global row order, and merged halves."""
    parts = [(s.state.chunks if s.state is not None else [], s.global_rows) for s in shards]
    chunks = ShardedChunks(parts, SHARDS_MANIFEST)
    merged = _Merged(shards, search or ThreadSearch(shards))
    bm25 = vector = None
    if merged.shards and settings.keyword:
        bm25 = cast(BM25Index, ShardedBM25(merged))  # duck-typed: search, params, len
    if merged.shards and settings.vector:
        vector = cast(WindowedVectorIndex, ShardedVectors(merged))
    texts = [s.state.texts for s in merged.shards if s.state is not None]
    stored = [t for t in texts if t is not None]  # each document lives in one shard
    return ShardedState(
        settings, cast(list[Chunk], chunks), bm25, vector, manifest,
        ChainedTexts(stored) if stored else None,
    )  # fmt: skip


def read_sharded(root: Path, directory: Path, *, mmap: bool) -> tuple[IndexState, list[Shard]]:
    """Read and check one top version and every shard version it names.

    Raises:
        IndexLoadError: the top manifest, the statistics or a shard's file is missing or
            damaged (named), or the shards disagree with the top manifest.
    """
    manifest = read_manifest(
        directory, SHARDS_MANIFEST, fmt=SHARDED_FORMAT, version=SHARDED_FORMAT_VERSION, sealed=True
    )
    where = directory / SHARDS_MANIFEST
    try:
        settings = IndexSettings.model_validate(manifest["settings"])
        entries = list(manifest["shards"])
        scoring = None
        if settings.keyword:
            stats_file = directory / GLOBAL_BM25
            scoring = GlobalScoring(GlobalStats.from_json(read_json(stats_file), stats_file))
        shards = []
        for number, (entry, rows) in enumerate(
            zip(entries, read_shard_rows(directory, entries), strict=True)
        ):
            path = shard_dir(root, number)
            version = entry["version"]
            state = None
            if version is not None:
                state = open_shard(
                    path, version, scoring, top=directory, number=number, mmap=mmap,
                    manifest_sha256=entry.get("manifest_sha256"),
                )  # fmt: skip
            held = 0 if state is None else len(state.chunks)
            if len(rows) != held:
                msg = f"shard {number} has {held} chunks, the top manifest says {len(rows)}"
                raise IndexLoadError(path, msg)
            shards.append(Shard(number, path, version, state, rows))
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexLoadError(where, f"invalid top manifest ({exc})") from exc
    return sharded_state(settings, shards, manifest), shards


class ShardedIndex(Index):
    """An :class:`~indexes.bundle.Index` whose rows live in several shards.

    Open one with :meth:`Index.open`; build one with ``Index.build(..., shards=N)``. It
    reads like any index (``chunks``, ``bm25``, ``vector``, every retriever), and
    :attr:`shards` shows the parts. ``bm25`` and ``vector`` offer ``search`` (global rows)
    and ``len``; each shard's own halves are in :attr:`shards`.
    """

    def __init__(
        self,
        path: Path,
        state: IndexState,
        shards: Sequence[Shard],
        *,
        version_dir: Path,
        embedder: Embedder | None = None,
    ) -> None:
        super().__init__(path, state, embedder=embedder, version_dir=version_dir)
        self.shards = list(shards)

    def adopt(self, other: Index) -> None:
        """:meth:`Index.adopt`, and ``other``'s shards."""
        super().adopt(other)
        if isinstance(other, ShardedIndex):
            self.shards = other.shards

    def update(
        self, sources: Sequence[str | Path] | None = None, **options: Unpack[UpdateOptions]
    ) -> UpdateReport:
        """Bring the index up to date, rewriting only the shards whose files changed; see
        :func:`indexes.shard_update.update_sharded`."""
        from ragtools.indexes.shard_update import update_sharded

        return update_sharded(self, sources, **options)

    def search_with(self, search: ShardSearch) -> None:
        """Search the shards with ``search`` from now on (e.g. Ray actors)."""
        self.state = sharded_state(self.settings, self.shards, self.manifest, search)

    def info(self) -> dict[str, Any]:
        """:meth:`Index.info` plus each shard's directory, version and chunk count; the
        ``documents`` and ``vectors`` counts the top manifest does not keep are the sums of
        the shards' own (a document lies in one shard)."""
        summary = super().info()
        counts = dict(summary.get("counts") or {})
        for key in ("documents", "vectors"):
            if key not in counts:
                counts[key] = sum(
                    int(s.state.manifest.get("counts", {}).get(key, 0))
                    for s in self.shards
                    if s.state is not None
                )
        summary["counts"] = counts
        summary["shards"] = [
            {"path": str(s.path), "version": s.version, "chunks": len(s.global_rows)}
            for s in self.shards
        ]
        return summary
