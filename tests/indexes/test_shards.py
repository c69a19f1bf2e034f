"""A sharded index returns what one index over the same sources returns: ids, order, scores."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from ragtools.indexes.bundle import Index
from ragtools.indexes.shards import ShardedIndex, shard_dir, shard_of
from ragtools.indexes.testing import FakeEmbedder
from ragtools.indexes.versions import current_version
from ragtools.parsers import ConfigError, IndexLoadError
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
    assert [c.id for c in sharded.chunks] == [c.id for c in single.chunks]
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
    assert isinstance(sharded, ShardedIndex) and len(sharded.shards) == n_shards
    assert_same_results(single, sharded)
    reopened = Index.open(tmp_path / "many", embedder=embedder)
    assert isinstance(reopened, ShardedIndex)
    assert_same_results(single, reopened)
    for shard in reopened.shards:  # each file lives in the shard its path hashes to
        for chunk in shard.state.chunks if shard.state is not None else []:
            assert shard_of(str(chunk.metadata["path"]), n_shards) == shard.number


def test_update_rewrites_only_changed_shards_and_still_equals(tmp_path: Path) -> None:
    src = write_corpus(tmp_path, 30, seed=2)
    embedder = FakeEmbedder(dim=32)
    sharded = Index.build([src], tmp_path / "many", shards=4, embedder=embedder, **settings())
    before = {s.number: s.version for s in sharded.shards}
    edited = src / "file-005.md"
    edited.write_text("---\npart: 4\n---\nbrand new words about quasars and pulsars.\n", "utf-8")
    (src / "file-011.md").unlink()
    (src / "file-100.md").write_text("gamma rays photons and quasars.\n", "utf-8")
    report = sharded.update()
    assert report.changed == [str(edited)] and report.removed == [str(src / "file-011.md")]
    assert report.added == [str(src / "file-100.md")]
    touched = {shard_of(str(p), 4) for p in (edited, src / "file-011.md", src / "file-100.md")}
    after = {s.number: s.version for s in sharded.shards}
    for number in range(4):
        assert (after[number] != before[number]) == (number in touched)
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
    assert [c.id for c in sharded.chunks] == [c.id for c in single.chunks]
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


def test_damaged_shard_or_top_manifest_is_named(tmp_path: Path, corpus: Path) -> None:
    root = tmp_path / "many"
    Index.build([corpus], root, shards=2, vector=False, **settings())
    victim = current_version(shard_dir(root, 1)) / "chunks.jsonl"
    victim.write_text(victim.read_text("utf-8").replace("alpha", "ALPHA"), "utf-8")
    with pytest.raises(IndexLoadError, match=r"shard-001.*chunks\.jsonl"):
        Index.open(root)
    top = current_version(root) / "shards.json"
    data = json.loads(top.read_text("utf-8"))
    data["counts"]["chunks"] += 1
    top.write_text(json.dumps(data), "utf-8")
    with pytest.raises(IndexLoadError, match=r"shards\.json"):
        Index.open(root)
    stats = current_version(root) / "global_bm25.json"
    stats.write_text("{}", "utf-8")
    with pytest.raises(IndexLoadError):
        Index.open(root)


def test_missing_shard_is_named(tmp_path: Path, corpus: Path) -> None:
    import shutil

    root = tmp_path / "many"
    Index.build([corpus], root, shards=3, vector=False, **settings())
    shutil.rmtree(shard_dir(root, 2))
    with pytest.raises(IndexLoadError, match="shard-002"):
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
    """More shards than files: empty shards hold no bundle; an update that empties a shard
    or fills an empty one, and a file that fails to parse, still give one index's results."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("alpha particles are helium nuclei", "utf-8")
    (src / "b.txt").write_text("beta decay emits an electron", "utf-8")
    (src / "broken.pdf").write_bytes(b"%PDF-1.4\n% nothing else\n")
    embedder = FakeEmbedder(dim=16)
    root = tmp_path / "many"
    sharded = Index.build([src], root, shards=6, embedder=embedder)
    assert isinstance(sharded, ShardedIndex)
    assert sum(s.state is None for s in sharded.shards) >= 3
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


def test_each_shard_scores_from_mapped_files_of_the_top_version(
    tmp_path: Path, corpus: Path
) -> None:
    """Opening maps every shard's globally scored postings from the top version (nothing is
    re-laid out in memory); a missing, damaged or mis-shaped file names the shard and file."""
    import shutil

    from ragtools.indexes.shards import scored_dir

    root = tmp_path / "many"
    Index.build([corpus], root, shards=2, vector=False, **settings())
    single = Index.build([corpus], tmp_path / "one", vector=False, **settings())
    opened = Index.open(root)
    assert isinstance(opened, ShardedIndex)
    for shard in opened.shards:
        assert shard.state is not None and shard.state.bm25 is not None
        snapshot = shard.state.bm25._snapshot()
        for array in (snapshot.postings.docs, snapshot.weights.weights):
            assert isinstance(array.base, np.memmap)  # mapped, not read
    for query in QUERIES:
        for flt in FILTERS:
            assert hits_of(opened, query, "keyword", flt) == hits_of(single, query, "keyword", flt)
    scored = scored_dir(current_version(root), 1)
    saved = tmp_path / "saved"
    shutil.copytree(scored, saved)
    (scored / "weights.npy").unlink()
    with pytest.raises(IndexLoadError, match=r"shard-001.*weights\.npy"):
        Index.open(root)
    weights = np.load(saved / "weights.npy")
    np.save(scored / "weights.npy", weights + 1.0)  # tampered: the checksum differs
    with pytest.raises(IndexLoadError, match=r"shard-001.*weights\.npy.*checksum"):
        Index.open(root)


