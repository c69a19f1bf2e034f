"""Expanded passages are exact document spans whatever whitespace separates the chunks: every
version stores its documents' texts (after build, update, add, delete; one index or shards),
and an index written before format 4 still expands, stitched from its chunks."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ragtools.indexes.errors import IndexLoadError
from ragtools.indexes.index import Index
from ragtools.indexes.store.doc_texts import DocumentTexts
from ragtools.indexes.store.manifest import DOCUMENT_TEXTS
from ragtools.indexes.store.persist import save_npy
from ragtools.indexes.testing import FakeEmbedder, live_segment
from ragtools.indexes.writer import IndexWriter
from ragtools.parsers import Chunk, Document, load
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.tools import create_retriever_tool, make_tool_call

HERE = Path(__file__).resolve().parents[1] / "indexes"
TOPICS = ["amber", "basalt", "cobalt", "dolomite", "emerald", "feldspar", "garnet", "halite"]
GAPS = ["  \t ", "\n\n\t\n  ", " \t\t", "\n \n\n", "\t  \t", "   \n\t\n   ", " \t \t "]
"""Spaces, tabs and blank lines between paragraphs: what no chunk covers when they do not
overlap, and what a passage must give back exactly."""


def _text(doc: int, topic_shift: int = 0) -> str:
    parts = [
        f"Section {p} of note {doc} studies {TOPICS[(p + topic_shift) % len(TOPICS)]} "
        f"crystals with care."
        for p in range(len(TOPICS))
    ]
    return parts[0] + "".join(gap + part for gap, part in zip(GAPS * 2, parts[1:], strict=False))


def _options() -> dict[str, object]:
    return {"embedder": FakeEmbedder(dim=32), "chunk_size": 60, "chunk_overlap": 0}


def _middle_passage(index: Index, topic: str, doc_id: str) -> tuple[Hit, Hit]:
    """A hit in the middle of ``doc_id`` and the passage its neighbour expansion gives."""
    where = {"doc_id": doc_id}
    (hit,) = KeywordRetriever(index).invoke(topic, k=1, filter=where)
    (passage,) = KeywordRetriever(index, expand="neighbors").invoke(topic, k=1, filter=where)
    rows = sorted((c for c in index.chunks if c.doc_id == doc_id), key=lambda c: c.start)
    at = [c.id for c in rows].index(hit.chunk.id)
    assert 0 < at < len(rows) - 1  # a middle hit: neighbours on both sides
    assert not any(a.end > b.start for a, b in itertools.pairwise(rows))  # no overlap
    assert (passage.chunk.start, passage.chunk.end) == (rows[at - 1].start, rows[at + 1].end)
    assert passage.parts == (hit,)
    return hit, passage


def _assert_exact(passage: Hit, text: str) -> None:
    span = text[passage.chunk.start : passage.chunk.end]
    assert passage.chunk.text == span
    gaps = span.replace(passage.parts[0].chunk.text, "|")
    assert "\t" in gaps or "  " in gaps  # the span really crosses a gap a newline is not


def test_middle_hit_over_varied_whitespace_is_the_exact_span(tmp_path: Path) -> None:
    docs = [Document(id=f"n{i}", text=_text(i), metadata={"source": f"n{i}.txt"}) for i in (0, 1)]
    index = Index.from_documents(docs, tmp_path / "index", **_options())
    assert index.manifest[DOCUMENT_TEXTS] == "documents"
    for doc in docs:
        for topic in TOPICS[2:6]:
            _, passage = _middle_passage(index, topic, doc.id)
            _assert_exact(passage, doc.text)
    reopened = Index.open(index.path, embedder=FakeEmbedder(dim=32))
    _, passage = _middle_passage(reopened, "dolomite", "n1")
    _assert_exact(passage, docs[1].text)


def test_a_tool_cites_two_adjacent_hits_once_and_keeps_both(tmp_path: Path) -> None:
    docs = [Document(id=f"n{i}", text=_text(i), metadata={"source": f"n{i}.txt"}) for i in (0, 1)]
    index = Index.from_documents(docs, tmp_path / "index", **_options())
    options = {"k": 2, "filter": {"doc_id": "n1"}}
    plain = create_retriever_tool(KeywordRetriever(index), "notes", "Notes.", **options)
    grown = create_retriever_tool(
        KeywordRetriever(index), "notes", "Notes.", expand="neighbors", **options
    )
    call = dict(make_tool_call("notes", {"query": "dolomite emerald"}, id="c1"))
    hits = plain.invoke(call).artifact
    rows = sorted((c for c in index.chunks if c.doc_id == "n1"), key=lambda c: c.start)
    positions = sorted([c.id for c in rows].index(h.chunk.id) for h in hits)
    assert positions[1] - positions[0] == 1  # two adjacent chunks
    message = grown.invoke(call)
    (passage,) = message.artifact  # one passage ...
    assert message.content.count("[1] ") == 1 and "[2] " not in message.content  # ... cited once
    assert passage.chunk.text in message.content
    assert list(passage.parts) == hits  # the artifact still holds both original hits
    assert passage.score == max(h.score for h in hits)
    assert (passage.chunk.start, passage.chunk.end) == (
        rows[positions[0] - 1].start,
        rows[positions[1] + 1].end,
    )
    _assert_exact(passage, docs[1].text)


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    src = tmp_path / "notes"
    src.mkdir()
    for i in range(4):
        (src / f"note-{i}.txt").write_text(_text(i), encoding="utf-8")
    return src


def _doc_id(index: Index, name: str) -> str:
    return next(c.doc_id for c in index.chunks if c.source.endswith(name))


def _check_files(index: Index, src: Path, topic: str = "dolomite") -> None:
    for path in sorted(src.iterdir()):
        (doc,) = load(path)
        _, passage = _middle_passage(index, topic, _doc_id(index, path.name))
        _assert_exact(passage, doc.text)


@pytest.mark.parametrize("shards", [None, 2], ids=["one-index", "two-shards"])
def test_exact_after_build_and_after_update_edits_a_file(notes: Path, shards: int | None) -> None:
    index = Index.build([notes], notes.parent / "index", shards=shards, **_options())
    assert index.n_shards == (shards or 1)
    _check_files(index, notes)
    edited = notes / "note-2.txt"
    edited.write_text(_text(2, topic_shift=1).replace("care", "zeal"), encoding="utf-8")
    report = index.update()
    assert report.changed == [str(edited)] and report.unchanged == 3
    _check_files(index, notes)  # the edited file's new text, the others' carried over
    (passage,) = KeywordRetriever(index, expand="neighbors").invoke(
        "zeal dolomite", k=1, filter={"doc_id": _doc_id(index, "note-2.txt")}
    )
    assert "zeal" in passage.chunk.text
    reopened = Index.open(index.path, embedder=FakeEmbedder(dim=32))
    _check_files(reopened, notes)


def test_add_and_delete_keep_the_texts_of_the_documents_left(tmp_path: Path) -> None:
    docs = [Document(id=f"n{i}", text=_text(i), metadata={"source": f"n{i}.txt"}) for i in (0, 1)]
    index = Index.from_documents(docs, tmp_path / "index", **_options())
    extra = Chunk(doc_id="loose", text="a loose chunk about garnet", start=0, end=26)
    IndexWriter(index).add([extra])
    IndexWriter(index).delete(["n0"])
    reopened = Index.open(index.path, embedder=FakeEmbedder(dim=32))
    assert reopened.state.texts is not None
    assert set(reopened.state.texts) == {"n1"}  # no text for the chunk added without one
    _, passage = _middle_passage(reopened, "emerald", "n1")
    _assert_exact(passage, docs[1].text)
    (loose,) = KeywordRetriever(reopened, expand="neighbors").invoke(
        "loose garnet", k=1, filter={"doc_id": "loose"}
    )
    assert loose.chunk.text == extra.text  # stitched from its one chunk


def test_an_older_format_index_still_expands_from_its_chunks(tmp_path: Path) -> None:
    root = shutil.copytree(HERE / "legacy_v1", tmp_path / "legacy")
    legacy = Index.open(root, embedder=FakeEmbedder(dim=32))
    assert legacy.manifest[DOCUMENT_TEXTS] is None and legacy.state.texts is None
    for query in ("spores ferns", "seeds in cones", "moss water"):
        plain = KeywordRetriever(legacy).invoke(query, k=3)
        expanded = KeywordRetriever(legacy, expand="neighbors").invoke(query, k=3)
        assert sorted(h.chunk.id for p in expanded for h in p.parts) == sorted(
            h.chunk.id for h in plain
        )
        for passage in expanded:
            start, end = passage.chunk.start, passage.chunk.end
            assert len(passage.chunk.text) == end - start
            rows = [c for c in legacy.chunks if c.doc_id == passage.chunk.doc_id]
            inside = [c for c in rows if start <= c.start and c.end <= end]
            assert inside
            for chunk in inside:  # every chunk it covers, at its own offsets
                assert passage.chunk.text[chunk.start - start : chunk.end - start] == chunk.text
    IndexWriter(legacy).delete([legacy.chunks[-1].doc_id])  # the next version: format 4
    again = Index.open(root, embedder=FakeEmbedder(dim=32))
    assert again.manifest[DOCUMENT_TEXTS] == "documents" and len(again.state.texts or {}) == 0
    assert KeywordRetriever(again, expand="neighbors").invoke("spores", k=2)


def test_stored_texts_that_do_not_fit_are_named(tmp_path: Path) -> None:
    docs = [Document(id="n0", text=_text(0), metadata={"source": "n0.txt"})]
    index = Index.from_documents(docs, tmp_path / "index", **_options())
    version = live_segment(index.path)
    files = json.loads((version / "manifest.json").read_text("utf-8"))["files"]
    texts = DocumentTexts.open(version, files)
    assert texts["n0"] == docs[0].text and "n1" not in texts
    with pytest.raises(IndexLoadError, match="does not list"):
        DocumentTexts.open(version, ["chunks.jsonl"])
    save_npy(version / "documents" / "offsets.npy", np.asarray([0, 5], dtype=np.int64))
    with pytest.raises(IndexLoadError, match=r"offsets\.npy.*offsets do not cut"):
        DocumentTexts.open(version, files)
    with pytest.raises(IndexLoadError, match="checksum mismatch"):
        Index.open(index.path, embedder=FakeEmbedder(dim=32))
