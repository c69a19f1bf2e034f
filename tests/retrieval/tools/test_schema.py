"""create_schema_from_function: annotations, Annotated, Field, docstrings, filtering."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, ValidationError

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.tools import InjectedToolArg, RunConfig, create_schema_from_function


class Point(BaseModel):
    x: float
    y: float


def foo(bar: str, baz: int) -> str:
    """The foo.

    Args:
        bar: The bar.
        baz: The baz.
    """
    return bar


def invalid_docstring_1(bar: str, baz: int) -> str:
    """The foo."""
    return bar


def invalid_docstring_2(bar: str, baz: int) -> str:
    """The foo.
    Args:
        bar: The bar.
        baz: The baz.
    """
    return bar


def invalid_docstring_3(bar: str, baz: int) -> str:
    """The foo.

    Args:
        banana: The bar.
        monkey: The baz.
    """
    return bar


def test_google_docstring_snapshot() -> None:
    schema = create_schema_from_function("foo", foo, parse_docstring=True)
    assert schema.model_json_schema() == {
        "title": "foo",
        "description": "The foo.",
        "type": "object",
        "properties": {
            "bar": {"title": "Bar", "description": "The bar.", "type": "string"},
            "baz": {"title": "Baz", "description": "The baz.", "type": "integer"},
        },
        "required": ["bar", "baz"],
    }


@pytest.mark.parametrize(
    ("func", "match"),
    [
        (invalid_docstring_1, "no 'Args:' section"),
        (invalid_docstring_2, "blank line"),
        (invalid_docstring_3, r"documents \['banana', 'monkey'\]"),
    ],
)
def test_invalid_docstrings_raise_value_error(func: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        create_schema_from_function(
            "f", func, parse_docstring=True, error_on_invalid_docstring=True
        )
    lenient = create_schema_from_function("f", func, parse_docstring=True)
    assert list(lenient.model_fields) == ["bar", "baz"]
    assert lenient.__doc__ == "The foo."


def test_lenient_parsing_reads_what_it_can() -> None:
    spacing = create_schema_from_function("f", invalid_docstring_2, parse_docstring=True)
    assert spacing.model_fields["bar"].description == "The bar."
    unknown = create_schema_from_function("f", invalid_docstring_3, parse_docstring=True)
    assert [f.description for f in unknown.model_fields.values()] == [None, None]


def test_args_section_without_summary_is_invalid() -> None:
    def no_summary(bar: str) -> str:
        """Args:
        bar: The bar.
        """
        return bar

    with pytest.raises(ValueError, match="summary"):
        create_schema_from_function(
            "f", no_summary, parse_docstring=True, error_on_invalid_docstring=True
        )


def test_function_without_arguments_needs_no_args_section() -> None:
    def now() -> str:
        """Current time."""
        return ""

    schema = create_schema_from_function(
        "now", now, parse_docstring=True, error_on_invalid_docstring=True
    )
    assert schema.model_fields == {}
    assert schema.__doc__ == "Current time."


def test_docstring_continuation_lines_types_and_other_sections() -> None:
    def rich(query: str, k: int = 5) -> list[str]:
        """Search the index.

        Longer explanation.

        Args:
            query (str): What to look for,
                over two lines.
            k: How many.

        Returns:
            The hits.

        Raises:
            ValueError: never.
        """
        return []

    schema = create_schema_from_function("rich", rich, parse_docstring=True)
    assert schema.__doc__ == "Search the index. Longer explanation."  # as LangChain joins
    assert schema.model_fields["query"].description == "What to look for, over two lines."
    assert schema.model_fields["k"].description == "How many."


def test_types_defaults_and_required_from_annotations() -> None:
    def f(
        name: str,
        count: int = 3,
        ratio: float | None = None,
        tags: list[str] | None = None,
        mode: Literal["fast", "exact"] = "fast",
        where: Point | None = None,
        untyped=1,
    ) -> None:
        """F."""

    schema = create_schema_from_function("f", f).model_json_schema()
    props = schema["properties"]
    assert schema["required"] == ["name"]
    assert props["count"] == {"default": 3, "title": "Count", "type": "integer"}
    assert props["ratio"]["anyOf"] == [{"type": "number"}, {"type": "null"}]
    assert props["tags"]["anyOf"][0] == {"items": {"type": "string"}, "type": "array"}
    assert props["mode"] == {
        "default": "fast",
        "enum": ["fast", "exact"],
        "title": "Mode",
        "type": "string",
    }
    assert props["where"]["anyOf"][0] == {"$ref": "#/$defs/Point"}
    assert props["untyped"] == {"default": 1, "title": "Untyped"}


def test_descriptions_from_annotated_and_field() -> None:
    def f(
        a: Annotated[int, "first number"],
        b: Annotated[int, Field(description="second number", ge=0)],
        c: int = Field(default=7, description="third number"),
    ) -> int:
        """F."""
        return a + b + c

    schema = create_schema_from_function("f", f)
    props = schema.model_json_schema()["properties"]
    assert props["a"] == {"description": "first number", "title": "A", "type": "integer"}
    assert props["b"] == {
        "description": "second number",
        "minimum": 0,
        "title": "B",
        "type": "integer",
    }
    assert props["c"] == {
        "default": 7,
        "description": "third number",
        "title": "C",
        "type": "integer",
    }
    with pytest.raises(ValidationError):
        schema.model_validate({"a": 1, "b": -1})


def test_docstring_description_wins_over_annotated() -> None:
    def f(a: Annotated[int, "from annotation"]) -> int:
        """F.

        Args:
            a: from docstring
        """
        return a

    assert create_schema_from_function("f", f).model_fields["a"].description == "from annotation"
    parsed = create_schema_from_function("f", f, parse_docstring=True)
    assert parsed.model_fields["a"].description == "from docstring"


def test_values_are_coerced() -> None:
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    validated = create_schema_from_function("add", add).model_validate({"a": 2, "b": "4"})
    assert (validated.a, validated.b) == (2, 4)  # type: ignore[attr-defined]


def test_plumbing_and_config_parameters_are_skipped() -> None:
    class Searcher:
        def search(self, query: str, callbacks: Any = None, run_manager: Any = None) -> str:
            return query

        @classmethod
        def build(cls, name: str) -> str:
            return name

    def configured(query: str, config: RunConfig | None = None) -> str:
        """C."""
        return query

    assert list(create_schema_from_function("s", Searcher.search).model_fields) == ["query"]
    assert list(create_schema_from_function("s", Searcher().search).model_fields) == ["query"]
    assert list(create_schema_from_function("b", Searcher.build).model_fields) == ["name"]
    assert list(create_schema_from_function("c", configured).model_fields) == ["query"]


def test_filter_args_and_varargs() -> None:
    def f(a: int, b: int, *rest: int, **extra: Any) -> int:
        """F."""
        return a

    schema = create_schema_from_function("f", f, filter_args=["b"])
    assert list(schema.model_fields) == ["a", "rest", "extra"]  # LangChain's fields
    assert schema.model_fields["rest"].annotation == tuple[int, ...]
    assert schema.model_fields["extra"].annotation == dict[str, Any]
    assert schema.model_fields["rest"].default is None
    assert schema.model_config["extra"] == "ignore"
    keys = create_schema_from_function("f", f, filter_args=["b"], variadic="extra_keys")
    assert list(keys.model_fields) == ["a"]
    assert keys.model_config["extra"] == "allow"
    assert create_schema_from_function("g", foo).model_config["extra"] == "ignore"


def test_variadic_option_is_checked() -> None:
    with pytest.raises(ConfigError, match="variadic must be 'fields' or 'extra_keys', got 'x'"):
        create_schema_from_function("g", foo, variadic="x")  # type: ignore[arg-type]


def test_include_injected() -> None:
    def f(query: str, user: Annotated[str, InjectedToolArg]) -> str:
        """F."""
        return query

    assert list(create_schema_from_function("f", f).model_fields) == ["query", "user"]
    hidden = create_schema_from_function("f", f, include_injected=False)
    assert list(hidden.model_fields) == ["query"]


def test_unresolvable_type_hint_is_a_config_error() -> None:
    class Inner(BaseModel):
        v: int

    def f(x: Inner) -> int:
        """F."""
        return x.v

    with pytest.raises(ConfigError, match="cannot resolve the type hints of 'f'"):
        create_schema_from_function("f", f)
