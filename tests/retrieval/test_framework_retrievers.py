"""Our retrievers inside LangChain, LlamaIndex and Haystack: each adapter runs in its real
framework's chain, query engine or pipeline, and gives what ``invoke`` gives."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from ragtools.indexes.index import Index
from ragtools.indexes.testing import FakeEmbedder
from ragtools.parsers import ConfigError, Document
from ragtools.parsers.errors import MissingDependencyError
from ragtools.retrieval.fusion import fuse_hits
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.hybrid import HybridRetriever
from ragtools.retrieval.integrations import (
    haystack_filter,
    to_haystack_component,
    to_langchain_retriever,
    to_llamaindex_retriever,
)
from ragtools.retrieval.integrations._hits import hit_metadata
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.vector import VectorRetriever

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no network in tests

TOPICS = ["volcano lava eruption", "glacier ice melting", "desert sand dunes", "coral reef fish"]
QUERY = "lava eruption near the glacier ice"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    docs = [
        Document(
            id=f"doc{i:02d}",
            text=f"Report {i} on the {TOPICS[i % 4]}. Observed {TOPICS[(i + 1) % 4]} too.",
            metadata={"source": f"r{i % 3}.pdf", "page": i + 1},
        )
        for i in range(24)
    ]
    root: Path = tmp_path_factory.mktemp("frameworks") / "index"
    return Index.from_documents(docs, root, embedder=FakeEmbedder(dim=48), chunk_size=300)


@pytest.fixture(scope="module")
def hybrid(index: Index) -> HybridRetriever:
    return HybridRetriever.from_index(index, k=5)


def _ids(hits: list[Hit]) -> list[str]:
    return [hit.chunk.id for hit in hits]


# --- LangChain ------------------------------------------------------------------------------


def test_langchain_retriever_is_a_runnable_retriever_equal_to_invoke(
    hybrid: HybridRetriever,
) -> None:
    from langchain_core.documents import Document as LCDocument
    from langchain_core.retrievers import BaseRetriever

    adapted = to_langchain_retriever(hybrid)
    assert isinstance(adapted, BaseRetriever)
    hits = hybrid.invoke(QUERY)
    docs = adapted.invoke(QUERY)
    assert all(isinstance(d, LCDocument) for d in docs)
    assert [d.page_content for d in docs] == [h.chunk.text for h in hits]
    assert [d.metadata for d in docs] == [hit_metadata(h) for h in hits]
    assert [d.id for d in docs] == _ids(hits)
    assert docs[0].metadata["scores"] == hits[0].scores and "bm25" in docs[0].metadata["scores"]
    assert asyncio.run(adapted.ainvoke(QUERY)) == docs
    # per-call k and filter reach our retriever; a per-call filter narrows a bound one
    bound = to_langchain_retriever(hybrid, k=2, filter={"source": "r1.pdf"})
    narrowed = bound.invoke(QUERY, filter={"page": {"$gte": 10}})
    expected = hybrid.invoke(QUERY, k=2, filter={"source": "r1.pdf", "page": {"$gte": 10}})
    assert [d.id for d in narrowed] == _ids(expected)


def test_langchain_retriever_in_an_lcel_chain(hybrid: HybridRetriever) -> None:
    from langchain_core.language_models.fake import FakeListLLM
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import PromptTemplate
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough

    def join(docs: list) -> str:  # type: ignore[type-arg]
        return "\n".join(f"[{d.metadata['source']}] {d.page_content}" for d in docs)

    prompt = PromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    context = to_langchain_retriever(hybrid) | RunnableLambda(join)
    chain = {"context": context, "question": RunnablePassthrough()} | prompt
    rendered = chain.invoke(QUERY).to_string()
    expected = join_hits(hybrid.invoke(QUERY))
    assert rendered == f"Context:\n{expected}\n\nQuestion: {QUERY}"
    answer = (chain | FakeListLLM(responses=["an answer"]) | StrOutputParser()).invoke(QUERY)
    assert answer == "an answer"


def join_hits(hits: list[Hit]) -> str:
    return "\n".join(f"[{h.chunk.source}] {h.chunk.text}" for h in hits)


def test_langchain_ensemble_retriever_fuses_our_retrievers_as_rrf(index: Index) -> None:
    from langchain_classic.retrievers import EnsembleRetriever

    keyword, vector = KeywordRetriever(index, k=6), VectorRetriever(index, k=6)
    ensemble = EnsembleRetriever(
        retrievers=[to_langchain_retriever(keyword), to_langchain_retriever(vector)],
        weights=[0.5, 0.5],
        id_key="chunk_id",
    )
    docs = ensemble.invoke(QUERY)
    fused = fuse_hits("rrf", [keyword.invoke(QUERY), vector.invoke(QUERY)], weights=[0.5, 0.5])
    expected = {hit.chunk.id: hit.score for hit in fused}
    got = [d.metadata["chunk_id"] for d in docs]
    assert sorted(got) == sorted(expected)
    scores = [expected[chunk_id] for chunk_id in got]
    assert scores == sorted(scores, reverse=True)  # LangChain's order is our RRF order


# --- LlamaIndex -----------------------------------------------------------------------------


def test_llamaindex_retriever_equals_invoke(hybrid: HybridRetriever) -> None:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore

    adapted = to_llamaindex_retriever(hybrid, k=4)
    assert isinstance(adapted, BaseRetriever)
    hits = hybrid.invoke(QUERY, k=4)
    nodes = adapted.retrieve(QUERY)
    assert all(isinstance(n, NodeWithScore) for n in nodes)
    assert [n.node.node_id for n in nodes] == _ids(hits)
    assert [n.score for n in nodes] == [h.score for h in hits]
    assert [n.node.get_content() for n in nodes] == [h.chunk.text for h in hits]
    first = nodes[0].node
    assert (first.start_char_idx, first.end_char_idx) == (hits[0].chunk.start, hits[0].chunk.end)
    assert first.ref_doc_id == hits[0].chunk.doc_id
    assert first.metadata == hit_metadata(hits[0])
    llm_view = first.get_metadata_str(mode="llm")  # scores stay out of the prompt
    assert "source" in llm_view and "scores" not in llm_view
    assert [n.node.node_id for n in asyncio.run(adapted.aretrieve(QUERY))] == _ids(hits)


def test_llamaindex_query_engine_with_a_postprocessor_and_a_mock_llm(
    hybrid: HybridRetriever,
) -> None:
    from llama_index.core import Settings
    from llama_index.core.llms import MockLLM
    from llama_index.core.postprocessor import SimilarityPostprocessor
    from llama_index.core.query_engine import RetrieverQueryEngine

    Settings.tokenizer = str.split  # no tokenizer download
    hits = hybrid.invoke(QUERY)
    cutoff = hits[2].score
    engine = RetrieverQueryEngine.from_args(
        to_llamaindex_retriever(hybrid),
        llm=MockLLM(max_tokens=8),
        node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=cutoff)],
    )
    response = engine.query(QUERY)
    kept = HybridRetriever.from_index(hybrid.retrievers[0].index, k=5, min_score=cutoff)  # type: ignore[attr-defined]
    assert [n.node.node_id for n in response.source_nodes] == _ids(kept.invoke(QUERY))
    assert 0 < len(response.source_nodes) < len(hits)
    assert str(response)  # the mock LLM answered from the retrieved context


# --- Haystack -------------------------------------------------------------------------------


def test_haystack_component_in_a_pipeline_equals_invoke(hybrid: HybridRetriever) -> None:
    from haystack import Document as HaystackDocument
    from haystack import Pipeline
    from haystack.components.builders import PromptBuilder

    pipeline = Pipeline()
    pipeline.add_component("retriever", to_haystack_component(hybrid, top_k=4))
    pipeline.add_component(
        "prompt",
        PromptBuilder(
            template="{% for d in documents %}[{{ d.meta.source }}] {{ d.content }}\n{% endfor %}",
            required_variables=["documents"],
        ),
    )
    pipeline.connect("retriever.documents", "prompt.documents")
    result = pipeline.run({"retriever": {"query": QUERY}}, include_outputs_from={"retriever"})
    hits = hybrid.invoke(QUERY, k=4)
    docs = result["retriever"]["documents"]
    assert all(isinstance(d, HaystackDocument) for d in docs)
    assert [d.id for d in docs] == _ids(hits)
    assert [d.score for d in docs] == [h.score for h in hits]
    assert [d.meta for d in docs] == [hit_metadata(h) for h in hits]
    assert result["prompt"]["prompt"] == "".join(f"{join_hits([h])}\n" for h in hits)

    filters = {
        "operator": "AND",
        "conditions": [
            {"field": "meta.source", "operator": "==", "value": "r1.pdf"},
            {"field": "meta.page", "operator": ">=", "value": 8},
        ],
    }
    narrowed = pipeline.run({"retriever": {"query": QUERY, "filters": filters, "top_k": 2}},
                            include_outputs_from={"retriever"})  # fmt: skip
    expected = hybrid.invoke(QUERY, k=2, filter={"source": "r1.pdf", "page": {"$gte": 8}})
    assert [d.id for d in narrowed["retriever"]["documents"]] == _ids(expected)


def test_haystack_filters_translate_into_ours() -> None:
    assert haystack_filter(
        {
            "operator": "OR",
            "conditions": [
                {"field": "meta.source", "operator": "in", "value": ["a.pdf", "b.pdf"]},
                {"field": "id", "operator": "!=", "value": "x"},
                {
                    "operator": "NOT",
                    "conditions": [{"field": "meta.page", "operator": "<", "value": 3}],
                },
            ],
        }
    ) == {
        "$or": [
            {"source": {"$in": ["a.pdf", "b.pdf"]}},
            {"chunk_id": {"$ne": "x"}},
            {"$not": {"page": {"$lt": 3}}},
        ]
    }
    assert haystack_filter(None) is None
    with pytest.raises(ConfigError, match="field 'content'"):
        haystack_filter({"field": "content", "operator": "==", "value": "x"})
    with pytest.raises(ConfigError, match="operator 'like'"):
        haystack_filter({"field": "meta.source", "operator": "like", "value": "x"})
    with pytest.raises(ConfigError, match="conditions"):
        haystack_filter({"operator": "AND", "conditions": []})


def test_adapters_refuse_what_is_not_a_retriever() -> None:
    for adapt in (to_langchain_retriever, to_llamaindex_retriever, to_haystack_component):
        with pytest.raises(ConfigError, match="invoke"):
            adapt(object())


@pytest.mark.parametrize(
    ("adapt", "module", "extra"),
    [
        (to_langchain_retriever, "langchain_core.retrievers", "langchain"),
        (to_llamaindex_retriever, "llama_index.core.retrievers", "llamaindex"),
        (to_haystack_component, "haystack", "haystack"),
    ],
)
def test_a_missing_framework_names_its_extra(
    hybrid: HybridRetriever,
    monkeypatch: pytest.MonkeyPatch,
    adapt,
    module: str,
    extra: str,  # type: ignore[no-untyped-def]
) -> None:
    adapt(hybrid)  # made once while the framework is there
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(MissingDependencyError, match=rf"ragtools\[{extra}\]"):
        adapt(hybrid)


# --- what a model reads: no directory of the build machine -----------------------------------


@pytest.fixture(scope="module")
def folder_index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    """A keyword-only index built from files, so chunks carry ``path``, ``mtime``, ``size``."""
    root = tmp_path_factory.mktemp("adapter-files")
    (root / "guide").mkdir()
    (root / "guide" / "quickstart.md").write_text(
        "# Quickstart\n\nInstall the package, then run the lava eruption example.\n",
        encoding="utf-8",
    )
    (root / "notes.txt").write_text("Glacier ice melting near the lava field.\n", "utf-8")
    return Index.build([root], tmp_path_factory.mktemp("adapter-index") / "index", vector=False)


def _folder_values(index: Index) -> list[str]:
    """Strings that must not reach a model: the source folder, every path, mtime."""
    chunk = index.chunks[0]
    folder = str(Path(str(chunk.metadata["path"])).parent.parent)
    return [folder, *(str(c.metadata["path"]) for c in index.chunks), str(chunk.metadata["mtime"])]


def test_llamaindex_nodes_show_the_llm_no_path_mtime_or_size(folder_index: Index) -> None:
    from llama_index.core import Settings
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.schema import MetadataMode

    retriever = KeywordRetriever(folder_index, k=5)
    nodes = to_llamaindex_retriever(retriever).retrieve(QUERY)
    assert len(nodes) == 2
    forbidden = _folder_values(folder_index)
    for node in (n.node for n in nodes):
        for mode in (MetadataMode.LLM, MetadataMode.EMBED):
            seen = node.get_content(metadata_mode=mode)
            assert "source: " in seen and "file_type: " in seen
            assert not any(value in seen for value in forbidden), seen
            assert "size: " not in seen and "mtime: " not in seen
        assert Path(str(node.metadata["path"])).is_absolute()  # still there for the application

    # the prompt a query engine sends (MockLLM with no max_tokens answers with the prompt)
    Settings.tokenizer = str.split
    engine = RetrieverQueryEngine.from_args(to_llamaindex_retriever(retriever), llm=MockLLM())
    prompt = str(engine.query(QUERY))
    assert "quickstart.md" in prompt and "lava eruption" in prompt
    assert not any(value in prompt for value in forbidden)

    shown = to_llamaindex_retriever(retriever, show_metadata=["mtime"]).retrieve(QUERY)
    seen = shown[0].node.get_content(metadata_mode=MetadataMode.LLM)
    assert f"mtime: {shown[0].node.metadata['mtime']}" in seen and "path: " not in seen
    with pytest.raises(ConfigError, match=r"show_metadata names \['source'\]"):
        to_llamaindex_retriever(retriever, show_metadata=["source"])
    with pytest.raises(ConfigError, match="write \\['path'\\]"):
        to_llamaindex_retriever(retriever, show_metadata="path")


# --- LlamaIndex MetadataFilters ---------------------------------------------------------------


@pytest.fixture(scope="module")
def tagged_index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    """Chunks with a string, a number, a list and a sometimes missing or empty field."""
    docs = []
    for i in range(30):
        metadata: dict[str, object] = {
            "source": f"r{i % 4}.pdf",
            "page": i,
            "tags": [["lava", "ice"], ["sand"], [], ["reef", "lava"]][i % 4],
        }
        if i % 5:
            metadata["topic"] = ["volcano science", "ice sheets", ""][i % 3]
        docs.append(
            Document(id=f"t{i:02d}", text=f"Report {i} on {TOPICS[i % 4]}.", metadata=metadata)
        )
    root = tmp_path_factory.mktemp("tagged") / "index"
    return Index.from_documents(docs, root, vector=False, chunk_size=300)


def _llama_filters() -> list[object]:
    from llama_index.core.vector_stores import (
        FilterCondition,
        FilterOperator,
        MetadataFilter,
        MetadataFilters,
    )

    def one(key: str, op: FilterOperator, value: object) -> MetadataFilter:
        return MetadataFilter(key=key, operator=op, value=value)

    flat = [
        one("source", FilterOperator.EQ, "r1.pdf"),
        one("source", FilterOperator.NE, "r1.pdf"),
        one("page", FilterOperator.GT, 20),
        one("page", FilterOperator.GTE, 20),
        one("page", FilterOperator.LT, 4),
        one("page", FilterOperator.LTE, 4),
        one("source", FilterOperator.IN, ["r0.pdf", "r2.pdf"]),
        one("source", FilterOperator.NIN, ["r0.pdf", "r2.pdf"]),
        one("tags", FilterOperator.ANY, ["sand", "reef"]),
        one("tags", FilterOperator.ALL, ["lava", "ice"]),
        one("tags", FilterOperator.CONTAINS, "lava"),
        one("topic", FilterOperator.TEXT_MATCH, "ice"),
        one("topic", FilterOperator.IS_EMPTY, None),
        one("tags", FilterOperator.IS_EMPTY, None),
    ]
    cases: list[object] = [MetadataFilters(filters=[f]) for f in flat]
    for condition in (FilterCondition.AND, FilterCondition.OR, FilterCondition.NOT):
        cases.append(MetadataFilters(filters=[flat[0], flat[2]], condition=condition))
        cases.append(MetadataFilters(filters=[flat[8], flat[12]], condition=condition))
    return cases


def test_llamaindex_metadata_filters_select_what_llamaindex_selects(tagged_index: Index) -> None:
    """Oracle: LlamaIndex's own evaluation of its filters (the simple vector store's)."""
    from llama_index.core.vector_stores.utils import build_metadata_filter_fn

    from ragtools.retrieval.filters import compile_filter
    from ragtools.retrieval.integrations import llamaindex_filter

    chunks = list(tagged_index.chunks)
    by_id = {c.id: c.metadata for c in chunks}
    for filters in _llama_filters():
        theirs = build_metadata_filter_fn(by_id.__getitem__, filters)  # type: ignore[arg-type]
        ours = compile_filter(llamaindex_filter(filters))
        expected = {c.id for c in chunks if theirs(c.id)}
        assert {c.id for c in chunks if ours.matches(c)} == expected, filters
        assert 0 < len(expected) < len(chunks), filters  # every case really filters


def test_llamaindex_adapter_takes_metadata_filters(tagged_index: Index) -> None:
    from llama_index.core.vector_stores import (
        FilterCondition,
        FilterOperator,
        MetadataFilter,
        MetadataFilters,
    )

    from ragtools.retrieval.integrations import llamaindex_filter

    nested = MetadataFilters(
        filters=[
            MetadataFilter(key="page", operator=FilterOperator.GTE, value=10),
            MetadataFilters(
                filters=[
                    MetadataFilter(key="source", value="r1.pdf"),
                    MetadataFilter(key="tags", operator=FilterOperator.CONTAINS, value="reef"),
                ],
                condition=FilterCondition.OR,
            ),
        ]
    )
    ours = {
        "$and": [
            {"page": {"$gte": 10}},
            {"$or": [{"source": {"$eq": "r1.pdf"}}, {"tags": {"$contains": "reef"}}]},
        ]
    }
    assert llamaindex_filter(nested) == ours
    assert llamaindex_filter(MetadataFilters(filters=[])) is None
    retriever = KeywordRetriever(tagged_index, k=6)
    nodes = to_llamaindex_retriever(retriever, filter=nested).retrieve("report lava glacier")
    expected = retriever.invoke("report lava glacier", filter=ours)
    assert [n.node.node_id for n in nodes] == _ids(expected) and len(expected) == 6
    assert all(n.node.metadata["page"] >= 10 for n in nodes)

    insensitive = MetadataFilters(
        filters=[
            MetadataFilter(key="source", value="r1.pdf"),
            MetadataFilter(
                key="topic", operator=FilterOperator.TEXT_MATCH_INSENSITIVE, value="Ice"
            ),
        ]
    )
    with pytest.raises(ConfigError, match=r"filters\[1\].*TEXT_MATCH_INSENSITIVE on 'topic'"):
        to_llamaindex_retriever(retriever, filter=insensitive)
    with pytest.raises(ConfigError, match="IN on 'source' takes a list"):
        llamaindex_filter(
            MetadataFilters(filters=[MetadataFilter(key="source", operator="in", value="r1.pdf")])
        )
    with pytest.raises(ConfigError, match="expected llama_index MetadataFilters, got list"):
        to_llamaindex_retriever(retriever, filter=[("source", "r1.pdf")])


# --- Haystack pipelines saved and loaded ------------------------------------------------------


def _haystack_pipeline(retriever: object, **options: object) -> object:
    from haystack import Pipeline
    from haystack.components.builders import PromptBuilder

    pipeline = Pipeline()
    pipeline.add_component("retriever", to_haystack_component(retriever, **options))
    pipeline.add_component(
        "prompt",
        PromptBuilder(template="{% for d in documents %}{{ d.content }}\n{% endfor %}",
                      required_variables=["documents"]),
    )  # fmt: skip
    pipeline.connect("retriever.documents", "prompt.documents")
    return pipeline


HAYSTACK_RUN = {"retriever": {"query": "lava glacier report", "top_k": 3}}
ALLOWED = ["ragtools.retrieval.integrations"]


def test_haystack_pipeline_dumps_and_loads(tagged_index: Index, tmp_path: Path) -> None:
    import subprocess

    from haystack import Pipeline
    from haystack.core.errors import DeserializationError

    retriever = HybridRetriever.from_index(
        tagged_index, k=5, min_score=0.01, expand={"mode": "neighbors", "window": 0}
    )
    filters = {"field": "meta.page", "operator": ">=", "value": 8}
    pipeline = _haystack_pipeline(retriever, top_k=4, filters=filters)
    text = pipeline.dumps()  # type: ignore[attr-defined]
    assert str(tagged_index.path) in text and "kind: hybrid" in text
    loaded = Pipeline.loads(text, allowed_modules=ALLOWED)
    assert loaded.dumps() == text
    expected = pipeline.run(HAYSTACK_RUN, include_outputs_from={"retriever"})  # type: ignore[attr-defined]
    got = loaded.run(HAYSTACK_RUN, include_outputs_from={"retriever"})
    assert got == expected
    assert len(got["retriever"]["documents"]) == 3
    assert all(d.meta["page"] >= 8 for d in got["retriever"]["documents"])
    with pytest.raises(DeserializationError, match="allowlist"):  # Haystack's own safety rule
        Pipeline.loads(text)

    # a fresh interpreter: Haystack imports our module from the name in the file
    (tmp_path / "pipeline.yaml").write_text(text, encoding="utf-8")
    script = (
        "import json, sys\n"
        "from haystack import Pipeline\n"
        "p = Pipeline.loads(open(sys.argv[1]).read(), allowed_modules=sys.argv[2:])\n"
        f"r = p.run({HAYSTACK_RUN!r})\n"
        "print(json.dumps(r['prompt']['prompt']))\n"
    )
    env = {**os.environ, "HAYSTACK_TELEMETRY_ENABLED": "False"}
    proc = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "pipeline.yaml"), *ALLOWED],
        capture_output=True, text=True, env=env, timeout=300, check=True,
    )  # fmt: skip
    assert proc.stdout.strip() == json_dumps(expected["prompt"]["prompt"])


def json_dumps(value: object) -> str:
    import json

    return json.dumps(value)


def test_haystack_settings_name_what_cannot_be_saved(tagged_index: Index) -> None:
    from ragtools.retrieval.rerank import MMRReranker

    class Custom:
        def invoke(self, query: str, **options: object) -> list[Hit]:
            return []

    with pytest.raises(ConfigError, match="a Custom cannot be written as settings"):
        _haystack_pipeline(Custom()).dumps()  # type: ignore[attr-defined]
    reranked = HybridRetriever.from_index(
        tagged_index, reranker=MMRReranker(embedder=FakeEmbedder(dim=8))
    )
    with pytest.raises(ConfigError, match="with a reranker \\(MMRReranker\\)"):
        _haystack_pipeline(reranked).dumps()  # type: ignore[attr-defined]


def test_retriever_settings_round_trip_and_refuse_unknown_keys(tagged_index: Index) -> None:
    from ragtools.retrieval.retriever_config import retriever_config, retriever_from_config

    for retriever in (
        KeywordRetriever(tagged_index, k=3),
        KeywordRetriever(tagged_index, k=3, rm3={"fb_docs": 2, "max_df_ratio": 1.0}),
        HybridRetriever.from_index(tagged_index, k=4, fusion="rrf", candidate_k=50),
    ):
        config = retriever_config(retriever)
        rebuilt = retriever_from_config(config)
        assert type(rebuilt) is type(retriever) and retriever_config(rebuilt) == config
        assert _ids(rebuilt.invoke("lava report")) == _ids(retriever.invoke("lava report"))
    with pytest.raises(ConfigError, match=r"unknown keyword retriever settings \['model'\]"):
        retriever_from_config({"kind": "keyword", "index": str(tagged_index.path), "model": "x"})
    with pytest.raises(ConfigError, match="kind of keyword, vector, hybrid, got kind 'bm25'"):
        retriever_from_config({"kind": "bm25", "index": str(tagged_index.path)})
