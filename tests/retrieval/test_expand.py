"""Expansion of hits into exact document spans, and score thresholds."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ragtools.indexes.index import Index
from ragtools.indexes.testing import FakeEmbedder
from ragtools.indexes.writer import IndexWriter
from ragtools.parsers import ConfigError, Document, split
from ragtools.retrieval.expand import Expansion, expand_hits
from ragtools.retrieval.frontpage import FrontPageRetriever
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.hybrid import HybridRetriever
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.threshold import apply_min_score
from ragtools.retrieval.vector import VectorRetriever

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]


def _paragraphs(doc: int) -> list[str]:
    return [
        f"Paragraph {p} of document {doc} talks about {WORDS[p]} and {WORDS[p]}s in depth."
        for p in range(len(WORDS))
    ]


@pytest.fixture(scope="module")
def docs() -> dict[str, Document]:
    made = [
        Document(
            id=f"d{i}",
            text="\n\n".join(_paragraphs(i)),
            metadata={"source": f"file{i}.pdf", "page": i + 1},
        )
        for i in range(3)
    ]
    return {d.id: d for d in made}


def _index(root: Path, docs: dict[str, Document], overlap: int) -> Index:
    return Index.from_documents(
        list(docs.values()), root, embedder=FakeEmbedder(dim=64), chunk_size=80,
        chunk_overlap=overlap,
    )  # fmt: skip


@pytest.fixture(scope="module", params=[0, 30], ids=["no-overlap", "overlap"])
def index(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, docs) -> Index:  # type: ignore[no-untyped-def]
    return _index(tmp_path_factory.mktemp("expand") / "index", docs, request.param)


def _check_exact(hit: Hit, docs: dict[str, Document]) -> None:
    assert hit.chunk.text == docs[hit.chunk.doc_id].text[hit.chunk.start : hit.chunk.end]


def test_neighbour_expansion_of_a_middle_hit_is_the_exact_merged_span(index: Index, docs) -> None:  # type: ignore[no-untyped-def]
    plain = KeywordRetriever(index).invoke("echo", k=1)
    hit = plain[0]
    assert hit.chunk.doc_id in docs and hit.chunk.start > 0
    expanded = KeywordRetriever(index, expand="neighbors").invoke("echo", k=1)
    assert len(expanded) == 1
    passage = expanded[0]
    _check_exact(passage, docs)
    rows = sorted((c for c in index.chunks if c.doc_id == hit.chunk.doc_id), key=lambda c: c.start)
    at = [c.id for c in rows].index(hit.chunk.id)
    assert passage.chunk.start == rows[at - 1].start
    assert passage.chunk.end == max(c.end for c in rows[at - 1 : at + 2])
    assert passage.score == hit.score and passage.stage == hit.stage
    assert passage.parts == (hit,)


def test_two_adjacent_hits_merge_into_one_cited_passage(index: Index, docs) -> None:  # type: ignore[no-untyped-def]
    retriever = KeywordRetriever(index, expand="neighbors")
    query = "d1 delta echo"  # paragraphs 3 and 4 of every document are adjacent chunks
    plain = KeywordRetriever(index).invoke(query, filter={"doc_id": "d1"}, k=2)
    rows = sorted((c for c in index.chunks if c.doc_id == "d1"), key=lambda c: c.start)
    positions = sorted([c.id for c in rows].index(h.chunk.id) for h in plain)
    assert positions[1] - positions[0] == 1
    passages = retriever.invoke(query, filter={"doc_id": "d1"}, k=2)
    assert len(passages) == 1  # one passage, one citation
    (passage,) = passages
    _check_exact(passage, docs)
    assert passage.rank == 1
    assert passage.score == max(h.score for h in plain)
    # the artifact keeps both original hits
    assert sorted(h.chunk.id for h in passage.parts) == sorted(h.chunk.id for h in plain)
    assert list(passage.parts) == sorted(plain, key=lambda h: h.rank)
    assert passage.chunk.start == rows[positions[0] - 1].start


def test_window_chars_cuts_at_word_boundaries_inside_the_document(index: Index, docs) -> None:  # type: ignore[no-untyped-def]
    hit = KeywordRetriever(index).invoke("foxtrot", k=1)[0]
    (passage,) = KeywordRetriever(index, expand=Expansion("neighbors", window_chars=25)).invoke(
        "foxtrot", k=1
    )
    _check_exact(passage, docs)
    assert hit.chunk.start - 25 <= passage.chunk.start <= hit.chunk.start
    assert hit.chunk.end <= passage.chunk.end <= hit.chunk.end + 25
    assert passage.chunk.text.startswith(passage.chunk.text.strip()[:1])  # trimmed
    text = docs[hit.chunk.doc_id].text
    assert passage.chunk.start == 0 or text[passage.chunk.start - 1].isspace()


def test_document_expansion_respects_its_size_limit(index: Index, docs) -> None:  # type: ignore[no-untyped-def]
    (whole,) = KeywordRetriever(index, expand="document").invoke("golf", k=1)
    doc = docs[whole.chunk.doc_id]
    assert (whole.chunk.start, whole.chunk.end) == (0, len(doc.text))
    assert whole.chunk.text == doc.text
    limited = KeywordRetriever(index, expand={"mode": "document", "max_chars": 200})
    (part,) = limited.invoke("golf", k=1)
    _check_exact(part, docs)
    assert len(part.chunk.text) <= 200
    assert (
        part.chunk.start <= part.parts[0].chunk.start and part.parts[0].chunk.end <= part.chunk.end
    )


def test_a_page_bounded_section_never_crosses_its_page(tmp_path: Path) -> None:
    # one document whose chunks lie on three pages (as a parser that keeps a paged file whole
    # marks them): the section of a page-2 hit stays on page 2.
    text = "\n\n".join(
        f"Page {p} line {w} about {WORDS[w]}{p}." for p in (1, 2, 3) for w in range(4)
    )
    book = Document(id="book", text=text, metadata={"source": "book.txt"})
    paged = [
        chunk.model_copy(update={"metadata": {**chunk.metadata, "page_start": page,
                                              "page_end": page}})
        for chunk in split([book], chunk_size=40, chunk_overlap=0)
        for page in [int(chunk.text.split()[1])]
    ]  # fmt: skip
    other = Document(id="other", text="Unrelated words.", metadata={"source": "o.txt"})
    index = Index.from_documents([other], tmp_path / "i", embedder=FakeEmbedder(dim=32))
    IndexWriter(index).add(paged)
    (passage,) = KeywordRetriever(index, expand="section").invoke("charlie2", k=1)
    assert passage.parts[0].chunk.metadata["page_start"] == 2
    assert passage.chunk.text == text[passage.chunk.start : passage.chunk.end]
    page2 = [c for c in paged if c.metadata["page_start"] == 2]
    assert (passage.chunk.start, passage.chunk.end) == (page2[0].start, page2[-1].end)
    assert "Page 1" not in passage.chunk.text and "Page 3" not in passage.chunk.text
    assert passage.chunk.metadata["page_start"] == passage.chunk.metadata["page_end"] == 2
    (whole,) = KeywordRetriever(index, expand="document").invoke("charlie2", k=1)
    assert whole.chunk.text == text  # the document mode does cross pages


def test_hybrid_and_vector_expand_too(index: Index, docs) -> None:  # type: ignore[no-untyped-def]
    for retriever in (
        HybridRetriever.from_index(index, expand="neighbors"),
        FrontPageRetriever.from_index(index, expand="document", min_score=1.0),
        VectorRetriever.from_index(index, expand="section", k=3),
    ):
        passages = retriever.invoke("hotel india", k=3)
        assert passages
        for passage in passages:
            _check_exact(passage, docs)
            assert passage.parts
        assert [p.rank for p in passages] == list(range(1, len(passages) + 1))
        # one passage per document region: no two passages of a document overlap
        spans = sorted((p.chunk.doc_id, p.chunk.start, p.chunk.end) for p in passages)
        for a, b in itertools.pairwise(spans):
            assert a[0] != b[0] or a[2] < b[1]


def test_min_score_drops_exactly_the_hits_under_it(index: Index) -> None:
    plain = KeywordRetriever(index).invoke("paragraph 3 document 1 delta", k=10)
    distinct = sorted({h.score for h in plain})
    assert len(distinct) >= 2
    cut = distinct[len(distinct) // 2]
    kept = KeywordRetriever(index, min_score=cut).invoke("paragraph 3 document 1 delta", k=10)
    assert [h.chunk.id for h in kept] == [h.chunk.id for h in plain if h.score >= cut]
    assert [h.rank for h in kept] == list(range(1, len(kept) + 1))
    assert 0 < len(kept) < len(plain)

    hybrid = HybridRetriever.from_index(index).invoke("paragraph 3 document 1 delta", k=10)
    floor = sorted(h.scores.get("vector", -1.0) for h in hybrid)[len(hybrid) // 2]
    staged = HybridRetriever.from_index(index, min_score={"vector": floor}).invoke(
        "paragraph 3 document 1 delta", k=10
    )
    expected = [h.chunk.id for h in hybrid if h.scores.get("vector", float("-inf")) >= floor]
    assert [h.chunk.id for h in staged] == expected
    assert apply_min_score(hybrid, {"fused": 2.0}) == []


def test_bad_options_are_named(index: Index) -> None:
    with pytest.raises(ConfigError, match="expand must be one of"):
        KeywordRetriever(index, expand="paragraph")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="window"):
        Expansion("neighbors", window=-1)
    with pytest.raises(ConfigError, match="invalid expand options"):
        KeywordRetriever(index, expand={"mode": "section", "size": 3})
    with pytest.raises(ConfigError, match="min_score"):
        KeywordRetriever(index, min_score="high")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"min_score\['vector'\]"):
        HybridRetriever.from_index(index, min_score={"vector": float("nan")})


@pytest.mark.parametrize(
    "expansion",
    [
        Expansion("neighbors"),
        Expansion("neighbors", window=2),
        Expansion("neighbors", window_chars=37),
        Expansion("section", max_chars=150),
        Expansion("document", max_chars=333),
        Expansion("document"),
    ],
    ids=repr,
)
def test_every_chunk_and_pair_expands_to_exact_spans(index: Index, docs, expansion) -> None:  # type: ignore[no-untyped-def]
    def hit(chunk, rank):  # type: ignore[no-untyped-def]
        return Hit(
            chunk=chunk, score=1.0 / rank, rank=rank, scores={"bm25": 1.0 / rank}, stage="bm25"
        )

    chunks = list(index.chunks)
    for i, chunk in enumerate(chunks):
        pair = [hit(chunk, 1), hit(chunks[(i + 3) % len(chunks)], 2)]
        passages = expand_hits(pair, expansion, [index.state])
        for passage in passages:
            _check_exact(passage, docs)
            for part in passage.parts:
                assert (
                    passage.chunk.start <= part.chunk.start <= part.chunk.end <= passage.chunk.end
                )
        assert sorted(p.chunk.id for x in passages for p in x.parts) == sorted(
            h.chunk.id for h in pair
        )


def test_a_passage_round_trips_through_json_with_its_parts(index: Index) -> None:
    passages = KeywordRetriever(index, expand="neighbors").invoke("d1 delta echo", k=3)
    for passage in passages:
        assert Hit.model_validate_json(passage.model_dump_json()) == passage


def test_a_heading_section_stays_under_its_heading(tmp_path: Path) -> None:
    # chunks carrying a heading path (as the Markdown parser gives them): the section of a hit
    # is the run of chunks under the same headings, even on one page.
    parts = [("Install", w) for w in range(3)] + [("Usage", w) for w in range(3)]
    text = "\n\n".join(f"Under {h} step {w} with {WORDS[w]}{h}." for h, w in parts)
    guide = Document(id="guide", text=text, metadata={"source": "guide.md"})
    chunks = [
        chunk.model_copy(update={"metadata": {**chunk.metadata, "headings": ["Guide", heading]}})
        for chunk in split([guide], chunk_size=40, chunk_overlap=10)
        for heading in [chunk.text.split()[1]]
    ]
    other = Document(id="other", text="Unrelated words.", metadata={"source": "o.txt"})
    index = Index.from_documents([other], tmp_path / "i", embedder=FakeEmbedder(dim=32))
    IndexWriter(index).add(chunks)
    (passage,) = KeywordRetriever(index, expand="section").invoke("bravoUsage", k=1)
    usage = [c for c in chunks if c.metadata["headings"] == ["Guide", "Usage"]]
    assert (passage.chunk.start, passage.chunk.end) == (usage[0].start, usage[-1].end)
    assert passage.chunk.text == text[passage.chunk.start : passage.chunk.end]
    assert "Install" not in passage.chunk.text
