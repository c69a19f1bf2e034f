"""VectorIndex save/load: round trips, memory mapping, corrupt files, missing faiss."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragtools.indexes.dense.vector import MANIFEST, VectorIndex
from ragtools.indexes.errors import DimensionMismatchError, IndexLoadError, IndexVersionError
from ragtools.indexes.store.persist import read_json, write_manifest
from ragtools.parsers.errors import ConfigError, MissingDependencyError

DIM = 16
ROOT = Path(__file__).resolve().parents[2]


def make(kind: str, n: int = 400) -> tuple[VectorIndex, np.ndarray]:
    rng = np.random.default_rng(1)
    index = VectorIndex(DIM, kind, nlist=4)  # type: ignore[arg-type]
    index.add(np.arange(n) * 3, rng.standard_normal((n, DIM)))
    index.delete([0, 3, 6])  # exercise compaction / tombstones / IVF removal
    return index, rng.standard_normal((9, DIM)).astype(np.float32)


def every_other(index: VectorIndex) -> np.ndarray:
    """A mask over the index's row space allowing the even rows."""
    mask = np.zeros(index.n_rows, dtype=bool)
    mask[::2] = True
    return mask


def assert_same_results(a: VectorIndex, b: VectorIndex, queries: np.ndarray) -> None:
    for allow_a, allow_b in (
        (None, None),
        (every_other(a), every_other(b)),  # the same rows, even if one row space is larger
        ([9, 12, 30, 33], [9, 12, 30, 33]),
    ):
        for (ra, sa), (rb, sb) in zip(
            a.search_batch(queries, 7, allow=allow_a),
            b.search_batch(queries, 7, allow=allow_b),
            strict=True,
        ):
            np.testing.assert_array_equal(ra, rb)
            np.testing.assert_allclose(sa, sb, rtol=1e-6)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
@pytest.mark.parametrize("mmap", [False, True])
def test_round_trip(tmp_path: Path, kind: str, mmap: bool) -> None:
    index, queries = make(kind)
    index.save(tmp_path / "vec", model_id="fake-model")
    assert sorted(p.name for p in (tmp_path / "vec").iterdir()) == [
        "index.faiss",
        "rows.npy",
        MANIFEST,
    ]
    manifest = read_json(tmp_path / "vec" / MANIFEST)
    assert manifest["format"] == "faiss" and manifest["dim"] == DIM
    assert manifest["kind"] == kind and manifest["metric"] == "inner_product"
    assert manifest["model_id"] == "fake-model" and manifest["ntotal"] == 397
    assert manifest["n_rows"] == index.n_rows == 399 * 3 + 1
    assert set(manifest["files"]) == {"index.faiss", "rows.npy"}

    loaded = VectorIndex.load(tmp_path / "vec", mmap=mmap, dim=DIM)
    assert loaded.model_id == "fake-model"
    assert len(loaded) == len(index) == 397
    assert loaded.params == index.params and loaded.n_rows == index.n_rows
    assert_same_results(index, loaded, queries)
    # a memory-mapped index is copied before it changes, and stays usable
    loaded.add([5000], queries[:1])
    assert loaded.search(queries[0], 1).rows.tolist() == [5000]
    assert loaded.delete([5000, 9]) == 2
    index.delete([9])
    assert loaded.n_rows == 5001  # a deleted row stays in the row space
    assert_same_results(index, loaded, queries)
    loaded.save(tmp_path / "vec")  # overwrite in place, even while mapped
    again = VectorIndex.load(tmp_path / "vec", mmap=mmap)
    assert again.n_rows == 5001  # from the manifest: row 5000 is no longer stored
    assert_same_results(index, again, queries)


def test_ivf_untrained_round_trip(tmp_path: Path) -> None:
    index = VectorIndex(DIM, "ivf")  # automatic nlist: trains at 10,000 vectors
    index.add([1, 2], np.eye(2, DIM))
    index.save(tmp_path)
    loaded = VectorIndex.load(tmp_path, mmap=True)
    assert not loaded.trained and len(loaded) == 2
    assert loaded.search(np.eye(1, DIM)[0], 5).rows.tolist() == [1, 2]


def test_empty_index_round_trip(tmp_path: Path) -> None:
    VectorIndex(DIM, "hnsw").save(tmp_path)
    loaded = VectorIndex.load(tmp_path)
    assert len(loaded) == 0 and loaded.model_id is None and loaded.n_rows == 0
    assert loaded.search(np.ones(DIM), 3).rows.size == 0


