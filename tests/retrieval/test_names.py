"""``retriever_for``: one name, one retriever, for the CLI, MCP, eval, the tools and settings."""

from __future__ import annotations

import re

import pytest

from ragtools.indexes.index import Index
from ragtools.indexes.testing import FakeEmbedder
from ragtools.parsers import ConfigError, Document
from ragtools.retrieval import retriever_for
from ragtools.retrieval.evaluation.experiment import make_retrievers
from ragtools.retrieval.frontpage import FrontPageRetriever
from ragtools.retrieval.hybrid import DEFAULT_FUSION, DEFAULT_WEIGHTS, HybridRetriever
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.names import RETRIEVER_NAMES
from ragtools.retrieval.retriever_config import retriever_config, retriever_from_config
from ragtools.retrieval.tools.qwen import Retrieval
from ragtools.retrieval.vector import VectorRetriever


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    docs = [Document(id=f"d{i}", text=f"volcano report {i} lava") for i in range(6)]
    root = tmp_path_factory.mktemp("names") / "index"
    return Index.from_documents(
        docs, root, embedder=FakeEmbedder(dim=16), chunk_size=200, chunk_overlap=0
    )


def test_each_name_and_alias_gives_its_retriever(index: Index) -> None:
    made = {name: retriever_for(index, name, k=3) for name in [*RETRIEVER_NAMES, "bm25", "dense"]}
    assert type(made["keyword"]) is type(made["bm25"]) is KeywordRetriever
    assert type(made["vector"]) is type(made["dense"]) is VectorRetriever
    assert type(made["front_page"]) is FrontPageRetriever
    hybrid, rrf = made["hybrid"], made["hybrid_rrf"]
    assert isinstance(hybrid, HybridRetriever) and isinstance(rrf, HybridRetriever)
    assert (hybrid.fusion, hybrid.weights) == (DEFAULT_FUSION, list(DEFAULT_WEIGHTS))
    assert (rrf.fusion, rrf.weights) == ("rrf", None)
    assert {retriever.k for retriever in made.values()} == {3}
    tuned = retriever_for(index, "hybrid", fusion="dbsf", min_score=0.1, expand="document")
    assert (tuned.fusion, tuned.min_score, tuned.expand.mode) == ("dbsf", 0.1, "document")  # type: ignore[attr-defined, union-attr]
    assert retriever_for(index, " BM25 ").invoke("volcano")[0].stage == "bm25"


def test_an_unknown_name_is_a_config_error_listing_the_valid_ones(index: Index) -> None:
    valid = "keyword, vector, hybrid, hybrid_rrf, front_page (bm25 = keyword, dense = vector)"
    with pytest.raises(
        ConfigError, match=re.escape(f"unknown retriever 'sparse'; choose one of {valid}")
    ):
        retriever_for(index, "sparse")
    with pytest.raises(ConfigError, match="unknown retriever 'sparse'; choose one of keyword"):
        make_retrievers(index, ["keyword", "sparse"])  # rag eval --retrievers
    with pytest.raises(ConfigError, match="candidate_k"):
        retriever_for(index, "hybrid", candidate_k=0)


def test_every_caller_builds_the_same_retriever(index: Index) -> None:
    made = make_retrievers(index, ["bm25", "hybrid"], weights=[0.5, 0.5])
    assert type(made["keyword"]) is KeywordRetriever
    assert made["hybrid"].weights == [0.5, 0.5]  # type: ignore[attr-defined]
    settings = retriever_config(retriever_for(index, "vector", k=4))
    rebuilt = retriever_from_config(settings)
    assert type(rebuilt) is VectorRetriever and rebuilt.k == 4
    qwen = Retrieval(rag_searchers=["keyword_search", "front_page_search"], k=5)
    fused = qwen.retriever(index)
    assert isinstance(fused, HybridRetriever) and fused.fusion == "rrf"
    assert [type(r) for r in fused.retrievers] == [KeywordRetriever, FrontPageRetriever]
    alone = Retrieval(rag_searchers=["hybrid_search"], embedder=FakeEmbedder(dim=16)).retriever(
        index
    )
    assert isinstance(alone, HybridRetriever) and alone.fusion == DEFAULT_FUSION
