"""Versioned directories: pointer switch, garbage collection, refusal to clobber."""

from __future__ import annotations

import contextlib
import errno
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ragtools.indexes.errors import IndexLoadError, IndexStateError
from ragtools.indexes.index import Index, open_version
from ragtools.indexes.store import versions
from ragtools.indexes.store.chunks import read_chunks, write_chunks
from ragtools.indexes.store.versions import (
    COUNTER,
    POINTER,
    collect,
    collect_unused,
    collecting,
    current_version,
    disk_full,
    is_index_root,
    list_versions,
    reading,
    switch_version,
    write_version,
    writer_lock,
)
from ragtools.indexes.writer import IndexWriter
from ragtools.parsers import Chunk, ConfigError, Document, split

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


def _hold_in_thread(
    hold: Callable[[], contextlib.AbstractContextManager[object]],
) -> tuple[threading.Thread, threading.Event]:
    """Run ``with hold():`` in a thread until the returned event is set."""
    entered, release = threading.Event(), threading.Event()

    def run() -> None:
        with hold():
            entered.set()
            release.wait(timeout=60)

    thread = threading.Thread(target=run)
    thread.start()
    assert entered.wait(timeout=30)
    return thread, release


HOLD_READER = """
import sys, time
from ragtools.indexes.store.versions import reading
with reading(sys.argv[1]):
    print("reading", flush=True)
    sys.stdin.readline()
"""


@pytest.mark.parametrize("where", ["thread", "process"])
def test_a_version_being_read_is_not_collected(tmp_path: Path, where: str) -> None:
    root = tmp_path / "idx"
    held = write_version(root, _writer("held"))
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
        thread, release = _hold_in_thread(lambda: reading(root))
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
        "import ragtools.indexes.index, ragtools.parsers\n"
        "from ragtools.indexes.store.versions import current_version, reading, write_version\n"
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


# ---- the commit protocol: numbering, collection, pins, locks, disk full ----------------------


