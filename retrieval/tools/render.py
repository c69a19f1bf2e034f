"""Tools rendered for a model: plain-text lines for prompts, OpenAI function/tool dicts.

* :func:`render_text_description`: ``name(signature) - description`` per line, for ReAct-style
  prompts. Unlike LangChain, the signature is the *model-facing* one: injected, config and
  callback parameters are left out (a hidden tenant id must not leak into a prompt) and so is
  the return annotation (the model never sees the return value in that form). Tools without a
  function get a signature built from their schema.
* :func:`render_text_description_and_args`: ``name - description, args: {...}`` with the
  argument properties as JSON (valid JSON reads better to a model than a Python repr).
* :func:`convert_to_openai_function` / :func:`convert_to_openai_tool`: OpenAI's
  ``{"name", "description", "parameters"}`` and ``{"type": "function", "function": ...}``.
  ``parameters`` is ``tool_call_schema``'s JSON schema with local ``$ref`` s inlined (non-
  recursive ones), ``$defs`` dropped when nothing refers to them any more, and pydantic's
  ``title`` keys removed (a property *named* ``title`` is kept), as LangChain does; a
  :class:`Tool` without ``args_schema`` takes LangChain's one string ``__arg1``. A plain
  function is read as LangChain reads one: its Google-style docstring gives the description
  (the summary) and the argument descriptions (``Args:``), leniently. ``strict=True`` (or a
  tool built with ``strict=True``) gives OpenAI's strict form: ``"strict": true``, and every
  object closed (``additionalProperties: false``) with all its properties required, at every
  level, as LangChain's ``convert_to_openai_function(..., strict=True)``. Schemas that are
  not tools are taken as LangChain's converter takes them: pydantic model classes (v2, v1),
  ``TypedDict`` s (``Annotated[T, default, "description"]`` fields, docstring ``Args:``),
  and dicts in OpenAI's, Anthropic's or Bedrock's format or a JSON schema with a ``title``;
  OpenAI's built-in tool dicts (``{"type": "file_search", ...}``) pass through
  ``convert_to_openai_tool`` unchanged.
"""

from __future__ import annotations

import copy
import inspect
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, PydanticInvalidForJsonSchema
from typing_extensions import is_typeddict

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.tools.base import BaseTool
from ragtools.retrieval.tools.pydantic_v1 import is_v1_model
from ragtools.retrieval.tools.schema import model_facing_parameters, typed_dict_model
from ragtools.retrieval.tools.simple import Tool
from ragtools.retrieval.tools.structured import StructuredTool

__all__ = [
    "convert_to_openai_function",
    "convert_to_openai_tool",
    "render_text_description",
    "render_text_description_and_args",
]

logger = logging.getLogger(__name__)


def render_text_description(tools: Sequence[BaseTool]) -> str:
    """One ``name(signature) - description`` line per tool.

    Example:
        >>> from retrieval.tools.decorator import tool
        >>> @tool
        ... def search(query: str, k: int = 5) -> str:
        ...     '''Search the corpus.'''
        ...     return ""
        >>> render_text_description([search])
        'search(query: str, k: int = 5) - Search the corpus.'
    """
    return "\n".join(f"{t.name}{_signature_text(t)} - {t.description}" for t in tools)


def render_text_description_and_args(tools: Sequence[BaseTool]) -> str:
    """One ``name - description, args: {json properties}`` line per tool."""
    return "\n".join(
        f"{t.name} - {t.description}, args: {json.dumps(t.args, ensure_ascii=False)}" for t in tools
    )


