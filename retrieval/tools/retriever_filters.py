"""The filters a retriever tool lets the model choose: ``allow_filters={...}``.

``create_retriever_tool(..., allow_filters=...)`` adds one optional ``filter`` argument to the
tool's schema, an object whose fields are the allowed metadata keys, each described so the
model knows its choices:

* a list of values, ``{"source": ["a.pdf", "b.pdf"]}``: the field is an enum; the model gives
  one value (``{"source": "a.pdf"}``) or several (``{"source": ["a.pdf", "b.pdf"]}``, any of
  them);
* a range, ``{"page": {"min": 1, "max": 40}}``: the field is ``{"min": ..., "max": ...}``,
  both optional, each within the bounds (integers when both bounds are).

The arguments are validated against that schema before the retriever runs, so a value outside
the allowed ones is an error the model reads (the tool handles validation errors by default),
never a filter. The choice becomes a filter of :mod:`retrieval.filters` and is joined with the
tool's bound ``filter`` by ``$and`` (:mod:`retrieval.bound_filter`), so the model can narrow a
bound filter but never widen or replace it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.errors import ToolInputError

__all__ = [
    "allowed_filter_schema",
    "describe_invalid_arguments",
    "filter_of_choice",
]

_SCALARS = (str, int, float, bool)


def allowed_filter_schema(
    base: type[BaseModel], allow: Mapping[str, Any], *, name: str = "RetrieverFilterInput"
) -> type[BaseModel]:
    """``base`` (the query schema) plus an optional ``filter`` object of the allowed fields.

    Raises:
        ConfigError: an empty ``allow``, or an entry that is neither a non-empty list of
            JSON scalars nor a ``{"min", "max"}`` range, named by its key.
    """
    if not isinstance(allow, Mapping) or not allow:
        msg = "allow_filters must be a non-empty mapping of metadata keys to allowed values"
        raise ConfigError(msg)
    fields: dict[str, Any] = {}
    for key, spec in allow.items():
        if not isinstance(key, str) or not key or key.startswith("$"):
            msg = f"allow_filters key {key!r} must be a metadata field name"
            raise ConfigError(msg)
        fields[_identifier(key, fields)] = _field(key, spec)
    choice = create_model(  # type: ignore[call-overload]
        "AllowedFilter",
        __config__=ConfigDict(extra="forbid", populate_by_name=True),
        __doc__="Optional restrictions on which documents are searched.",
        **fields,
    )
    described = Field(
        default=None,
        description=(
            "Optional: restrict the search to documents with these metadata values. "
            "Leave it out to search everything the tool may search."
        ),
    )
    model: type[BaseModel] = create_model(  # type: ignore[call-overload]
        name, __base__=base, filter=(choice | None, described)
    )
    return model


def _identifier(key: str, taken: Mapping[str, Any]) -> str:
    name = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in key)
    name = name if name[0].isalpha() else f"f_{name}"
    while name in taken:
        name += "_"
    return name


def _field(key: str, spec: Any) -> tuple[Any, Any]:
    if isinstance(spec, Mapping):
        return _range_field(key, spec)
    if isinstance(spec, str | bytes) or not isinstance(spec, Sequence | set | frozenset):
        msg = (
            f"allow_filters[{key!r}] must be a list of allowed values or a "
            f'{{"min": ..., "max": ...}} range, got {spec!r}'
        )
        raise ConfigError(msg)
    values = list(spec)
    if not values or not all(isinstance(v, _SCALARS) for v in values):
        msg = f"allow_filters[{key!r}] must list at least one string, number or boolean"
        raise ConfigError(msg)
    one = Literal[tuple(values)]  # type: ignore[valid-type]
    description = f"Only documents whose {key} is this value, or any of these values."
    return (one | list[one] | None, Field(None, alias=key, description=description))  # type: ignore[valid-type]


def _range_field(key: str, spec: Mapping[str, Any]) -> tuple[Any, Any]:
    bounds = {name: spec[name] for name in ("min", "max") if name in spec}
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in bounds.values())
    if not bounds or set(spec) - {"min", "max"} or not numeric:
        msg = f'allow_filters[{key!r}] range must be {{"min": number, "max": number}}, got {spec!r}'
        raise ConfigError(msg)
    kind: Any = int if all(isinstance(v, int) for v in bounds.values()) else float
    low, high = bounds.get("min"), bounds.get("max")
    span = f"{bounds.get('min', '')} to {bounds.get('max', '')}".strip()
    model = create_model(  # type: ignore[call-overload]
        f"{key.title().replace('_', '')}Range",
        __config__=ConfigDict(extra="forbid"),
        __doc__=f"A range of {key} values, inclusive (allowed: {span}).",
        min=(kind | None, Field(None, description=f"Lowest {key}.", ge=low, le=high)),
        max=(kind | None, Field(None, description=f"Highest {key}.", ge=low, le=high)),
    )
    description = f"Only documents whose {key} lies in this range ({span})."
    return (model | None, Field(None, alias=key, description=description))


def filter_of_choice(choice: BaseModel | None) -> dict[str, Any] | None:
    """The filter a validated ``filter`` argument means, or ``None`` when nothing is chosen.

    Raises:
        ToolInputError: a range whose ``min`` is above its ``max`` (shown to the model).
    """
    if choice is None:
        return None
    conditions: dict[str, Any] = {}
    for name, info in type(choice).model_fields.items():
        value = getattr(choice, name)
        key = info.alias or name
        if value is None:
            continue
        if isinstance(value, BaseModel):
            low, high = getattr(value, "min", None), getattr(value, "max", None)
            if low is not None and high is not None and low > high:
                msg = f"filter {key}: min {low} is above max {high}"
                raise ToolInputError(msg)
            bounds = {op: v for op, v in (("$gte", low), ("$lte", high)) if v is not None}
            if bounds:
                conditions[key] = bounds
        elif isinstance(value, list):
            conditions[key] = {"$in": value}
        else:
            conditions[key] = value
    return conditions or None


def describe_invalid_arguments(error: Exception) -> str:
    """The message a model reads for arguments the schema refused: each bad field by its
    path, what was wrong, and the value given (no schema dump, no stack)."""
    errors = getattr(error, "errors", None)
    if not callable(errors):
        return f"Invalid arguments: {error}"
    lines = []
    for item in errors(include_url=False):
        where = ".".join(str(part) for part in item.get("loc", ())) or "arguments"
        lines.append(f"{where}: {item.get('msg', 'invalid')} (got {item.get('input')!r})")
    return "Invalid arguments, nothing was searched:\n" + "\n".join(lines)
