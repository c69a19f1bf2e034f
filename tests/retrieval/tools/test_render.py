"""Text renderings and the OpenAI function/tool exports."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, PydanticUndefinedAnnotation

from ragtools.retrieval.tools import (
    BaseTool,
    InjectedToolArg,
    RunConfig,
    Tool,
    convert_to_openai_tool,
    render_text_description,
    render_text_description_and_args,
    tool,
)
from ragtools.retrieval.tools.render import convert_to_openai_function


class Address(BaseModel):
    """A postal address."""

    city: str = Field(description="city name")
    title: str = ""


@tool
def search(query: str, max_results: int = 10) -> str:
    """Search the web for information."""
    return query


@tool
def calculator(expression: str) -> str:
    """Evaluate a mathematical expression."""
    return expression


@tool
def scoped(
    query: str, tenant: Annotated[str, InjectedToolArg], config: RunConfig | None = None
) -> str:
    """Search one tenant."""
    return query


@tool
def ship(to: Address, express: bool = False) -> str:
    """Ship a parcel."""
    return to.city


def test_render_text_description() -> None:
    assert render_text_description([search, calculator]) == (
        "search(query: str, max_results: int = 10) - Search the web for information.\n"
        "calculator(expression: str) - Evaluate a mathematical expression."
    )


def test_render_hides_injected_and_config_parameters() -> None:
    assert render_text_description([scoped]) == "scoped(query: str) - Search one tenant."


class Weather(BaseTool):
    """A subclass with a JSON-schema dict and no wrapped function."""

    name: str = "weather"
    description: str = "Forecast."

    def _run(self, **kwargs: Any) -> Any:
        return kwargs


def test_render_tools_without_function_uses_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "default": 1}},
        "required": ["city"],
    }
    weather = Weather(args_schema=schema)
    assert render_text_description([weather]) == (
        "weather(city: string, days: integer = 1) - Forecast."
    )
    assert weather.invoke({"city": "Oslo"}) == {"city": "Oslo"}


def test_render_text_description_and_args() -> None:
    assert render_text_description_and_args([search, calculator]) == (
        "search - Search the web for information., args: "
        '{"query": {"title": "Query", "type": "string"}, '
        '"max_results": {"default": 10, "title": "Max Results", "type": "integer"}}\n'
        "calculator - Evaluate a mathematical expression., args: "
        '{"expression": {"title": "Expression", "type": "string"}}'
    )


def test_convert_to_openai_function_and_tool() -> None:
    expected_function = {
        "name": "search",
        "description": "Search the web for information.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "max_results": {"default": 10, "type": "integer"},
            },
            "required": ["query"],
        },
    }
    assert convert_to_openai_function(search) == expected_function
    assert convert_to_openai_tool(search) == {"type": "function", "function": expected_function}


def test_openai_export_inlines_refs_and_keeps_a_property_named_title() -> None:
    assert convert_to_openai_function(ship)["parameters"] == {
        "type": "object",
        "properties": {
            "to": {
                "description": "A postal address.",
                "type": "object",
                "properties": {
                    "city": {"description": "city name", "type": "string"},
                    "title": {"default": "", "type": "string"},
                },
                "required": ["city"],
            },
            "express": {"default": False, "type": "boolean"},
        },
        "required": ["to"],
    }


def test_openai_export_of_a_plain_function() -> None:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    assert convert_to_openai_tool(add)["function"] == {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    }


def test_openai_export_of_a_single_input_tool() -> None:
    shout = Tool(name="shout", func=str.upper, description="Shout.")
    assert convert_to_openai_function(shout)["parameters"] == {  # LangChain's export
        "type": "object",
        "properties": {"__arg1": {"title": "__arg1", "type": "string"}},
        "required": ["__arg1"],
    }
    assert shout.invoke({"__arg1": "hi"}) == "HI"  # what a model sends back


class _Container(BaseModel):
    rows: list[_NowhereRow] = Field(default_factory=list)  # type: ignore[name-defined]  # noqa: F821


def test_export_names_an_unresolved_forward_reference() -> None:
    @tool
    def load(name: str, container: _Container) -> str:
        """Load a container."""
        return name

    with pytest.raises(PydanticUndefinedAnnotation, match="_NowhereRow"):
        convert_to_openai_function(load)
