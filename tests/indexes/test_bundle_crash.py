"""Crash safety and concurrent readers: a killed writer never leaves a broken index."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ragtools.indexes.index import Index
from ragtools.indexes.testing import FakeEmbedder

ROOT = Path(__file__).resolve().parents[2]

WRITER = """
import sys
from ragtools.indexes.index import Index
from ragtools.indexes.testing import FakeEmbedder
idx, a, b, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
shards = {"shards": int(sys.argv[5])} if len(sys.argv) > 5 else {}
for i in range(rounds):
    src = a if i % 2 else b
    if i % 3 == 0:
        Index.build(
            [src], idx, embedder=FakeEmbedder(dim=32), chunk_size=120, chunk_overlap=10, **shards
        )
    else:
        Index.open(idx, embedder=FakeEmbedder(dim=32)).update([src])
    print("saved", i, flush=True)
"""


def _state(root: Path, name: str, words: str, files: int) -> Path:
    folder = root / name
    folder.mkdir()
    for i in range(files):
        text = " ".join(f"{words}{i} sentence {j} about {words}." for j in range(30))
        (folder / f"{name}-{i}.txt").write_text(text, encoding="utf-8")
    return folder


def _texts(index: Index) -> frozenset[str]:
    return frozenset(c.text for c in index.chunks)


def _writer(
    idx: Path, a: Path, b: Path, rounds: int, *, shards: int | None = None
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    sharded = [] if shards is None else [str(shards)]
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(idx), str(a), str(b), str(rounds), *sharded],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.timeout(600)
def test_sigkill_at_random_points_leaves_a_complete_version(tmp_path: Path) -> None:
    a = _state(tmp_path, "alpha", "apple", 6)
    b = _state(tmp_path, "beta", "banana", 9)
    idx = tmp_path / "idx"
    states = {
        _texts(
            Index.build(
                [src],
                tmp_path / f"ref-{src.name}",
                embedder=FakeEmbedder(dim=32),
                chunk_size=120,
                chunk_overlap=10,
            )
        )
        for src in (a, b)
    }
    Index.build([a], idx, embedder=FakeEmbedder(dim=32), chunk_size=120, chunk_overlap=10)
    rng = random.Random(1234)
    for _ in range(20):
        proc = _writer(idx, a, b, 1000)
        time.sleep(rng.uniform(0.3, 2.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        index = Index.open(idx, embedder=FakeEmbedder(dim=32))
        assert _texts(index) in states
        assert index.bm25 is not None and index.vector is not None
        assert len(index.bm25) == len(index.vector) == len(index.chunks)


@pytest.mark.timeout(600)
def test_readers_see_no_errors_while_another_process_updates(tmp_path: Path) -> None:
    a = _state(tmp_path, "alpha", "apple", 4)
    b = _state(tmp_path, "beta", "banana", 5)
    idx = tmp_path / "idx"
    Index.build([a], idx, embedder=FakeEmbedder(dim=32), chunk_size=120, chunk_overlap=10)
    errors: list[BaseException] = []
    searches = [0]
    stop = threading.Event()

    def reader(reopen: bool) -> None:
        index = Index.open(idx, embedder=FakeEmbedder(dim=32))
        while not stop.is_set():
            try:
                if reopen:
                    index = Index.open(idx, embedder=FakeEmbedder(dim=32))
                assert index.keyword_search("sentence", 3)
                assert index.vector_search("sentence about fruit", 3)
                searches[0] += 1
            except BaseException as exc:  # collected and reported by the main thread
                errors.append(exc)
                return

    threads = [threading.Thread(target=reader, args=(i % 2 == 0,)) for i in range(8)]
    for thread in threads:
        thread.start()
    proc = _writer(idx, a, b, 12)
    _, stderr = proc.communicate(timeout=300)
    stop.set()
    for thread in threads:
        thread.join()
    assert proc.returncode == 0, stderr.decode()
    assert not errors, errors[:3]
    assert searches[0] > 8
