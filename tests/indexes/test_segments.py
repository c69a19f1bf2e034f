"""Segments: updates write only what changed, the merge policy keeps few segments, and no
grouping of the same live rows ever changes a result."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ragtools.indexes import index as index_module
from ragtools.indexes import writer as writer_module
from ragtools.indexes.index import Index
from ragtools.indexes.ranking import Ranking
from ragtools.indexes.store.segments import LiveRows, first_depth, merged_top
from ragtools.indexes.store.versions import current_version
from ragtools.indexes.testing import FakeEmbedder
from ragtools.indexes.writer import SEGMENTS_PER_SHARD, IndexWriter

OPTIONS = {"chunk_size": 80, "chunk_overlap": 0}
QUERIES = ["bees honey", "file number", "wasps round", "nothing-matches"]


def _sources(root: Path, n: int = 12) -> Path:
    src = root / "src"
    src.mkdir()
    for i in range(n):
        (src / f"f{i:02d}.md").write_text(
            f"file {i} talks about bees and honey. number {i} of {n}.\n\nA second part {i % 3}.",
            encoding="utf-8",
        )
    return src


def _results(index: Index) -> list[list[tuple[str, float]]]:
    out = []
    for query in QUERIES:
        keyword = index.state.keyword_ranking(query, 10)
        vector = index.state.vector_ranking(index.embedder.embed_query(query), 10)
        for ranking in (keyword, vector):
            out.append([(index.chunks[r].id, s) for r, s in ranking.pairs()])
    return out


def _fresh(src: Path, root: Path, shards: int | None) -> Index:
    return Index.build([src], root, embedder=FakeEmbedder(), shards=shards, **OPTIONS)


def _files(root: Path) -> dict[Path, tuple[int, int]]:
    return {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("shards", [None, 3])
def test_an_update_writes_a_segment_and_leaves_the_others_untouched(
    tmp_path: Path, shards: int | None
) -> None:
    src = _sources(tmp_path)
    index = _fresh(src, tmp_path / "idx", shards)
    old_segments = {s.name for s in index.segments}
    old_f03 = sum(c.source == "f03.md" for c in index.chunks)
    before = _files(tmp_path / "idx" / "segments")
    (src / "f03.md").write_text("file 3 now talks about wasps.", encoding="utf-8")
    report = index.update()
    assert [Path(p).name for p in report.changed] == ["f03.md"]
    after = _files(tmp_path / "idx" / "segments")
    assert all(after.get(p) == v for p, v in before.items())  # no old segment file changed
    new = [s for s in index.segments if s.name not in old_segments]
    assert len(new) == 1 and new[0].rows == 1
    assert sum(s.n_deleted for s in index.segments) == old_f03  # the old f03.md's chunks
    assert index.info()["counts"]["deleted_rows"] == old_f03
    assert _results(index) == _results(_fresh(src, tmp_path / "fresh", shards))


def test_an_update_without_changes_writes_no_version(tmp_path: Path) -> None:
    src = _sources(tmp_path)
    index = _fresh(src, tmp_path / "idx", None)
    live = current_version(index.path)
    report = index.update()
    assert report.written is False and report.unchanged == 12
    assert not report.added and not report.changed and not report.removed
    assert current_version(index.path) == live


@pytest.mark.parametrize("lazy", [False, True], ids=["in-memory", "chunk-files"])
@pytest.mark.parametrize("shards", [None, 2])
def test_the_merge_policy_keeps_few_segments_and_never_changes_a_result(
    tmp_path: Path, shards: int | None, lazy: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``chunk-files``: every segment counts as large, so the writer keeps the chunks of
    the segments it writes in their files and folds read them back from there (as a build
    of millions of rows does, instead of holding them all)."""
    if lazy:
        monkeypatch.setattr(writer_module, "LAZY_ROWS", 0)
        monkeypatch.setattr(index_module, "LAZY_ROWS", 0)
    src = _sources(tmp_path)
    index = _fresh(src, tmp_path / "idx", shards)
    for round_ in range(2 * SEGMENTS_PER_SHARD):
        (src / f"f{round_ % 12:02d}.md").write_text(
            f"round {round_}: wasps instead of bees, file {round_ % 12}.", encoding="utf-8"
        )
        index.update()
        per_shard: dict[int, int] = {}
        for segment in index.segments:
            per_shard[segment.shard] = per_shard.get(segment.shard, 0) + 1
        assert max(per_shard.values()) <= SEGMENTS_PER_SHARD
        assert all(2 * s.n_deleted <= s.rows for s in index.segments)  # half-deleted: rewritten
    fresh = _fresh(src, tmp_path / f"fresh-{round_}", shards)
    assert _results(index) == _results(fresh)
    reopened = Index.open(index.path, embedder=FakeEmbedder())
    assert _results(reopened) == _results(fresh)
    folded = IndexWriter(reopened).merge()
    assert folded >= 1
    shards_seen = [s.shard for s in reopened.segments]
    assert len(shards_seen) == len(set(shards_seen))  # one segment per shard
    assert all(s.n_deleted == 0 for s in reopened.segments)
    assert _results(reopened) == _results(fresh)
    assert IndexWriter(reopened).merge() == 0  # nothing left to fold: no new version