def test_manifest_without_n_rows_falls_back_to_the_largest_stored_row(tmp_path: Path) -> None:
    """Manifests written before ``n_rows`` was recorded: the largest row still held bounds
    the row space of ``allow``."""
    index, queries = make("flat")
    index.delete([399 * 3])  # the largest row: the fallback cannot know it existed
    index.save(tmp_path)
    resign(tmp_path, drop=("n_rows",))
    loaded = VectorIndex.load(tmp_path)
    assert index.n_rows == 399 * 3 + 1 and loaded.n_rows == 398 * 3 + 1
    assert_same_results(index, loaded, queries)
    with pytest.raises(ConfigError, match="outside"):
        loaded.search(queries[0], 3, allow=[398 * 3 + 1])


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty"])
@pytest.mark.parametrize("target", ["index.faiss", "rows.npy"])
def test_damaged_file_raises_naming_it(tmp_path: Path, damage: str, target: str) -> None:
    index, _ = make("hnsw")
    index.save(tmp_path)
    path = tmp_path / target
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        path.write_bytes(data[:-5] + bytes([data[-5] ^ 0xFF]) + data[-4:])
    else:
        path.write_bytes(b"")
    with pytest.raises(IndexLoadError, match="checksum") as info:
        VectorIndex.load(tmp_path)
    assert info.value.path == str(path)
    assert str(path) in str(info.value)


def resign(directory: Path, drop: tuple[str, ...] = (), **changes: object) -> None:
    """Rewrite the manifest with changes and valid checksums: consistent-looking, but wrong."""
    manifest = read_json(directory / MANIFEST)
    manifest.update(changes)
    for key in drop:
        del manifest[key]
    files = manifest.pop("files")
    for key in ("format", "format_version", "manifest_sha256"):
        manifest.pop(key, None)
    version = int(changes.get("format_version", 1))  # type: ignore[call-overload]
    write_manifest(
        directory, MANIFEST, fmt="faiss", version=version, files=files, data=manifest, sealed=True
    )


def test_faiss_read_failure_is_mapped(tmp_path: Path) -> None:
    """Even with a manifest re-signed over a garbage file, faiss never crashes the caller."""
    index, _ = make("flat")
    index.save(tmp_path)
    path = tmp_path / "index.faiss"
    path.write_bytes(path.read_bytes()[:100])
    resign(tmp_path)
    with pytest.raises(IndexLoadError, match="faiss could not read the index") as info:
        VectorIndex.load(tmp_path)
    assert info.value.path == str(path)


def test_hand_edited_manifest_is_rejected(tmp_path: Path) -> None:
    make("flat")[0].save(tmp_path)
    path = tmp_path / MANIFEST
    manifest = json.loads(path.read_text())
    manifest["dim"] = DIM + 1
    path.write_text(json.dumps(manifest))
    with pytest.raises(IndexLoadError, match="manifest is corrupt or was modified") as info:
        VectorIndex.load(tmp_path)
    assert info.value.path == str(path)


def test_manifest_dim_disagreeing_with_file_raises(tmp_path: Path) -> None:
    make("flat")[0].save(tmp_path)
    resign(tmp_path, dim=DIM + 1)
    with pytest.raises(IndexLoadError, match=f"of dim {DIM}, but the manifest says") as info:
        VectorIndex.load(tmp_path)
    assert info.value.path == str(tmp_path / "index.faiss")


def test_embedder_dim_mismatch_on_load_names_file(tmp_path: Path) -> None:
    make("flat")[0].save(tmp_path)
    with pytest.raises(DimensionMismatchError, match=f"{DIM}-dim vectors but the embedder") as info:
        VectorIndex.load(tmp_path, dim=384)
    assert str(tmp_path / MANIFEST) in str(info.value)


def test_count_mismatch_and_newer_version(tmp_path: Path) -> None:
    make("flat")[0].save(tmp_path)
    resign(tmp_path, ntotal=5)
    with pytest.raises(IndexLoadError, match="manifest expects 5 live"):
        VectorIndex.load(tmp_path)
    resign(tmp_path, format_version=99)
    with pytest.raises(IndexVersionError, match="format_version 99 is newer"):
        VectorIndex.load(tmp_path)


def test_missing_directory_or_file(tmp_path: Path) -> None:
    with pytest.raises(IndexLoadError, match="file is missing") as info:
        VectorIndex.load(tmp_path / "nowhere")
    assert info.value.path == str(tmp_path / "nowhere" / MANIFEST)
    make("flat")[0].save(tmp_path)
    (tmp_path / "rows.npy").unlink()
    with pytest.raises(IndexLoadError, match="missing") as info:
        VectorIndex.load(tmp_path)
    assert info.value.path == str(tmp_path / "rows.npy")


def test_missing_faiss_raises_missing_dependency(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make("flat")[0].save(tmp_path)
    monkeypatch.setitem(sys.modules, "faiss", None)
    with pytest.raises(MissingDependencyError, match="pip install faiss-cpu"):
        VectorIndex(DIM)
    with pytest.raises(MissingDependencyError):
        VectorIndex.load(tmp_path)


def test_import_is_lazy() -> None:
    """Importing the modules must not import faiss, torch or sentence-transformers."""
    code = (
        "import sys, indexes.dense.vector, indexes.dense.embed, indexes.dense.embed_cache\n"
        "import indexes.testing\n"
        "heavy = [m for m in ('faiss', 'torch', 'sentence_transformers') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)
