"""A sharded build from files on Ray Data: parse and split in tasks, embed in an actor pool.

The pipeline (:func:`build_files_on_ray`) is Ray Data's, so Ray schedules, streams and
retries it the same way on a local cluster and on a real one:

1. ``ray.data.from_items`` holds the file list: one row per file, with its shard (a hash of
   its path, as in a local build) and its place in the shard;
2. ``map_batches`` with a function: Ray tasks parse and split the files (what a local shard
   build does per file), one row of chunks per file;
3. ``map_batches`` with a class: an actor pool embeds the chunks' windows. Each actor asks for
   a GPU when the cluster has GPUs, else a CPU; the embedder is built once per actor;
4. ``groupby("shard").map_groups``: one task per shard writes the shard's bundle (BM25 and
   the vectors the pool computed) to the index directory, a path every node must reach,
   and returns what the driver merges: the shard's version and counts, as JSON.

The driver then merges the global statistics and writes the top manifest, as after a local
build (:func:`indexes.shard_writer.finish`). The shards' files are the same as a local
build's: same chunks, same BM25 arrays, vectors from the same embedder.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtools.indexes._bm25_global import ShardCounts
from ragtools.indexes.embed import Embedder
from ragtools.indexes.embed_cache import text_key
from ragtools.indexes.settings import IndexSettings
from ragtools.indexes.shard_writer import BuiltShard, ShardWork, chunk_units, commit_shard
from ragtools.indexes.sources import fingerprint, parse_files
from ragtools.indexes.windows import split_windows
from ragtools.parsers import Chunk, FileError
from ragtools.parsers.document import json_text

__all__ = ["EmbedWindows", "Precomputed", "build_files_on_ray", "parse_and_split"]

logger = logging.getLogger(__name__)

FILES_PER_TASK = 16


def _chunk_json(chunk: Chunk) -> Any:
    return json.loads(json_text(chunk.model_dump(mode="json")))


def parse_and_split(
    batch: dict[str, Any],
    *,
    settings: dict[str, Any],
    source_root: str | None,
    password: str | None,
) -> dict[str, Any]:
    """Ray Data task: parse a batch of files and split them; one row per file, its chunks,
    its documents' texts (by id) and its failure, if any, as JSON."""
    files = [str(f) for f in batch["file"]]
    paths = [Path(f) for f in files]
    root = Path(source_root) if source_root else None
    parsed = parse_files(paths, root=root, show_progress=False, password=password)
    units = chunk_units(
        [parsed.by_file.get(f, []) for f in files], IndexSettings.model_validate(settings)
    )
    failed = {f.path: vars(f) for f in parsed.failures}
    return {
        "shard": batch["shard"],
        "unit": batch["unit"],
        "file": files,
        "chunks": [json.dumps([_chunk_json(c) for c in unit]) for unit in units],
        "texts": [json.dumps({d.id: d.text for d in parsed.by_file.get(f, [])}) for f in files],
        "failure": [json.dumps(failed.get(f)) for f in files],
        "fingerprint": [json.dumps(fingerprint(p)) for p in paths],
    }


class EmbedWindows:
    """Ray Data actor: embeds the windows of each row's chunks with one embedder per actor.

    Adds ``keys`` (each window text's SHA-256, concatenated) and ``vectors`` (float32 bytes,
    one row per window).
    """

    def __init__(self, embedder: Embedder, window: int, overlap: int) -> None:
        self.embedder = embedder
        self.window, self.overlap = window, overlap

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        per_row = []
        for chunks in batch["chunks"]:
            texts = [c["text"] for c in json.loads(chunks)]
            per_row.append(split_windows(texts, self.window, self.overlap)[0])
        flat = [w for windows in per_row for w in windows]
        vectors = self.embedder.embed_documents(flat) if flat else np.zeros((0, 0), np.float32)
        keys, blobs, start = [], [], 0
        for windows in per_row:
            part = np.ascontiguousarray(vectors[start : start + len(windows)], dtype=np.float32)
            start += len(windows)
            keys.append(b"".join(text_key(w) for w in windows))
            blobs.append(part.tobytes())
        return {**batch, "keys": keys, "vectors": blobs}


class Precomputed:
    """An embedder whose document vectors were computed by the actor pool: it looks them
    up by text, and is otherwise (``model_id``, ``dim``, queries) the embedder it stands for."""

    def __init__(
        self, embedder: Embedder, vectors: dict[bytes, npt.NDArray[np.float32]], dim: int
    ) -> None:
        self.embedder = embedder
        self.vectors = vectors
        self._dim = dim  # known from the vectors: asking a model would load it

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    @property
    def cache_id(self) -> str:
        return str(getattr(self.embedder, "cache_id", self.embedder.model_id))

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = [self.vectors[text_key(t)] for t in texts]
        return np.stack(rows) if rows else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self.embedder.embed_query(text)