@pytest.mark.parametrize("lazy", [False, True], ids=["in-memory", "chunk-files"])
def test_a_commit_reads_its_new_segments_back_without_hashing_or_reading_them_again(
    tmp_path: Path, lazy: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The version a change commits is read back for the ``Index``; the files of the
    segments it has just written are hashed once, as they are written (for their
    manifests), not again on that read, and their chunks are the ones the writer holds.
    What it shows is what opening the index shows, and opening still hashes every file."""
    from ragtools.indexes.store import persist
    from ragtools.parsers import Chunk

    if lazy:
        monkeypatch.setattr(writer_module, "LAZY_ROWS", 0)
        monkeypatch.setattr(index_module, "LAZY_ROWS", 0)
    index = _fresh(_sources(tmp_path), tmp_path / "idx", None)
    hashed: list[Path] = []
    real = persist.sha256_file

    def counted(path: str | Path) -> str:
        hashed.append(Path(path))
        return real(path)

    monkeypatch.setattr(persist, "sha256_file", counted)
    extra = [Chunk(doc_id=f"manual-{i}", text=f"quarks number {i}", metadata={}) for i in range(5)]
    before = {s.name for s in index.segments}
    IndexWriter(index).add(extra)
    (new,) = [s for s in index.segments if s.name not in before]
    folder = index.path / "segments" / new.name
    data = [p for p in folder.rglob("*") if p.is_file() and p.name != "manifest.json"]
    written = folder.with_name(".tmp-" + new.name.removeprefix("s-"))  # its name as written
    assert {p.relative_to(written) for p in hashed if written in p.parents} == {
        p.relative_to(folder) for p in data
    }  # every file, as it was written
    assert not set(data) & set(hashed)  # and none when read back
    assert list(index.chunks)[-5:] == extra
    held = index.state.parts[-1]
    assert held is not None
    assert (type(held.chunks).__name__ == "ChunkFile") is lazy
    hashed.clear()
    reopened = Index.open(index.path, embedder=FakeEmbedder())
    assert all(p in hashed for p in data)
    assert list(reopened.chunks) == list(index.chunks)
    assert _results(reopened) == _results(index)


def test_delete_and_add_keep_the_shards_and_the_rows_returned(tmp_path: Path) -> None:
    src = _sources(tmp_path)
    index = _fresh(src, tmp_path / "idx", 3)
    doomed = index.chunks[0].doc_id
    n_doomed = sum(c.doc_id == doomed for c in index.chunks)
    before = len(index.chunks)
    assert IndexWriter(index).delete([doomed]) == n_doomed
    assert len(index.chunks) == before - n_doomed and index.n_shards == 3
    from ragtools.parsers import Chunk

    extra = [
        Chunk(doc_id=f"manual-{i}", text=f"quarks number {i} and gluons", metadata={})
        for i in range(5)
    ]
    rows = IndexWriter(index).add(extra)
    assert [index.chunks[int(r)].id for r in rows] == [c.id for c in extra]
    reopened = Index.open(index.path, embedder=FakeEmbedder())
    assert reopened.n_shards == 3 and len(reopened.chunks) == len(index.chunks)
    assert {s.shard for s in reopened.segments} <= {0, 1, 2}


def test_merged_top_asks_a_segment_again_when_ties_may_hide_behind_its_cut() -> None:
    # Segment 0 holds five rows of score 1.0; its own top 2 keeps the first two rows, but
    # the key order wants its last rows: the merge must see them.
    keys = np.array([50, 40, 30, 20, 10, 5], np.int64)
    scores = [np.ones(5), np.array([0.5])]
    calls: list[tuple[int, int]] = []

    def search(segment: int, depth: int) -> Ranking:
        calls.append((segment, depth))
        if segment == 0:
            return Ranking(np.arange(5)[:depth].astype(np.int64), scores[0][:depth])
        return Ranking(np.array([5], np.int64), scores[1])

    top = merged_top(2, search, lambda rows: keys[rows], 2)
    assert top.rows.tolist() == [4, 3] and top.scores.tolist() == [1.0, 1.0]
    assert (0, 2 * first_depth(2)) in calls  # asked again, deeper


def test_merged_top_asks_once_when_nothing_ties_across_the_cut() -> None:
    """One row more than needed shows that no tie hides behind the cut: a segment is asked
    once (asked for exactly k, its k-th row would always tie the cut and be asked again)."""
    scores = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    calls: list[int] = []

    def search(segment: int, depth: int) -> Ranking:
        calls.append(depth)
        return Ranking(np.arange(5)[:depth].astype(np.int64), scores[:depth])

    top = merged_top(1, search, lambda rows: rows, 3)
    assert top.rows.tolist() == [0, 1, 2] and calls == [first_depth(3)]


def test_live_rows_map_each_segment_and_its_mask() -> None:
    live = LiveRows([np.array([False, True, False]), np.array([True, False])])
    assert len(live) == 3 and live.offsets.tolist() == [0, 2, 3]
    assert live.to_live(0, np.array([0, 2])).tolist() == [0, 1]
    assert live.to_live(1, np.array([1])).tolist() == [2]
    allow = np.array([False, True, True])
    assert live.segment_mask(0, allow).tolist() == [False, False, True]
    assert live.segment_mask(1, None).tolist() == [False, True]


def test_a_killed_writers_unnamed_segment_is_collected_by_the_next_commit(tmp_path: Path) -> None:
    src = _sources(tmp_path)
    index = _fresh(src, tmp_path / "idx", None)
    stray = tmp_path / "idx" / "segments" / "s-00000000dead"
    stray.mkdir()
    (stray / "chunks.jsonl").write_text("", encoding="utf-8")
    os.utime(stray, (0, 0))
    (src / "f01.md").write_text("changed", encoding="utf-8")
    index.update()
    assert not stray.exists()
