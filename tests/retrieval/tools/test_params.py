"""Lenient argument parsing, parameter schemas and result formatting (Qwen-Agent, seed 004)."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.errors import ToolInputError
from ragtools.retrieval.tools.params import (
    INVALID_JSON_MESSAGE,
    ToolInfo,
    format_result,
    parse_arguments,
    to_json_schema,
    validate_arguments,
    verify_arguments,
)

OLD_STYLE = [
    {"name": "query", "type": "string", "description": "what to look for", "required": True},
    {"name": "k", "type": "integer", "description": "how many", "default": 5, "minimum": 1},
]
OLD_STYLE_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "what to look for"},
        "k": {"type": "integer", "description": "how many", "default": 5, "minimum": 1},
    },
    "required": ["query"],
}


class TestParseArguments:
    def test_json5_trailing_comma_and_bare_keys(self) -> None:
        assert parse_arguments("{a: 1,}") == {"a": 1}

    def test_json5_single_quotes_keep_non_ascii(self) -> None:
        assert parse_arguments("{'city': '深圳'}") == {"city": "深圳"}

    def test_strict_json_rejects_json5(self) -> None:
        with pytest.raises(ToolInputError, match="valid JSON"):
            parse_arguments("{a: 1,}", strict_json=True)
        assert parse_arguments('{"a": 1}', strict_json=True) == {"a": 1}

    def test_mapping_is_copied(self) -> None:
        given = {"a": 1}
        parsed = parse_arguments(given)
        assert parsed == given
        assert parsed is not given

    @pytest.mark.parametrize("empty", [None, "", "   "])
    def test_nothing_means_no_arguments(self, empty: str | None) -> None:
        assert parse_arguments(empty) == {}

    @pytest.mark.parametrize("bad", ["{a: ", "not json", "{'a': 1"])
    def test_invalid_json_gives_the_clear_message(self, bad: str) -> None:
        with pytest.raises(ToolInputError) as info:
            parse_arguments(bad)
        assert str(info.value).startswith(INVALID_JSON_MESSAGE)
        assert INVALID_JSON_MESSAGE == "Parameters must be formatted as a valid JSON!"

    @pytest.mark.parametrize("not_object", ["[1, 2]", "3", '"text"'])
    def test_json_that_is_not_an_object(self, not_object: str) -> None:
        with pytest.raises(ToolInputError, match="Expected a JSON object"):
            parse_arguments(not_object)

    def test_other_types_rejected(self) -> None:
        with pytest.raises(ToolInputError, match="Got a int"):
            parse_arguments(42)  # type: ignore[arg-type]


class TestSchemas:
    def test_old_style_list_converted(self) -> None:
        assert to_json_schema(OLD_STYLE) == OLD_STYLE_SCHEMA

    def test_json_schema_returned_as_copy(self) -> None:
        schema = to_json_schema(OLD_STYLE_SCHEMA)
        assert schema == OLD_STYLE_SCHEMA
        assert schema is not OLD_STYLE_SCHEMA

    def test_no_parameters(self) -> None:
        assert to_json_schema(None) == {"type": "object", "properties": {}, "required": []}
        assert to_json_schema([]) == {"type": "object", "properties": {}, "required": []}

    def test_invalid_json_schema_is_a_config_error(self) -> None:
        with pytest.raises(ConfigError, match="Invalid JSON schema"):
            to_json_schema({"type": "object", "properties": {"a": {"type": "strin"}}})
        with pytest.raises(ConfigError, match="Invalid JSON schema"):
            to_json_schema({"type": "object", "required": "a"})

    def test_schema_must_describe_an_object(self) -> None:
        with pytest.raises(ConfigError, match="type 'object'"):
            to_json_schema({"type": "string"})

    @pytest.mark.parametrize(
        "bad",
        [
            [{"type": "string"}],
            [{"name": "a"}],
            ["a"],
            [{"name": "a", "type": "string"}, {"name": "a", "type": "integer"}],
        ],
    )
    def test_bad_old_style_items(self, bad: list[object]) -> None:
        with pytest.raises(ConfigError):
            to_json_schema(bad)  # type: ignore[arg-type]

    def test_text_is_not_parameters(self) -> None:
        with pytest.raises(ConfigError, match="got text"):
            to_json_schema("query: str")  # type: ignore[arg-type]


class TestValidation:
    def test_required_parameter_message(self) -> None:
        with pytest.raises(ToolInputError, match=r"^Parameters query is required!$"):
            validate_arguments({"k": 3}, to_json_schema(OLD_STYLE))

    def test_jsonschema_type_error_names_the_parameter(self) -> None:
        with pytest.raises(ToolInputError, match=r"parameter k: 'three' is not of type 'integer'"):
            validate_arguments({"query": "q", "k": "three"}, OLD_STYLE_SCHEMA)

    def test_jsonschema_minimum(self) -> None:
        with pytest.raises(ToolInputError, match="parameter k: 0 is less than the minimum of 1"):
            verify_arguments('{"query": "q", "k": 0}', OLD_STYLE)

    def test_nested_path_is_named(self) -> None:
        schema = {
            "type": "object",
            "properties": {
                "filter": {"type": "object", "properties": {"page": {"type": "integer"}}}
            },
        }
        with pytest.raises(ToolInputError, match="parameter filter/page"):
            validate_arguments({"filter": {"page": "x"}}, schema)

    def test_valid_arguments_pass_in_both_forms(self) -> None:
        text = "{query: 'bm25', k: 3,}"
        assert verify_arguments(text, OLD_STYLE) == {"query": "bm25", "k": 3}
        assert verify_arguments(text, OLD_STYLE_SCHEMA) == {"query": "bm25", "k": 3}

    def test_verify_reports_bad_json_first(self) -> None:
        with pytest.raises(ToolInputError, match="valid JSON"):
            verify_arguments("{query", OLD_STYLE)


class TestFormatResult:
    def test_string_unchanged(self) -> None:
        assert format_result("  as is \n") == "  as is \n"

    def test_dict_keeps_non_ascii(self) -> None:
        text = format_result({"city": "深圳", "weather": "晴"})
        assert "深圳" in text and "晴" in text
        assert "\\u" not in text
        assert json.loads(text) == {"city": "深圳", "weather": "晴"}

    def test_list_and_tuple_as_json(self) -> None:
        assert json.loads(format_result([1, "二", {"x": None}])) == [1, "二", {"x": None}]
        assert json.loads(format_result((1, 2))) == [1, 2]

    def test_compact_when_asked(self) -> None:
        assert format_result({"a": [1, 2]}, indent=None) == '{"a": [1, 2]}'

    def test_none_and_scalars(self) -> None:
        assert format_result(None) == ""
        assert format_result(3) == "3"
        assert format_result(2.5) == "2.5"

    def test_unencodable_values_fall_back_to_str(self) -> None:
        assert json.loads(format_result({"s": {1}, "o": object})) == {"s": "{1}", "o": str(object)}

    def test_pydantic_model(self) -> None:
        class Answer(BaseModel):
            text: str
            score: float

        assert json.loads(format_result(Answer(text="答案", score=0.5))) == {
            "text": "答案",
            "score": 0.5,
        }


class TestToolInfo:
    def test_both_parameter_forms_give_the_same_openai_tool(self) -> None:
        from_list = ToolInfo("search", "Search the index.", OLD_STYLE)
        from_schema = ToolInfo("search", "Search the index.", OLD_STYLE_SCHEMA)
        expected = {
            "type": "function",
            "function": {
                "name": "search",
                "description": "Search the index.",
                "parameters": OLD_STYLE_SCHEMA,
            },
        }
        assert from_list.to_openai_tool() == expected
        assert from_schema.to_openai_tool() == expected
        assert from_list.to_function() == expected["function"]

    def test_no_parameters(self) -> None:
        assert ToolInfo("now", "Current time.").json_schema["properties"] == {}