def test_a_scored_file_that_does_not_fit_its_shard_is_named(tmp_path: Path, corpus: Path) -> None:
    from ragtools.indexes._bm25_global import GlobalStats
    from ragtools.indexes.shards import GlobalScoring, scored_dir

    root = tmp_path / "many"
    index = Index.build([corpus], root, shards=2, vector=False, **settings())
    assert isinstance(index, ShardedIndex)
    top = current_version(root)
    scoring = GlobalScoring(
        GlobalStats.from_json(json.loads((top / "global_bm25.json").read_text()), "x")
    )
    directory = scored_dir(top, 0)
    np.save(directory / "doc_len.npy", np.load(directory / "doc_len.npy")[:-1])
    template = index.settings.new_bm25()
    rows = len(index.shards[0].global_rows)
    with pytest.raises(IndexLoadError, match=r"shard-000.*doc_len\.npy.*rows"):
        scoring.load(template, top, 0, rows)
    np.save(directory / "indptr.npy", np.load(directory / "indptr.npy")[:-1])
    with pytest.raises(IndexLoadError, match=r"shard-000.*indptr\.npy"):
        scoring.load(template, top, 0, rows)


def test_the_rows_of_each_shard_are_read_from_both_formats(tmp_path: Path, corpus: Path) -> None:
    """Format 2 stores the shard of every row (shard_rows.npy); a format 1 top version (runs
    of rows in shards.json) still opens to the same results; bad shard numbers are named."""
    from ragtools.indexes._persist import read_json, save_npy, write_manifest
    from ragtools.indexes.shards import SHARD_ROWS, SHARDED_FORMAT, SHARDS_MANIFEST

    root = tmp_path / "many"
    built = Index.build([corpus], root, shards=3, vector=False, **settings())
    assert isinstance(built, ShardedIndex)
    single = Index.build([corpus], tmp_path / "one", vector=False, **settings())
    top = current_version(root)
    owner = np.load(top / SHARD_ROWS)
    for shard in built.shards:
        assert np.array_equal(np.flatnonzero(owner == shard.number), shard.global_rows)
    manifest = read_json(top / SHARDS_MANIFEST)
    for entry, shard in zip(manifest["shards"], built.shards, strict=True):
        rows = shard.global_rows.tolist()
        entry["rows"] = [[r, 1] for r in rows]  # runs of one row: valid format 1 runs
        del entry["chunks"]
    files = [f for f in manifest["files"] if f != SHARD_ROWS]
    body = {k: v for k, v in manifest.items() if k not in ("files", "manifest_sha256")}
    (top / SHARD_ROWS).unlink()
    write_manifest(
        top, SHARDS_MANIFEST, fmt=SHARDED_FORMAT, version=1, files=files, data=body, sealed=True
    )
    legacy = Index.open(root)
    for query in QUERIES:
        assert hits_of(legacy, query, "keyword", None) == hits_of(single, query, "keyword", None)
    root2 = tmp_path / "again"
    Index.build([corpus], root2, shards=3, vector=False, **settings())
    top2 = current_version(root2)
    bad = np.load(top2 / SHARD_ROWS)
    bad[0] = 7
    save_npy(top2 / SHARD_ROWS, bad)
    with pytest.raises(IndexLoadError, match=r"shard_rows\.npy.*checksum"):
        Index.open(root2)


def test_shard_numbers_outside_the_index_are_named(tmp_path: Path) -> None:
    from ragtools.indexes._persist import save_npy
    from ragtools.indexes._shard_rows import SHARD_ROWS, read_shard_rows

    save_npy(tmp_path / SHARD_ROWS, np.array([0, 1, 2, 1], dtype=np.int32))
    rows = read_shard_rows(tmp_path, [{}, {}, {}])
    assert [r.tolist() for r in rows] == [[0], [1, 3], [2]]
    with pytest.raises(IndexLoadError, match=r"shard_rows\.npy.*outside \[0, 2\)"):
        read_shard_rows(tmp_path, [{}, {}])
    save_npy(tmp_path / SHARD_ROWS, np.array([0, 1], dtype=np.int64))
    with pytest.raises(IndexLoadError, match=r"shard_rows\.npy.*int32"):
        read_shard_rows(tmp_path, [{}, {}])
