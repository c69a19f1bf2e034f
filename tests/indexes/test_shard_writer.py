"""Sharded writes as one commit: one writer lock, segments pinned by content, never reused,
collected by what the kept versions name; debris and a full disk handled."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from ragtools.indexes.errors import IndexLoadError, IndexStateError
from ragtools.indexes.index import Index, open_version
from ragtools.indexes.store.segments import shard_of
from ragtools.indexes.store.spill import ChunkSpill
from ragtools.indexes.store.versions import current_version, list_versions, switch_version
from ragtools.indexes.testing import live_segment

OPTIONS: dict[str, Any] = {"vector": False, "chunk_size": 200, "chunk_overlap": 0}


def _sources(root: Path, files: int = 6) -> Path:
    """``files`` Markdown files in a folder whose name puts ``f{i}.md`` in shard ``i % n`` for
    2 and 3 shards (the first six files): files go to shards by a hash of their absolute
    path, and these tests must not depend on where pytest's temporary folder lies."""
    base = root.resolve()
    folder = next(
        base / f"src-{k}"
        for k in itertools.count()
        if all(
            shard_of(str(base / f"src-{k}" / f"f{i}.md"), n) == i % n
            for n in (2, 3)
            for i in range(min(files, 6))
        )
    )
    folder.mkdir()
    for i in range(files):
        text = f"file {i} talks about bees and honey, number {i}."
        (folder / f"f{i}.md").write_text(text, encoding="utf-8")
    return folder


def _rollback(root: Path, name: str) -> None:
    switch_version(root, name, check=lambda directory: open_version(root, directory))


def _hits(index: Index, query: str) -> list[tuple[str, float, str]]:
    return [
        (index.chunks[row].id, score, index.chunks[row].text)
        for row, score in index.keyword_search(query, 5)
    ]


def _named_segments(root: Path) -> set[str]:
    named: set[str] = set()
    for version in list_versions(root):
        named |= {Path(e["path"]).name for e in json_of(version / "version.json")["segments"]}
    return named


def json_of(path: Path) -> Any:
    import json

    return json.loads(path.read_text(encoding="utf-8"))


def test_rollback_update_rollback_gives_a_fresh_builds_results(tmp_path: Path) -> None:
    """#38: a reused shard version name once mixed old BM25 postings with new chunks."""
    src = _sources(tmp_path)
    idx = tmp_path / "idx"
    Index.build([src], idx, shards=2, **OPTIONS)
    f3 = src / "f3.md"
    original = f3.read_text(encoding="utf-8")
    f3.write_text(original + " versionbravo", encoding="utf-8")
    Index.open(idx).update()
    bravo = _hits(Index.build([src], tmp_path / "fresh-bravo", shards=2, **OPTIONS), "versionbravo")
    _rollback(idx, "v-000001")
    f3.write_text(original + " versioncharlie", encoding="utf-8")
    Index.open(idx).update()
    assert current_version(idx).name == "v-000003"
    _rollback(idx, "v-000002")
    try:
        index = Index.open(idx)
    except IndexLoadError:  # also acceptable: a mismatch is never silent
        return
    assert bravo and _hits(index, "versionbravo") == bravo
    assert _hits(index, "versioncharlie") == []


def test_a_segment_not_the_pinned_one_is_a_load_error(tmp_path: Path) -> None:
    src = _sources(tmp_path)
    idx = tmp_path / "idx"
    Index.build([src], idx, shards=2, keep_versions=3, **OPTIONS)
    entry = json_of(current_version(idx) / "version.json")["segments"][0]
    assert len(entry["manifest_sha256"]) == 64
    # what reusing a name after a cleanup did: another segment under the pinned name
    victim, other = live_segment(idx, 0), live_segment(idx, 1)
    shutil.rmtree(victim)
    shutil.copytree(other, victim)
    with pytest.raises(IndexLoadError, match="not the segment this version was written with"):
        Index.open(idx)


def test_segments_are_collected_by_what_the_kept_versions_name(tmp_path: Path) -> None:
    src = _sources(tmp_path)
    idx = tmp_path / "idx"
    Index.build([src], idx, shards=3, **OPTIONS)
    for round_ in range(4):
        for i in (round_ % 6, (round_ + 3) % 6):
            (src / f"f{i}.md").write_text(f"round {round_} file {i} wasps", encoding="utf-8")
        Index.open(idx).update()
        if round_ == 1:
            _rollback(idx, "v-000002")
    versions = [p.name for p in list_versions(idx)]
    assert versions == ["v-000004", "v-000005"]
    on_disk = {p.name for p in (idx / "segments").iterdir()}
    assert on_disk == _named_segments(idx)
    for version in versions:
        _rollback(idx, version)
        assert len(Index.open(idx)) == 6


