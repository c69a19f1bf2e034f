"""Versioned directories: pointer switch, garbage collection, refusal to clobber."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ragtools.indexes.store import read_chunks, write_chunks
from ragtools.indexes.versions import (
    POINTER,
    current_version,
    is_index_root,
    reading,
    write_version,
)
from ragtools.parsers import Chunk, ConfigError, IndexLoadError

ROOT = Path(__file__).resolve().parents[2]


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


def test_concurrent_writers_of_one_root_take_turns(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    write_version(root, _writer("seed"))
    events: list[str] = []
    inside = threading.Event()

    def slow(directory: Path) -> None:
        events.append("enter")
        inside.set()
        time.sleep(0.3)  # widens the window another writer would have to interleave in
        (directory / "data.txt").write_text("slow", encoding="utf-8")
        events.append("leave")

    def fast(directory: Path) -> None:
        events.append("enter")
        events.append("leave")
        (directory / "data.txt").write_text("fast", encoding="utf-8")

    first = threading.Thread(target=write_version, args=(root, slow))
    first.start()
    inside.wait(timeout=30)
    second = threading.Thread(target=write_version, args=(root, fast))
    second.start()
    first.join()
    second.join()
    assert events == ["enter", "leave", "enter", "leave"]
    assert (current_version(root) / "data.txt").read_text(encoding="utf-8") == "fast"
    assert current_version(root).name == "v-000003"


HOLD_READER = """
import sys, time
from ragtools.indexes.versions import reading
with reading(sys.argv[1]):
    print("reading", flush=True)
    sys.stdin.readline()
"""


@pytest.mark.parametrize("where", ["thread", "process"])
def test_a_version_being_read_is_not_collected(tmp_path: Path, where: str) -> None:
    root = tmp_path / "idx"
    held = write_version(root, _writer("held"))
    release = threading.Event()
    if where == "process":
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLD_READER, str(root)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "reading"
    else:
        entered = threading.Event()

        def hold() -> None:
            with reading(root):
                entered.set()
                release.wait(timeout=60)

        thread = threading.Thread(target=hold)
        thread.start()
        assert entered.wait(timeout=30)
    for text in ("a", "b", "c"):
        write_version(root, _writer(text), keep=1)
    assert (held / "data.txt").read_text(encoding="utf-8") == "held"
    if where == "process":
        proc.communicate("\n", timeout=60)
    else:
        release.set()
        thread.join()
    live = write_version(root, _writer("d"), keep=1)
    assert sorted(p.name for p in (root / "versions").iterdir()) == [live.name]


def test_reading_goes_on_without_a_usable_lock(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    first = write_version(root, _writer("x"))
    (root / ".gc.lock").unlink(missing_ok=True)
    (root / ".gc.lock").mkdir()  # SQLite cannot open a directory: like a read-only index
    with reading(root):
        second = write_version(root, _writer("y"), keep=1)
    assert current_version(root) == second
    assert first.is_dir()  # nothing is collected without the lock


def test_imports_and_writes_where_fcntl_does_not_exist(tmp_path: Path) -> None:
    """As on Windows: no ``fcntl`` module. filelock then falls back to its own locks."""
    code = (
        "import sys; sys.modules['fcntl'] = None\n"
        "import ragtools.indexes.bundle, ragtools.parsers\n"
        "from ragtools.indexes.versions import current_version, reading, write_version\n"
        "root = sys.argv[1]\n"
        "for text in ('a', 'b'):\n"
        "    write_version(root, lambda d: (d / 'data.txt').write_text(text), keep=1)\n"
        "with reading(root):\n"
        "    print(current_version(root).name)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "idx")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "v-000002"
    assert [p.name for p in (tmp_path / "idx" / "versions").iterdir()] == ["v-000002"]


def test_no_module_of_the_package_imports_fcntl() -> None:
    folders = [ROOT / "parsers", ROOT / "indexes", ROOT / "retrieval"]
    sources = [p for folder in folders for p in folder.rglob("*.py")]
    assert sources
    offenders = [str(p) for p in sources if "import fcntl" in p.read_text(encoding="utf-8")]
    assert offenders == []
