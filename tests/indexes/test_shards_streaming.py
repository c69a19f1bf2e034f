"""A sharded build from documents holds one shard's documents at a time, never all of them."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragtools.indexes.index import Index
from ragtools.indexes.store.segments import shard_of
from ragtools.indexes.writer import IndexWriter
from ragtools.parsers import Document
from ragtools.retrieval.keyword import KeywordRetriever

N_DOCS = 80
N_SHARDS = 4
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
]


def document(i: int) -> Document:
    words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(5 + i % 9)]
    return Document(id=f"stream-{i:03d}", text=" ".join(words), metadata={"n": i})


def alive() -> int:
    """Documents of this test that some object still references."""
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is Document and o.id.startswith("stream-"))


def test_documents_are_read_lazily_and_one_shard_is_held_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    yielded = 0

    def documents() -> Iterator[Document]:
        nonlocal yielded
        for i in range(N_DOCS):
            yielded += 1
            yield document(i)

    # While a shard is split, the documents alive are that shard's: the others are on disk.
    held: list[tuple[int, int]] = []
    real_split = IndexWriter.split

    def counting_split(self: IndexWriter, docs: Any) -> Any:
        held.append((alive(), len(docs)))
        return real_split(self, docs)

    monkeypatch.setattr(IndexWriter, "split", counting_split)
    stream = documents()
    sharded = Index.from_documents(stream, tmp_path / "many", shards=N_SHARDS, vector=False)
    assert yielded == N_DOCS and next(stream, None) is None  # the iterator was read once
    per_shard = [
        sum(shard_of(f"stream-{i:03d}", N_SHARDS) == s for i in range(N_DOCS))
        for s in range(N_SHARDS)
    ]
    assert [n for _, n in held] == per_shard
    assert [a for a, _ in held] == per_shard  # never more than the shard being built
    assert max(per_shard) < N_DOCS
    assert not list((tmp_path / "many" / "segments").glob(".tmp-*"))  # spill files removed

    # ... and the result is one index's.
    monkeypatch.undo()
    single = Index.from_documents(
        (document(i) for i in range(N_DOCS)), tmp_path / "one", vector=False
    )
    assert sharded.n_shards == N_SHARDS
    assert sorted(c.id for c in sharded.chunks) == sorted(c.id for c in single.chunks)
    for query in ("alpha beta", "theta kappa mu", "zeta"):
        expected = [(h.chunk_id, h.score) for h in KeywordRetriever(single, k=10).invoke(query)]
        got = [(h.chunk_id, h.score) for h in KeywordRetriever(sharded, k=10).invoke(query)]
        assert got == expected


def test_metadata_round_trips_through_the_spill(tmp_path: Path) -> None:
    docs = [
        Document(id="a", text="first text here", metadata={"x": 0.1, "tags": ["p", "q"]}),
        Document(id="b", text="second text", metadata={"nested": {"k": None}, "n": 2**40}),
    ]
    sharded = Index.from_documents(iter(docs), tmp_path / "many", shards=2, vector=False)
    single = Index.from_documents(docs, tmp_path / "one", vector=False)

    def dumped(index: Index) -> list[dict[str, Any]]:
        return sorted((c.model_dump() for c in index.chunks), key=lambda c: c["id"])

    assert dumped(sharded) == dumped(single)


def _count_parsed_chunks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A counter (its one item) of the chunk lines parsed from a mapped chunk file from now."""
    from ragtools.indexes.store import chunk_file

    parsed = [0]
    real_chunk = chunk_file.chunk_of_line

    def counting_chunk(line: str) -> Any:
        parsed[0] += 1
        return real_chunk(line)

    monkeypatch.setattr(chunk_file, "chunk_of_line", counting_chunk)
    return parsed


def test_large_segments_open_without_parsing_their_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragtools.indexes import index as bundle

    monkeypatch.setattr(bundle, "LAZY_ROWS", 0)  # every segment counts as large
    Index.from_documents(
        (document(i) for i in range(N_DOCS)), tmp_path / "many", shards=N_SHARDS, vector=False
    )
    single = Index.from_documents(
        [document(i) for i in range(N_DOCS)], tmp_path / "one", vector=False
    )
    parsed = _count_parsed_chunks(monkeypatch)
    sharded = Index.open(tmp_path / "many")
    assert parsed[0] == 0 and len(sharded.chunks) == N_DOCS
    hits = KeywordRetriever(sharded, k=3).invoke("theta kappa")
    assert parsed[0] < N_DOCS  # the candidates' chunks (many tie here), never every row
    expected = KeywordRetriever(single, k=3).invoke("theta kappa")
    assert [(h.chunk_id, h.score) for h in hits] == [(h.chunk_id, h.score) for h in expected]
    by_id = {c.id: c for c in single.chunks}
    assert all(by_id[c.id] == c for c in sharded.chunks[2:5]) and sharded.chunks[-1].id in by_id
    with pytest.raises(IndexError):
        sharded.chunks[N_DOCS]