def test_debris_of_killed_writers_goes_from_every_shard(tmp_path: Path) -> None:
    src = _sources(tmp_path)
    idx = tmp_path / "idx"
    Index.build([src], idx, shards=3, **OPTIONS)
    debris = [
        idx / "segments" / ".tmp-staging-0123abcd",
        idx / "segments" / ".tmp-0123abcd",
        idx / "segments" / "s-0123456789ab",  # published by a writer killed before its commit
        idx / "versions" / ".tmp-new-0123abcd",
        idx / ".CURRENT.feedf00d.tmp",
    ]
    for path in debris:
        path.parent.mkdir(parents=True, exist_ok=True)  # a shard may hold no file yet
        if path.name.endswith(".tmp"):
            path.write_text("v-0000", encoding="utf-8")
        else:
            path.mkdir()
            (path / "half.npy").write_bytes(b"\x93NUMPY")
    (src / "f0.md").write_text("only one file changed", encoding="utf-8")
    Index.open(idx).update()
    assert [p for p in debris if p.exists()] == []


def test_two_sharded_updates_at_once_take_turns(tmp_path: Path) -> None:
    src = _sources(tmp_path, files=10)
    idx = tmp_path / "idx"
    Index.build([src], idx, shards=3, **OPTIONS)
    for i in range(10):
        (src / f"f{i}.md").write_text(f"file {i} now about wasps {i}", encoding="utf-8")
    first, second = Index.open(idx), Index.open(idx)  # both opened before either writes
    errors: list[BaseException] = []

    def update(index: Index) -> None:
        try:
            index.update()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=update, args=(i,)) for i in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    fresh = Index.build([src], tmp_path / "fresh", shards=3, **OPTIONS)
    for index in (first, second, Index.open(idx)):
        assert _hits(index, "wasps") == _hits(fresh, "wasps")


def test_a_full_disk_during_a_sharded_update_names_enospc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _sources(tmp_path)
    idx = tmp_path / "idx"
    Index.build([src], idx, shards=2, **OPTIONS)
    (src / "f1.md").write_text("changed", encoding="utf-8")

    def short_write(path: str | Path, array: Any) -> None:
        Path(path).write_bytes(b"\x93NUMPY")
        raise OSError("228780 requested and 49120 written")

    # an update writes the chunk store from the spill of the files it parsed
    monkeypatch.setattr(ChunkSpill, "write_chunks", lambda _, path, files: short_write(path, files))
    with pytest.raises(IndexStateError, match=rf"^{idx}: no space left on device \(ENOSPC\)"):
        Index.open(idx).update()
    monkeypatch.undo()
    assert current_version(idx).name == "v-000001"
    assert len(Index.open(idx)) == 6


@pytest.fixture
def small_disk(tmp_path: Path) -> Any:
    """A 2 MB tmpfs, where the machine allows mounting one (root, no sandbox in the way)."""
    folder = tmp_path / "small"
    folder.mkdir()
    if os.name != "posix" or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root on Linux")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.mark.parametrize("shards", [None, 3])
def test_a_really_full_disk_leaves_the_previous_version_live(
    tmp_path: Path, small_disk: Path, shards: int | None
) -> None:
    src = _sources(tmp_path)
    idx = small_disk / "idx"
    sharding = {"shards": shards} if shards else {}
    Index.build([src], idx, **sharding, **OPTIONS)
    before = _hits(Index.open(idx), "honey")
    words = " ".join(f"word{i} filler{i * 7919 % 100003}" for i in range(60_000))
    (src / "big.md").write_text(words, encoding="utf-8")  # some 2 MB of distinct terms
    with pytest.raises(IndexStateError) as caught:
        Index.open(idx).update()
    message = str(caught.value)
    assert "no space left on device (ENOSPC) while writing" in message
    assert str(idx) in message and "is unchanged" in message
    assert current_version(idx).name == "v-000001"
    index = Index.open(idx)
    assert index.n_shards == (shards or 1)
    assert _hits(index, "honey") == before
    (src / "big.md").unlink()
    index.update()  # space again: the next write succeeds and leaves no debris
    assert not [p for p in idx.rglob(".tmp-*")] + [p for p in idx.rglob("*.tmp")]
