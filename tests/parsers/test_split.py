"""split(): offsets, coverage, overlap and size properties (hypothesis), and examples."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtools import parsers
from ragtools.parsers import Chunk, ConfigError, Document, split
from ragtools.parsers.normalize import normalize_text

WORDS = ["a", "to", "the", "retrieval", "BM25", "x" * 37, "中文", "検索", "مرحبا", "Ünï"]
GLUE = [" ", " ", " ", "\n", "\n\n", "\n \n\n", ". ", "! ", "? ", "。", "！", "；", "\t", ",", ""]

texts = st.lists(
    st.sampled_from(WORDS) | st.sampled_from(GLUE) | st.text(max_size=8), max_size=120
).map("".join)


def check_chunks(
    doc: Document,
    chunks: list[Chunk],
    size: int,
    overlap: int,
    length: Callable[[str], int] = len,
) -> None:
    """The invariants every split must satisfy."""
    for chunk in chunks:
        assert doc.text[chunk.start : chunk.end] == chunk.text
        assert chunk.text and chunk.text == chunk.text.strip()
        assert chunk.doc_id == doc.id
        fits = length(chunk.text) <= size
        assert fits or len(chunk.text.split()) == 1, (chunk.text, size)
    covered = bytearray(len(doc.text))
    for chunk in chunks:
        covered[chunk.start : chunk.end] = b"\x01" * (chunk.end - chunk.start)
    for index, char in enumerate(doc.text):
        assert covered[index] or char.isspace(), (index, char)
    for previous, following in itertools.pairwise(chunks):
        assert following.start > previous.start and following.end > previous.end
        shared = doc.text[following.start : previous.end] if previous.end > following.start else ""
        assert length(shared) <= overlap


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, size=st.integers(1, 120), data=st.data())
def test_split_properties_in_characters(text: str, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    doc = Document(text=text)
    chunks = split([doc], chunk_size=size, chunk_overlap=overlap)
    check_chunks(doc, chunks, size, overlap)
    for chunk in chunks:  # characters are the last resort: no chunk ever exceeds the size
        assert len(chunk.text) <= size
    again = split([doc], chunk_size=size, chunk_overlap=overlap)
    assert [c.id for c in again] == [c.id for c in chunks]
    assert len({c.id for c in chunks}) == len(chunks)
    if not text.strip():
        assert chunks == []


def word_count(text: str) -> int:
    return len(text.split())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, size=st.integers(1, 30), data=st.data())
def test_split_properties_with_a_length_function(text: str, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    doc = Document(text=text)
    chunks = split([doc], chunk_size=size, chunk_overlap=overlap, length_function=word_count)
    check_chunks(doc, chunks, size, overlap, word_count)


def test_paragraphs_then_sentences() -> None:
    doc = Document(text="One. Two three.\n\nFour five six. Seven eight nine ten.")
    chunks = split([doc], chunk_size=16, chunk_overlap=0)
    assert [c.text for c in chunks] == [
        "One. Two three.",
        "Four five six.",
        "Seven eight nine",
        "ten.",
    ]


def test_overlap_repeats_whole_pieces() -> None:
    doc = Document(text="aa bb cc dd ee ff")
    chunks = split([doc], chunk_size=8, chunk_overlap=3)
    assert [c.text for c in chunks] == ["aa bb cc", "cc dd ee", "ee ff"]
    assert [(c.start, c.end) for c in chunks] == [(0, 8), (6, 14), (12, 17)]


def test_cjk_sentences_split_without_spaces() -> None:
    text = "第一句话在这里。第二句话也在这里！第三句；第四句。"
    doc = Document(text=normalize_text(text))
    chunks = split([doc], chunk_size=10, chunk_overlap=0)
    assert [c.text for c in chunks] == ["第一句话在这里。", "第二句话也在这里!", "第三句;第四句。"]


def test_long_word_is_cut_into_characters() -> None:
    doc = Document(text="short " + "y" * 25 + " end")
    chunks = split([doc], chunk_size=10, chunk_overlap=0)
    assert [c.text for c in chunks] == ["short", "yyyyyyyyyy", "yyyyyyyyyy", "yyyyy end"]


def test_token_length_function() -> None:
    doc = Document(text="alpha beta gamma delta epsilon zeta eta theta")
    chunks = split([doc], chunk_size=3, chunk_overlap=1, length_function=word_count)
    assert [c.text for c in chunks] == [
        "alpha beta gamma",
        "gamma delta epsilon",
        "epsilon zeta eta",
        "eta theta",
    ]


def test_custom_separators() -> None:
    doc = Document(text="a|b|c||d")
    chunks = split([doc], chunk_size=3, chunk_overlap=0, separators=["||", re.compile(r"\|")])
    assert [c.text for c in chunks] == ["a|", "b|", "c||", "d"]  # separators end a piece


def test_page_metadata_is_carried() -> None:
    page = Document(text="Some text on a page. " * 10, metadata={"source": "f.pdf", "page": 4})
    plain = Document(text="No page here.", metadata={"source": "f.txt"})
    chunks = split([page, plain], chunk_size=50, chunk_overlap=10)
    page_chunks = [c for c in chunks if c.doc_id == page.id]
    assert len(page_chunks) > 1
    for chunk in page_chunks:
        assert chunk.metadata == {"source": "f.pdf", "page": 4, "page_start": 4, "page_end": 4}
    assert chunks[-1].metadata == {"source": "f.txt"}


def test_empty_documents_are_skipped() -> None:
    assert split([Document(text=""), Document(text=" \n\t ")]) == []


@pytest.mark.parametrize(
    ("size", "overlap", "match"),
    [(0, 0, "chunk_size"), (10, -1, "chunk_overlap"), (10, 10, "chunk_overlap")],
)
def test_bad_settings(size: int, overlap: int, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        split([Document(text="x")], chunk_size=size, chunk_overlap=overlap)


def test_bad_separator() -> None:
    with pytest.raises(ConfigError, match="separators"):
        split([Document(text="x")], separators=[3])  # type: ignore[list-item]


def test_scifact_round_trip(scifact_dir: Path) -> None:
    docs = parsers.load(scifact_dir / "corpus.jsonl")
    chunks = split(docs, chunk_size=1000, chunk_overlap=200)
    by_id = {d.id: d for d in docs}
    assert len(chunks) >= len(docs)
    for chunk in chunks:
        assert by_id[chunk.doc_id].text[chunk.start : chunk.end] == chunk.text
        assert len(chunk.text) <= 1000
    assert [c.id for c in split(docs[:50])] == [
        c.id for c in chunks if c.doc_id in {d.id for d in docs[:50]}
    ]


def _reference_heading_path(outline: list[list[Any]], offset: int) -> list[str]:
    """The headings in effect at ``offset``, by the definition: walk the outline in order to
    ``offset``, each heading closing the open ones of its level or deeper."""
    stack: list[tuple[int, str]] = []
    for start, level, title in sorted((s, lv, t) for s, lv, t in outline):
        if start > offset:
            break
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
    return [title for _, title in stack]


@given(
    levels=st.lists(st.integers(1, 4), max_size=30),
    offsets=st.lists(st.integers(0, 400), max_size=20),
)
def test_heading_paths_read_once_equal_the_definition_in_any_order(
    levels: list[int], offsets: list[int]
) -> None:
    from ragtools.parsers.outline import HeadingPaths

    outline: list[list[Any]] = [[n * 13, level, f"h{n}"] for n, level in enumerate(levels)]
    paths = HeadingPaths(outline)
    for offset in [*sorted(offsets), *offsets]:  # increasing (a document's chunks), then any
        assert paths.at(offset) == _reference_heading_path(outline, offset)


def test_a_documents_outline_is_read_once_not_per_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragtools.parsers import outline as outline_module

    reads = []
    entries = outline_module._entries

    def counted(outline: object) -> list[tuple[int, int, str]]:
        reads.append(1)
        return entries(outline)

    monkeypatch.setattr(outline_module, "_entries", counted)
    text = "\n\n".join(f"Part {n}\n\nbody of part {n}" for n in range(1000))
    at = [n for n in range(len(text)) if text.startswith("Part ", n)]
    document = Document(
        text=text, metadata={"outline": [[a, 1, text[a : text.index("\n", a)]] for a in at]}
    )
    chunks = split([document], chunk_size=100, chunk_overlap=0)
    assert len(chunks) > 100
    assert len(reads) == 2  # the sections, and the heading paths: not once per chunk
    assert chunks[-1].metadata["headings"] == ["Part 999"]


@pytest.mark.stress
def test_a_document_of_300000_headings_splits_in_one_pass() -> None:
    """#38 item 8: a DOCX of 300,000 headings ran out of its time budget in the split, which
    read the whole outline for each chunk. The outline is now read once per document."""

    from ragtools.parsers.outline import OUTLINE_KEY

    titles = [f"Part {n}" for n in range(300_000)]
    text, outline, at = [], [], 0
    for n, title in enumerate(titles):
        outline.append([at, 1 + n % 3, title])
        text.append(title)
        at += len(title) + 2
    document = Document(text="\n\n".join(text), metadata={OUTLINE_KEY: outline})
    chunks = split([document], chunk_size=1000, chunk_overlap=200)
    for chunk in (chunks[0], chunks[len(chunks) // 2], chunks[-1]):
        expected = _reference_heading_path(outline, chunk.end - 1)
        assert chunk.metadata["headings"] == expected
    assert chunks[-1].metadata["headings"] == ["Part 299997", "Part 299998", "Part 299999"]
