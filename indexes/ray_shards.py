"""Ray for sharded indexes: shards built as Ray tasks, and served by Ray actors.

Ray (the ``ray`` extra) is an existing distributed engine: the same calls drive a local
cluster started on this machine and a real cluster (``address="ray://head:10001"`` or
``"auto"`` on a node of it). Nothing here schedules, retries or transfers data by itself;
Ray does.

* **Build**: from files, :func:`indexes.ray_build.build_files_on_ray` runs the build on
  Ray Data (parse and split in tasks, embed in an actor pool on GPUs or CPUs, one write task
  per shard). From documents, :func:`build_on_ray` runs
  :func:`~indexes.shard_writer.build_shard` once per shard as a Ray task, each reading its
  shard's documents from the build's staging files. Either way the shards are written to the
  index directory, so on a real cluster it must be a path every node reaches (a shared file
  system), and the driver merges the global statistics and writes the top manifest.
* **Serve**: :func:`serve_on_ray` starts one :class:`ShardActor` per shard; each opens its
  shard (scoring BM25 with the global statistics) and answers the shard's top ``k``. A query
  fans out to every actor at once and the caller merges, exactly as the in-process threads do
  (:mod:`indexes.shards`), so the results are the same.

Without ``ray`` installed a sharded index works in-process; asking for Ray raises
:class:`~parsers.errors.MissingDependencyError` naming the extra.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ragtools.indexes._bm25_global import GlobalStats
from ragtools.indexes._persist import read_json
from ragtools.indexes.embed import Embedder
from ragtools.indexes.ranking import Mask, Ranking
from ragtools.indexes.shards import GLOBAL_BM25, GlobalScoring, ShardedIndex, open_shard
from ragtools.parsers.errors import MissingDependencyError

if TYPE_CHECKING:
    from ragtools.indexes.shard_writer import BuiltShard, ShardWork

__all__ = ["RaySearch", "ShardActor", "build_on_ray", "connect", "serve_on_ray"]

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


def build_on_ray(
    works: Sequence[ShardWork], embedder: Embedder | None, address: str | None
) -> list[BuiltShard]:
    """Build every shard as a Ray task (one CPU each); results in shard order."""
    from ragtools.indexes.shard_writer import build_shard

    ray = connect(address)
    task = ray.remote(num_cpus=1)(build_shard)
    shared = ray.put(embedder)  # one copy in the object store, not one per task
    built: list[BuiltShard] = ray.get([task.remote(work, shared) for work in works])
    logger.info("built %d shards on Ray", len(built))
    return built


class ShardActor:
    """Holds one shard (the actor's state) and answers its top ``k``.

    Args:
        path: the shard's bundle directory; version: the version the top manifest names.
        top: the top version directory; number: the shard's number.
        keyword: whether the index has a keyword half (scored with the top's statistics).
    """

    def __init__(self, path: str, version: str, top: str, number: int, keyword: bool) -> None:
        scoring = None
        if keyword:
            stats_file = Path(top) / GLOBAL_BM25
            scoring = GlobalScoring(GlobalStats.from_json(read_json(stats_file), stats_file))
        self.state = open_shard(Path(path), version, scoring, top=Path(top), number=number)

    def keyword(self, query: str, k: int, mask: Mask | None) -> tuple[np.ndarray, np.ndarray]:
        """BM25 top ``k`` of this shard: (rows, scores)."""
        ranking = self.state.keyword_ranking(query, k, mask)
        return ranking.rows, ranking.scores

    def vector(
        self, query: npt.ArrayLike, k: int, mask: Mask | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Vector top ``k`` of this shard: (rows, scores)."""
        ranking = self.state.vector_ranking(query, k, mask)
        return ranking.rows, ranking.scores


class RaySearch:
    """Searches the shards through their actors, all at once (see :class:`ShardSearch`)."""

    def __init__(self, actors: Sequence[Any]) -> None:
        self.actors = list(actors)

    def _gather(self, method: str, *args: Any, masks: Sequence[Mask | None]) -> list[Ranking]:
        ray = _ray()
        refs = [
            getattr(a, method).remote(*args, m) for a, m in zip(self.actors, masks, strict=True)
        ]
        return [Ranking(rows, scores) for rows, scores in ray.get(refs)]

    def keyword(self, query: str, k: int, masks: Sequence[Mask | None]) -> list[Ranking]:
        return self._gather("keyword", query, k, masks=masks)

    def vector(self, query: npt.ArrayLike, k: int, masks: Sequence[Mask | None]) -> list[Ranking]:
        return self._gather("vector", np.asarray(query, np.float32), k, masks=masks)

    def close(self) -> None:
        """Stop the actors."""
        ray = _ray()
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []


def serve_on_ray(index: ShardedIndex, address: str | None = None) -> RaySearch:
    """Serve ``index``'s shards from Ray actors (one per non-empty shard) from now on.

    Returns:
        The search, whose :meth:`RaySearch.close` stops the actors.
    """
    ray = connect(address)
    remote = ray.remote(num_cpus=0)(ShardActor)
    top, keyword = str(index.version_dir), index.settings.keyword
    actors = [
        remote.remote(str(s.path), s.version, top, s.number, keyword)
        for s in index.shards
        if s.state is not None and s.version is not None
    ]
    search = RaySearch(actors)
    index.search_with(search)
    logger.info("serving %d shards of %s from Ray actors", len(actors), index.path)
    return search
