"""A sharded build from files on Ray Data: parse and split in tasks, embed in an actor pool.

The pipeline (:func:`build_files_on_ray`) is Ray Data's, so Ray schedules, streams and
retries it the same way on a local cluster and on a real one:

1. ``ray.data.from_items`` holds the file list: one row per file, with its shard (a hash of
   its path, as in a local build) and its place in the shard;
2. ``map_batches`` with a function: Ray tasks parse and split the files (what a local shard
   build does per file), one row of chunks per file;
3. ``map_batches`` with a class: an actor pool embeds the chunks' windows. Each actor asks for
   a GPU when the cluster has GPUs, else a CPU; the embedder is built once per actor;
4. ``groupby("shard").map_groups``: one task per shard writes the shard's segment (BM25 and
   the vectors the pool computed) to the index directory, a path every node must reach,
   and returns the segment's entry, as JSON.

The driver then writes the version that names the segments, as after a local build
(:meth:`indexes.writer.IndexWriter.commit`). The segments are the same as a local build's:
same chunks, same BM25 arrays, vectors from the same embedder.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtools.indexes.dense.embed import Embedder
from ragtools.indexes.dense.embed_cache import text_key
from ragtools.indexes.dense.windows import split_windows
from ragtools.indexes.settings import IndexSettings
from ragtools.indexes.sources import parse_files
from ragtools.indexes.store.segments import SegmentEntry
from ragtools.indexes.writer import write_shard_segment
from ragtools.parsers import Chunk, Document, FileError, split
from ragtools.parsers.document import json_text

__all__ = ["EmbedWindows", "Precomputed", "RayBuilt", "build_files_on_ray", "parse_and_split"]

logger = logging.getLogger(__name__)

FILES_PER_TASK = 16


def _chunk_json(chunk: Chunk) -> Any:
    return json.loads(json_text(chunk.model_dump(mode="json")))


class _Split:
    """A task's files split as they are parsed (a :class:`~parsers.loading.DocumentSink`):
    each file's chunks and its documents' texts, by the file's place in the batch."""

    def __init__(self, settings: IndexSettings) -> None:
        self.settings = settings
        self.chunks: dict[int, list[Chunk]] = {}
        self.texts: dict[int, dict[str, str]] = {}

    def take(self, file: int, documents: Iterable[Document]) -> None:
        chunks: list[Chunk] = []
        texts: dict[str, str] = {}
        size, overlap = self.settings.chunk_size, self.settings.chunk_overlap
        for document in documents:
            chunks += split([document], chunk_size=size, chunk_overlap=overlap)
            texts[document.id] = document.text
        self.chunks[file], self.texts[file] = chunks, texts

    def drop(self, file: int) -> None:
        self.chunks.pop(file, None)
        self.texts.pop(file, None)


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
    resolved = IndexSettings.model_validate(settings)
    units = _Split(resolved)  # inside each file's time budget, as in a local build
    parsed = parse_files(paths, root=root, show_progress=False, password=password, sink=units)
    failed = {f.path: vars(f) for f in parsed.failures}
    skipped = {p: r for p, r in parsed.skipped}
    return {
        "shard": batch["shard"],
        "unit": batch["unit"],
        "file": files,
        "chunks": [
            json.dumps([_chunk_json(c) for c in units.chunks.get(n, [])]) for n in range(len(files))
        ],
        "texts": [json.dumps(units.texts.get(n, {})) for n in range(len(files))],
        "failure": [json.dumps(failed.get(f)) for f in files],
        "skipped": [json.dumps(skipped.get(f)) for f in files],
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
    group: Any, *, root: str, settings: dict[str, Any], embedder: Embedder | None
) -> dict[str, list[Any]]:
    """Ray Data task: write one shard's segment from its files' rows (a pandas frame)."""
    group = group.sort_values("unit")
    shard = int(group["shard"].iloc[0])
    chunks = [
        Chunk.model_validate(c) for text in group["chunks"].tolist() for c in json.loads(text)
    ]
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
    entry = None
    if chunks:
        resolved = IndexSettings.model_validate(settings)
        entry = write_shard_segment(root, resolved, shard_embedder, shard, chunks, texts).to_json()
    failures = [json.loads(f) for f in group["failure"] if json.loads(f)]
    skipped = [
        [f, json.loads(r)] for f, r in zip(group["file"], group["skipped"], strict=True)
        if json.loads(r)
    ]  # fmt: skip
    out = {"shard": shard, "entry": entry, "failures": failures, "skipped": skipped}
    return {"shard": [shard], "built": [json.dumps(out)]}


@dataclass(frozen=True)
class RayBuilt:
    """What the Ray build wrote: the segments (in shard order), failures and skipped files."""

    entries: list[SegmentEntry]
    chunks: list[int]
    failures: list[FileError]
    skipped: list[tuple[str, str]]


def embed_resources(ray: Any) -> dict[str, Any]:
    """The actor pool's size and what each actor asks for: a GPU each when the cluster has
    GPUs, else a CPU each, leaving one CPU to the parsing tasks."""
    resources = ray.cluster_resources()
    gpus, cpus = int(resources.get("GPU", 0)), int(resources.get("CPU", 1))
    if gpus:
        return {"num_gpus": 1, "concurrency": gpus}
    return {"num_cpus": 1, "concurrency": max(1, cpus - 1)}


def build_files_on_ray(
    root: Path,
    groups: Sequence[Sequence[str]],
    settings: IndexSettings,
    source_root: Path,
    password: str | None,
    embedder: Embedder | None,
    address: str | None,
) -> RayBuilt:
    """Write one segment per shard of ``groups`` (shard ``i``'s files) with Ray Data."""
    from ragtools.indexes.ray_shards import connect

    ray = connect(address)
    blob = settings.model_dump(mode="json")
    items = [
        {"file": f, "shard": shard, "unit": i}
        for shard, files in enumerate(groups)
        for i, f in enumerate(files)
    ]
    results: list[dict[str, Any]] = []
    if items:
        dataset = ray.data.from_items(items).map_batches(
            parse_and_split,
            batch_size=FILES_PER_TASK,
            fn_kwargs={"settings": blob, "source_root": str(source_root), "password": password},
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
        written = dataset.groupby("shard").map_groups(
            _write_shard,
            batch_format="pandas",
            fn_kwargs={"root": str(root), "settings": blob, "embedder": embedder},
        )
        results = sorted(
            (json.loads(row["built"]) for row in written.take_all()), key=lambda r: r["shard"]
        )
    where = Path(root) / "segments"
    entries = [SegmentEntry.from_json(r["entry"], where) for r in results if r["entry"]]
    logger.info("built %d segments of %d files with Ray Data", len(entries), len(items))
    return RayBuilt(
        entries,
        [e.rows for e in entries],
        sorted((FileError(**f) for r in results for f in r["failures"]), key=lambda f: f.path),
        sorted((str(p), str(why)) for r in results for p, why in r["skipped"]),
    )
