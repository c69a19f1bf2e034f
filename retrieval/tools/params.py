"""Lenient argument parsing, parameter schemas and result formatting for agent tools.

Models send tool arguments as JSON text, and not always valid JSON: trailing commas, single
quotes and unquoted keys are common. Following Qwen-Agent's ``_verify_json_format_args``, text
is parsed with ``json5`` (a superset of JSON), unless ``strict_json=True`` asks for the standard
library's ``json``. Text that is not JSON but looks like ``key=value&key2=value2`` (Qwen-Agent's
last fallback, what some models write for simple tools) becomes a dict of strings, which the
schema then validates. Anything else fails with one message the model can act on:
``"Parameters must be formatted as a valid JSON!"``. Arguments, text or mapping, nested
more than :data:`~parsers.nesting.MAX_NESTING` levels are refused before they are parsed or
validated (both recurse), with a ``ToolInputError`` naming the argument (or "the arguments"
for text, whose nesting is measured before there are arguments to name) and the limit.

A tool's parameters can be described in two forms (Eino's ``ParamsOneOf``, Qwen-Agent's
``parameters``):

* the old list form, one ``{"name", "type", "description", "required"}`` dict per parameter
  (other keys such as ``enum``, ``items`` or ``default`` are kept), converted by
  :func:`to_json_schema`;
* a JSON schema of ``"type": "object"``, checked against its metaschema with ``jsonschema``
  so that a broken schema fails when the tool is defined, not when the model first calls it.

:class:`ToolInfo` carries a tool's name, description and parameters in either form and renders
the OpenAI tool schema. :func:`format_result` turns a tool's return value into the text a model
reads: strings unchanged, dicts and lists as JSON with non-ASCII characters kept (a Chinese
answer stays readable instead of becoming ``\\u`` escapes).

Errors: input from the model raises :class:`~retrieval.errors.ToolInputError` (recoverable, meant
for the model); a bad parameter definition raises :class:`~parsers.errors.ConfigError`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import json5
import jsonschema
from pydantic import BaseModel

from ragtools.parsers.errors import ConfigError
from ragtools.parsers.nesting import MAX_NESTING, nesting_problem, text_too_deep, too_deep
from ragtools.retrieval.errors import ToolInputError

logger = logging.getLogger(__name__)

__all__ = [
    "INVALID_JSON_MESSAGE",
    "ParametersSpec",
    "ToolInfo",
    "check_nesting",
    "format_result",
    "parse_arguments",
    "to_json_schema",
    "validate_arguments",
    "verify_arguments",
]

INVALID_JSON_MESSAGE = "Parameters must be formatted as a valid JSON!"
"""The message (Qwen-Agent's wording) for arguments that are not a JSON object."""

ParametersSpec = Sequence[Mapping[str, Any]] | Mapping[str, Any]
"""Parameters as a list of ``{name, type, description, required}`` dicts or a JSON schema."""

_LIST_FORM_KEYS = ("name", "type", "description", "required")


def parse_arguments(
    params: str | Mapping[str, Any] | None, *, strict_json: bool = False
) -> dict[str, Any]:
    """Turn a model's raw arguments into a dict.

    Args:
        params: JSON (or JSON5) text, a mapping, or ``None``. Empty or blank text and ``None``
            mean "no arguments" (models send ``""`` for tools without parameters).
        strict_json: parse text with the standard ``json`` module instead of ``json5``.

    Returns:
        A new dict of the arguments.

    Raises:
        ToolInputError: the text is not valid JSON(5), or is not a JSON object, or objects
            and lists nest past :data:`~parsers.nesting.MAX_NESTING` (checked before parsing).
    """
    if params is None:
        return {}
    if isinstance(params, Mapping):
        check_nesting(params)
        return dict(params)
    if not isinstance(params, str):
        msg = f"{INVALID_JSON_MESSAGE} Got a {type(params).__name__}, expected a JSON object."
        raise ToolInputError(msg)
    if not params.strip():
        return {}
    if text_too_deep(params):
        raise ToolInputError(_too_deep_message("arguments"))
    try:
        value = json.loads(params) if strict_json else json5.loads(params)
    except RecursionError as exc:  # a deep caller's stack; the check above leaves room
        raise ToolInputError(_too_deep_message("arguments")) from exc
    except ValueError as exc:  # json.JSONDecodeError and json5's errors are ValueErrors
        pairs = None if strict_json else _key_value_pairs(params)
        if pairs is not None:
            return pairs
        msg = f"{INVALID_JSON_MESSAGE} Could not parse {_preview(params)}: {exc}"
        raise ToolInputError(msg) from exc
    if not isinstance(value, dict):
        kind = type(value).__name__
        msg = f"{INVALID_JSON_MESSAGE} Expected a JSON object, got {kind}: {_preview(params)}"
        raise ToolInputError(msg)
    return value


def check_nesting(arguments: Mapping[str, Any]) -> None:
    """Refuse arguments nested past :data:`~parsers.nesting.MAX_NESTING` (the mapping
    itself is level 1), naming the first argument that is, before anything recurses into
    them (validation, ``jsonschema``, the tool).

    Raises:
        ToolInputError: naming the argument and the limit.
    """
    for name, value in arguments.items():
        if too_deep(value, MAX_NESTING - 1):
            raise ToolInputError(_too_deep_message(f"argument {name!r}"))


def _too_deep_message(what: str) -> str:
    return f"Invalid {what}: {nesting_problem()}; send flatter values"


def to_json_schema(parameters: ParametersSpec | None) -> dict[str, Any]:
    """Return ``parameters`` as a checked JSON schema of ``"type": "object"``.

    Args:
        parameters: the list form (converted) or a JSON schema (checked, returned as a copy);
            ``None`` or an empty list means a tool without parameters.

    Returns:
        An object schema with ``properties`` and ``required``.

    Raises:
        ConfigError: a list item lacks ``name``/``type`` or repeats a name, or the schema is
            not a valid JSON schema (the message quotes ``jsonschema``'s reason).
    """
    if parameters is None:
        return {"type": "object", "properties": {}, "required": []}
    if isinstance(parameters, Mapping):
        schema = dict(parameters)
        if schema.get("type", "object") != "object":
            msg = (
                f"Tool parameters must be a JSON schema of type 'object', got type "
                f"{schema.get('type')!r}; wrap single values in an object's properties"
            )
            raise ConfigError(msg)
        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except jsonschema.SchemaError as exc:
            msg = (
                f"Invalid JSON schema for tool parameters: {exc.message}; fix the schema {schema!r}"
            )
            raise ConfigError(msg) from exc
        return schema
    if isinstance(parameters, (str, bytes)):
        msg = (
            "Tool parameters must be a list of parameter dicts or a JSON schema, "
            f"got text {parameters!r}"
        )
        raise ConfigError(msg)
    return _list_to_schema(parameters)


def _list_to_schema(parameters: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for item in parameters:
        if not isinstance(item, Mapping) or not item.get("name") or not item.get("type"):
            msg = (
                f"Each tool parameter needs at least 'name' and 'type', got {item!r}; "
                "write e.g. {'name': 'query', 'type': 'string', 'required': True}"
            )
            raise ConfigError(msg)
        name = str(item["name"])
        if name in properties:
            msg = f"Tool parameter {name!r} is defined twice; give each parameter a unique name"
            raise ConfigError(msg)
        prop: dict[str, Any] = {"type": item["type"]}
        if "description" in item:
            prop["description"] = item["description"]
        prop.update({k: v for k, v in item.items() if k not in _LIST_FORM_KEYS})
        properties[name] = prop
        if item.get("required", False):
            required.append(name)
    return to_json_schema({"type": "object", "properties": properties, "required": required})


def validate_arguments(arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    """Check ``arguments`` against a JSON schema from :func:`to_json_schema`.

    Required parameters are checked first so that the commonest mistake gets Qwen-Agent's
    plain message ("Parameters query is required!"); the rest is ``jsonschema`` validation.

    Raises:
        ToolInputError: a required parameter is missing or a value breaks the schema (the
            message names the parameter path and the reason).
    """
    for name in schema.get("required", ()):
        if name not in arguments:
            msg = f"Parameters {name} is required!"
            raise ToolInputError(msg)
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(dict(arguments)))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(arguments)"
        msg = f"Invalid value for parameter {where}: {_shortened(error.message)}"
        raise ToolInputError(msg)


def _shortened(message: str, keep: int = 200) -> str:
    """jsonschema's message with the value it quotes cut in the middle: a model that sent a
    megabyte-long query needs the reason (at the end), not its query read back."""
    if len(message) <= 2 * keep:
        return message
    return f"{message[:keep]} [... {len(message) - 2 * keep} characters ...] {message[-keep:]}"


def verify_arguments(
    params: str | Mapping[str, Any] | None,
    parameters: ParametersSpec | None,
    *,
    strict_json: bool = False,
) -> dict[str, Any]:
    """Parse leniently, then validate: Qwen-Agent's ``_verify_json_format_args``.

    Args:
        params: the raw arguments (text or mapping).
        parameters: the tool's parameters in either form.
        strict_json: parse text as strict JSON.

    Returns:
        The arguments as a dict.

    Raises:
        ToolInputError: bad JSON, a missing required parameter or a schema violation.
        ConfigError: ``parameters`` itself is invalid.
    """
    arguments = parse_arguments(params, strict_json=strict_json)
    validate_arguments(arguments, to_json_schema(parameters))
    return arguments


def format_result(value: Any, *, indent: int | None = 2) -> str:
    """Render a tool's return value as the text a model reads.

    Strings are returned unchanged; ``None`` becomes ``""``; an exception becomes
    ``"Error: <its message>"`` (Qwen-Agent's form); dicts, lists, tuples and pydantic models
    become JSON with non-ASCII characters kept (``ensure_ascii=False``), values JSON cannot
    encode falling back to ``str``; anything else is ``str(value)``.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, BaseException):
        return f"Error: {value}"
    if value is None:
        return ""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, ensure_ascii=False, indent=indent, default=str)
    return str(value)


@dataclass(frozen=True)
class ToolInfo:
    """What a model is told about a tool (Eino's ``ToolInfo``).

    Attributes:
        name: the unique tool name the model calls.
        description: how, when and why to use the tool.
        parameters: the list form or a JSON schema; either renders the same OpenAI schema.
    """

    name: str
    description: str
    parameters: ParametersSpec | None = None

    @property
    def json_schema(self) -> dict[str, Any]:
        """The parameters as a JSON schema (list form converted)."""
        return to_json_schema(self.parameters)

    def to_function(self) -> dict[str, Any]:
        """The OpenAI function: ``{"name", "description", "parameters"}``."""
        return {"name": self.name, "description": self.description, "parameters": self.json_schema}

    def to_openai_tool(self) -> dict[str, Any]:
        """The OpenAI tool: ``{"type": "function", "function": {...}}``."""
        return {"type": "function", "function": self.to_function()}


def _key_value_pairs(text: str) -> dict[str, Any] | None:
    """``a=1&b=x`` as ``{"a": "1", "b": "x"}``; ``None`` unless every part is ``key=value``."""
    pairs: dict[str, Any] = {}
    for part in text.strip().split("&"):
        key, sep, value = part.partition("=")
        if not sep or not key.strip() or "{" in key or '"' in key:
            return None
        pairs[key.strip()] = value.strip()
    return pairs


def _preview(text: str, limit: int = 200) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
