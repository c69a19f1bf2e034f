"""The tool layer's surface: a small package namespace, one error-handling option, ConfigError.

Issue "One namespace and one ranking core", part 8: ``ragtools.retrieval.tools`` exports the
seeds' names and little else; ``handle_tool_error`` is the one spelling on ``BaseTool``, the
class-based tools and ``ToolsNode``; construction mistakes raise ``ConfigError``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from pydantic import BaseModel

import ragtools.retrieval.tools as tools_pkg
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.tools import (
    BaseTool,
    FunctionTool,
    StructuredTool,
    Tool,
    ToolException,
    ToolMessage,
    ToolsNode,
    make_tool_call,
    tool,
)
from ragtools.retrieval.tools.classtool import ModelTool

SEED_NAMES = {
    "tool",
    "Tool",
    "StructuredTool",
    "BaseTool",
    "ToolException",
    "ToolMessage",
    "InjectedToolArg",
    "InjectedToolCallId",
    "create_schema_from_function",
    "render_text_description",
    "render_text_description_and_args",
    "convert_to_openai_tool",
    "register_tool",
    "get_tool",
    "list_tools",
    "ToolsNode",
    "cached",
    "CachedTool",
    "create_retriever_tool",
    "convert_runnable_to_tool",
}


class TestNamespace:
    def test_exports_the_seed_names_and_at_most_thirty(self) -> None:
        exported = set(tools_pkg.__all__)
        assert len(tools_pkg.__all__) == len(exported) <= 30
        assert exported >= SEED_NAMES
        assert all(hasattr(tools_pkg, name) for name in exported)

    @pytest.mark.parametrize(
        ("module", "name"),
        [
            ("params", "format_result"),
            ("params", "parse_arguments"),
            ("params", "INVALID_JSON_MESSAGE"),
            ("registry", "UnknownToolError"),
            ("registry", "TOOL_REGISTRY"),
            ("cache", "ToolResultCache"),
            ("execution", "collect_messages"),
            ("retriever_tool", "format_hits"),
            ("render", "convert_to_openai_function"),
            ("output", "ToolOutput"),
            ("qwen", "Retrieval"),
            ("qwen", "DocParser"),
            ("qwen", "SimpleDocParser"),
            ("parse_cache", "ParseCache"),
            ("budget", "token_counter"),
            ("exceptions", "ToolTimeoutError"),
        ],
    )
    def test_other_helpers_come_from_their_modules(self, module: str, name: str) -> None:
        source = importlib.import_module(f"ragtools.retrieval.tools.{module}")
        assert name in source.__all__
        assert name not in tools_pkg.__all__


def _raise_tool_exception(query: str) -> str:
    """Fail the way a tool tells the model to try again."""
    raise ToolException(f"nothing found for {query}")


class _Failing(FunctionTool):
    name = "search"
    description = "Search."
    parameters = [{"name": "query", "type": "string", "required": True}]

    def call(self, params: str | Mapping[str, Any], **kwargs: Any) -> Any:
        return _raise_tool_exception(self.verify_args(params)["query"])


class _FailingModel(BaseModel):
    """Search."""

    query: str

    def run(self) -> str:
        return _raise_tool_exception(self.query)


def _structured(handler: Any) -> Any:
    return StructuredTool.from_function(
        _raise_tool_exception, name="search", handle_tool_error=handler
    )


def _function_tool(handler: Any) -> Any:
    cls = type("Configured", (_Failing,), {"handle_tool_error": staticmethod(handler)})
    return cls()


def _model_tool(handler: Any) -> Any:
    return ModelTool(_FailingModel, name="search", handle_tool_error=handler)


def _node(handler: Any) -> Any:
    inner = StructuredTool.from_function(_raise_tool_exception, name="search")
    return ToolsNode([inner], handle_tool_error=handler)


def _run(target: Any) -> ToolMessage:
    call = make_tool_call("search", {"query": "bm25"}, id="c1")
    if isinstance(target, ToolsNode):
        [message] = target.invoke([call])
        return message
    message = target.invoke(call)
    assert isinstance(message, ToolMessage)
    return message


BUILDERS: list[Callable[[Any], Any]] = [_structured, _function_tool, _model_tool, _node]


class TestOneErrorHandlingOption:
    @pytest.mark.parametrize("build", BUILDERS)
    @pytest.mark.parametrize(
        ("handler", "expected"),
        [
            (True, "nothing found for bm25"),
            ("Try another query.", "Try another query."),
            (lambda exc: f"handled {type(exc).__name__}", "handled ToolException"),
        ],
    )
    def test_handle_tool_error_gives_an_error_message(
        self, build: Callable[[Any], Any], handler: Any, expected: str
    ) -> None:
        message = _run(build(handler))
        assert (message.content, message.status, message.tool_call_id) == (
            expected,
            "error",
            "c1",
        )

    @pytest.mark.parametrize("build", BUILDERS)
    def test_false_raises(self, build: Callable[[Any], Any]) -> None:
        with pytest.raises(ToolException, match="nothing found for bm25"):
            _run(build(False))

    @pytest.mark.parametrize("build", BUILDERS)
    def test_a_handler_of_the_wrong_kind_is_a_config_error(
        self, build: Callable[[Any], Any]
    ) -> None:
        with pytest.raises(ConfigError, match="handle_tool_error must be"):
            build(3)

    def test_the_old_node_spelling_is_gone(self) -> None:
        with pytest.raises(TypeError, match="handle_tool_errors"):
            ToolsNode([], handle_tool_errors=True)  # type: ignore[call-arg]


def _bad_docstring(query: str) -> str:
    """Search, but the docstring documents an argument the signature lacks.

    Args:
        question: not a parameter.
    """
    return query


class TestConstructionMistakes:
    @pytest.mark.parametrize(
        ("build", "match"),
        [
            (lambda: Tool(name="shout", description="Shout."), "give func and/or coroutine"),
            (lambda: tool(parse_docstring=True)(_bad_docstring), "not in its signature"),
            (lambda: ModelTool(dict), "pydantic BaseModel subclass"),  # type: ignore[arg-type]
            (lambda: ToolsNode([object()]), "non-empty string name"),
        ],
    )
    def test_raise_config_error(self, build: Callable[[], Any], match: str) -> None:
        with pytest.raises(ConfigError, match=match):
            build()

    def test_invalid_docstring_is_still_the_seeds_value_error(self) -> None:
        assert issubclass(ConfigError, ValueError)
        with pytest.raises(ValueError, match="not in its signature"):
            StructuredTool.from_function(
                _bad_docstring, parse_docstring=True, error_on_invalid_docstring=True
            )

    def test_too_many_arguments_at_run_time_stay_a_tool_exception(self) -> None:
        shout: BaseTool = Tool(name="shout", func=str.upper, description="Shout.")
        with pytest.raises(ToolException, match="StructuredTool"):
            shout.invoke({"a": "x", "b": "y"})
        add: BaseTool = Tool(name="add", func=lambda a, b: a + b, description="Add.")
        with pytest.raises(ToolException, match="StructuredTool"):  # built, as in LangChain
            add.invoke({"a": 1, "b": 2})