def convert_to_openai_function(
    tool: BaseTool | Callable[..., Any] | type | dict[str, Any], *, strict: bool | None = None
) -> dict[str, Any]:
    """``{"name", "description", "parameters"}`` for OpenAI function calling.

    Args:
        tool: a tool (ours, or LangChain's: read through its ``tool_call_schema``), or a
            documented function (its Google-style docstring is parsed).
        strict: OpenAI's strict mode (see the module docstring); default: the tool's
            ``strict`` setting, and no ``strict`` key when that is off.
    """
    given = _described_schema(tool)
    if given is not None:
        if strict:
            given["parameters"] = _close_objects(given.get("parameters", {}))
        return given if strict is None else {**given, "strict": strict}
    described: Any = tool  # ours, or LangChain's (untyped here)
    if isinstance(tool, BaseTool):
        schema = tool.tool_call_json_schema()
    elif _is_langchain_tool(tool):
        call_schema = described.tool_call_schema
        is_dict = isinstance(call_schema, dict)
        schema = copy.deepcopy(call_schema) if is_dict else call_schema.model_json_schema()
    else:  # a function (dicts were read above)
        described = StructuredTool.from_function(
            described, parse_docstring=True, error_on_invalid_docstring=False
        )
        schema = described.tool_call_json_schema()
    schema.pop("title", None)
    schema.pop("description", None)
    parameters = _remove_titles(_inline_refs(schema))
    if isinstance(tool, Tool) and tool.args_schema is None:  # LangChain's single string
        parameters = {
            "properties": {"__arg1": {"title": "__arg1", "type": "string"}},
            "required": ["__arg1"],
            "type": "object",
        }
    if strict is None and getattr(described, "strict", None) is True:
        strict = True
    function: dict[str, Any] = {"name": described.name, "description": described.description}
    function["parameters"] = _close_objects(parameters) if strict else parameters
    if strict is not None:
        function["strict"] = strict
    return function


def convert_to_openai_tool(
    tool: BaseTool | Callable[..., Any] | type | dict[str, Any], *, strict: bool | None = None
) -> dict[str, Any]:
    """``{"type": "function", "function": {...}}`` for OpenAI tool calling; an OpenAI
    built-in tool dict (``{"type": "file_search", ...}``) is returned as it is."""
    if isinstance(tool, dict) and str(tool.get("type", "")).startswith(_OPENAI_TOOL_TYPES):
        return tool
    return {"type": "function", "function": convert_to_openai_function(tool, strict=strict)}


_OPENAI_TOOL_TYPES = (
    "function",
    "file_search",
    "computer",
    "code_interpreter",
    "mcp",
    "image_generation",
    "web_search",
    "tool_search",
    "apply_patch",
    "namespace",
)
"""OpenAI's own tool kinds (prefixes), passed through as LangChain passes them."""


def _described_schema(value: object) -> dict[str, Any] | None:
    """A schema that is not a tool, read as LangChain reads it: a pydantic model class (v2 or
    v1) or a ``TypedDict`` (name from the class, description from its docstring), or a dict in
    OpenAI's, Anthropic's or Bedrock's function format, or a JSON schema with a ``title``.
    ``None`` for anything else (tools and functions).

    Raises:
        ConfigError: a dict in none of these formats.
    """
    if isinstance(value, dict):
        return _function_from_dict(value)
    if is_v1_model(value):
        schema = copy.deepcopy(value.schema())  # type: ignore[attr-defined]
    elif isinstance(value, type) and issubclass(value, BaseModel):
        schema = _json_schema(value, value.model_json_schema)
    elif isinstance(value, type) and is_typeddict(value):
        schema = _json_schema(value, typed_dict_model(value).model_json_schema)
    else:
        return None
    name = schema.pop("title", getattr(value, "__name__", ""))
    description = schema.pop("description", "")
    return {
        "name": name,
        "description": description,
        "parameters": _remove_titles(_inline_refs(schema)),
    }


