"""Two hundred SIGKILLs at random points of keyword-only builds and updates.

Every trial leaves the previous or the new complete version live, and the next successful
save removes whatever the killed writers left behind (temporary versions and pointers).
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path

import pytest

from ragtools.indexes.index import Index, open_version
from ragtools.indexes.store.versions import list_versions
from tests.indexes.killed_writers import ready_writers, start, stop
from tests.indexes.test_versions import fast_dir  # noqa: F401 - a fixture used below

TRIALS = 200
SETTINGS = {"chunk_size": 80, "chunk_overlap": 0}

WRITER = """
import sys
import ragtools.indexes.writer  # imported before "ready": the kills land in saves
from ragtools.indexes.index import Index
print("ready", flush=True)
idx, *sources = sys.stdin.readline().split()
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
def test_two_hundred_kills_leave_a_complete_version(
    fast_dir: Path,  # noqa: F811 - the fixture imported above
) -> None:
    sources = [_corpus(fast_dir, name, n) for name, n in (("apple", 3), ("banana", 5))]
    states = {
        _texts(Index.build([s], fast_dir / f"ref-{s.name}", vector=False, **SETTINGS))
        for s in sources
    }
    idx = fast_dir / "idx"
    Index.build([sources[0]], idx, vector=False, **SETTINGS)
    rng = random.Random(23)
    ready = ready_writers(WRITER)
    try:
        for _ in range(TRIALS):
            proc = start(ready, WRITER, " ".join(map(str, [idx, *sources])))
            time.sleep(rng.uniform(0.0, 0.6))  # somewhere in the first saves
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            index = Index.open(idx)
            assert _texts(index) in states
            assert index.bm25 is not None and len(index.bm25) == len(index.chunks)
    finally:
        stop(ready)
    Index.open(idx).update([sources[1]])  # the next successful save
    assert [p.name for p in (idx / "versions").iterdir() if p.name.startswith(".")] == []
    assert [p.name for p in idx.iterdir() if p.name.endswith(".tmp")] == []


# ---- the version store under SIGKILL: build, update, rollback; 1 and 3 shards ---------------

STORE_TRIALS = int(os.environ.get("RAGTOOLS_STORE_TRIALS", "200"))
OPTIONS = {"vector": False, **SETTINGS}

STORE_WRITER = """
import random, sys
from pathlib import Path
from ragtools.indexes.index import Index, open_version
from ragtools.indexes.store.versions import list_versions, switch_version
print("ready", flush=True)  # imported: the kill lands in the work, not in the imports
idx, seed, shards, *sources = sys.stdin.readline().split()
idx, rng = Path(idx), random.Random(int(seed))
sharding = {"shards": int(shards)} if int(shards) > 1 else {}
while True:
    op, src = rng.choice(["build", "update", "update", "rollback"]), rng.choice(sources)
    if op == "build":
        Index.build([src], idx, vector=False, chunk_size=80, chunk_overlap=0, **sharding)
    elif op == "update":
        Index.open(idx).update([src])
    else:
        name = rng.choice(list_versions(idx)).name
        switch_version(idx, name, check=lambda d: open_version(idx, d))
"""


def _debris(idx: Path) -> list[Path]:
    found = [*idx.rglob(".tmp-*"), *idx.rglob("*.tmp")]
    return found + [p for p in idx.rglob("*.pin")]


def _unnamed_segments(idx: Path) -> list[str]:
    """Segments that no kept version names."""
    named: set[str] = set()
    for version in list_versions(idx):
        entries = json.loads((version / "version.json").read_text(encoding="utf-8"))["segments"]
        named |= {Path(e["path"]).name for e in entries}
    return sorted(p.name for p in (idx / "segments").iterdir() if p.name not in named)


@pytest.mark.stress
@pytest.mark.timeout(1800)
def test_sigkill_across_build_update_and_rollback_leaves_an_openable_index(
    fast_dir: Path,  # noqa: F811 - the fixture imported above
) -> None:
    sources = [_corpus(fast_dir, name, n) for name, n in (("apple", 3), ("banana", 5))]
    indexes, states = {}, {}
    for shards in (1, 3):
        sharding = {"shards": shards} if shards > 1 else {}
        states[shards] = {
            _texts(
                Index.build(
                    [s], fast_dir / f"ref-{shards}-{s.name}", vector=False, **sharding, **SETTINGS
                )
            )
            for s in sources
        }
        indexes[shards] = fast_dir / f"idx-{shards}"
        Index.build([sources[0]], indexes[shards], **sharding, **OPTIONS)
    rng = random.Random(2026)
    ready = ready_writers(STORE_WRITER)
    try:
        for trial in range(STORE_TRIALS):
            shards = 1 if trial % 2 else 3
            idx = indexes[shards]
            line = f"{idx} {trial} {shards} {' '.join(map(str, sources))}"
            proc = start(ready, STORE_WRITER, line)
            time.sleep(rng.uniform(0.0, 0.5))
            proc.kill()
            proc.wait()
            with Index.open(idx) as index:
                assert _texts(index) in states[shards]
                assert index.keyword_search("sentence", 3)
            for version in list_versions(idx):  # every listed version is complete
                open_version(idx, version).close()
    finally:
        stop(ready)
    for idx in indexes.values():
        with Index.open(idx) as index:
            # The next write (an update that changes nothing writes nothing: one of the
            # two changes the sources, whichever state the kills left).
            written = [index.update([source]).written for source in (sources[0], sources[1])]
            assert any(written)
        assert _debris(idx) == []
        assert _unnamed_segments(idx) == []
