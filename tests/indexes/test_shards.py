"""A sharded index returns what one index over the same sources returns: ids, order, scores."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from ragtools.indexes.errors import IndexLoadError
from ragtools.indexes.index import Index
from ragtools.indexes.store.segments import shard_of
from ragtools.indexes.store.versions import current_version
from ragtools.indexes.testing import FakeEmbedder, live_segment
from ragtools.parsers import ConfigError
from ragtools.retrieval.hybrid import HybridRetriever
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.vector import VectorRetriever

TOPICS = [
    "helium nuclei alpha particles stopped by paper",
    "neutron proton electron beta decay emission",
    "gamma rays photons high energy shielding lead",
    "cosine similarity vectors embeddings search",
    "inverted index postings term frequency ranking",
    "shards merge statistics global document frequency",
]
QUERIES = [
    "alpha particles",
    "beta decay electron",
    "photons energy lead shielding",
    "ranking term frequency",
    "global statistics of shards",
    "paper",
    "unknownword",
]
FILTERS = [None, {"source": {"$ne": ""}}, {"part": {"$gte": 3}}]


def write_corpus(root: Path, n_files: int, seed: int) -> Path:
    """Text files of mixed topics and lengths; a few duplicated texts make exact ties."""
    rng = random.Random(seed)
    src = root / "docs"
    src.mkdir(parents=True, exist_ok=True)
    for i in range(n_files):
        paragraphs = []
        for _ in range(rng.randint(1, 4)):
            words = " ".join(
                w for _ in range(3) for w in rng.choice(TOPICS).split()[: rng.randint(2, 7)]
            )
            paragraphs.append(words + ".")
        text = "\n\n".join(paragraphs) if i % 7 else "alpha particles are helium nuclei."
        (src / f"file-{i:03d}.md").write_text(f"---\npart: {i % 5}\n---\n{text}\n", "utf-8")
    return src


def settings() -> dict[str, object]:
    return {"chunk_size": 120, "chunk_overlap": 0}


def hits_of(index: Index, query: str, mode: str, flt: object) -> list[tuple[str, float]]:
    if mode == "keyword":
        retriever = KeywordRetriever(index, k=8)
    elif mode == "vector":
        retriever = VectorRetriever(index, k=8)
    else:
        retriever = HybridRetriever.from_index(index, k=8, candidate_k=20)
    return [(h.chunk_id, h.score) for h in retriever.invoke(query, filter=flt)]


def assert_same_results(single: Index, sharded: Index) -> None:
    assert sorted(c.id for c in sharded.chunks) == sorted(c.id for c in single.chunks)
    for query in QUERIES:
        for flt in FILTERS:
            for mode in ("keyword", "vector", "hybrid"):
                expected = hits_of(single, query, mode, flt)
                assert hits_of(sharded, query, mode, flt) == expected, (query, flt, mode)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus"), 40, seed=1)


@pytest.mark.parametrize("n_shards", [1, 2, 3, 4])
def test_sharded_build_equals_one_index(tmp_path: Path, corpus: Path, n_shards: int) -> None:
    embedder = FakeEmbedder(dim=32)
    single = Index.build([corpus], tmp_path / "one", embedder=embedder, **settings())
    sharded = Index.build(
        [corpus], tmp_path / "many", shards=n_shards, embedder=embedder, **settings()
    )
    assert sharded.n_shards == n_shards
    assert sorted({s.shard for s in sharded.segments}) == list(range(n_shards))
    assert_same_results(single, sharded)
    reopened = Index.open(tmp_path / "many", embedder=embedder)
    assert reopened.n_shards == n_shards
    assert_same_results(single, reopened)
    rows = 0
    for segment, part in zip(reopened.segments, reopened.state.parts, strict=True):
        assert part is not None  # each file lives in the shard its path hashes to
        for chunk in part.chunks:
            assert shard_of(str(chunk.metadata["path"]), n_shards) == segment.shard
        rows += len(part.chunks)
    assert rows == len(reopened.chunks)


def test_update_writes_segments_for_the_changed_shards_and_still_equals(tmp_path: Path) -> None:
    src = write_corpus(tmp_path, 30, seed=2)
    embedder = FakeEmbedder(dim=32)
    sharded = Index.build([src], tmp_path / "many", shards=4, embedder=embedder, **settings())
    before = {s.name for s in sharded.segments}
    # A file's shard hashes its path, which holds the test's temporary folder: the edit and
    # the removal go to the shard holding most files, and its two smallest, so most of its
    # segment stays live and no merge folds it (a fold is a new segment of its own).
    by_shard: dict[int, list[Path]] = {}
    for file in sorted(src.glob("*.md")):
        by_shard.setdefault(shard_of(str(file), 4), []).append(file)
    crowded = max(by_shard.values(), key=len)
    edited, removed = sorted(crowded, key=lambda f: f.stat().st_size)[:2]
    edited.write_text("---\npart: 4\n---\nbrand new words about quasars and pulsars.\n", "utf-8")
    removed.unlink()
    (src / "file-100.md").write_text("gamma rays photons and quasars.\n", "utf-8")
    report = sharded.update()
    assert report.changed == [str(edited)] and report.removed == [str(removed)]
    assert report.added == [str(src / "file-100.md")]
    touched = {shard_of(str(p), 4) for p in (edited, src / "file-100.md")}
    new = [s for s in sharded.segments if s.name not in before]
    assert sorted(s.shard for s in new) == sorted(touched)  # one new segment per shard
    assert {s.name for s in sharded.segments} >= before  # the old ones are untouched
    single = Index.build([src], tmp_path / "one", embedder=embedder, **settings())
    assert_same_results(single, sharded)
    assert_same_results(single, Index.open(tmp_path / "many", embedder=embedder))
    assert hits_of(sharded, "quasars", "keyword", None)


def test_scifact_documents_in_shards_equal_one_index(tmp_path: Path, scifact_dir: Path) -> None:
    from ragtools.retrieval.evaluation.beir import corpus_documents, load_beir

    dataset = load_beir(scifact_dir, split="train")
    documents = corpus_documents(dataset)
    embedder = FakeEmbedder(dim=64)
    options = {"chunk_size": 12_000, "chunk_overlap": 0, "embedder": embedder}
    single = Index.from_documents(documents, tmp_path / "one", **options)
    sharded = Index.from_documents(documents, tmp_path / "many", shards=3, **options)
    assert sorted(c.id for c in sharded.chunks) == sorted(c.id for c in single.chunks)
    queries = list(dataset.queries.values())[:60]
    for query in queries:
        for mode in ("keyword", "vector", "hybrid"):
            assert hits_of(sharded, query, mode, None) == hits_of(single, query, mode, None)


@pytest.mark.parametrize("shards", [0, 1025, 100_000])
def test_shards_from_one_to_the_cap(tmp_path: Path, corpus: Path, shards: int) -> None:
    with pytest.raises(
        ConfigError, match=f"shards must be an integer from 1 to 1024, got {shards}"
    ):
        Index.build([corpus], tmp_path / "x", shards=shards, vector=False)
    assert not (tmp_path / "x").exists()  # refused before anything was written


def test_damaged_segment_or_version_manifest_is_named(tmp_path: Path, corpus: Path) -> None:
    root = tmp_path / "many"
    Index.build([corpus], root, shards=2, vector=False, **settings())
    victim = live_segment(root, 1) / "chunks.jsonl"
    victim.write_text(victim.read_text("utf-8").replace("alpha", "ALPHA"), "utf-8")
    with pytest.raises(IndexLoadError, match=rf"{live_segment(root, 1).name}.*chunks\.jsonl"):
        Index.open(root)
    top = current_version(root) / "version.json"
    data = json.loads(top.read_text("utf-8"))
    data["counts"]["chunks"] += 1
    top.write_text(json.dumps(data), "utf-8")
    with pytest.raises(IndexLoadError, match=r"version\.json"):
        Index.open(root)


def test_missing_segment_is_named(tmp_path: Path, corpus: Path) -> None:
    import shutil

    root = tmp_path / "many"
    Index.build([corpus], root, shards=3, vector=False, **settings())
    gone = live_segment(root, 2)
    shutil.rmtree(gone)
    with pytest.raises(IndexLoadError, match=gone.name):
        Index.open(root)


def test_failed_update_keeps_the_previous_index(tmp_path: Path) -> None:
    src = write_corpus(tmp_path, 12, seed=3)
    root = tmp_path / "many"
    sharded = Index.build([src], root, shards=3, vector=False, **settings())
    ids = [c.id for c in sharded.chunks]
    for path in src.iterdir():
        path.write_text("", "utf-8")  # nothing left to index: the update must refuse
    with pytest.raises(ConfigError, match="no text"):
        sharded.update()
    assert [c.id for c in Index.open(root).chunks] == ids
    assert np.array_equal(
        [c.id for c in sharded.chunks], ids
    )  # the in-memory index is unchanged too


def test_empty_shards_and_failed_files(tmp_path: Path) -> None:
    """More shards than files: empty shards hold no segment; an update that empties a shard
    or fills an empty one, and a file that fails to parse, still give one index's results."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("alpha particles are helium nuclei", "utf-8")
    (src / "b.txt").write_text("beta decay emits an electron", "utf-8")
    (src / "broken.pdf").write_bytes(b"%PDF-1.4\n% nothing else\n")
    embedder = FakeEmbedder(dim=16)
    root = tmp_path / "many"
    sharded = Index.build([src], root, shards=6, embedder=embedder)
    assert len({s.shard for s in sharded.segments}) <= 3  # shards without files: no segment
    assert [f.path for f in sharded.failures] == [str(src / "broken.pdf")]
    (src / "a.txt").unlink()
    for i in range(5):
        (src / f"new-{i}.txt").write_text(f"gamma rays photons number {i}", "utf-8")
    report = sharded.update()
    assert report.removed == [str(src / "a.txt")] and len(report.added) == 5
    single = Index.build([src], tmp_path / "one", embedder=embedder)
    assert [f.path for f in sharded.failures] == [f.path for f in single.failures]
    assert_same_results(single, sharded)
    assert_same_results(single, Index.open(root, embedder=embedder))
