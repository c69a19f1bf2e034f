"""One lifecycle suite for both layouts: every test runs on one index and on three shards.

Build, reopen, update, add, delete, rollback, the source selection (include, exclude,
``.gitignore``), encrypted PDFs, settings, damaged files and writers killed at random points
behave the same whatever the number of shards (#33, "Two layouts, one suite"). The oracle is
always a fresh build of what the index should hold, into a new folder, with the same layout:
keyword, vector and hybrid hits must have the same chunk ids in the same order with the same
scores, bit for bit (ties order by chunk key, so an updated index and a fresh build agree).

Chunks added with :meth:`IndexWriter.add` belong to no source file; an update leaves them in
place (as Lucene keeps documents a writer added until they are deleted), and the reference for
them is a fresh build of the files plus one ``add`` of the same chunks.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragtools.indexes import Index, IndexWriter
from ragtools.indexes.errors import IndexLoadError
from ragtools.indexes.store.versions import current_version, list_versions, switch_version
from ragtools.indexes.testing import FakeEmbedder
from ragtools.parsers import Chunk, Document, Selection, split
from ragtools.retrieval.hybrid import HybridRetriever
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.vector import VectorRetriever
from tests.indexes.killed_writers import ready_writers, start, stop
from tests.indexes.test_versions import fast_dir  # noqa: F401 - a fixture used below

SETTINGS: dict[str, Any] = {"chunk_size": 80, "chunk_overlap": 0, "keep_versions": 4}
DIM = 32
K = 8
MODES = ("keyword", "vector", "hybrid")

CORPUS = {
    "bees.txt": "Honey bees dance to show where the flowers are. The hive has one queen bee.",
    "tides.md": "# Tides\n\nThe moon's gravity raises the ocean tides twice a day, every day.",
    "volcano.txt": "Lava flows from an erupting volcano. Ash falls on the town below it.",
    "quarks.txt": (
        "Quarks are bound by gluons inside protons. Photons carry light between atoms. "
        "Gluons never travel alone, and quarks never stand alone either."
    ),
    "copy-a.txt": "Bees and tides and lava.",
    "copy-b.txt": "Bees and tides and lava.",  # the same text as copy-a: exact ties
    "notes/deep.txt": "Pollen sticks to the legs of bees in the hive.",
}
QUERIES = (
    "bees hive",
    "ocean tides moon",
    "lava ash",
    "gluons photons quarks",
    "bees and tides and lava",
    "unknownword",
)

SHARDS = [None, 3]


# ----------------------------------------------------------------------------- helpers


def write_tree(root: Path, files: Mapping[str, str]) -> Path:
    """``files`` (relative path -> text) written under ``root``, which is created."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def build(src: Path, path: Path, shards: int | None, **options: Any) -> Index:
    """``Index.build`` with the suite's settings and a fake embedder."""
    return Index.build(
        [src], path, shards=shards, embedder=FakeEmbedder(dim=DIM), **{**SETTINGS, **options}
    )


def reopen(path: Path) -> Index:
    return Index.open(path, embedder=FakeEmbedder(dim=DIM))


def fresh(
    root: Path,
    files: Mapping[str, str],
    shards: int | None,
    added: Sequence[Chunk] = (),
    **options: Any,
) -> Index:
    """The oracle: a fresh build of ``files`` into a new folder under ``root`` (the same
    relative paths, so the same document and chunk ids), then one add of ``added``."""
    index = build(write_tree(root / "src", files), root / "idx", shards, **options)
    if added:
        IndexWriter(index).add(list(added))
    return index


def hits(index: Index, query: str, mode: str) -> list[tuple[str, float]]:
    """``(chunk id, score)`` of the top ``K`` of one retriever, best first."""
    if mode == "keyword":
        retriever: Any = KeywordRetriever(index, k=K)
    elif mode == "vector":
        retriever = VectorRetriever(index, k=K)
    else:
        retriever = HybridRetriever.from_index(index, k=K, candidate_k=20)
    return [(hit.chunk_id, hit.score) for hit in retriever.invoke(query)]