def _write_shard(
    group: Any, *, works: dict[int, ShardWork], embedder: Embedder | None
) -> dict[str, list[Any]]:
    """Ray Data task: write one shard from its files' rows (a pandas frame)."""
    group = group.sort_values("unit")
    work = works[int(group["shard"].iloc[0])]
    units = [
        [Chunk.model_validate(c) for c in json.loads(text)] for text in group["chunks"].tolist()
    ]
    failures = [FileError(**json.loads(f)) for f in group["failure"] if json.loads(f)]
    prints = {f: json.loads(p) for f, p in zip(group["file"], group["fingerprint"], strict=True)}
    shard_embedder = embedder
    if embedder is not None and "vectors" in group:
        found: dict[bytes, npt.NDArray[np.float32]] = {}
        dim = 0
        for keys, blob in zip(group["keys"], group["vectors"], strict=True):
            if not keys:
                continue
            dim = len(blob) // 4 // (len(keys) // 32)
            vectors = np.frombuffer(blob, dtype=np.float32).reshape(-1, dim)
            for i, vector in enumerate(vectors):
                found[bytes(keys[32 * i : 32 * (i + 1)])] = vector
        if found:
            shard_embedder = Precomputed(embedder, found, dim)
    texts = {k: v for row in group["texts"] for k, v in json.loads(row).items()}
    built = commit_shard(work, units, shard_embedder, failures, prints, texts)
    return {"shard": [work.number], "built": [json.dumps(_built_json(built))]}


def _built_json(built: BuiltShard) -> dict[str, Any]:
    counts = built.counts
    return {
        "number": built.number,
        "version": built.version,
        "unit_chunks": built.unit_chunks,
        "failures": [vars(f) for f in built.failures],
        "fingerprints": built.fingerprints,
        "counts": None
        if counts is None
        else {
            "terms": counts.terms,
            "df": counts.df.tolist(),
            "first_row": counts.first_row.tolist(),
            "n_live": counts.n_live,
            "total_len": counts.total_len,
        },
    }


def _built_of(data: dict[str, Any]) -> BuiltShard:
    counts = data["counts"]
    return BuiltShard(
        data["number"],
        data["version"],
        list(data["unit_chunks"]),
        None
        if counts is None
        else ShardCounts(
            list(counts["terms"]),
            np.asarray(counts["df"], np.int64),
            np.asarray(counts["first_row"], np.int64),
            int(counts["n_live"]),
            int(counts["total_len"]),
        ),
        [FileError(**f) for f in data["failures"]],
        dict(data["fingerprints"]),
    )


def embed_resources(ray: Any) -> dict[str, Any]:
    """The actor pool's size and what each actor asks for: a GPU each when the cluster has
    GPUs, else a CPU each, leaving one CPU to the parsing tasks."""
    resources = ray.cluster_resources()
    gpus, cpus = int(resources.get("GPU", 0)), int(resources.get("CPU", 1))
    if gpus:
        return {"num_gpus": 1, "concurrency": gpus}
    return {"num_cpus": 1, "concurrency": max(1, cpus - 1)}


def build_files_on_ray(
    works: Sequence[ShardWork], embedder: Embedder | None, address: str | None
) -> list[BuiltShard]:
    """Build the shards of ``works`` (files) with Ray Data; results in shard order."""
    from ragtools.indexes.ray_shards import connect

    ray = connect(address)
    settings = IndexSettings.model_validate(works[0].settings)
    items = [
        {"file": f, "shard": w.number, "unit": i} for w in works for i, f in enumerate(w.files)
    ]
    built: dict[int, BuiltShard] = {}
    if items:
        dataset = ray.data.from_items(items).map_batches(
            parse_and_split,
            batch_size=FILES_PER_TASK,
            fn_kwargs={
                "settings": works[0].settings,
                "source_root": works[0].source_root,
                "password": works[0].password,
            },
        )
        if settings.vector and embedder is not None:
            dataset = dataset.map_batches(
                EmbedWindows,
                batch_size=FILES_PER_TASK,
                fn_constructor_args=(
                    embedder,
                    settings.vector_window,
                    settings.vector_window_overlap,
                ),
                **embed_resources(ray),
            )
        by_number = {w.number: replace(w, files=[]) for w in works}
        written = dataset.groupby("shard").map_groups(
            _write_shard,
            batch_format="pandas",
            fn_kwargs={"works": by_number, "embedder": embedder},
        )
        for row in written.take_all():
            one = _built_of(json.loads(row["built"]))
            built[one.number] = one
    for work in works:  # a shard without files: its orphan versions dropped, nothing written
        if work.number not in built:
            built[work.number] = commit_shard(work, [], embedder, [], {})
    logger.info("built %d shards of %d files with Ray Data", len(works), len(items))
    return [built[w.number] for w in works]