def test_chunk_file_reads_what_the_store_wrote(tmp_path: Path) -> None:
    from ragtools.indexes.errors import IndexLoadError
    from ragtools.indexes.store.chunk_file import ChunkFile
    from ragtools.indexes.store.chunks import read_chunks, write_chunks
    from ragtools.parsers import split

    chunks = split([document(i) for i in range(12)], chunk_size=20, chunk_overlap=0)
    write_chunks(tmp_path / "chunks.jsonl", chunks)
    lazy = ChunkFile(tmp_path / "chunks.jsonl")
    assert list(lazy) == read_chunks(tmp_path / "chunks.jsonl") == chunks
    assert lazy[-1] == chunks[-1] and lazy[3:7] == chunks[3:7] and len(lazy) == len(chunks)
    write_chunks(tmp_path / "empty.jsonl", [])
    assert len(ChunkFile(tmp_path / "empty.jsonl")) == 0
    (tmp_path / "bad.jsonl").write_text('{"id": 1}\n', "utf-8")
    with pytest.raises(IndexLoadError, match=r"bad\.jsonl.*line 1"):
        ChunkFile(tmp_path / "bad.jsonl")[0]
    with pytest.raises(IndexLoadError, match="missing"):
        ChunkFile(tmp_path / "absent.jsonl")


def test_a_large_version_of_small_segments_opens_without_parsing_their_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether chunks stay in their files is decided by the version's rows: each shard's
    segment is small here, the version is not, so no chunk is parsed at open (memory grows
    with the chunks held, however they are cut into shards); a version under the bound,
    one shard read alone, holds its chunks."""
    from ragtools.indexes import index as bundle
    from ragtools.indexes.store import chunk_file

    Index.from_documents(
        (document(i) for i in range(N_DOCS)), tmp_path / "many", shards=N_SHARDS, vector=False
    )
    monkeypatch.setattr(bundle, "LAZY_ROWS", N_DOCS - 1)  # each segment under it, not all
    parsed = _count_parsed_chunks(monkeypatch)
    sharded = Index.open(tmp_path / "many")
    parts = [p.chunks for p in sharded.state.parts if p is not None]
    assert len(parts) == N_SHARDS and all(len(p) < N_DOCS for p in parts)
    assert all(isinstance(p, chunk_file.ChunkFile) for p in parts) and parsed[0] == 0
    monkeypatch.setattr(bundle, "LAZY_ROWS", N_DOCS)
    held = Index.open(tmp_path / "many")
    assert not any(isinstance(p.chunks, chunk_file.ChunkFile) for p in held.state.parts if p)
    assert [c.id for c in sharded.chunks] == [c.id for c in held.chunks]


def test_a_large_segments_document_ids_are_read_at_the_first_text_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening holds no document id of a large segment; a lookup reads its ids then, and
    ids that do not fit the stored texts are named when they are read."""
    from ragtools.indexes import index as bundle
    from ragtools.indexes.errors import IndexLoadError
    from ragtools.indexes.store.doc_texts import ChainedTexts, DocumentTexts

    monkeypatch.setattr(bundle, "LAZY_ROWS", 0)
    docs = [document(i) for i in range(N_DOCS)]
    Index.from_documents(iter(docs), tmp_path / "many", shards=N_SHARDS, vector=False)
    sharded = Index.open(tmp_path / "many")
    texts = sharded.state.texts
    assert isinstance(texts, ChainedTexts)
    parts = [p for p in texts.parts if isinstance(p, DocumentTexts)]
    assert len(parts) == N_SHARDS and all(p._rows is None for p in parts)
    assert texts[docs[5].id] == docs[5].text and len(texts) == N_DOCS
    assert all(p._rows is not None for p in parts)
    version = next(p for p in parts if docs[5].id in p)._where.parent
    ids = version / "documents" / "ids.json"
    lazy = DocumentTexts.open(
        version, ["documents/" + n for n in ("ids.json", "offsets.npy", "texts.txt")], lazy=True
    )
    ids.write_text('["only-one"]', "utf-8")  # read at open as bytes: the change is not seen
    assert docs[5].id in lazy
    again = DocumentTexts.open(
        version, ["documents/" + n for n in ("ids.json", "offsets.npy", "texts.txt")], lazy=True
    )
    with pytest.raises(IndexLoadError, match=r"offsets\.npy.*offsets do not cut"):
        again[docs[5].id]
