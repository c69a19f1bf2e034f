"""Class-based tools: Qwen-Agent's FunctionTool and seed 001's pydantic-model tools."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest
from pydantic import BaseModel, Field

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.errors import ToolInputError
from ragtools.retrieval.tools.classtool import FunctionTool, ModelTool
from ragtools.retrieval.tools.messages import ToolMessage, make_tool_call


class Weather(FunctionTool):
    name = "weather"
    description = "Weather for a city."
    parameters = [
        {"name": "city", "type": "string", "description": "city name", "required": True},
        {"name": "date", "type": "string", "description": "day", "enum": ["today", "tomorrow"]},
    ]

    def call(self, params: str | Mapping[str, Any], **kwargs: Any) -> Any:
        args = self.verify_args(params)
        return {"city": args["city"], "date": args.get("date", "today"), "sky": "晴", **kwargs}


class Power(FunctionTool):
    name = "power"
    description = "Raise a base to an exponent."
    parameters = {
        "type": "object",
        "properties": {
            "base": {"type": "number"},
            "exponent": {"type": "integer", "minimum": 0, "maximum": 10},
        },
        "required": ["base", "exponent"],
    }
    strict_json = True

    def call(self, params: str | Mapping[str, Any], **kwargs: Any) -> Any:
        args = self.verify_args(params)
        return args["base"] ** args["exponent"]


class TestFunctionTool:
    def test_function_property_from_old_style_parameters(self) -> None:
        assert Weather().function == {
            "name": "weather",
            "description": "Weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "city name"},
                    "date": {
                        "type": "string",
                        "description": "day",
                        "enum": ["today", "tomorrow"],
                    },
                },
                "required": ["city"],
            },
        }

    def test_function_property_from_json_schema(self) -> None:
        assert Power().function["parameters"] == Power.parameters
        assert Power().tool_info().to_function() == Power().function

    def test_call_with_json5_text_and_dict(self) -> None:
        assert Weather().call("{city: '深圳', date: 'tomorrow',}") == {
            "city": "深圳",
            "date": "tomorrow",
            "sky": "晴",
        }
        assert Weather().call({"city": "北京"})["date"] == "today"

    def test_required_parameter_missing(self) -> None:
        with pytest.raises(ToolInputError, match="Parameters city is required!"):
            Weather().call("{}")

    def test_enum_checked_by_jsonschema(self) -> None:
        with pytest.raises(ToolInputError, match="parameter date"):
            Weather().call({"city": "深圳", "date": "yesterday"})

    def test_strict_json_tool(self) -> None:
        assert Power().call('{"base": 2, "exponent": 10}') == 1024
        with pytest.raises(ToolInputError, match="valid JSON"):
            Power().call("{base: 2, exponent: 3}")
        with pytest.raises(ToolInputError, match="maximum"):
            Power().call('{"base": 2, "exponent": 11}')

    def test_invoke_with_tool_call_gives_message_with_non_ascii_json(self) -> None:
        message = Weather().invoke(make_tool_call("weather", {"city": "深圳"}, id="c1"))
        assert isinstance(message, ToolMessage)
        assert message.tool_call_id == "c1" and message.name == "weather"
        assert message.status == "success"
        assert "深圳" in message.content and "\\u" not in message.content
        assert json.loads(message.content) == {"city": "深圳", "date": "today", "sky": "晴"}

    def test_invoke_with_arguments_gives_raw_result_and_passes_kwargs(self) -> None:
        assert Weather().invoke({"city": "x"}, unit="C")["unit"] == "C"
        assert Power().invoke('{"base": 3, "exponent": 2}') == 9

    def test_bad_input_becomes_error_message_for_a_tool_call(self) -> None:
        message = Weather().invoke(make_tool_call("weather", {}, id="c2"))
        assert message.status == "error"
        assert message.content == "Parameters city is required!"
        assert message.tool_call_id == "c2"

    def test_bad_input_raises_when_not_handled(self) -> None:
        class Strict(Weather):
            handle_tool_error = False

        with pytest.raises(ToolInputError):
            Strict().invoke(make_tool_call("weather", {}, id="c3"))
        with pytest.raises(ToolInputError):
            Weather().invoke({})

    def test_ainvoke(self) -> None:
        message = asyncio.run(Power().ainvoke(make_tool_call("power", {"base": 2, "exponent": 3})))
        assert message.content == "8"

    def test_config_is_kept(self) -> None:
        assert Weather(unit="C", timeout=3).config == {"unit": "C", "timeout": 3}

    def test_name_is_required(self) -> None:
        class Nameless(FunctionTool):
            def call(self, params: str | Mapping[str, Any], **kwargs: Any) -> Any:
                return None

        with pytest.raises(ConfigError, match="has no name"):
            Nameless()

    def test_invalid_parameters_fail_at_instantiation(self) -> None:
        class Broken(Weather):
            parameters = {"type": "object", "properties": {"a": {"type": 5}}}

        with pytest.raises(ConfigError, match="Invalid JSON schema"):
            Broken()


class Multiply(BaseModel):
    """Multiply two integers."""

    x: int
    y: int = Field(description="second factor")

    def run(self) -> int:
        return self.x * self.y


class IpCheck(BaseModel):
    ips: list[str] = Field(description="IP addresses to check")

    @staticmethod
    def run(ips: list[str]) -> dict[str, list[str]]:
        import ipaddress

        private = [ip for ip in ips if ipaddress.ip_address(ip).is_private]
        return {"private": private, "public": [ip for ip in ips if ip not in private]}


class Greeting(BaseModel):
    who: str

    @classmethod
    def run(cls, who: str) -> str:
        return f"{cls.__name__}: 你好 {who}"


class TestModelTool:
    def test_instance_run_with_coercion(self) -> None:
        tool = ModelTool(Multiply, name="multiply")
        assert tool.execute({"x": 3, "y": "5"}) == 15
        assert tool.execute("{x: 2, y: 4}") == 8

    def test_static_and_class_run(self) -> None:
        ips = ModelTool(IpCheck, name="ip_check")
        assert ips.execute({"ips": ["192.168.1.1", "8.8.8.8"]}) == {
            "private": ["192.168.1.1"],
            "public": ["8.8.8.8"],
        }
        assert ModelTool(Greeting).execute({"who": "世界"}) == "Greeting: 你好 世界"

    def test_defaults_name_and_description(self) -> None:
        tool = ModelTool(Multiply)
        assert tool.name == "Multiply"
        assert tool.description == "Multiply two integers."
        assert ModelTool(Multiply, description="custom").description == "custom"

    def test_function_exports_model_schema(self) -> None:
        function = ModelTool(Multiply, name="multiply").function
        assert function["name"] == "multiply"
        assert function["parameters"]["required"] == ["x", "y"]
        assert function["parameters"]["properties"]["y"]["description"] == "second factor"

    def test_validation_error_names_the_field(self) -> None:
        with pytest.raises(
            ToolInputError, match=r"Invalid arguments for tool 'multiply': x: .*integer"
        ):
            ModelTool(Multiply, name="multiply").execute({"x": "three", "y": 1})
        with pytest.raises(ToolInputError, match="y: Field required"):
            ModelTool(Multiply, name="multiply").execute({"x": 1})

    def test_invoke_with_tool_call(self) -> None:
        tool = ModelTool(IpCheck, name="ip_check")
        message = tool.invoke(make_tool_call("ip_check", {"ips": ["10.0.0.1"]}, id="m1"))
        assert json.loads(message.content) == {"private": ["10.0.0.1"], "public": []}
        bad = tool.invoke(make_tool_call("ip_check", {"ips": "10.0.0.1"}, id="m2"))
        assert bad.status == "error" and "ips" in bad.content

    def test_rejects_non_models_and_models_without_run(self) -> None:
        class NoRun(BaseModel):
            a: int

        with pytest.raises(ConfigError, match="pydantic BaseModel"):
            ModelTool(dict)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="callable `run`"):
            ModelTool(NoRun)