def _json_schema(value: type, make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``make()``; pydantic's "no JSON schema for this type" error names the class."""
    try:
        return make()
    except PydanticInvalidForJsonSchema as exc:
        msg = (
            f"Failed to generate a JSON schema for {value.__name__}: a field's type is not "
            "JSON-serializable; tool argument types must be JSON-serializable (built-in "
            f"types, Pydantic models, TypedDicts). {exc}"
        )
        raise PydanticInvalidForJsonSchema(msg) from exc


def _function_from_dict(value: dict[str, Any]) -> dict[str, Any]:
    if "name" in value and "input_schema" in value:  # Anthropic
        found = {"name": value["name"], "parameters": value["input_schema"]}
        return found | ({"description": value["description"]} if "description" in value else {})
    if "toolSpec" in value:  # Amazon Bedrock Converse
        spec = value["toolSpec"]
        found = {"name": spec["name"], "parameters": spec["inputSchema"]["json"]}
        return found | ({"description": spec["description"]} if "description" in spec else {})
    if "name" in value:  # OpenAI's own format
        keys = ("name", "description", "parameters", "strict")
        return {key: copy.deepcopy(value[key]) for key in keys if key in value}
    if "title" in value:  # a JSON schema
        schema = copy.deepcopy(value)
        found = {"name": schema.pop("title")}
        if "description" in schema:
            found["description"] = schema.pop("description")
        if schema and "properties" in schema:
            found["parameters"] = schema
        return found
    msg = (
        f"cannot convert the dict {value!r} to an OpenAI function: a JSON schema must have a "
        "top-level 'title' key (the function name), or give OpenAI's "
        "{'name', 'description', 'parameters'} form"
    )
    raise ConfigError(msg)


def _is_langchain_tool(value: object) -> bool:
    """A ``langchain_core.tools.BaseTool`` (by class name along the MRO, without importing
    LangChain), as ``bind_tools`` users hand to ``convert_to_openai_tool``."""
    return any(
        base.__name__ == "BaseTool" and base.__module__.startswith("langchain_core")
        for base in type(value).__mro__
    )


def _close_objects(node: Any) -> Any:
    """OpenAI strict mode: every object closed and all its properties required (in place)."""
    if not isinstance(node, dict):
        return node
    properties = node.get("properties")
    if isinstance(properties, dict) and properties:
        node["required"] = list(properties)
    if "required" in node or properties == {} or "additionalProperties" in node:
        node["additionalProperties"] = False
    for key in ("anyOf", "allOf"):
        for sub in node.get(key, []):
            _close_objects(sub)
    for sub in (properties or {}).values():
        _close_objects(sub)
    if "items" in node:
        _close_objects(node["items"])
    for key in ("$defs", "definitions"):
        for sub in (node.get(key) or {}).values():
            _close_objects(sub)
    return node


def _signature_text(tool: BaseTool) -> str:
    func = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    if callable(func):
        try:
            return str(inspect.Signature(model_facing_parameters(func)))
        except (TypeError, ValueError):
            logger.debug("signature of %s unreadable; using its schema", tool.name)
    schema = tool.tool_call_json_schema()
    required = set(schema.get("required", []))
    parts = []
    for name, prop in schema.get("properties", {}).items():
        text = f"{name}: {prop.get('type', 'any')}"
        if name not in required and "default" in prop:
            text += f" = {prop['default']!r}"
        parts.append(text)
    return f"({', '.join(parts)})"


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Replace ``{"$ref": "#/$defs/X"}`` by the definition, except on recursion."""
    defs = schema.get("$defs", {})
    unresolved: set[str] = set()

    def walk(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                key = ref.removeprefix("#/$defs/")
                if key in defs and key not in seen:
                    rest = {k: v for k, v in node.items() if k != "$ref"}
                    return {**walk(copy.deepcopy(defs[key]), seen | {key}), **rest}
                unresolved.add(key)
                return node
            return {k: walk(v, seen) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(item, seen) for item in node]
        return node

    result: dict[str, Any] = walk(schema, frozenset())
    if unresolved:
        result["$defs"] = defs
    return result


def _remove_titles(node: Any, parent: str = "") -> Any:
    """``title`` keys removed but a property named ``title``; lists (``anyOf`` branches) are
    left as they are, as LangChain's ``_rm_titles`` leaves them."""
    if isinstance(node, dict):
        return {
            k: _remove_titles(v, k)
            for k, v in node.items()
            if not (k == "title" and parent != "properties")
        }
    return node
