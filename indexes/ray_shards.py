"""Ray for sharded indexes: segments written by Ray tasks, and served by Ray actors.

Ray (the ``ray`` extra) is an existing distributed engine: the same calls drive a local
cluster started on this machine and a real cluster (``address="ray://head:10001"`` or
``"auto"`` on a node of it). Nothing here schedules, retries or transfers data by itself;
Ray does.

* **Build**: from files, :func:`indexes.ray_build.build_files_on_ray` runs the build on
  Ray Data (parse and split in tasks, embed in an actor pool on GPUs or CPUs, one write task
  per shard writing that shard's segment). The segments are written to the index directory,
  so on a real cluster it must be a path every node reaches (a shared file system); the
  driver writes the version that names them.
* **Serve**: :func:`serve_on_ray` starts one :class:`ShardActor` per shard; each opens the
  version's segments of its shard (BM25 scoring with the collection statistics the driver
  computed over every segment) and answers its top ``k`` in the version's live rows. A query
  fans out to every actor at once and the driver merges the answers with the one rule of
  :func:`indexes.store.segments.merged_top`, exactly as it merges its own segments' answers, so
  the results are the same.

Without ``ray`` installed an index works in-process; asking for Ray raises
:class:`~parsers.errors.MissingDependencyError` naming the extra.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtools.indexes.dense.embed import Embedder
from ragtools.indexes.index import Index, read_version
from ragtools.indexes.keyword.bm25 import Query
from ragtools.indexes.keyword.collection import GlobalStats
from ragtools.indexes.ranking import Mask, Ranking
from ragtools.indexes.settings import IndexSettings
from ragtools.indexes.store.segments import SegmentEntry
from ragtools.indexes.store.spill import read_spill
from ragtools.indexes.writer import write_shard_segment
from ragtools.parsers import split
from ragtools.parsers.errors import MissingDependencyError

__all__ = ["RaySearch", "ShardActor", "connect", "serve_on_ray", "write_spills_on_ray"]

logger = logging.getLogger(__name__)


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        msg = "Ray is not installed: pip install 'ragtools[ray]'"
        raise MissingDependencyError(msg) from exc
    return ray


def connect(address: str | None = None) -> Any:
    """The ``ray`` module, connected: to ``address``, or to the cluster this process already
    joined, or else to a new local cluster (no dashboard)."""
    ray = _ray()
    if not ray.is_initialized():
        ray.init(address=address or None, include_dashboard=False, log_to_driver=False)
    return ray


def _write_spill(
    root: str, settings: IndexSettings, shard: int, file: str, embedder: Embedder | None
) -> dict[str, Any] | None:
    """Ray task: one shard's segment from its staging file of documents."""
    documents = list(read_spill(file))
    chunks = split(documents, chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap)
    if not chunks:
        return None
    texts = {d.id: d.text for d in documents}
    return write_shard_segment(root, settings, embedder, shard, chunks, texts).to_json()


def write_spills_on_ray(
    root: Path,
    settings: IndexSettings,
    files: Sequence[Path],
    embedder: Embedder | None,
    address: str | None,
) -> list[SegmentEntry]:
    """Write shard ``i``'s segment from ``files[i]`` (:mod:`indexes.store.spill`) as a Ray task
    each (one CPU each); the entries in shard order."""
    ray = connect(address)
    task = ray.remote(num_cpus=1)(_write_spill)
    shared = ray.put(embedder)  # one copy in the object store, not one per task
    refs = [task.remote(str(root), settings, s, str(f), shared) for s, f in enumerate(files)]
    written = ray.get(refs)
    where = root / "segments"
    entries = [SegmentEntry.from_json(e, where) for e in written if e is not None]
    logger.info("wrote %d segments on Ray", len(entries))
    return entries


class ShardActor:
    """Holds one shard's segments of one version (the actor's state) and answers their top
    ``depth`` in the version's live rows.

    Args:
        root: the index directory; version: the version folder; shard: the shard's number.
        stats: the collection statistics of the version (``None``: no keyword half).
    """

    def __init__(self, root: str, version: str, shard: int, stats: GlobalStats | None) -> None:
        self.state = read_version(Path(root), Path(version), shard=shard, stats=stats)

    def keyword(
        self, tokens: Query, depth: int, allow: Mask | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """BM25 top ``depth`` of this shard: (live rows, scores)."""
        if self.state.bm25 is None:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        ranking = self.state.bm25.search(tokens, depth, allow)
        return ranking.rows, ranking.scores

    def vector(
        self, query: npt.ArrayLike, depth: int, allow: Mask | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Vector top ``depth`` of this shard: (live rows, scores)."""
        if self.state.vector is None:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        ranking = self.state.vector.search(query, depth, allow)
        return ranking.rows, ranking.scores


class ActorPart:
    """One shard's actor as a part of the driver's search (see
    :class:`~indexes.index.SegmentPart`)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def keyword(self, tokens: Query, depth: int, allow: Mask | None) -> Ranking:
        sent = dict(tokens) if isinstance(tokens, Mapping) else list(tokens)  # plain, picklable
        rows, scores = _ray().get(self.actor.keyword.remote(sent, depth, allow))
        return Ranking(rows, scores)

    def vector(self, query: npt.ArrayLike, depth: int, allow: Mask | None) -> Ranking:
        vector = np.asarray(query, np.float32)
        rows, scores = _ray().get(self.actor.vector.remote(vector, depth, allow))
        return Ranking(rows, scores)


class RaySearch:
    """The actors serving an index; :meth:`close` stops them."""

    def __init__(self, actors: Sequence[Any]) -> None:
        self.actors = list(actors)

    def close(self) -> None:
        """Stop the actors."""
        ray = _ray()
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []


def serve_on_ray(index: Index, address: str | None = None) -> RaySearch:
    """Serve ``index``'s shards from Ray actors (one per shard holding live rows) from now
    on: its state searches through them.

    Returns:
        The actors, whose :meth:`RaySearch.close` stops them.
    """
    ray = connect(address)
    remote = ray.remote(num_cpus=0)(ShardActor)
    state = index.state
    shards = sorted({e.shard for e in state.entries})
    stats = ray.put(state.stats)
    actors = [
        remote.remote(str(index.path), str(index.version_dir), shard, stats) for shard in shards
    ]
    index.state = state.with_search([ActorPart(a) for a in actors])
    logger.info("serving %d shards of %s from Ray actors", len(actors), index.path)
    return RaySearch(actors)
