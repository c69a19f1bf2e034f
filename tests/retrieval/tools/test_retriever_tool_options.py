"""create_retriever_tool's bound filter and k, allowed filters, threshold and expansion."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from ragtools.indexes.index import Index
from ragtools.indexes.testing import FakeEmbedder
from ragtools.parsers import ConfigError, Document
from ragtools.parsers.document import Chunk
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.rerank import MMRReranker
from ragtools.retrieval.tools import (
    RetrieverInput,
    ToolMessage,
    convert_to_openai_tool,
    create_retriever_tool,
    make_tool_call,
)

SOURCES = ["a.pdf", "b.pdf", "c.pdf"]
TENANTS = ["umbrella", "acme"]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    docs = [
        Document(
            id=f"d{i}",
            text=f"Warranty terms, part {i}: the warranty covers item{i}. " + "Repair. " * (i % 4),
            metadata={"source": SOURCES[i % 3], "page": i + 1, "tenant": TENANTS[i % 2]},
        )
        for i in range(12)
    ]
    root = tmp_path_factory.mktemp("tool") / "index"
    return Index.from_documents(docs, root, embedder=FakeEmbedder(dim=32), chunk_size=500)


class Recording(KeywordRetriever):
    """The real keyword retriever, recording the filter and k of every search."""

    def _retrieve(self, query: str, k: int, filter: Any) -> list[Hit]:
        self.seen.append((k, filter))
        return super()._retrieve(query, k, filter)


def _recording(index: Index) -> Recording:
    retriever = Recording(index)
    retriever.seen = []  # type: ignore[attr-defined]
    return retriever


def _call(args: dict[str, Any]) -> dict[str, Any]:
    return dict(make_tool_call("warranty", args, id="c1"))


def test_a_bound_filter_and_k_cannot_be_overridden(index: Index) -> None:
    retriever = _recording(index)
    tool = create_retriever_tool(
        retriever, "warranty", "Warranty terms.", filter={"tenant": "acme"}, k=2
    )
    assert tool.args_schema is RetrieverInput  # the model sees the query only
    assert set(tool.tool_call_json_schema()["properties"]) == {"query"}
    message = tool.invoke(_call({"query": "warranty covers"}))
    assert isinstance(message, ToolMessage)
    assert len(message.artifact) == 2
    assert {h.chunk.metadata["tenant"] for h in message.artifact} == {"acme"}
    assert retriever.seen == [(2, {"tenant": "acme"})]  # type: ignore[attr-defined]
    for crafted in (
        {"query": "warranty", "filter": {"tenant": "umbrella"}},
        {"query": "warranty", "k": 50},
        {"query": "warranty", "filter": {"$or": [{"tenant": "umbrella"}, {}]}},
    ):
        with pytest.raises(ValidationError):
            tool.invoke(_call(crafted))
        with pytest.raises(ValidationError):
            tool.invoke(crafted)
    assert len(retriever.seen) == 1  # type: ignore[attr-defined]  # never ran with them
    with pytest.raises(ConfigError, match="invalid filter"):
        create_retriever_tool(retriever, "w", "W.", filter={"page": {"$near": 3}})


def test_allowed_filters_are_described_validated_and_joined_with_the_bound_one(
    index: Index,
) -> None:
    retriever = _recording(index)
    tool = create_retriever_tool(
        retriever,
        "warranty",
        "Warranty terms.",
        filter={"tenant": "acme"},
        allow_filters={"source": SOURCES, "page": {"min": 1, "max": 12}},
    )
    parameters = convert_to_openai_tool(tool)["function"]["parameters"]
    choice = parameters["properties"]["filter"]["anyOf"][0]["properties"]
    assert choice["source"]["anyOf"][0]["enum"] == SOURCES
    page = choice["page"]["anyOf"][0]["properties"]
    assert page["min"]["anyOf"][0] == {"type": "integer", "minimum": 1, "maximum": 12}
    assert parameters["required"] == ["query"]

    message = tool.invoke(
        _call({"query": "warranty", "filter": {"source": "b.pdf", "page": {"min": 3, "max": 9}}})
    )
    assert message.artifact
    for hit in message.artifact:
        meta = hit.chunk.metadata
        assert meta["source"] == "b.pdf" and 3 <= meta["page"] <= 9 and meta["tenant"] == "acme"
    expected = {
        "$and": [
            {"tenant": "acme"},
            {"source": "b.pdf", "page": {"$gte": 3, "$lte": 9}},
        ]
    }
    assert retriever.seen[-1][1] == expected  # type: ignore[attr-defined]
    several = tool.invoke(_call({"query": "warranty", "filter": {"source": ["a.pdf", "c.pdf"]}}))
    assert {h.chunk.metadata["source"] for h in several.artifact} <= {"a.pdf", "c.pdf"}

    calls = len(retriever.seen)  # type: ignore[attr-defined]
    for bad in (
        {"source": "z.pdf"},
        {"page": {"min": 0}},
        {"page": {"max": 99}},
        {"tenant": "umbrella"},
    ):
        error = tool.invoke(_call({"query": "warranty", "filter": bad}))
        assert isinstance(error, ToolMessage) and error.status == "error"
        assert "filter" in error.content
    reversed_range = tool.invoke(
        _call({"query": "warranty", "filter": {"page": {"min": 9, "max": 3}}})
    )
    assert reversed_range.status == "error" and "min 9 is above max 3" in reversed_range.content
    assert len(retriever.seen) == calls  # type: ignore[attr-defined]

    with pytest.raises(ConfigError, match=r"allow_filters\['page'\]"):
        create_retriever_tool(retriever, "w", "W.", allow_filters={"page": {"from": 1}})
    with pytest.raises(ConfigError, match=r"allow_filters\['source'\]"):
        create_retriever_tool(retriever, "w", "W.", allow_filters={"source": []})


def test_a_tool_threshold_says_how_many_results_passed(index: Index) -> None:
    plain = KeywordRetriever(index).invoke("warranty item7", k=5)
    cut = plain[0].score
    assert plain[1].score < cut
    tool = create_retriever_tool(KeywordRetriever(index), "warranty", "W.", k=5, min_score=cut)
    content, artifact = tool.run_with_artifact({"query": "warranty item7"})
    assert [h.chunk.id for h in artifact] == [h.chunk.id for h in plain if h.score >= cut]
    assert len(artifact) < 5
    assert content.endswith(
        f"Only {len(artifact)} of the 5 requested results passed the score threshold."
    )


def test_a_tool_expands_and_keeps_the_original_hits(index: Index) -> None:
    tool = create_retriever_tool(KeywordRetriever(index), "warranty", "W.", k=3, expand="document")
    _, artifact = tool.run_with_artifact({"query": "warranty item7"})
    assert artifact and all(hit.parts for hit in artifact)
    assert [h.rank for h in artifact] == list(range(1, len(artifact) + 1))
    with pytest.raises(ConfigError, match="expand is set on both"):
        create_retriever_tool(
            KeywordRetriever(index, expand="section"), "w", "W.", expand="document"
        )


# --- MMR over fetch_k ------------------------------------------------------------------------

VOCAB = ["rust", "ownership", "borrow", "lifetime", "move", "tax", "invoice", "river"]


class WordEmbedder:
    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([self.embed_query(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        words = text.split()
        return np.array([float(words.count(w)) for w in VOCAB])


def _pool() -> list[Hit]:
    """A fused pool: 20 Rust chunks (many near duplicates) on top, far-away PDFs below."""
    rust = ["rust ownership borrow"] * 8 + ["rust ownership lifetime"] * 6
    rust += ["rust ownership move"] * 6
    far = ["tax invoice", "river", "invoice river", "tax"] * 5
    texts = rust + far
    return [
        Hit(
            chunk=Chunk(doc_id=f"d{i:02d}", text=t),
            score=100.0 - i,
            rank=i + 1,
            scores={"fused": 100.0 - i},
            stage="fused",
        )
        for i, t in enumerate(texts)
    ]


def test_mmr_over_fetch_k_keeps_diverse_relevant_chunks() -> None:
    pool = _pool()
    whole = MMRReranker(WordEmbedder(), fetch_k=None).rerank("rust ownership", pool, k=4)
    assert [h.chunk.text.split()[0] for h in whole[1:]] != ["rust"] * 3  # far-away ones win
    picked = MMRReranker(WordEmbedder()).rerank("rust ownership", pool, k=3)
    assert sorted(h.chunk.text for h in picked) == [
        "rust ownership borrow",
        "rust ownership lifetime",
        "rust ownership move",
    ]
    with pytest.raises(ConfigError, match="fetch_k"):
        MMRReranker(WordEmbedder(), fetch_k=0)


def test_expanded_tool_needs_index_chunks_to_stay_exact(tmp_path: Path) -> None:
    # a retriever without an index: each hit is its own passage, nothing invented
    from tests.retrieval.tools.conftest import FakeRetriever, make_hits

    tool = create_retriever_tool(FakeRetriever(make_hits()), "w", "W.", expand="neighbors")
    _, artifact = tool.run_with_artifact({"query": "alpha"})
    assert [h.chunk.text for h in artifact] == [h.chunk.text for h in make_hits()]
    assert [h.parts[0].chunk.id for h in artifact] == [h.chunk.id for h in make_hits()]


def test_allowed_filters_work_async_and_through_the_langchain_tool_adapter(index: Index) -> None:
    import asyncio

    from ragtools.retrieval.integrations.langchain import to_langchain_tool

    tool = create_retriever_tool(
        KeywordRetriever(index), "warranty", "Warranty terms.", allow_filters={"source": SOURCES}
    )
    call = _call({"query": "warranty", "filter": {"source": "c.pdf"}})
    sync = tool.invoke(call)
    assert sync.artifact and {h.chunk.metadata["source"] for h in sync.artifact} == {"c.pdf"}
    assert asyncio.run(tool.ainvoke(call)).artifact == sync.artifact
    adapted = to_langchain_tool(tool)
    enum = adapted.tool_call_schema.model_json_schema()  # what LangChain shows the model
    assert "c.pdf" in str(enum)
    message = adapted.invoke(call)
    assert [h.chunk.id for h in message.artifact] == [h.chunk.id for h in sync.artifact]


# --- one query path: the threshold and the expansion run once per call -----------------------


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the calls of the threshold and the expansion, in every module that holds them."""
    import sys

    from ragtools.retrieval import expand, threshold

    calls = {"min_score": 0, "expand": 0}
    real = {"min_score": threshold.apply_min_score, "expand": expand.expand_hits}

    def counted(name: str) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return real[name](*args, **kwargs)

        return wrapper

    for module in [m for name, m in sys.modules.items() if name.startswith("ragtools.")]:
        for name, attribute in (("min_score", "apply_min_score"), ("expand", "expand_hits")):
            if getattr(module, attribute, None) is real[name]:
                monkeypatch.setattr(module, attribute, counted(name))
    return calls


