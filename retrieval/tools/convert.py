"""Runnables as tools: ``convert_runnable_to_tool`` and the tool for schema-less runnables.

A *runnable* is anything with ``invoke(input)`` (and maybe ``ainvoke``): a LangChain Runnable,
a chain, a retriever, an object of one's own. LangChain's ``convert_runnable_to_tool`` picks
the tool kind from the runnable's input type, and so does :func:`convert_runnable_to_tool`:

* input type ``str`` (JSON schema ``"type": "string"``): a single-input
  :class:`~retrieval.tools.simple.Tool`;
* an object schema with properties (a pydantic model input): a
  :class:`~retrieval.tools.structured.StructuredTool` with that schema, called with the
  arguments as one dict;
* otherwise the argument types come from ``arg_types`` or the type hints of the runnable's
  ``InputType`` (a ``TypedDict``); an input type that cannot have hints (``dict[str, int]``,
  or no ``InputType`` at all) is a ``TypeError`` "Tool input must be str or dict. If dict,
  dict arguments must be typed.", LangChain's message, since no schema can be shown to a
  model. (An ``Any`` input has no hints and gives a tool without arguments, as in
  LangChain.)

The wrapper passes a ``callbacks`` value on to the runnable as ``{"callbacks": ...}`` config,
as LangChain's does. Description default: LangChain's placeholder ``"Takes {schema}."``.

:class:`RunnableTool` is what ``tool("name", runnable)`` builds for a runnable without any
schema: its one input goes to the runnable unchanged, a string as a string and a dict as the
dict, so the seed's ``tool("uppercase", RunnableLambda(lambda x: x["query"].upper()))`` works
with ``invoke({"query": "abc"})``.
"""

from __future__ import annotations

import logging
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, RootModel, create_model

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.tools.base import BaseTool
from ragtools.retrieval.tools.injected import RunConfig
from ragtools.retrieval.tools.pydantic_v1 import is_v1_model
from ragtools.retrieval.tools.simple import Tool
from ragtools.retrieval.tools.structured import StructuredTool

__all__ = ["RunnableTool", "convert_runnable_to_tool", "runnable_description"]

logger = logging.getLogger(__name__)

_UNTYPED = (
    "Tool input must be str or dict. If dict, dict arguments must be typed. Either annotate "
    "types (e.g., with TypedDict) or pass arg_types to convert_runnable_to_tool."
)


class RunnableTool(Tool):
    """A single-input tool over a runnable with no schema: the input goes in unchanged."""

    def _parse_arguments(
        self, tool_input: str | dict[str, Any], call_id: str | None, injected: Mapping[str, Any]
    ) -> dict[str, Any]:
        if isinstance(tool_input, dict) and self.args_schema is None:
            return {"tool_input": dict(tool_input)}
        return super()._parse_arguments(tool_input, call_id, injected)


def runnable_description(runnable: Any) -> str | None:
    """A runnable's own description, else LangChain's ``repr`` for a LangChain Runnable."""
    text = getattr(runnable, "description", None)
    if isinstance(text, str) and text:
        return text
    if callable(getattr(runnable, "get_input_jsonschema", None)):
        return repr(runnable)  # what LangChain's @tool uses: the runnable's source
    return None


def convert_runnable_to_tool(
    runnable: Any,
    args_schema: type[BaseModel] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    arg_types: dict[str, type] | None = None,
) -> BaseTool:
    """Turn a runnable into a tool (see the module docstring for the kind chosen).

    Args:
        runnable: an object with ``invoke(input)`` (and optionally ``ainvoke``).
        args_schema: the argument model (then a StructuredTool).
        name: default ``runnable.get_name()`` or the class name.
        description: default ``"Takes {input schema}."``.
        arg_types: argument name -> type, when the input type is an untyped dict.

    Raises:
        TypeError: the input is neither a string nor a typed dict (LangChain's message).
        ConfigError: the object has no ``invoke``.

    Example:
        >>> from langchain_core.runnables import RunnableLambda  # doctest: +SKIP
        >>> mul = convert_runnable_to_tool(  # doctest: +SKIP
        ...     RunnableLambda(lambda d: d["a"] * d["b"]), name="mul",
        ...     description="Multiply.", arg_types={"a": int, "b": int})
        >>> mul.invoke({"a": "3", "b": 4})  # doctest: +SKIP
        12
    """
    if not callable(getattr(runnable, "invoke", None)):
        msg = f"convert_runnable_to_tool needs an object with invoke(), got {runnable!r}"
        raise ConfigError(msg)
    tool_name = name or _runnable_name(runnable)
    input_schema = _input_json_schema(runnable, args_schema)
    text = description or f"Takes {input_schema}."
    has_async = callable(getattr(runnable, "ainvoke", None))
    if args_schema is None and input_schema.get("type") == "string":
        return Tool(
            name=tool_name,
            func=runnable.invoke,
            coroutine=runnable.ainvoke if has_async else None,
            description=text,
        )
    schema = args_schema or _object_schema(runnable, tool_name, input_schema, arg_types)

    # The call's config (tags, metadata, configurable, callbacks) goes on to the runnable,
    # as LangChain's wrapper passes it; a runnable-like object without a config parameter
    # is called with the input alone when there is no config.
    def invoke_wrapper(config: RunConfig, **kwargs: Any) -> Any:
        return runnable.invoke(kwargs, dict(config)) if config else runnable.invoke(kwargs)

    async def ainvoke_wrapper(config: RunConfig, **kwargs: Any) -> Any:
        if config:
            return await runnable.ainvoke(kwargs, dict(config))
        return await runnable.ainvoke(kwargs)

    return StructuredTool(
        name=tool_name,
        description=text,
        func=invoke_wrapper,
        coroutine=ainvoke_wrapper if has_async else None,
        args_schema=schema,
    )


def _runnable_name(runnable: Any) -> str:
    get_name = getattr(runnable, "get_name", None)
    if callable(get_name):
        return str(get_name())
    return type(runnable).__name__


def _input_json_schema(runnable: Any, args_schema: type[BaseModel] | None) -> dict[str, Any]:
    if args_schema is not None:
        return args_schema.model_json_schema()
    get_schema = getattr(runnable, "get_input_jsonschema", None)
    if callable(get_schema):
        return dict(get_schema())
    if getattr(runnable, "InputType", None) is str:
        return {"type": "string"}
    model = getattr(runnable, "input_schema", None)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return model.model_json_schema()
    return {}


def _object_schema(
    runnable: Any, name: str, input_schema: dict[str, Any], arg_types: dict[str, type] | None
) -> type[BaseModel]:
    model = getattr(runnable, "input_schema", None)
    if arg_types is None and is_v1_model(model):  # kept as the tool's args_schema
        return typing.cast("type[BaseModel]", model)
    if (
        arg_types is None
        and isinstance(model, type)
        and issubclass(model, BaseModel)
        and input_schema.get("type") == "object"
        and input_schema.get("properties")
        and not issubclass(model, RootModel)
    ):
        return model
    if arg_types is None:
        try:
            arg_types = typing.get_type_hints(getattr(runnable, "InputType", None))
        except TypeError as exc:
            msg = f"{_UNTYPED} {exc}"
            raise TypeError(msg) from exc
    fields: dict[str, Any] = {key: (kind, Field(...)) for key, kind in arg_types.items()}
    built: type[BaseModel] = create_model(name, **fields)
    return built
