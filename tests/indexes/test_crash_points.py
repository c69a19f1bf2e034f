"""Two hundred SIGKILLs at random points of keyword-only builds and updates.

Every trial leaves the previous or the new complete version live, and the next successful
save removes whatever the killed writers left behind (temporary versions and pointers).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragtools.indexes.bundle import Index

ROOT = Path(__file__).resolve().parents[2]
TRIALS = 200
SETTINGS = {"chunk_size": 80, "chunk_overlap": 0}

WRITER = """
import sys
import ragtools.indexes.writer  # imported before "ready": the kills land in saves
from ragtools.indexes.bundle import Index
idx, sources = sys.argv[1], sys.argv[2:]
print("ready", flush=True)
for i in range(10**6):
    src = sources[i % len(sources)]
    if i % 3 == 0:
        Index.build([src], idx, vector=False, chunk_size=80, chunk_overlap=0)
    else:
        Index.open(idx).update([src])
"""


def _corpus(root: Path, name: str, files: int) -> Path:
    folder = root / name
    folder.mkdir()
    for i in range(files):
        text = " ".join(f"{name} {i} sentence {j} about {name}s." for j in range(40))
        (folder / f"{name}-{i}.txt").write_text(text, encoding="utf-8")
    return folder


def _texts(index: Index) -> frozenset[str]:
    return frozenset(c.text for c in index.chunks)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_two_hundred_kills_leave_a_complete_version(tmp_path: Path) -> None:
    sources = [_corpus(tmp_path, name, n) for name, n in (("apple", 3), ("banana", 5))]
    states = {
        _texts(Index.build([s], tmp_path / f"ref-{s.name}", vector=False, **SETTINGS))
        for s in sources
    }
    idx = tmp_path / "idx"
    Index.build([sources[0]], idx, vector=False, **SETTINGS)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rng = random.Random(23)
    args = [sys.executable, "-c", WRITER, str(idx), *map(str, sources)]
    for _ in range(TRIALS):
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.0, 0.6))  # somewhere in the first saves
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        index = Index.open(idx)
        assert _texts(index) in states
        assert index.bm25 is not None and len(index.bm25) == len(index.chunks)
    Index.open(idx).update([sources[1]])  # the next successful save
    assert [p.name for p in (idx / "versions").iterdir() if p.name.startswith(".")] == []
    assert [p.name for p in idx.iterdir() if p.name.endswith(".tmp")] == []
