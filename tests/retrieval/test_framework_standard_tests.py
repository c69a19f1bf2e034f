"""The standard test suites of the frameworks we plug into, run against our adapters (#34).

* LangChain's ``langchain-tests``: ``RetrieversIntegrationTests`` for
  :func:`~retrieval.integrations.to_langchain_retriever`; ``ToolsUnitTests`` and
  ``ToolsIntegrationTests`` for our tools as they are (a ``StructuredTool`` and the retriever
  tool) and through :func:`~retrieval.integrations.to_langchain_tool`. The suites are
  LangChain's classes, subclassed here with our constructors only (their own
  ``test_no_overrides_DO_NOT_OVERRIDE`` checks that no test is changed); their async tests run
  under ``pytest-asyncio`` (``langchain-tests`` brings it; ``asyncio_mode = "auto"`` in
  pyproject, as LangChain's own packages set it).
* LlamaIndex's retriever contract: ``RetrieverQueryEngine`` sync and async, ``retrieve`` /
  ``aretrieve`` with a ``QueryBundle``, node scores and metadata. Haystack's YAML round trip
  is in ``test_framework_retrievers.py`` (``test_haystack_pipeline_dumps_and_loads``).

Skipped where a framework or ``langchain-tests`` is not installed (``pip install -e .[dev]``).
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest

from ragtools.retrieval.hybrid import HybridRetriever
from ragtools.retrieval.integrations import to_langchain_retriever, to_llamaindex_retriever
from ragtools.retrieval.integrations._hits import hit_metadata
from ragtools.retrieval.tools import StructuredTool, create_retriever_tool

pytest.importorskip("langchain_tests")
from langchain_tests.integration_tests import (
    RetrieversIntegrationTests,
    ToolsIntegrationTests,
)
from langchain_tests.unit_tests import ToolsUnitTests

from ragtools.retrieval.integrations.langchain import to_langchain_tool
from tests.retrieval import test_framework_retrievers as frameworks

QUERY = frameworks.QUERY
index = frameworks.index  # the same corpus and retriever fixtures as the adapters' own tests
hybrid = frameworks.hybrid


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


class _WithRetriever:
    """Gives the suite's (fixture-less) properties the module's retriever."""

    retriever: HybridRetriever

    @pytest.fixture(autouse=True)
    def _bind(self, hybrid: HybridRetriever) -> None:
        self.retriever = hybrid


class TestLangChainRetriever(_WithRetriever, RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[Any]:
        return type(to_langchain_retriever(self.retriever))

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"retriever": self.retriever}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


class TestStructuredToolUnit(ToolsUnitTests):
    @property
    def tool_constructor(self) -> type[Any]:
        return StructuredTool

    @property
    def tool_constructor_params(self) -> dict[str, Any]:
        return {"name": "multiply", "description": "Multiply.", "func": multiply}

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"a": 3, "b": 4}


class TestStructuredToolIntegration(ToolsIntegrationTests):
    @property
    def tool_constructor(self) -> Any:
        return functools.partial(StructuredTool.from_function, multiply)

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"a": 3, "b": 4}


class _RetrieverTool(_WithRetriever):
    @property
    def tool_constructor(self) -> Any:
        return functools.partial(
            create_retriever_tool, self.retriever, "search_reports", "Search the reports."
        )

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"query": QUERY}


class TestRetrieverToolUnit(_RetrieverTool, ToolsUnitTests):
    pass


class TestRetrieverToolIntegration(_RetrieverTool, ToolsIntegrationTests):
    pass


class _AdaptedRetrieverTool(_RetrieverTool):
    @property
    def tool_constructor(self) -> Any:
        return to_langchain_tool(super().tool_constructor())


class TestLangChainToolUnit(_AdaptedRetrieverTool, ToolsUnitTests):
    pass


class TestLangChainToolIntegration(_AdaptedRetrieverTool, ToolsIntegrationTests):
    pass


# --- LlamaIndex's retriever contract ----------------------------------------------------------


def test_llamaindex_retrieve_and_aretrieve_take_a_query_bundle(hybrid: HybridRetriever) -> None:
    schema = pytest.importorskip("llama_index.core.schema")
    adapted = to_llamaindex_retriever(hybrid)
    hits = hybrid.invoke(QUERY)
    bundle = schema.QueryBundle(query_str=QUERY)
    for nodes in (adapted.retrieve(bundle), asyncio.run(adapted.aretrieve(bundle))):
        assert all(isinstance(n, schema.NodeWithScore) for n in nodes)
        assert [n.node.node_id for n in nodes] == [h.chunk.id for h in hits]
        assert [n.score for n in nodes] == [h.score for h in hits]
        assert [n.node.metadata for n in nodes] == [hit_metadata(h) for h in hits]


def test_llamaindex_query_engine_sync_and_async(hybrid: HybridRetriever) -> None:
    core = pytest.importorskip("llama_index.core")
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    core.Settings.tokenizer = str.split  # no tokenizer download
    engine = RetrieverQueryEngine.from_args(to_llamaindex_retriever(hybrid), llm=MockLLM())
    expected = [h.chunk.id for h in hybrid.invoke(QUERY)]
    answers = [engine.query(QUERY), asyncio.run(engine.aquery(QUERY))]
    for response in answers:
        assert [n.node.node_id for n in response.source_nodes] == expected
        assert all(n.score is not None for n in response.source_nodes)
        assert "lava eruption" in str(response)  # MockLLM answers with the prompt it got
