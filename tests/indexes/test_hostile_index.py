"""Hostile builds and damaged or crafted indexes: every case is made here, in a tmp dir.

A build finishes whatever its files are; opening an index checks everything before it
trusts it, and each problem is an ``IndexLoadError`` naming the file, never a hang, a
crash or a read outside the index.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragtools.indexes.errors import IndexLoadError, IndexStateError
from ragtools.indexes.index import Index
from ragtools.indexes.store.persist import _self_digest, save_npy, sha256_file
from ragtools.indexes.testing import FakeEmbedder, live_segment
from ragtools.indexes.writer import IndexWriter
from ragtools.parsers import Document
from ragtools.parsers.selection import LEAVES_ROOT, Selection

CAFE = os.fsdecode(b"caf\xe9.txt")  # a Latin-1 name: not UTF-8


def _folder(root: Path) -> Path:
    folder = root / "docs"
    folder.mkdir()
    (folder / "bees.txt").write_text("Honey bees dance to point at flowers.", encoding="utf-8")
    (folder / CAFE).write_text("Espresso is brewed under pressure.", encoding="utf-8")
    return folder


def _tmp_left(index: Path) -> list[str]:
    folders = [index / "versions", index / "segments"]
    return [p.name for f in folders for p in f.iterdir() if p.name.startswith(".tmp")]


# ---- builds that always finish --------------------------------------------------------------


def test_a_name_that_is_not_utf8_is_indexed_and_kept_losslessly(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    out = tmp_path / "index"
    index = Index.build([folder], out, vector=False)
    cafe = str(folder.resolve() / CAFE)
    paths = sorted(str(c.metadata["path"]) for c in index.chunks)
    assert paths == sorted([str(folder / "bees.txt"), cafe])
    reopened = Index.open(out)
    assert cafe in reopened.fingerprints  # the manifest's escape reads back to the same name
    assert reopened.chunks[reopened.keyword_search("espresso", 1)[0][0]].metadata["path"] == cafe
    report = reopened.update()
    assert report.unchanged == 2 and not report.failures
    assert _tmp_left(out) == []


def test_special_and_unreadable_files_are_failures_and_the_build_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder(tmp_path)
    os.mkfifo(folder / "pipe.txt")
    (folder / "zero.txt").symlink_to("/dev/zero")
    (folder / "gone.txt").symlink_to(folder / "nowhere.txt")
    secret = folder / "secret.txt"
    secret.write_text("hidden words", encoding="utf-8")
    real_open = os.open

    def denying_open(path: Any, *args: Any, **kwargs: Any) -> int:
        if os.fspath(path) == str(secret.resolve()):  # root ignores chmod 000
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", denying_open)
    out = tmp_path / "index"
    index = Index.build([folder], out, vector=False, selection=Selection(follow_links=True))
    assert len({c.source for c in index.chunks}) == 2
    failed = {Path(f.path).name: f.message for f in index.failures}
    assert sorted(failed) == ["secret.txt"] and "Permission denied" in failed["secret.txt"]
    skipped = {Path(path).name: why for path, why in index.skipped}  # not documents: skipped
    assert {"gone.txt", "pipe.txt", "zero.txt"} <= set(skipped)
    assert "FIFO" in skipped["pipe.txt"] and "character device" in skipped["zero.txt"]
    assert skipped["gone.txt"] == "broken symbolic link"
    report = Index.open(out).update()  # nothing changed: the failures are kept, not retried
    assert not report.added and not report.changed and not report.failures
    assert len(Index.open(out).failures) == 1
    kept_in = Index.build([folder], tmp_path / "default", vector=False)  # links stay unfollowed
    assert (str(folder.resolve() / "zero.txt"), LEAVES_ROOT) in kept_in.skipped


def test_a_failed_save_leaves_no_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "index"
    docs = [Document(text="first words"), Document(text="second words")]
    IndexWriter.from_documents(docs, out, vector=False)

    def failing(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("ragtools.indexes.writer.write_chunks", failing)
    with pytest.raises(IndexStateError, match=r"index: no space left on device \(ENOSPC\)"):
        IndexWriter.from_documents(docs, out, vector=False)
    assert _tmp_left(out) == []
    assert len(Index.open(out)) == 2  # the previous version is live and whole


# ---- damaged and crafted indexes -------------------------------------------------------------


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    out = tmp_path / "index"
    docs = [Document(text=f"chunk number {i} about bees") for i in range(3)]
    IndexWriter.from_documents(docs, out, embedder=FakeEmbedder(dim=16))
    return out


def _version(index: Path) -> Path:
    return live_segment(index)


def _reseal(index: Path, change: Any) -> None:
    """Edit the top manifest and seal it again, as someone crafting an index would."""
    path = _version(index) / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    change(manifest)
    manifest["manifest_sha256"] = _self_digest(manifest)
    path.write_text(json.dumps(manifest), encoding="utf-8")


def _open(index: Path) -> IndexLoadError:
    with pytest.raises(IndexLoadError) as caught:
        Index.open(index, embedder=FakeEmbedder(dim=16))
    return caught.value


def test_a_json_file_over_the_size_limit_is_not_read(
    index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragtools.indexes.store import persist

    manifest = _version(index_dir) / "manifest.json"
    limit = manifest.stat().st_size - 1  # the real limit is 1 GiB
    monkeypatch.setattr(persist, "MAX_JSON_BYTES", limit)
    error = _open(index_dir)
    assert error.path == str(manifest) and f"larger than {limit} bytes; not read" in str(error)


def test_a_deeply_nested_manifest_is_a_load_error(index_dir: Path) -> None:
    (_version(index_dir) / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    error = _open(index_dir)
    assert error.path.endswith("manifest.json") and "nested too deep" in str(error)


@pytest.mark.parametrize("target", ["CURRENT", "manifest.json"])
def test_a_fifo_in_place_of_an_index_file_does_not_hang(index_dir: Path, target: str) -> None:
    path = index_dir / target if target == "CURRENT" else _version(index_dir) / target
    path.unlink()
    os.mkfifo(path)
    assert _open(index_dir).path == str(path)


def test_current_linked_to_dev_zero_is_refused(index_dir: Path) -> None:
    (index_dir / "CURRENT").unlink()
    (index_dir / "CURRENT").symlink_to("/dev/zero")
    assert "not a regular file" in str(_open(index_dir))


@pytest.mark.parametrize("entry", ["/dev/zero", "../../../../secret.txt", "./chunks.jsonl", ""])
def test_a_file_list_entry_outside_the_version_is_never_opened(index_dir: Path, entry: str) -> None:
    _reseal(index_dir, lambda m: m["files"].update({entry: "0" * 64}))
    assert "not a plain relative name" in str(_open(index_dir))


def test_the_error_for_a_missing_file_does_not_tell_what_exists_outside(
    index_dir: Path, tmp_path: Path
) -> None:
    entry = "../../../secret.txt"
    _reseal(index_dir, lambda m: m["files"].update({entry: "0" * 64}))
    absent = str(_open(index_dir))
    (tmp_path / "secret.txt").write_text("the secret", encoding="utf-8")  # now it exists
    assert (_version(index_dir) / entry).resolve() == (tmp_path / "secret.txt").resolve()
    assert str(_open(index_dir)) == absent


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_a_listed_fifo_or_link_is_refused(index_dir: Path, kind: str) -> None:
    path = _version(index_dir) / "extra.bin"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    _reseal(index_dir, lambda m: m["files"].update({"extra.bin": "0" * 64}))
    error = _open(index_dir)
    assert error.path == str(path)


def test_unknown_keys_in_the_failures_list_are_a_load_error(index_dir: Path) -> None:
    _reseal(index_dir, lambda m: m.update(failures=[{"path": "a", "surprise": 1}]))
    assert "invalid failures list" in str(_open(index_dir))


def test_vector_row_ids_out_of_range_are_a_load_error(index_dir: Path) -> None:
    vector = _version(index_dir) / "vector"
    save_npy(vector / "rows.npy", np.array([0, 1, 7], dtype=np.int64))
    inner = json.loads((vector / "vector.json").read_text(encoding="utf-8"))
    inner["files"]["rows.npy"] = sha256_file(vector / "rows.npy")
    inner["manifest_sha256"] = _self_digest(inner)
    (vector / "vector.json").write_text(json.dumps(inner), encoding="utf-8")

    def refresh(manifest: dict[str, Any]) -> None:
        for name in ("vector/rows.npy", "vector/vector.json"):
            manifest["files"][name] = sha256_file(_version(index_dir) / name)

    _reseal(index_dir, refresh)
    error = _open(index_dir)
    assert error.path.endswith("rows.npy") and "outside [0, 3)" in str(error)


def test_a_build_over_hostile_files_is_searchable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragtools.parsers import _budget, office
    from tests.parsers.test_hostile import HOSTILE_FOLDER_GOOD, _hostile_folder

    monkeypatch.setattr(office, "MAX_XML_BYTES", 256 * 1024)
    monkeypatch.setattr(_budget, "MAX_TEXT_CHARS", 100_000)
    folder = tmp_path / "docs"
    folder.mkdir()
    bad = _hostile_folder(folder)
    out = tmp_path / "index"
    index = Index.build([folder], out, vector=False)
    left_out = [Path(f.path).name for f in index.failures]
    left_out += [Path(path).name for path, _ in index.skipped]  # empty and special files
    assert sorted(left_out) == bad
    assert sorted({os.fsencode(Path(c.source).name) for c in index.chunks}) == HOSTILE_FOLDER_GOOD
    reopened = Index.open(out)
    top = reopened.chunks[reopened.keyword_search("espresso pressure", 1)[0][0]]
    assert os.fsencode(top.source).endswith(b"caf\xe9.txt")
    top = reopened.chunks[reopened.keyword_search("検索", 1)[0][0]]
    assert top.source.endswith("deck.pdf") and top.text == "日本語の検索テスト"
    assert _tmp_left(out) == []


def test_a_deeply_nested_chunk_line_is_a_load_error(index_dir: Path) -> None:
    store = _version(index_dir) / "chunks.jsonl"
    store.write_text("[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    _reseal(index_dir, lambda m: m["files"].update({"chunks.jsonl": sha256_file(store)}))
    error = _open(index_dir)
    assert error.path == str(store) and "line 1 is not a valid chunk" in str(error)