@pytest.mark.parametrize("where", ["tool", "retriever"])
def test_min_score_and_expansion_run_once_per_tool_call(
    index: Index, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    from ragtools.retrieval.expand import Expansion, expand_hits
    from ragtools.retrieval.hybrid import HybridRetriever
    from ragtools.retrieval.threshold import apply_min_score
    from ragtools.retrieval.tools import retriever_tool

    query = "warranty item7 repair"
    plain = KeywordRetriever(index).invoke(query, k=5)
    cut = plain[2].score
    # the reference: the threshold, then the expansion, applied by hand once
    expected = expand_hits(apply_min_score(plain, cut), Expansion("neighbors"), [index.state])
    # a stage threshold: the hybrid's own score is the fused one
    options: dict[str, Any] = {"min_score": {"bm25": cut}, "expand": "neighbors"}
    calls = _counting(monkeypatch)
    for make in (KeywordRetriever, HybridRetriever.from_index):
        calls.update(min_score=0, expand=0)
        if where == "tool":
            tool = create_retriever_tool(make(index), "w", "W.", k=5, **options)
        else:
            tool = create_retriever_tool(make(index, **options), "w", "W.", k=5)
        content, artifact = tool.run_with_artifact({"query": query})
        assert calls == {"min_score": 1, "expand": 1}
        if make is KeywordRetriever:
            assert artifact == expected
            assert [[p.chunk.id for p in h.parts] for h in artifact] == [
                [p.chunk.id for p in h.parts] for h in expected
            ]
        passed = sum(len(h.parts) for h in artifact)
        unfiltered = make(index).invoke(query, k=5)
        assert passed == sum(1 for h in unfiltered if h.scores.get("bm25", 0.0) >= cut) >= 3
        assert content.endswith(
            f"Only {passed} of the 5 requested results passed the score threshold."
        )
    # the tool formats what it is given: it holds neither step any more
    assert not hasattr(retriever_tool, "apply_min_score")
    assert not hasattr(retriever_tool, "expand_hits")


def test_tool_options_bind_a_copy_and_clash_with_the_retriever_s(index: Index) -> None:
    retriever = KeywordRetriever(index)
    create_retriever_tool(retriever, "w", "W.", min_score=1.0, expand="section")
    assert (retriever.min_score, retriever.expand) == (None, None)  # the user's is untouched
    with pytest.raises(ConfigError, match="min_score is set on both"):
        create_retriever_tool(KeywordRetriever(index, min_score=1.0), "w", "W.", min_score=2.0)