def assert_same_results(index: Index, expected: Index, queries: Sequence[str] = QUERIES) -> None:
    """Equal live chunk counts, and for every query and mode the same ids in the same order
    with bit-identical scores."""
    assert len(index) == len(expected)
    for query in queries:
        for mode in MODES:
            found, wanted = hits(index, query, mode), hits(expected, query, mode)
            assert [i for i, _ in found] == [i for i, _ in wanted], (query, mode)
            np.testing.assert_array_equal(
                np.array([s for _, s in found], dtype=np.float64),
                np.array([s for _, s in wanted], dtype=np.float64),
                err_msg=f"{mode} scores of {query!r}",
            )


def placed_shards(index: Index) -> int:
    """How many shards ``rag info`` reports (1 for an index in one place)."""
    return int(index.info()["counts"].get("shards", 1))


def orphaned_shard_folders(index: Index) -> list[str]:
    """Shard folders on disk that the live version does not report using."""
    reported = {str(Path(entry["path"])) for entry in index.info().get("shards") or []}
    folder = index.path / "shards"
    on_disk = sorted(str(p) for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    return [p for p in on_disk if p not in reported]


def assert_layout(index: Index, shards: int | None) -> None:
    """The index (and the index reopened from disk) has the layout it was built with."""
    for each in (index, reopen(index.path)):
        assert placed_shards(each) == (shards or 1)
        assert orphaned_shard_folders(each) == []


def sources_of(index: Index) -> set[str]:
    """The source (relative to the folder built) of every chunk."""
    return {Path(c.source).as_posix() for c in index.chunks}


def manual_chunks(name: str, text: str) -> list[Chunk]:
    """The chunks of a document that belongs to no file, split like the suite's files."""
    document = Document(text=text, metadata={"source": name})
    return split([document], chunk_size=SETTINGS["chunk_size"], chunk_overlap=0)


@pytest.fixture
def src(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "src", CORPUS)


# ----------------------------------------------------------------------------- build, reopen


@pytest.mark.parametrize("shards", SHARDS)
def test_a_build_reopens_to_the_same_results(tmp_path: Path, src: Path, shards: int | None) -> None:
    index = build(src, tmp_path / "idx", shards)
    assert len(index) == index.info()["counts"]["chunks"] > len(CORPUS)
    assert sources_of(index) == set(CORPUS)
    assert_layout(index, shards)
    assert_same_results(reopen(index.path), index)
    assert hits(index, "gluons photons quarks", "keyword")[0][0] in {
        c.id for c in index.chunks if c.source == "quarks.txt"
    }


# ----------------------------------------------------------------------------- update


@pytest.mark.parametrize("shards", SHARDS)
def test_an_update_equals_a_fresh_build(tmp_path: Path, src: Path, shards: int | None) -> None:
    index = build(src, tmp_path / "idx", shards)
    files = dict(CORPUS)
    files["bees.txt"] = "Wasps do not dance. Honey bees do, in the hive, for the queen."
    files["comets.txt"] = "Comets grow tails of ice and dust near the sun."
    del files["volcano.txt"]
    write_tree(src, files)
    (src / "volcano.txt").unlink()
    report = index.update()
    root = src.resolve()
    assert report.added == [str(root / "comets.txt")]
    assert report.changed == [str(root / "bees.txt")]
    assert report.removed == [str(root / "volcano.txt")]
    assert report.unchanged == len(files) - 2
    expected = fresh(tmp_path / "fresh", files, shards)
    assert_same_results(index, expected)
    assert_same_results(reopen(index.path), expected)
    assert_layout(index, shards)
    again = reopen(index.path)
    report = again.update()  # nothing changed: same results
    assert (report.added, report.changed, report.removed) == ([], [], [])
    assert report.unchanged == len(files)
    assert_same_results(again, expected)


# ----------------------------------------------------------------------------- add, delete


@pytest.mark.parametrize("shards", SHARDS)
def test_added_chunks_are_found_and_kept_on_disk(
    tmp_path: Path, src: Path, shards: int | None
) -> None:
    index = build(src, tmp_path / "idx", shards)
    before = len(index)
    added = manual_chunks("manual", "Gluons glue quarks. " * 8)
    assert len(added) > 1
    IndexWriter(index).add(added)
    assert len(index) == before + len(added)
    top = hits(index, "gluons glue", "keyword")[0][0]
    assert top in {c.id for c in added}
    expected = fresh(tmp_path / "fresh", CORPUS, shards, added)
    assert_same_results(index, expected)
    assert_same_results(reopen(index.path), expected)
    assert_layout(index, shards)


@pytest.mark.parametrize(
    "shards",
    SHARDS,
)
def test_added_chunks_outlive_an_update(tmp_path: Path, src: Path, shards: int | None) -> None:
    index = build(src, tmp_path / "idx", shards)
    added = manual_chunks("manual", "Gluons glue quarks together.")
    IndexWriter(index).add(added)
    files = {**CORPUS, "tides.md": "# Tides\n\nSpring tides and neap tides follow the moon."}
    write_tree(src, files)
    index.update()
    expected = fresh(tmp_path / "fresh", files, shards, added)
    assert_same_results(index, expected)
    assert_same_results(reopen(index.path), expected)
    assert_layout(index, shards)


@pytest.mark.parametrize(
    "shards",
    SHARDS,
)
def test_delete_drops_exactly_that_documents_chunks_and_keeps_the_layout(
    tmp_path: Path, src: Path, shards: int | None
) -> None:
    """#33: deleting from a sharded index silently made it a single one (2 chunks became 1,
    the shard folders were orphaned)."""
    index = build(src, tmp_path / "idx", shards)
    before = len(index)
    victims = [c for c in index.chunks if c.source == "quarks.txt"]
    assert len(victims) > 1 and len({c.doc_id for c in victims}) == 1
    assert IndexWriter(index).delete([victims[0].doc_id]) == len(victims)
    assert len(index) == index.info()["counts"]["chunks"] == before - len(victims)
    assert len(reopen(index.path)) == before - len(victims)
    assert_layout(index, shards)
    rest = {name: text for name, text in CORPUS.items() if name != "quarks.txt"}
    expected = fresh(tmp_path / "fresh", rest, shards)
    assert_same_results(index, expected)
    assert_same_results(reopen(index.path), expected)
    assert IndexWriter(index).delete([victims[0].doc_id, "no-such-document"]) == 0
    assert_same_results(index, expected)


@pytest.mark.parametrize(
    "shards",
    SHARDS,
)
def test_deleting_an_added_document_gives_back_the_build(
    tmp_path: Path, src: Path, shards: int | None
) -> None:
    index = build(src, tmp_path / "idx", shards)
    added = manual_chunks("manual", "Gluons glue quarks. " * 8)
    IndexWriter(index).add(added)
    assert IndexWriter(index).delete([added[0].doc_id]) == len(added)
    expected = fresh(tmp_path / "fresh", CORPUS, shards)
    assert_same_results(index, expected)
    assert_same_results(reopen(index.path), expected)
    assert_layout(index, shards)


# ----------------------------------------------------------------------------- rollback


@pytest.mark.parametrize("shards", SHARDS)
def test_rollback_brings_back_a_kept_version_and_an_update_moves_on(
    tmp_path: Path, src: Path, shards: int | None
) -> None:
    index = build(src, tmp_path / "idx", shards)
    first = current_version(index.path).name
    files = {**CORPUS, "volcano.txt": "Basalt cools into columns by the sea."}
    write_tree(src, files)
    index.update()
    second = current_version(index.path).name
    assert [p.name for p in list_versions(index.path)] == [first, second]
    switch_version(index.path, first)
    back = reopen(index.path)
    assert_same_results(back, fresh(tmp_path / "fresh-1", CORPUS, shards))
    assert_layout(back, shards)
    report = back.update()  # the files on disk are the second version's again
    assert report.changed == [str(src.resolve() / "volcano.txt")]
    assert_same_results(back, fresh(tmp_path / "fresh-2", files, shards))
    assert current_version(index.path).name not in {first, second}  # numbers never reused
    switch_version(index.path, second)
    assert_same_results(reopen(index.path), fresh(tmp_path / "fresh-3", files, shards))


@pytest.mark.parametrize(
    "shards",
    SHARDS,
)
def test_rollback_undoes_an_add_and_a_delete(tmp_path: Path, src: Path, shards: int | None) -> None:
    index = build(src, tmp_path / "idx", shards)
    built = current_version(index.path).name
    added = manual_chunks("manual", "Gluons glue quarks together.")
    IndexWriter(index).add(added)
    with_added = current_version(index.path).name
    assert_layout(index, shards)
    victim = next(c.doc_id for c in index.chunks if c.source == "bees.txt")
    IndexWriter(index).delete([victim])
    assert_layout(index, shards)
    switch_version(index.path, with_added)
    assert_same_results(reopen(index.path), fresh(tmp_path / "f1", CORPUS, shards, added))
    switch_version(index.path, built)
    back = reopen(index.path)
    assert_same_results(back, fresh(tmp_path / "f2", CORPUS, shards))
    assert_layout(back, shards)


# ----------------------------------------------------------------------------- selection

SELECTIONS = {
    "exclude": Selection(exclude=("*.md", "notes/")),
    "include": Selection(include=("*.txt",), exclude=("copy-*",)),
}


@pytest.mark.parametrize("rules", sorted(SELECTIONS))
@pytest.mark.parametrize("shards", SHARDS)
def test_include_and_exclude_hold_for_builds_and_updates(
    tmp_path: Path, src: Path, shards: int | None, rules: str
) -> None:
    selection = SELECTIONS[rules]

    def selected(files: Mapping[str, str]) -> dict[str, str]:
        if rules == "exclude":
            return {n: t for n, t in files.items() if not (n.endswith(".md") or "/" in n)}
        return {n: t for n, t in files.items() if n.endswith(".txt") and "copy-" not in n}

    index = build(src, tmp_path / "idx", shards, selection=selection)
    assert index.selection == selection
    assert sources_of(index) == set(selected(CORPUS))
    files = {
        **CORPUS,
        "more.md": "# More\n\nExcluded tides, or not.",
        "more.txt": "Included lava text.",
        "notes/more.txt": "Notes about the hive.",
        "copy-c.txt": "Bees and tides and lava.",
    }
    write_tree(src, files)
    report = reopen(index.path).update()
    root = src.resolve()
    assert sorted(report.added) == sorted(str(root / n) for n in selected(files) if n not in CORPUS)
    updated = reopen(index.path)
    assert updated.selection == selection
    assert sources_of(updated) == set(selected(files))
    expected = fresh(tmp_path / "fresh", files, shards, selection=selection)
    assert_same_results(updated, expected)


@pytest.mark.parametrize("shards", SHARDS)
def test_gitignored_files_stay_out_of_builds_and_updates(
    tmp_path: Path, src: Path, shards: int | None
) -> None:
    ignored = {".gitignore": "*.log\nbuild/\n", "debug.log": "log line", "build/out.txt": "made"}
    write_tree(src, ignored)
    index = build(src, tmp_path / "idx", shards)
    assert sources_of(index) == set(CORPUS)
    write_tree(src, {"later.log": "another log", "build/more.txt": "made", "new.txt": "New bees."})
    report = index.update()
    assert report.added == [str(src.resolve() / "new.txt")]
    assert sources_of(reopen(index.path)) == {*CORPUS, "new.txt"}
    expected = fresh(tmp_path / "fresh", {**CORPUS, **ignored, "new.txt": "New bees."}, shards)
    assert_same_results(index, expected)
    every = build(src, tmp_path / "every", shards, selection=Selection(gitignore=False))
    assert {"debug.log", "build/out.txt", "later.log"} <= sources_of(every)


# ----------------------------------------------------------------------------- password

LOCKED_PDF = ("aes-256-r6.pdf", "usersecret")


@pytest.fixture
def locked_pdf(pdf_dir: Path) -> Path:
    path = pdf_dir / LOCKED_PDF[0]
    if not path.is_file():
        pytest.skip(f"{path} is missing: no encrypted PDF to test the password with")
    return path


@pytest.mark.parametrize("shards", SHARDS)
def test_an_encrypted_pdf_is_indexed_with_its_password(
    tmp_path: Path, src: Path, locked_pdf: Path, shards: int | None
) -> None:
    shutil.copyfile(locked_pdf, src / "locked.pdf")
    locked = str(src.resolve() / "locked.pdf")
    index = build(src, tmp_path / "idx", shards)
    assert [f.path for f in index.failures] == [locked]
    assert "password" in index.failures[0].message
    assert "locked.pdf" not in sources_of(index)
    opened = build(src, tmp_path / "with-password", shards, password=LOCKED_PDF[1])
    assert opened.failures == [] and "locked.pdf" in sources_of(opened)
    found = hits(opened, "hello world", "keyword")
    assert found and found[0][0] in {c.id for c in opened.chunks if c.source == "locked.pdf"}
    (src / "bees.txt").write_text("Bees, edited.", encoding="utf-8")
    report = reopen(opened.path).update(password=LOCKED_PDF[1])
    assert report.failures == [] and report.changed == [str(src.resolve() / "bees.txt")]
    updated = reopen(opened.path)
    assert updated.failures == [] and "locked.pdf" in sources_of(updated)
    expected = build(src, tmp_path / "fresh", shards, password=LOCKED_PDF[1])
    assert_same_results(updated, expected)
    on_disk = b"".join(p.read_bytes() for p in opened.path.rglob("*") if p.is_file())
    assert LOCKED_PDF[1].encode() not in on_disk  # never recorded


@pytest.mark.parametrize("shards", SHARDS)
def test_an_update_with_the_password_reads_the_file_that_needed_it(
    tmp_path: Path, src: Path, locked_pdf: Path, shards: int | None
) -> None:
    shutil.copyfile(locked_pdf, src / "locked.pdf")
    index = build(src, tmp_path / "idx", shards)
    assert [Path(f.path).name for f in index.failures] == ["locked.pdf"]
    index.update(password=LOCKED_PDF[1])
    assert index.failures == []
    assert "locked.pdf" in sources_of(index) and hits(index, "hello world", "keyword")
    expected = build(src, tmp_path / "fresh", shards, password=LOCKED_PDF[1])
    assert_same_results(reopen(index.path), expected)


# ----------------------------------------------------------------------------- settings

CUSTOM = {
    "chunk_size": 50,
    "chunk_overlap": 10,
    "title_boost": 2,
    "bm25": {"variant": "okapi", "k1": 1.2, "b": 0.6},
    "tokenizer": {"stemmer": None, "stopwords": None},
    "keep_versions": 2,
}


@pytest.mark.parametrize("shards", SHARDS)
def test_settings_are_recorded_and_reused_by_updates(
    tmp_path: Path, src: Path, shards: int | None
) -> None:
    index = build(src, tmp_path / "idx", shards, **CUSTOM)
    opened = reopen(index.path)
    index.close()  # an open index pins its version, which then outlives keep_versions
    opened.close()
    assert opened.settings == index.settings
    for name, value in CUSTOM.items():
        assert getattr(opened.settings, name) == value, name
    params = opened.info()["bm25"]
    assert (params["variant"], params["k1"], params["b"]) == ("okapi", 1.2, 0.6)
    assert params["tokenizer"]["stemmer"] is None
    files = dict(CORPUS)
    for round_ in range(3):
        files["bees.txt"] = f"Round {round_}: bees and the queen of the hive."
        write_tree(src, files)
        reopen(index.path).update()
    assert len(list_versions(index.path)) == CUSTOM["keep_versions"]
    updated = reopen(index.path)
    assert updated.settings == index.settings
    expected = fresh(tmp_path / "fresh", files, shards, **CUSTOM)
    assert_same_results(updated, expected, (*QUERIES, "dancing", "dance"))
    default = fresh(tmp_path / "default", files, shards)
    assert hits(default, "bees hive", "keyword") != hits(updated, "bees hive", "keyword")


# ----------------------------------------------------------------------------- damaged files


def _index_files(root: Path) -> list[Path]:
    """Every file of an index that a reader depends on: all but locks, pins, the version
    counter and embedding caches (each of which a writer recreates)."""
    found = []
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if not path.is_file() or "cache" in parts or parts[-1] == "NEXT_VERSION":
            continue
        if parts[-1] == "CURRENT" and len(parts) > 1:  # a shard's own pointer: readers
            continue  # follow the top version, which names the shard versions it uses
        if any(part.startswith(".") for part in parts):
            continue
        found.append(path)
    return found


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "flip":
        middle = len(data) // 2
        path.write_bytes(data[:middle] + bytes([data[middle] ^ 0x01]) + data[middle + 1 :])
    elif how == "truncate":
        path.write_bytes(data[: len(data) // 2])
    else:
        path.unlink()


@pytest.mark.parametrize(
    ("shards", "how"),
    [
        *((shards, how) for shards in SHARDS for how in ("flip", "truncate")),
        *((shards, "remove") for shards in SHARDS),
    ],
)
def test_every_damaged_file_is_a_load_error_naming_it(
    fast_dir: Path,  # noqa: F811 - the fixture imported above
    shards: int | None,
    how: str,
) -> None:
    index = build(write_tree(fast_dir / "src", CORPUS), fast_dir / "idx", shards)
    index.close()
    files = _index_files(index.path)
    assert len(files) >= 5
    for victim in files:
        original = victim.read_bytes()
        _damage(victim, how)
        with pytest.raises(IndexLoadError) as caught:
            reopen(index.path).close()
        assert victim.name in str(caught.value), (victim, str(caught.value))
        victim.write_bytes(original)
    reopen(index.path).close()  # every file restored: it opens again


# ----------------------------------------------------------------------------- SIGKILL

KILL_TRIALS = int(os.environ.get("RAGTOOLS_LIFECYCLE_KILLS", "40"))

KILLED_WRITER = """
import random, sys
from pathlib import Path
from ragtools.indexes import Index, IndexWriter
from ragtools.indexes.testing import FakeEmbedder
from ragtools.indexes.store.versions import list_versions, switch_version
from ragtools.parsers import Document, split
print("ready", flush=True)  # imported: the kill lands in the work, not in the imports
idx, seed, shards, extra, *sources = sys.stdin.readline().split()
idx, rng = Path(idx), random.Random(int(seed))
options = dict(chunk_size=80, chunk_overlap=0, keep_versions=4, shards=int(shards) or None)
added = split([Document(text=extra.replace("_", " "), metadata={"source": "extra"})],
              chunk_size=80, chunk_overlap=0)
while True:
    op, src = rng.choice(["build", "update", "add", "delete", "rollback"]), rng.choice(sources)
    index = Index.open(idx, embedder=FakeEmbedder(dim=32))
    if op == "build":
        Index.build([src], idx, embedder=FakeEmbedder(dim=32), **options)
    elif op == "update":
        index.update([src])
    elif op == "add":
        IndexWriter(index).delete([added[0].doc_id])
        IndexWriter(index).add(added)
    elif op == "delete":
        IndexWriter(index).delete([added[0].doc_id])
    else:
        switch_version(idx, rng.choice(list_versions(idx)).name)
    index.close()
"""
EXTRA = "Quarks_and_gluons_sentence_about_extras."


def _corpus(root: Path, name: str, files: int) -> Path:
    text = " ".join(f"{name} {{i}} sentence {j} about {name}s." for j in range(12))
    return write_tree(root / name, {f"{name}-{i}.txt": text.format(i=i) for i in range(files)})


def _texts(index: Index) -> frozenset[str]:
    return frozenset(c.text for c in index.chunks)


@pytest.mark.stress
@pytest.mark.timeout(1200)
@pytest.mark.parametrize(
    "shards",
    SHARDS,
)
def test_writers_killed_at_random_points_leave_a_complete_index(
    fast_dir: Path,  # noqa: F811 - the fixture imported above
    shards: int | None,
) -> None:
    """SIGKILL lands anywhere in builds, updates, adds, deletes and rollbacks: the index
    always opens to one complete state, in its layout, and so does every kept version."""
    sources = [_corpus(fast_dir, name, n) for name, n in (("apple", 3), ("banana", 5))]
    added = manual_chunks("extra", EXTRA.replace("_", " "))
    states = set()
    for s in sources:
        reference = build(s, fast_dir / f"ref-{s.name}", shards)
        states.add(_texts(reference))
        states.add(_texts(reference) | {c.text for c in added})
    idx = fast_dir / "idx"
    build(sources[0], idx, shards)
    rng = random.Random(3333)
    ready = ready_writers(KILLED_WRITER)
    try:
        for trial in range(KILL_TRIALS):
            line = f"{idx} {trial} {shards or 0} {EXTRA} {' '.join(map(str, sources))}"
            proc = start(ready, KILLED_WRITER, line)
            time.sleep(rng.uniform(0.0, 0.6))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            with reopen(idx) as index:
                assert _texts(index) in states
                assert index.info()["counts"]["chunks"] == len(index)
                assert hits(index, "sentence", "keyword")
                assert placed_shards(index) == (shards or 1)
            live = current_version(idx).name
            for version in list_versions(idx):  # every kept version is complete
                switch_version(idx, version.name)
                with reopen(idx) as kept:
                    assert _texts(kept) in states and placed_shards(kept) == (shards or 1)
            switch_version(idx, live)
    finally:
        stop(ready)
    with reopen(idx) as index:  # the next write removes what the killed ones left
        # (an update that changes nothing writes nothing: one of the two changes the sources)
        assert any(index.update([source]).written for source in (sources[0], sources[1]))
    assert [*idx.rglob(".tmp-*"), *idx.rglob("*.tmp")] == []
