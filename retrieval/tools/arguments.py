"""From tool input to the keyword arguments of ``_run``: validation and injection.

One function, :func:`parse_arguments`, shared by every tool kind:

1. the input (a plain string, or a dict of arguments, already taken out of a ToolCall by
   :func:`split_input`) is made a dict; a string fills the schema's only model-facing field
   (or its only required one), otherwise it is a ``ToolInputError`` the model can fix; a
   dict whose arguments nest past :data:`~parsers.nesting.MAX_NESTING` is a
   ``ToolInputError`` naming the argument, before anything recursive (pydantic,
   ``jsonschema``) sees it;
2. injected fields are filled: ``InjectedToolCallId`` from the call id (a ``ConfigError``
   without one), ``InjectedToolArg`` from the run-time keyword arguments, which win over a
   value in the call's args; a required injected value nobody supplied is a missing field of
   the validation error, so ``handle_validation_error`` decides, as in LangChain;
3. the dict is validated (pydantic lax mode coerces ``"4"`` to ``4``; a JSON-schema dict
   schema is checked with ``jsonschema``) and the validated values, not the raw ones, are
   returned, plus extra keys when the schema allows them (``**kwargs`` functions). Keys the
   schema does not know are dropped, as LangChain drops them; with ``strict`` they are a
   validation error (``extra_forbidden``), the behaviour OpenAI's strict function calling
   promises the model;
4. injected parameters of the tool function that a custom ``args_schema`` does not list
   (``unlisted``) are passed through unvalidated, from the keyword arguments, the call's args
   or the call id, as LangChain passes them.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import InitErrorDetails

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.errors import ToolInputError
from ragtools.retrieval.tools.injected import is_config_annotation
from ragtools.retrieval.tools.messages import is_tool_call
from ragtools.retrieval.tools.params import check_nesting
from ragtools.retrieval.tools.schema import injected_fields

__all__ = [
    "config_parameter",
    "declares_callbacks",
    "is_validation_error",
    "parse_arguments",
    "split_input",
]

logger = logging.getLogger(__name__)


def split_input(value: Any) -> tuple[str | dict[str, Any], str | None]:
    """``(arguments, call id)``; the id is ``None`` unless ``value`` is a ToolCall (then a
    string, empty when the call has no id).

    Raises:
        ConfigError: the input is neither a string, a dict nor a ToolCall.
    """
    if is_tool_call(value):
        return dict(value["args"]), str(value.get("id") or "")
    if isinstance(value, str):
        return value, None
    if isinstance(value, dict):
        return dict(value), None
    msg = f"tool input must be a string, a dict or a ToolCall, got {type(value).__name__}"
    raise ConfigError(msg)


def parse_arguments(
    tool: str,
    schema: type[BaseModel] | dict[str, Any],
    tool_input: str | dict[str, Any],
    call_id: str | None,
    injected: Mapping[str, Any],
    *,
    strict: bool = False,
    unlisted: Mapping[str, bool] | None = None,
    validate: bool = True,
) -> dict[str, Any]:
    """Validate ``tool_input`` against ``schema`` and return ``_run``'s keyword arguments.

    Args:
        tool: the tool name, for messages.
        schema: the full argument model (injected fields included) or a JSON-schema dict.
        tool_input: a string or a dict of arguments.
        call_id: the ToolCall id (``None``: not invoked with a ToolCall).
        injected: run-time values of injected arguments.
        strict: reject keys the schema does not know instead of dropping them.
        unlisted: injected parameters of the function missing from ``schema`` (name to
            "is it the ToolCall id"), passed through unvalidated.
        validate: ``False`` passes a dict input on as it is, injected values filled in
            (LangChain's treatment of a ``BaseTool`` subclass without ``args_schema``).

    Raises:
        pydantic.ValidationError: invalid arguments, a missing injected value, an unknown key
            with ``strict`` (``jsonschema.ValidationError`` for a dict schema).
        ToolInputError: a plain string for a tool with several arguments, or an argument
            nested past :data:`~parsers.nesting.MAX_NESTING` (checked before validation).
        ConfigError: unknown run-time keywords, a missing call id.
    """
    if isinstance(tool_input, dict):
        check_nesting(tool_input)
    passed = _unlisted_values(tool, unlisted or {}, tool_input, call_id, injected)
    injected = {k: v for k, v in injected.items() if k not in passed}
    if isinstance(tool_input, dict):
        tool_input = {k: v for k, v in tool_input.items() if k not in passed}
    if isinstance(schema, dict):
        return {**_validate_json_schema(tool, schema, tool_input, injected), **passed}
    hidden = injected_fields(schema)
    unknown = sorted(set(injected) - set(hidden))
    if unknown:
        msg = (
            f"tool {tool!r} got keyword arguments {unknown} but its injected arguments are "
            f"{sorted(hidden)}; keyword arguments of invoke only supply InjectedToolArg "
            "values, put model arguments in the input"
        )
        raise ConfigError(msg)
    data = (
        _string_to_dict(tool, schema, hidden, tool_input)
        if isinstance(tool_input, str)
        else dict(tool_input)
    )
    for name, is_call_id in hidden.items():
        if is_call_id:
            data[name] = _call_id_value(tool, name, call_id, data)
        elif name in injected:
            data[name] = injected[name]
    if not validate and isinstance(tool_input, dict):
        return {**data, **passed}
    if strict and schema.model_config.get("extra") != "allow":
        _forbid_extra(schema, data)
    instance = schema.model_validate(data)
    arguments = {name: getattr(instance, name) for name in type(instance).model_fields}
    arguments.update(instance.model_extra or {})
    return {**arguments, **passed}


def _unlisted_values(
    tool: str,
    unlisted: Mapping[str, bool],
    tool_input: str | dict[str, Any],
    call_id: str | None,
    injected: Mapping[str, Any],
) -> dict[str, Any]:
    values: dict[str, Any] = {}
    args = tool_input if isinstance(tool_input, dict) else {}
    for name, is_call_id in unlisted.items():
        if is_call_id:
            values[name] = _call_id_value(tool, name, call_id, args)
        elif name in injected:
            values[name] = injected[name]
        elif name in args:
            values[name] = args[name]
    return values


def _forbid_extra(schema: type[BaseModel], data: Mapping[str, Any]) -> None:
    known = {field.alias or name for name, field in schema.model_fields.items()}
    known |= set(schema.model_fields)
    errors = [
        InitErrorDetails(type="extra_forbidden", loc=(key,), input=value)
        for key, value in data.items()
        if key not in known
    ]
    if errors:
        raise ValidationError.from_exception_data(schema.__name__, errors)


def is_validation_error(exc: BaseException) -> bool:
    """True for a pydantic or a ``jsonschema`` validation error."""
    if isinstance(exc, ValidationError):
        return True
    module = type(exc).__module__ or ""
    return module.startswith("jsonschema") and type(exc).__name__ == "ValidationError"


def config_parameter(func: Callable[..., Any] | None) -> str | None:
    """Name of ``func``'s parameter annotated ``RunConfig``/``RunnableConfig``, if any."""
    if func is None:
        return None
    try:
        parameters = inspect.signature(func, eval_str=True).parameters
    except (NameError, TypeError, ValueError, SyntaxError):
        return None
    return next((n for n, p in parameters.items() if is_config_annotation(p.annotation)), None)


def declares_callbacks(func: Callable[..., Any] | None) -> bool:
    """True when ``func`` has a ``callbacks`` parameter (LangChain injects its callbacks)."""
    if func is None:
        return False
    try:
        return "callbacks" in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


def _string_to_dict(
    tool: str, model: type[BaseModel], hidden: Mapping[str, bool], text: str
) -> dict[str, Any]:
    visible = [name for name in model.model_fields if name not in hidden]
    if not visible and not text.strip():  # LangChain: "" runs a tool without parameters
        return {}
    required = [name for name in visible if model.model_fields[name].is_required()]
    if len(visible) != 1 and len(required) == 1:
        visible = required
    if len(visible) != 1:
        msg = (
            f"tool {tool!r} takes the arguments {visible}; send them as a JSON object, not a "
            "plain string"
        )
        raise ToolInputError(msg)
    return {visible[0]: text}


def _call_id_value(tool: str, field_name: str, call_id: str | None, args: Mapping[str, Any]) -> Any:
    """The ToolCall's id; without a ToolCall, an id the input dict gives (as LangChain
    accepts ``invoke({"x": 1, "tool_call_id": "c1"})``); otherwise a ``ConfigError``."""
    if call_id is None and field_name in args:
        return args[field_name]
    return _require_call_id(tool, field_name, call_id)


def _require_call_id(tool: str, field_name: str, call_id: str | None) -> str:
    if not call_id:
        msg = (
            "When tool includes an InjectedToolCallId argument, tool must always be invoked "
            f"with a full model ToolCall: tool {tool!r} has the InjectedToolCallId argument "
            f"{field_name!r}; pass {{'name': ..., 'args': {{...}}, 'id': '...', "
            "'type': 'tool_call'}} carrying an id"
        )
        raise ConfigError(msg)
    return call_id


def _validate_json_schema(
    tool: str, schema: dict[str, Any], tool_input: str | dict[str, Any], injected: Mapping[str, Any]
) -> dict[str, Any]:
    import jsonschema  # a core dependency; imported here to keep `import retrieval` light

    if isinstance(tool_input, str):
        names = list(schema.get("properties", {}))
        if len(names) != 1:
            msg = f"tool {tool!r} takes the arguments {names}; send them as a JSON object"
            raise ToolInputError(msg)
        tool_input = {names[0]: tool_input}
    data = {**tool_input, **injected}
    jsonschema.validate(data, schema)
    return data
