"""Pydantic v1 argument models (``pydantic.v1.BaseModel``) in a tool layer built on v2.

LangChain still accepts v1 models, both as a tool's ``args_schema`` and as the annotation of
a function argument, and code written during the v1 → v2 migration has them. Our schemas are
v2 models, so a v1 model is carried inside one:

* a v1 **argument annotation** becomes ``Annotated[Model, <validator>, <JSON schema>]``: the
  value is validated by the v1 model itself (``parse_obj``; an instance passes through), the
  function receives a v1 instance, and the JSON schema shown to the model is the v1 model's;
* a v1 **args_schema** stays the tool's ``args_schema`` (a subclass may type the field
  ``type[MyV1Model]``, as with LangChain); validation and the schemas use a v2 model with the
  same fields (type, default, description, ``Annotated`` markers), each checked by v2 the way
  v1 would have coerced it in its lax mode.

A function mixing v1 and v2 model annotations raises ``NotImplementedError``, as in
LangChain: the two cannot be validated by one model.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from pydantic import BaseModel, Field, PlainValidator, WithJsonSchema, create_model

__all__ = ["check_not_mixed", "from_v1_model", "is_v1_model", "v1_annotation"]

logger = logging.getLogger(__name__)


def _v1_base() -> type | None:
    try:
        from pydantic.v1 import BaseModel as BaseModelV1
    except ImportError:  # a pydantic without the v1 namespace: nothing is v1
        return None
    return BaseModelV1


def is_v1_model(value: object) -> bool:
    """True for a ``pydantic.v1.BaseModel`` subclass."""
    base = _v1_base()
    return base is not None and isinstance(value, type) and issubclass(value, base)


def check_not_mixed(owner: str, annotations: list[Any]) -> None:
    """Raise ``NotImplementedError`` if ``annotations`` hold both v1 and v2 models."""
    v1 = any(is_v1_model(a) for a in annotations)
    v2 = any(isinstance(a, type) and issubclass(a, BaseModel) for a in annotations)
    if v1 and v2:
        msg = (
            f"{owner} mixes pydantic v1 and v2 models in its annotations; this is not "
            "supported, use one pydantic version for all of them"
        )
        raise NotImplementedError(msg)


def v1_annotation(model: Any) -> Any:
    """``model`` (a v1 class) as a v2-usable annotation validated by ``model`` itself."""

    def validate(value: Any) -> Any:
        return value if isinstance(value, model) else model.parse_obj(value)

    # The v1 class itself is no v2 type (pydantic warns on it): carry it as Any, validated.
    return Annotated[Any, PlainValidator(validate), WithJsonSchema(model.schema())]


def from_v1_model(model: Any) -> type[BaseModel]:
    """A v2 model with the fields of the v1 ``model`` (name, docstring, types, defaults)."""
    fields: dict[str, Any] = {}
    for name, field in model.__fields__.items():
        annotation = field.annotation
        if is_v1_model(annotation):
            annotation = v1_annotation(annotation)
        description = field.field_info.description
        extra: dict[str, Any] = {"description": description} if description else {}
        if field.required:
            fields[name] = (annotation, Field(**extra))
        elif field.default_factory is not None:
            fields[name] = (annotation, Field(default_factory=field.default_factory, **extra))
        else:
            fields[name] = (annotation, Field(default=field.default, **extra))
    built: type[BaseModel] = create_model(  # type: ignore[call-overload]
        model.__name__, __doc__=model.__doc__, **fields
    )
    return built
