"""Manifest versions: an index written by an older format opens, migrated, with the same results.

``legacy_v1/`` was written by ragtools 0.1.0 before the core redesign (manifest format 1,
keyword parameters under ``tokenizer``, the window owner map in ``windows.npy``), over three
small files with ``FakeEmbedder(dim=32)``; ``legacy_v1.expected.json`` holds what that code
returned for three queries.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragtools.indexes.index import Index
from ragtools.indexes.store.manifest import (
    DOCUMENT_TEXTS,
    FORMAT_VERSION,
    VERSION_FORMAT,
    migrate,
)
from ragtools.indexes.testing import FakeEmbedder
from ragtools.indexes.writer import IndexWriter
from ragtools.retrieval import HybridRetriever, KeywordRetriever, VectorRetriever

HERE = Path(__file__).resolve().parent


@pytest.fixture
def legacy(tmp_path: Path) -> Index:
    root = shutil.copytree(HERE / "legacy_v1", tmp_path / "legacy")
    return Index.open(root, embedder=FakeEmbedder(dim=32))


def test_a_format_1_index_opens_migrated_and_searches_as_before(legacy: Index) -> None:
    expected = json.loads((HERE / "legacy_v1.expected.json").read_text(encoding="utf-8"))
    assert legacy.manifest["format_version"] == FORMAT_VERSION
    assert legacy.manifest["vector_owners"] == "windows.npy"  # several windows per chunk
    assert legacy.manifest["bm25"]["variant"] == "bm25plus"
    assert legacy.settings.precision == "fp32"  # written before the setting: fp32 vectors
    for query, halves in expected["results"].items():
        keyword = [(legacy.chunks[r].id, s) for r, s in legacy.keyword_search(query, 5)]
        vector = [(legacy.chunks[r].id, s) for r, s in legacy.vector_search(query, 5)]
        # Ties now order by chunk key, not by row (indexes.store.segments): same hits, same scores.
        assert dict(keyword) == pytest.approx(dict(halves["bm25"]))
        assert [s for _, s in keyword] == pytest.approx([s for _, s in halves["bm25"]])
        assert dict(vector) == pytest.approx(dict(halves["vector"]), abs=1e-6)
        assert [s for _, s in vector] == pytest.approx([s for _, s in halves["vector"]], abs=1e-6)
    hits = HybridRetriever([KeywordRetriever(legacy), VectorRetriever(legacy)]).invoke("spores")
    assert hits and hits[0].chunk.source.endswith(("a.md", "b.txt"))


def test_the_next_change_writes_the_current_format(legacy: Index) -> None:
    IndexWriter(legacy).delete([legacy.chunks[-1].doc_id])
    reopened = Index.open(legacy.path, embedder=FakeEmbedder(dim=32))
    assert reopened.manifest["format"] == VERSION_FORMAT
    (segment,) = reopened.segments  # the live rows, written into one segment
    bundle = json.loads((legacy.path / segment.path / "manifest.json").read_text("utf-8"))
    assert bundle["format_version"] == FORMAT_VERSION
    assert "tokenizer" not in bundle
    assert bundle["vector_owners"] == "vector_owners.npy"
    assert [c.id for c in reopened.chunks] == [c.id for c in legacy.chunks]


def test_migrate_fills_what_format_1_left_implicit() -> None:
    old = {"format_version": 1, "settings": {"chunk_size": 100}, "tokenizer": {"k1": 1.2},
           "files": {"chunks.jsonl": "x"}}  # fmt: skip
    new = migrate(old)
    assert new["settings"] == {"title_boost": 0, "vector_window": 0, "chunk_size": 100}
    assert new["bm25"] == {"k1": 1.2} and "tokenizer" not in new
    assert new["vector_owners"] is None
    assert old["format_version"] == 1  # the input is not modified
    assert migrate(new) == new


def test_migrate_3_to_4_stores_no_document_texts() -> None:
    old = {"format_version": 3, "settings": {}, "bm25": None, "source_root": "/src"}
    new = migrate(old)
    assert new["format_version"] == 4 == FORMAT_VERSION
    assert new[DOCUMENT_TEXTS] is None and new["source_root"] == "/src"
    assert DOCUMENT_TEXTS not in old and migrate(new) == new