def test_numbers_come_from_the_counter_never_from_the_versions_left(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    for text in ("a", "b", "c"):
        write_version(root, _writer(text), keep=3)
    switch_version(root, "v-000001")
    shutil.rmtree(root / "versions" / "v-000003")  # as a cleanup of "orphans" once did
    shutil.rmtree(root / "versions" / "v-000002")
    assert write_version(root, _writer("d"), keep=3).name == "v-000004"
    (root / COUNTER).unlink()  # an index written before the counter: after the newest
    assert write_version(root, _writer("e"), keep=3).name == "v-000005"
    assert (root / COUNTER).read_text(encoding="utf-8").strip() == "6"


def test_collection_keeps_the_live_version_after_a_rollback(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    for text in ("a", "b", "c"):
        write_version(root, _writer(text), keep=3)
    switch_version(root, "v-000001")
    with writer_lock(root), collecting(root) as free:
        assert free
        assert collect(root, 1) == ["v-000002"]
    assert [p.name for p in list_versions(root)] == ["v-000001", "v-000003"]
    assert current_version(root).name == "v-000001"


def test_an_open_index_pins_its_version_until_closed(tmp_path: Path) -> None:
    docs = [Document(text="Honey bees dance.", metadata={"source": "a.txt"})]
    path = tmp_path / "i"
    Index.from_documents(docs, path, vector=False, keep_versions=1)
    reader = Index.open(path)
    pinned = reader.version_dir
    assert pinned is not None
    writer = Index.open(path)
    for word in ("waggle", "hive", "queen"):
        IndexWriter(writer).add(split([Document(text=word, metadata={"source": "b.txt"})]))
    assert pinned.is_dir()  # three writes later, kept for the open reader
    assert [c.text for c in reader.chunks] == ["Honey bees dance."]
    assert reader.keyword_search("honey", 1)
    reader.close()
    IndexWriter(writer).delete(["nothing"])  # no change, no write: still there
    assert pinned.is_dir()
    IndexWriter(writer).add(split([Document(text="sun", metadata={"source": "c.txt"})]))
    assert not pinned.exists()
    assert [p.name for p in list_versions(path)] == ["v-000005"]
    assert writer.version_dir == path / "versions" / "v-000005"


PIN_AND_HANG = """
import sys, time
from ragtools.indexes.index import Index, open_version
index = Index.open(sys.argv[1])
print(index.version_dir.name, flush=True)
time.sleep(600)
"""


def test_a_killed_readers_pin_is_recognised_and_removed(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    Index.from_documents([Document(text="first")], root, vector=False, keep_versions=1)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", PIN_AND_HANG, str(root)], env=env, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "v-000001"
    index = Index.open(root)
    IndexWriter(index).add(split([Document(text="second")]))
    assert (root / "versions" / "v-000001").is_dir()  # the other process still reads it
    proc.kill()
    proc.wait()
    IndexWriter(index).add(split([Document(text="third")]))
    assert [p.name for p in list_versions(root)] == ["v-000003"]
    assert [p.name for p in (root / ".pins").iterdir()] == [f"v-000003.{index_pin(index)}"]


def index_pin(index: Index) -> str:
    pins = [p.name for p in (index.path / ".pins").iterdir()]
    assert len(pins) == 1
    return pins[0].split(".", 1)[1]


def test_a_second_writer_waits_then_names_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "idx"
    write_version(root, _writer("a"))
    thread, release = _hold_in_thread(lambda: writer_lock(root))
    monkeypatch.setattr(versions, "WRITER_TIMEOUT", 0.3)
    try:
        with pytest.raises(IndexStateError, match=rf"{root}: another writer .* nothing was"):
            write_version(root, _writer("b"))
        with pytest.raises(IndexStateError, match="another writer"):
            switch_version(root, "v-000001")
    finally:
        release.set()
        thread.join()
    assert write_version(root, _writer("b")).name == "v-000002"


def test_a_collection_killed_half_way_leaves_no_partial_version(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    for text in ("a", "b"):
        write_version(root, _writer(text), keep=3)
    # what a collector killed after its rename and during its rmtree leaves
    doomed = root / "versions" / ".tmp-gc-v-000001-deadbeef"
    os.rename(root / "versions" / "v-000001", doomed)
    (doomed / "data.txt").unlink()
    assert [p.name for p in list_versions(root)] == ["v-000002"]
    with pytest.raises(ConfigError, match="no version 'v-000001'"):
        switch_version(root, "v-000001")
    write_version(root, _writer("c"), keep=3)
    assert not doomed.exists()


def test_rollback_checks_the_version_under_the_lock(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    for text in ("a", "b"):
        write_version(root, _writer(text), keep=3)

    def damaged(directory: Path) -> None:
        raise IndexLoadError(directory / "data.txt", "checksum mismatch")

    with pytest.raises(IndexLoadError, match="checksum mismatch"):
        switch_version(root, "v-000001", check=damaged)
    assert current_version(root).name == "v-000002"


@pytest.mark.parametrize(
    "error",
    [
        OSError(errno.ENOSPC, "No space left on device"),
        OSError("228780 requested and 49120 written"),
    ],
    ids=["errno", "numpy-short-write"],
)
def test_a_full_disk_names_enospc_the_path_and_the_index(tmp_path: Path, error: OSError) -> None:
    root = tmp_path / "idx"
    live = write_version(root, _writer("good"))

    def full(directory: Path) -> None:
        (directory / "data.txt").write_text("half", encoding="utf-8")
        raise error

    with pytest.raises(IndexStateError) as caught:
        write_version(root, full)
    message = str(caught.value)
    assert message.startswith(f"{root}: no space left on device (ENOSPC) while writing {root}")
    assert "the live version v-000001 is unchanged" in message
    assert current_version(root) == live
    assert not list((root / "versions").glob(".tmp-*"))
    assert disk_full(error)
    assert not disk_full(OSError(errno.EACCES, "Permission denied"))


# ---- races (stress) -----------------------------------------------------------------------------

ROUNDS = 200


@pytest.fixture
def fast_dir(tmp_path: Path) -> Iterator[Path]:
    """A folder in memory where there is one (/dev/shm): the race is about ordering, not
    durability, and fsyncs on a slow disk would stretch 200 rounds to many minutes."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir=shm, prefix="ragtools-race-") as folder:
        yield Path(folder)


def _check_store(root: Path) -> None:
    """Under the writer lock: CURRENT names a complete version, and so does every listed one."""
    with writer_lock(root):
        live = current_version(root)
        open_version(root, live).close()
        for directory in list_versions(root):
            open_version(root, directory).close()


@pytest.mark.stress
@pytest.mark.timeout(600)
@pytest.mark.parametrize("shards", [1, 3])
def test_rollback_update_collection_and_readers_race(fast_dir: Path, shards: int) -> None:
    src = fast_dir / "src"
    src.mkdir()
    for i in range(6):
        (src / f"f{i}.md").write_text(f"file {i}: bees make honey.", encoding="utf-8")
    idx = fast_dir / "idx"
    sharding = {"shards": shards} if shards > 1 else {}
    Index.build([src], idx, vector=False, chunk_size=200, chunk_overlap=0, **sharding)
    stop = threading.Event()
    errors: list[BaseException] = []
    done = {"updates": 0, "rollbacks": 0, "collections": 0, "searches": 0, "checks": 0}

    def guarded(work: Callable[[random.Random], None], seed: int) -> Callable[[], None]:
        def run() -> None:
            rng = random.Random(seed)
            try:
                while not stop.is_set():
                    work(rng)
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)
                stop.set()

        return run

    def update(rng: random.Random) -> None:
        number = rng.randrange(6)
        text = f"file {number} round {done['updates']}: bees make honey, word{rng.randrange(50)}."
        (src / f"f{number}.md").write_text(text, encoding="utf-8")
        Index.open(idx).update()
        done["updates"] += 1
        if done["updates"] >= ROUNDS:
            stop.set()

    def rollback(rng: random.Random) -> None:
        names = [p.name for p in list_versions(idx)]
        try:
            switch_version(idx, rng.choice(names), check=lambda d: open_version(idx, d))
            done["rollbacks"] += 1
        except ConfigError:  # collected since it was listed: refused, nothing changed
            pass
        time.sleep(rng.uniform(0, 0.3))  # the pauses leave the writer most of the GIL

    def collector(rng: random.Random) -> None:
        with writer_lock(idx):
            collect_unused(idx, 1)
        done["collections"] += 1
        time.sleep(rng.uniform(0, 0.3))

    def reader(rng: random.Random) -> None:
        with Index.open(idx) as index:  # held over several searches while writers go on
            for _ in range(rng.randrange(1, 6)):
                hits = index.keyword_search("bees honey", 3)
                assert hits and all("bees" in index.chunks[row].text for row, _ in hits)
                done["searches"] += 1
                time.sleep(rng.uniform(0, 0.05))

    def checker(rng: random.Random) -> None:
        _check_store(idx)
        done["checks"] += 1
        time.sleep(rng.uniform(0.2, 0.6))

    works = [update, rollback, collector, reader, checker]
    threads = [threading.Thread(target=guarded(w, i)) for i, w in enumerate(works)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [], errors[:3]
    assert done["updates"] == ROUNDS
    assert min(done["rollbacks"], done["collections"], done["searches"], done["checks"]) > 0
    _check_store(idx)
    assert Index.open(idx).keyword_search("bees", 1)


def test_a_rollback_and_a_collecting_write_never_leave_current_dangling(tmp_path: Path) -> None:
    """#32: a rollback once checked its version, then a write collected it, then the rollback
    pointed CURRENT at it. Now the write waits for the rollback's lock."""
    root = tmp_path / "idx"
    for text in ("a", "b"):
        write_version(root, _writer(text), keep=3)
    made: list[Path] = []
    writer = threading.Thread(target=lambda: made.append(write_version(root, _writer("c"), keep=1)))

    def check(directory: Path) -> None:
        writer.start()
        writer.join(timeout=0.5)  # it cannot get in: the rollback holds the writer lock
        assert made == [] and directory.is_dir()

    switch_version(root, "v-000001", check=check)
    writer.join()
    assert made == [root / "versions" / "v-000003"]
    assert current_version(root) == made[0]
    assert [p.name for p in list_versions(root)] == ["v-000003"]
