"""create_retriever_tool: fixed schema, cited content under a budget, artifact = all hits."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.base import Retriever
from ragtools.retrieval.errors import ToolInputError
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.tools import (
    RetrieverInput,
    ToolMessage,
    convert_to_openai_tool,
    create_retriever_tool,
    make_tool_call,
)
from ragtools.retrieval.tools.retriever_tool import format_hit, format_hits
from tests.retrieval.tools.conftest import FakeRetriever

QUERY_DESCRIPTION = (
    "The search query: a short natural-language question or a few keywords describing the "
    "information to look up in the document collection."
)


def _call(query: object, call_id: str = "call_1") -> dict[str, object]:
    return dict(make_tool_call("search_docs", {"query": query}, id=call_id))


def _expected_content(hits: list[Hit]) -> str:
    a, b, c = (h.chunk.id[:8] for h in hits)
    return (
        f"[1] a.pdf, page 3 (chunk {a})\nAlpha text.\n\n"
        f"[2] b.pdf, pages 4-5 (chunk {b})\nBeta text is longer.\n\n"
        f"[3] c.md (chunk {c})\nGamma."
    )


def test_retriever_input_json_schema_snapshot() -> None:
    assert RetrieverInput.model_json_schema() == {
        "additionalProperties": False,
        "description": "Search the document collection with one query.",
        "properties": {
            "query": {
                "description": QUERY_DESCRIPTION,
                "maxLength": 2000,
                "minLength": 1,
                "title": "Query",
                "type": "string",
            }
        },
        "required": ["query"],
        "title": "RetrieverInput",
        "type": "object",
    }


def test_openai_export_snapshot(retriever: FakeRetriever) -> None:
    tool = create_retriever_tool(retriever, "search_docs", "Search the product manuals.")
    assert convert_to_openai_tool(tool) == {
        "type": "function",
        "function": {
            "name": "search_docs",
            "description": "Search the product manuals.",
            "parameters": {
                "additionalProperties": False,
                "properties": {
                    "query": {
                        "description": QUERY_DESCRIPTION,
                        "maxLength": 2000,
                        "minLength": 1,
                        "type": "string",
                    }
                },
                "required": ["query"],
                "type": "object",
            },
        },
    }


def test_fake_retriever_follows_the_protocol(retriever: FakeRetriever) -> None:
    assert isinstance(retriever, Retriever)


def test_tool_call_gives_cited_content_and_all_hits(
    retriever: FakeRetriever, hits: list[Hit]
) -> None:
    tool = create_retriever_tool(retriever, "search_docs", "Search the product manuals.")
    message = tool.invoke(_call("warranty terms"))
    assert isinstance(message, ToolMessage)
    assert message.content == _expected_content(hits)
    assert message.artifact == hits
    assert (message.tool_call_id, message.name, message.status) == (
        "call_1",
        "search_docs",
        "success",
    )
    assert retriever.calls == [("invoke", "warranty terms", None)]


def test_dict_and_string_inputs(retriever: FakeRetriever, hits: list[Hit]) -> None:
    tool = create_retriever_tool(retriever, "search_docs", "Search.")
    assert tool.invoke({"query": "q"}) == _expected_content(hits)
    assert tool.invoke("q") == _expected_content(hits)
    assert tool.run_with_artifact({"query": "q"}) == (_expected_content(hits), hits)
    assert tool.run_with_artifact("q")[1] == hits
    assert tool.execute("q").artifact == hits


def test_query_is_stripped(retriever: FakeRetriever) -> None:
    tool = create_retriever_tool(retriever, "search_docs", "Search.")
    tool.invoke({"query": "  padded  "})
    assert retriever.calls[-1] == ("invoke", "padded", None)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"query": "q", "k": 50}, "Extra inputs are not permitted"),
        ({"query": ""}, "at least 1 character"),
        ({"query": "   "}, "at least 1 character"),
        ({"query": "x" * 2001}, "at most 2000 characters"),
        ({}, "Field required"),
        ({"query": 42}, "valid string"),
    ],
)
def test_invalid_arguments_are_rejected(
    retriever: FakeRetriever, args: dict[str, object], match: str
) -> None:
    tool = create_retriever_tool(retriever, "search_docs", "Search.")
    with pytest.raises(ValidationError, match=match):
        tool.invoke(args)
    with pytest.raises(ValidationError, match=match):
        tool.invoke(dict(make_tool_call("search_docs", args)))
    handled = create_retriever_tool(
        retriever, "search_docs", "Search.", handle_validation_error=True
    )
    message = handled.invoke(dict(make_tool_call("search_docs", args, id="c")))
    assert (message.status, message.artifact) == ("error", None)
    assert retriever.calls == []


def test_query_of_exactly_max_length_is_accepted(retriever: FakeRetriever) -> None:
    tool = create_retriever_tool(retriever, "search_docs", "Search.")
    tool.invoke({"query": "x" * 2000})
    assert len(retriever.calls) == 1


def test_budget_cuts_at_hit_boundary(retriever: FakeRetriever, hits: list[Hit]) -> None:
    first, second, _ = (format_hit(h) for h in hits)
    two = len(first) + 2 + len(second)
    exact = create_retriever_tool(retriever, "s", "Search.", max_content_chars=two)
    content, artifact = exact.run_with_artifact("q")
    assert content == f"{first}\n\n{second}"
    assert artifact == hits  # the artifact keeps the hits the budget left out
    short = create_retriever_tool(retriever, "s", "Search.", max_content_chars=two - 1)
    assert short.invoke("q") == first
    assert create_retriever_tool(retriever, "s", "S.", max_content_chars=None).invoke("q") == (
        _expected_content(hits)
    )


def test_first_hit_is_truncated_when_it_alone_exceeds_the_budget(
    retriever: FakeRetriever, hits: list[Hit]
) -> None:
    tool = create_retriever_tool(retriever, "s", "Search.", max_content_chars=20)
    content, artifact = tool.run_with_artifact("q")
    assert content == format_hit(hits[0])[:19] + "…"
    assert len(content) == 20
    assert artifact == hits


def test_document_prompt_and_separator(retriever: FakeRetriever, hits: list[Hit]) -> None:
    tool = create_retriever_tool(
        retriever,
        "s",
        "Search.",
        document_prompt="<{rank}|{source}|p{page}|{lang}|{score:.2f}|{doc_id}> {page_content}",
        document_separator="\n---\n",
    )
    assert tool.invoke("q") == (
        "<1|a.pdf|p3||3.50|d1> Alpha text.\n---\n"
        "<2|b.pdf|p4-5|en|2.25|d2> Beta text is longer.\n---\n"
        "<3|c.md|p||1.00|d3> Gamma."
    )
    assert format_hit(hits[0], "{chunk_id}") == hits[0].chunk.id


def test_format_hits_helper(hits: list[Hit]) -> None:
    assert format_hits([]) == ""
    assert format_hits(hits, max_chars=None) == _expected_content(hits)


def test_empty_results(hits: list[Hit]) -> None:
    tool = create_retriever_tool(FakeRetriever([]), "s", "Search.")
    message = tool.invoke(_call("nothing"))
    assert message.content == 'No results found for the query "nothing".'
    assert message.artifact == []
    assert message.status == "success"


def test_k_is_passed_to_the_retriever(retriever: FakeRetriever, hits: list[Hit]) -> None:
    tool = create_retriever_tool(retriever, "s", "Search.", k=2)
    assert tool.run_with_artifact("q")[1] == hits[:2]
    assert retriever.calls == [("invoke", "q", 2)]


def test_async_path_uses_ainvoke(retriever: FakeRetriever, hits: list[Hit]) -> None:
    tool = create_retriever_tool(retriever, "search_docs", "Search.", k=3)
    message = asyncio.run(tool.ainvoke(_call("q")))
    assert message.content == _expected_content(hits)
    assert message.artifact == hits
    assert asyncio.run(tool.arun_with_artifact({"query": "q"})) == (_expected_content(hits), hits)
    assert [c[0] for c in retriever.calls] == ["ainvoke", "ainvoke"]


def test_async_path_without_ainvoke_uses_a_thread(hits: list[Hit]) -> None:
    class SyncOnly:
        def invoke(self, query: str, *, k: int | None = None) -> list[Hit]:
            return hits

    tool = create_retriever_tool(SyncOnly(), "s", "Search.")  # type: ignore[arg-type]
    assert asyncio.run(tool.arun_with_artifact("q"))[1] == hits


def test_content_only_format(retriever: FakeRetriever, hits: list[Hit]) -> None:
    tool = create_retriever_tool(retriever, "s", "Search.", response_format="content")
    message = tool.invoke(_call("q"))
    assert message.content == _expected_content(hits)
    assert message.artifact is None


def test_retriever_tool_input_error_is_shown_to_the_model() -> None:
    class Picky(FakeRetriever):
        def invoke(self, query: str, *, k: int | None = None, filter: object = None) -> list[Hit]:
            raise ToolInputError(f"query {query!r} has no searchable terms")

    tool = create_retriever_tool(Picky([]), "s", "Search.")
    message = tool.invoke(_call("the"))
    assert (message.content, message.status) == ("query 'the' has no searchable terms", "error")


def test_bad_retriever_output_and_settings_are_config_errors(retriever: FakeRetriever) -> None:
    class Wrong(FakeRetriever):
        def invoke(self, query: str, *, k: int | None = None, filter: object = None) -> list[Hit]:
            return ["not a hit"]  # type: ignore[list-item]

    with pytest.raises(ConfigError, match=r"expected list\[Hit\]"):
        create_retriever_tool(Wrong([]), "s", "Search.").invoke("q")
    with pytest.raises(ConfigError, match="max_content_chars"):
        create_retriever_tool(retriever, "s", "S.", max_content_chars=0)
    with pytest.raises(ConfigError, match="k must be"):
        create_retriever_tool(retriever, "s", "S.", k=0)
    with pytest.raises(ConfigError, match=r"not a valid str\.format template"):
        create_retriever_tool(retriever, "s", "S.", document_prompt="{text")
    with pytest.raises(ConfigError, match="must have invoke"):
        create_retriever_tool(object(), "s", "S.")  # type: ignore[arg-type]


def test_tool_kwargs_are_passed_through(retriever: FakeRetriever) -> None:
    tool = create_retriever_tool(
        retriever, "s", "Search.", return_direct=True, extras={"defer_loading": True}
    )
    assert tool.return_direct is True
    assert tool.extras == {"defer_loading": True}
    assert tool.handle_tool_error is True
