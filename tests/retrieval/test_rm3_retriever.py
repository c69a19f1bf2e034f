"""``KeywordRetriever(rm3=...)``: feedback from the first pass's keyword text, filters kept."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragtools.indexes.index import Index
from ragtools.indexes.keyword.rm3 import RM3
from ragtools.parsers import ConfigError, Document
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.names import retriever_for

TEXTS = {
    "a": ("Zebra facts", "Striped horses graze on the savanna grass."),
    "b": ("Horse care", "Horses need grass, water and a farrier."),
    "c": ("Savanna", "The savanna is a grassland with scattered trees."),
    "d": ("Boats", "Sailing boats need wind and water."),
    "e": ("Trees", "Oak trees grow slowly in cold climates."),
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    docs = [
        Document(id=i, text=body, metadata={"source": f"{i}.txt", "title": title})
        for i, (title, body) in TEXTS.items()
    ]
    # Lucene BM25: a row's score is the sum of its terms' (BM25+ adds delta * idf of every
    # query term to each matching row, which a sum of one-term searches would not give).
    root = tmp_path_factory.mktemp("rm3") / "i"
    return Index.from_documents(docs, root, vector=False, bm25={"variant": "lucene"})


def test_feedback_reads_the_keyword_text_titles_included(index: Index) -> None:
    rm3 = RM3(fb_docs=2, fb_terms=50, original_query_weight=0.5, max_df_ratio=1.0)
    retriever = KeywordRetriever(index, rm3=rm3)
    weights = retriever.expanded_query(index.state, "striped horses", None)
    assert isinstance(weights, dict)
    assert "zebra" in weights  # only in document a's title, which the BM25 half indexes
    assert sum(weights.values()) == pytest.approx(1.0)


def test_the_second_pass_scores_the_weighted_sum_of_bm25_terms(index: Index) -> None:
    rm3 = RM3(fb_docs=2, fb_terms=5, max_df_ratio=1.0)
    retriever = KeywordRetriever(index, rm3=rm3)
    state = index.state
    weights = retriever.expanded_query(state, "striped horses", None)
    assert isinstance(weights, dict)
    expected = np.zeros(len(state.chunks))
    for term, weight in weights.items():
        one = state.keyword_ranking([term], len(state.chunks))
        expected[one.rows] += weight * one.scores
    hits = retriever.invoke("striped horses", k=5)
    assert hits and [h.scores["bm25"] for h in hits] == sorted(
        (h.scores["bm25"] for h in hits), reverse=True
    )
    by_id = {c.id: row for row, c in enumerate(state.chunks)}
    for hit in hits:
        assert hit.score == pytest.approx(expected[by_id[hit.chunk.id]], rel=1e-12)
    plain = KeywordRetriever(index).invoke("striped horses", k=5)
    assert len(hits) > len(plain)  # expansion reaches documents the query words miss


def test_feedback_and_results_keep_the_filter(index: Index) -> None:
    rm3 = RM3(fb_docs=1, fb_terms=50, max_df_ratio=1.0)
    retriever = KeywordRetriever(index, rm3=rm3)
    hits = retriever.invoke("horses grass", k=5, filter={"source": {"$in": ["b.txt", "c.txt"]}})
    assert {h.chunk.doc_id for h in hits} <= {"b", "c"}
    state = index.state
    allow = np.array([c.doc_id != "a" for c in state.chunks])
    weights = retriever.expanded_query(state, "striped horses", allow)
    assert isinstance(weights, dict) and "zebra" not in weights  # a was not fed back


def test_no_match_and_options_by_name(index: Index) -> None:
    retriever = retriever_for(index, "keyword", rm3={"fb_docs": 3})
    assert isinstance(retriever, KeywordRetriever) and retriever.rm3 == RM3(fb_docs=3)
    assert retriever.invoke("xylophone", k=3) == []
    with pytest.raises(ConfigError, match="fb_terms"):
        KeywordRetriever(index, rm3={"fb_terms": 0})


def test_an_index_without_the_keyword_half_is_refused(tmp_path: Path) -> None:
    from ragtools.indexes.errors import IndexStateError
    from ragtools.indexes.testing import FakeEmbedder

    docs = [Document(id="x", text="some words", metadata={"source": "x.txt"})]
    vector_only = Index.from_documents(
        docs, tmp_path / "v", keyword=False, embedder=FakeEmbedder(dim=8)
    )
    with pytest.raises(IndexStateError, match="without the keyword half"):
        KeywordRetriever(vector_only, rm3=True).invoke("words")
