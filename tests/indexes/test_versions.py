"""Versioned directories: pointer switch, garbage collection, refusal to clobber."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtools.indexes.store import read_chunks, write_chunks
from ragtools.indexes.versions import POINTER, current_version, is_index_root, write_version
from ragtools.parsers import Chunk, ConfigError, IndexLoadError


def _writer(text: str):
    def write(directory: Path) -> None:
        (directory / "data.txt").write_text(text, encoding="utf-8")

    return write


def test_each_write_makes_a_new_live_version(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    first = write_version(root, _writer("one"))
    assert current_version(root) == first
    second = write_version(root, _writer("two"))
    assert current_version(root) == second
    assert (second / "data.txt").read_text(encoding="utf-8") == "two"
    assert first.name < second.name
    assert is_index_root(root)


def test_old_versions_are_collected_but_the_previous_one_is_kept(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    made = [write_version(root, _writer(str(i)), keep=2) for i in range(4)]
    left = sorted(p.name for p in (root / "versions").iterdir())
    assert left == [made[2].name, made[3].name]


def test_a_failed_writer_leaves_the_live_version_alone(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    live = write_version(root, _writer("good"))

    def broken(directory: Path) -> None:
        (directory / "data.txt").write_text("half", encoding="utf-8")
        raise RuntimeError("crash while writing")

    with pytest.raises(RuntimeError):
        write_version(root, broken)
    assert current_version(root) == live
    # the next save cleans up the abandoned temporary directory
    write_version(root, _writer("next"))
    assert not list((root / "versions").glob(".tmp-*"))


def test_refuses_to_write_into_a_directory_that_is_not_an_index(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("precious", encoding="utf-8")
    with pytest.raises(ConfigError, match="not an index"):
        write_version(tmp_path, _writer("x"))
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "precious"


@pytest.mark.parametrize("pointer", ["", "v-12", "../../etc", "v-000009"])
def test_bad_pointer_is_a_load_error_naming_the_file(tmp_path: Path, pointer: str) -> None:
    write_version(tmp_path / "idx", _writer("x"))
    (tmp_path / "idx" / POINTER).write_text(pointer, encoding="utf-8")
    with pytest.raises(IndexLoadError, match=r"CURRENT|v-000009"):
        current_version(tmp_path / "idx")


def test_missing_index_is_a_load_error(tmp_path: Path) -> None:
    with pytest.raises(IndexLoadError, match="does not exist"):
        current_version(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexLoadError, match="CURRENT is missing"):
        current_version(tmp_path / "empty")


def test_chunk_store_round_trip_and_bad_line(tmp_path: Path) -> None:
    chunks = [
        Chunk(doc_id="d1", text="héllo 世界", metadata={"source": "a.txt", "page": 2}),
        Chunk(doc_id="d2", text="second", start=5, metadata={"source": "b.txt"}),
    ]
    path = tmp_path / "chunks.jsonl"
    assert write_chunks(path, chunks) == 2
    assert read_chunks(path) == chunks
    path.write_text(path.read_text(encoding="utf-8") + "{not json}\n", encoding="utf-8")
    with pytest.raises(IndexLoadError, match="line 3"):
        read_chunks(path)
