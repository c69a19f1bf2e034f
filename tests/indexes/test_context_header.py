"""Contextual chunk text: BM25 and the embedder see title and heading path; stored text not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragtools.indexes.dense.windows import WindowedVectorIndex
from ragtools.indexes.index import Index
from ragtools.indexes.settings import IndexSettings, context_header, keyword_text
from ragtools.indexes.testing import FakeEmbedder
from ragtools.parsers import Chunk, Document, load, split

GUIDE = """# Guide

Intro words.

## Install

### From source

Run the compiler twice and wait.

### From wheels

Download the archive.

## Usage

Type commands into the shell.
"""


def test_context_header_joins_title_and_heading_path() -> None:
    metadata = {"title": "Guide", "headings": ["Guide", "Install", "From source"]}
    assert context_header(metadata) == "Guide \u203a Install \u203a From source\n"
    assert context_header({"headings": ["Install"]}) == "Install\n"
    assert context_header({"title": "  Spaced   title "}) == "Spaced title\n"
    assert context_header({"title": "", "headings": []}) == ""
    assert context_header({"source": "a.txt"}) == ""


def test_keyword_text_puts_the_header_after_title_copies() -> None:
    metadata = {"title": "T", "headings": ["H"]}
    assert keyword_text("body", metadata, 1, context=True) == "T\nT \u203a H\nbody"
    assert keyword_text("body", metadata, 0, context=True) == "T \u203a H\nbody"
    assert keyword_text("body", metadata, 1) == "T\nbody"


@pytest.fixture(scope="module")
def guide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("docs") / "guide.md"
    path.write_text(GUIDE, encoding="utf-8")
    return path


@pytest.mark.parametrize("window", [0, 40])
def test_context_never_changes_stored_chunks_or_offsets(
    guide: Path, tmp_path: Path, window: int
) -> None:
    common = {"chunk_size": 60, "chunk_overlap": 10, "vector_window": window}
    if window:
        common["vector_window_overlap"] = 10
    embedder = FakeEmbedder(dim=32)
    plain = Index.build([guide], tmp_path / "plain", embedder=embedder, **common)
    with_context = Index.build([guide], tmp_path / "ctx", embedder=embedder, context=True, **common)
    assert with_context.settings.context and not plain.settings.context
    documents = {d.id: d for d in load(guide)}
    assert [c.model_dump() for c in with_context.chunks] == [c.model_dump() for c in plain.chunks]
    for chunk in with_context.chunks:
        assert documents[chunk.doc_id].text[chunk.start : chunk.end] == chunk.text
    # "compiler" is under Install > From source: the header makes "install" find it too.
    source = next(c for c in with_context.chunks if "compiler" in c.text)
    assert "Install" not in source.text
    state = with_context.state
    found = state.keyword_ranking("install compiler", 1)
    assert state.chunks[int(found.rows[0])].id == source.id
    ranked = plain.state.keyword_ranking("install", len(plain.chunks))
    assert source.id not in {plain.chunks[r].id for r in ranked.rows.tolist()}
    assert source.id in {
        state.chunks[r].id for r in state.keyword_ranking("install", 10).rows.tolist()
    }


def test_every_vector_window_is_embedded_with_its_header() -> None:
    seen: list[str] = []

    def embed(texts: list[str]) -> np.ndarray:
        seen.extend(texts)
        return FakeEmbedder(dim=8).embed_documents(texts)

    texts = ["one two three four five six seven eight nine ten", "short"]
    WindowedVectorIndex.build(
        texts, embed, dim=8, kind="flat", window=20, overlap=5, headers=["A \u203a B\n", ""]
    )
    first = [t for t in seen if t.startswith("A \u203a B\n")]
    assert len(first) >= 2 and "short" in seen  # each window of text 0, and text 1 bare


def test_settings_helpers_follow_the_setting() -> None:
    document = Document(text="Body text.", metadata={"source": "x.md", "title": "Doc"})
    (chunk,) = split([document], chunk_size=1000, chunk_overlap=0)
    on, off = IndexSettings(context=True), IndexSettings()
    assert on.vector_header(chunk) == "Doc\n"
    assert on.keyword_text(chunk) == "Doc\nDoc\nBody text."  # title boost 1, then header
    assert off.vector_header(chunk) == "" and off.keyword_text(chunk) == "Doc\nBody text."


def test_chunk_headings_exist_for_markdown(guide: Path) -> None:
    chunks: list[Chunk] = split(load(guide), chunk_size=60, chunk_overlap=10)
    paths = {tuple(c.metadata.get("headings", [])) for c in chunks}  # type: ignore[arg-type]
    assert ("Guide", "Install", "From source") in paths
