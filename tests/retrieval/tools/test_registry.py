"""Qwen-Agent's tool registry and seed 001's ToolExecutor."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from pydantic import BaseModel

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.errors import ToolInputError
from ragtools.retrieval.tools.classtool import FunctionTool
from ragtools.retrieval.tools.messages import make_tool_call
from ragtools.retrieval.tools.node import ToolsNode
from ragtools.retrieval.tools.registry import (
    TOOL_REGISTRY,
    ToolExecutor,
    ToolRegistry,
    UnknownToolError,
    get_tool,
    list_tools,
    register_tool,
    unregister_tool,
)


class _Echo(FunctionTool):
    description = "Repeat the text."
    parameters = [{"name": "text", "type": "string", "required": True}]

    def call(self, params: str | Mapping[str, Any], **kwargs: Any) -> Any:
        prefix = self.config.get("prefix", "")
        return prefix + self.verify_args(params)["text"]


@pytest.fixture
def registry() -> Iterator[ToolRegistry]:
    """The global registry, restored after the test."""
    with TOOL_REGISTRY.scoped() as scoped:
        yield scoped


def _fresh(name: str = "") -> type[_Echo]:
    """A new subclass each time, so registering never mutates a shared class."""
    return type("Echo", (_Echo,), {"name": name})


class TestGlobalRegistry:
    def test_register_get_list(self, registry: ToolRegistry) -> None:
        cls = register_tool("echo")(_fresh())
        assert cls.name == "echo"
        assert "echo" in list_tools()
        tool = get_tool("echo", prefix=">> ")
        assert isinstance(tool, cls)
        assert tool.config == {"prefix": ">> "}
        assert tool.call("{text: 'hi'}") == ">> hi"

    def test_scoped_restores_previous_content(self) -> None:
        before = list_tools()
        with TOOL_REGISTRY.scoped():
            register_tool("scoped_echo")(_fresh())
            assert "scoped_echo" in list_tools()
        assert list_tools() == before

    def test_duplicate_name_is_an_error(self, registry: ToolRegistry) -> None:
        register_tool("dup")(_fresh())
        with pytest.raises(ConfigError, match="'dup' already exists"):
            register_tool("dup")(_fresh())

    def test_overwrite_allowed_with_a_warning(
        self, registry: ToolRegistry, caplog: pytest.LogCaptureFixture
    ) -> None:
        first = register_tool("dup")(_fresh())
        second = _fresh()
        with caplog.at_level(logging.WARNING, logger="ragtools.retrieval.tools.registry"):
            register_tool("dup", allow_overwrite=True)(second)
        assert registry["dup"] is second and registry["dup"] is not first
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1
        assert "'dup' already exists" in warnings[0].getMessage()

    def test_name_conflict_is_an_error(self, registry: ToolRegistry) -> None:
        with pytest.raises(ConfigError, match='name="other" conflicts with register_tool'):
            register_tool("echo")(_fresh("other"))
        assert "echo" not in registry

    def test_matching_own_name_is_fine(self, registry: ToolRegistry) -> None:
        assert register_tool("same")(_fresh("same")).name == "same"

    def test_unknown_name(self, registry: ToolRegistry) -> None:
        register_tool("echo")(_fresh())
        with pytest.raises(UnknownToolError) as info:
            get_tool("nope")
        assert isinstance(info.value, KeyError) and isinstance(info.value, ToolInputError)
        assert str(info.value).startswith("Tool 'nope' is not registered")
        assert "echo" in str(info.value)

    def test_unregister(self, registry: ToolRegistry) -> None:
        cls = register_tool("gone")(_fresh())
        assert unregister_tool("gone") is cls
        assert "gone" not in list_tools()
        with pytest.raises(UnknownToolError):
            unregister_tool("gone")

    def test_bad_config_is_a_config_error(self, registry: ToolRegistry) -> None:
        class NeedsKey(_Echo):
            def __init__(self, *, key: str) -> None:
                super().__init__(key=key)

        register_tool("needs_key")(NeedsKey)
        with pytest.raises(ConfigError, match="Could not create tool 'needs_key'"):
            get_tool("needs_key", wrong=1)
        assert get_tool("needs_key", key="k").config == {"key": "k"}


class TestLocalRegistry:
    def test_is_independent_of_the_global_one(self) -> None:
        local = ToolRegistry()
        local.register("local_echo")(_fresh())
        assert local.list_tools() == ["local_echo"]
        assert "local_echo" not in TOOL_REGISTRY
        assert len(local) == 1 and list(local) == ["local_echo"]

    def test_only_tool_classes(self) -> None:
        local = ToolRegistry()
        with pytest.raises(ConfigError, match="Only FunctionTool or BaseTool subclasses"):
            local.register("plain")(dict)  # type: ignore[type-var]
        with pytest.raises(ConfigError, match="non-empty string"):
            local.add(_fresh())

    def test_add_uses_the_class_name_attribute(self) -> None:
        local = ToolRegistry()
        local.add(_fresh("named"))
        assert local.list_tools() == ["named"]

    def test_registered_tool_runs_in_a_tools_node(self) -> None:
        local = ToolRegistry()
        local.register("echo")(_fresh())
        node = ToolsNode([local.get_tool("echo", prefix="> ")])
        [message] = node.invoke([make_tool_call("echo", {"text": "回声"}, id="r1")])
        assert message.content == "> 回声"
        assert node.openai_tools()[0]["function"]["parameters"]["required"] == ["text"]


class TestToolExecutor:
    def _executor(self) -> ToolExecutor:
        executor = ToolExecutor()

        @executor.register("multiply", "Multiply two integers.")
        class Multiply(BaseModel):
            x: int
            y: int

            @staticmethod
            def run(x: int, y: int) -> int:
                return x * y

        return executor

    def test_execute_by_name_with_validation(self) -> None:
        executor = self._executor()
        assert executor.execute("multiply", {"x": 3, "y": "5"}) == 15
        assert executor.execute("multiply", '{"x": 2, "y": 2}') == 4
        with pytest.raises(ToolInputError, match="y: Field required"):
            executor.execute("multiply", {"x": 3})

    def test_unknown_name(self) -> None:
        with pytest.raises(UnknownToolError, match=r"'divide' is not registered.*multiply"):
            self._executor().execute("divide", {})

    def test_metadata_export(self) -> None:
        metadata = self._executor().metadata()
        assert list(metadata) == ["multiply"]
        assert metadata["multiply"]["description"] == "Multiply two integers."
        parameters = metadata["multiply"]["parameters"]
        assert parameters["required"] == ["x", "y"]
        assert parameters["properties"]["x"]["type"] == "integer"

    def test_duplicates(self, caplog: pytest.LogCaptureFixture) -> None:
        executor = self._executor()

        class Other(BaseModel):
            def run(self) -> str:
                return "other"

        with pytest.raises(ConfigError, match="already exists"):
            executor.register("multiply")(Other)
        with caplog.at_level(logging.WARNING, logger="ragtools.retrieval.tools.registry"):
            executor.register("multiply", allow_overwrite=True)(Other)
        assert "overwriting" in caplog.text
        assert executor.execute("multiply", {}) == "other"

    def test_rejects_classes_without_run(self) -> None:
        class NoRun(BaseModel):
            a: int

        with pytest.raises(ConfigError, match="callable `run`"):
            ToolExecutor().register("no_run")(NoRun)

    def test_tools_feed_a_tools_node(self) -> None:
        executor = self._executor()
        assert "multiply" in executor
        node = ToolsNode(executor.tools())
        [message] = node.invoke([make_tool_call("multiply", {"x": 6, "y": 7}, id="e1")])
        assert message.content == "42"
        assert node.openai_tools()[0]["function"]["description"] == "Multiply two integers."
