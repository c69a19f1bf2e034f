"""Argument schemas from Python functions: signature + type hints + docstring → pydantic model.

This is the rewrite LangChain's own source comment asks for: the model is built directly from
:func:`inspect.signature`, :func:`typing.get_type_hints` (``include_extras=True``, so
``Annotated`` metadata survives ``from __future__ import annotations``) and
:func:`pydantic.create_model`, instead of going through the deprecated
``validate_arguments`` decorator.

What becomes a field, and what does not:

* ``self``/``cls`` of a method, ``run_manager`` and ``callbacks`` (LangChain's plumbing; the
  ``filter_args`` argument replaces this pair), and any parameter annotated ``RunConfig`` /
  ``RunnableConfig`` are skipped;
* ``*args`` and ``**kwargs`` become optional fields named after the parameters, as
  LangChain shows them to the model (``variadic="fields"``, the default): ``*args: T`` an
  array ``tuple[T, ...]``, ``**kwargs: T`` an object ``dict[str, T]``, both defaulting to
  ``None``. When the tool runs, a value for the ``*args`` field is spread into the positional
  arguments and one for the ``**kwargs`` field into the keyword arguments
  (:func:`variadic_call`). LangChain passes them by name instead, so its function receives
  ``kwargs == {"args": (...), "kwargs": {...}}``, or a ``TypeError`` without ``**kwargs``;
  we spread them, so the call does what the schema shown to the model says.
  ``variadic="extra_keys"`` is the other reading of a variadic signature: ``*args`` has no
  field (it cannot be passed by name) and ``**kwargs`` opens the schema
  (``extra="allow"``, ``additionalProperties: true``), so keys the schema does not name
  reach the function as keyword arguments, for a function that takes free options
  (``def search(query, **filters)``);
* otherwise keys the schema does not name are dropped (``extra="ignore"``), as LangChain's
  inferred schemas drop them: models send stray keys, and a tool should not fail on them. A
  tool's ``strict`` option rejects them instead (:mod:`retrieval.tools.arguments`);
* injected arguments (``Annotated[T, InjectedToolArg]``) are kept unless
  ``include_injected=False``: the full schema validates them, ``tool_call_schema`` hides them.

Pydantic v1 models (``pydantic.v1.BaseModel``) work as argument types
(:mod:`retrieval.tools.pydantic_v1`); a function mixing v1 and v2 models raises
``NotImplementedError``, as in LangChain.

Descriptions, first match wins: the Google-style docstring (only with ``parse_docstring``,
parsed by ``docstring_parser``), then a string in ``Annotated[T, "text"]``, then
``Field(description=...)`` given as default or inside ``Annotated``. Values are coerced by
pydantic's lax mode, so ``{"a": 2, "b": "4"}`` calls ``add(2, 4)``.

With ``error_on_invalid_docstring`` a docstring is rejected (``ConfigError``, a construction
mistake; it subclasses the ``ValueError`` the seed names) when it has no
``Args:`` section while the function takes arguments, when ``Args:`` is not separated from the
summary by a blank line, or when it documents an argument the signature lacks.
"""

from __future__ import annotations

import functools
import inspect
import logging
import re
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, TypeAlias

import docstring_parser
import typing_extensions
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.tools.injected import (
    InjectedToolCallId,
    is_config_annotation,
    is_injected_metadata,
    with_direct_marker,
)
from ragtools.retrieval.tools.pydantic_v1 import check_not_mixed, is_v1_model, v1_annotation

__all__ = [
    "FILTERED_ARGS",
    "Variadic",
    "create_schema_from_function",
    "injected_fields",
    "injected_parameters",
    "model_facing_parameters",
    "subset_model",
    "typed_dict_model",
    "variadic_call",
]

logger = logging.getLogger(__name__)

FILTERED_ARGS: tuple[str, ...] = ("run_manager", "callbacks")
"""Parameters never exposed to a model (LangChain's callback plumbing)."""

Variadic: TypeAlias = Literal["fields", "extra_keys"]
"""How ``*args``/``**kwargs`` appear in an inferred schema (see the module docstring)."""

_ARGS_HEADER = re.compile(r"^(Args|Arguments|Parameters|Params):\s*$")
_PARAM_KINDS = frozenset({"param", "parameter", "arg", "argument", "key", "keyword"})


def create_schema_from_function(
    model_name: str,
    func: Callable[..., Any],
    *,
    filter_args: Sequence[str] | None = None,
    parse_docstring: bool = False,
    error_on_invalid_docstring: bool = False,
    include_injected: bool = True,
    variadic: Variadic = "fields",
) -> type[BaseModel]:
    """Build a pydantic model whose fields are ``func``'s model-facing parameters.

    Args:
        model_name: the class name of the model (also the JSON-schema ``title``).
        func: a function, method, ``functools.partial`` or callable object.
        filter_args: parameter names to leave out; default :data:`FILTERED_ARGS`.
        parse_docstring: take the description and per-argument descriptions from a
            Google-style docstring.
        error_on_invalid_docstring: with ``parse_docstring``, raise on a malformed docstring
            instead of using what can be read.
        include_injected: keep ``InjectedToolArg`` parameters (needed to validate a call).
        variadic: ``"fields"`` (LangChain's): ``*args``/``**kwargs`` are optional array and
            object fields; ``"extra_keys"``: ``*args`` has no field and ``**kwargs`` lets
            unnamed keys through (see the module docstring).

    Returns:
        The model class; its ``__doc__`` is the function description.

    Raises:
        ConfigError: a type hint cannot be resolved (e.g. a class defined inside a function
            while annotations are postponed), or the docstring is invalid and
            ``error_on_invalid_docstring`` is set (a ``ValueError``, as the seed documents).

    Example:
        >>> def add(a: int, b: int = 1) -> int:
        ...     '''Add two numbers.'''
        ...     return a + b
        >>> create_schema_from_function("add", add).model_json_schema()["required"]
        ['a']
    """
    signature = _signature(func)
    hints = _type_hints(func)
    skipped = set(FILTERED_ARGS if filter_args is None else filter_args)
    params = list(signature.parameters.values())
    if params and params[0].name in {"self", "cls"} and "." in _qualname(func):
        skipped.add(params[0].name)

    _check_variadic(variadic)
    model_args: list[str] = []
    var_keyword = False
    for param in params:
        if param.kind in _VARIADIC and variadic == "extra_keys":
            var_keyword = var_keyword or param.kind is inspect.Parameter.VAR_KEYWORD
        elif param.name not in skipped and not is_config_annotation(hints.get(param.name)):
            model_args.append(param.name)

    if parse_docstring:
        description, arg_docs = _parse_docstring(
            func, model_args, list(signature.parameters), strict=error_on_invalid_docstring
        )
    else:
        description, arg_docs = inspect.getdoc(func) or "", {}

    check_not_mixed(f"function {getattr(func, '__name__', func)!r}", list(hints.values()))
    fields: dict[str, Any] = {}
    for name in model_args:
        annotation = with_direct_marker(hints.get(name, Any))
        if is_v1_model(annotation):  # validated by the v1 model itself
            annotation = v1_annotation(annotation)
        metadata = _annotated_metadata(annotation)
        if not include_injected and is_injected_metadata(metadata):
            continue
        text = arg_docs.get(name) or next((m for m in metadata if isinstance(m, str)), None)
        kind = signature.parameters[name].kind
        default = None if kind in _VARIADIC else signature.parameters[name].default
        # the types pydantic's validate_arguments, LangChain's reader, gives them
        if kind is inspect.Parameter.VAR_POSITIONAL:
            annotation = tuple[annotation, ...]  # type: ignore[valid-type]
        elif kind is inspect.Parameter.VAR_KEYWORD:
            annotation = dict[str, annotation]  # type: ignore[valid-type]
        fields[name] = (annotation, _field_info(default, text))

    config = ConfigDict(extra="allow" if var_keyword else "ignore", arbitrary_types_allowed=True)
    model: type[BaseModel] = create_model(  # type: ignore[call-overload]
        model_name, __config__=config, __doc__=description, **fields
    )
    return model


def variadic_call(
    target: Callable[..., Any], arguments: dict[str, Any], fields: Iterable[str]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``target``'s positional and keyword arguments from validated ``arguments``: all by
    keyword, except the values of ``fields`` named after ``target``'s ``*args``/``**kwargs``
    (``variadic="fields"``), which are spread into them; ``None`` (not sent) adds nothing.

    The parameters before ``*args`` then go positionally (their defaults filling gaps), as
    Python needs them to. A key of the ``**kwargs`` value that names a parameter loses to it.
    """
    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return (), arguments
    names = set(fields)
    var_args = next((p.name for p in params if p.kind is inspect.Parameter.VAR_POSITIONAL), None)
    var_kw = next((p.name for p in params if p.kind is inspect.Parameter.VAR_KEYWORD), None)
    spread_args = var_args is not None and var_args in names and var_args in arguments
    spread_kw = var_kw is not None and var_kw in names and var_kw in arguments
    if not (spread_args or spread_kw):
        return (), arguments
    kwargs = dict(arguments)
    extra = tuple(kwargs.pop(var_args) or ()) if spread_args and var_args else ()
    if spread_kw and var_kw:
        kwargs = {**(kwargs.pop(var_kw) or {}), **kwargs}
    if not extra:
        return (), kwargs
    positional: list[Any] = []
    for param in params:
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            break
        if param.name in kwargs:
            positional.append(kwargs.pop(param.name))
        elif param.default is not inspect.Parameter.empty:
            positional.append(param.default)
        else:  # a required parameter is missing: the unspread call names it
            return (), arguments
    return (*positional, *extra), kwargs


def _check_variadic(variadic: object) -> None:
    if variadic not in ("fields", "extra_keys"):
        msg = f"variadic must be 'fields' or 'extra_keys', got {variadic!r}"
        raise ConfigError(msg)


_VARIADIC = frozenset({inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD})


def typed_dict_model(typed_dict: type) -> type[BaseModel]:
    """A pydantic model of a ``TypedDict`` (``typing``'s or ``typing_extensions``'), as
    LangChain reads one: ``Annotated[T, default, "description"]`` fields (``...``: required),
    argument descriptions from a Google-style docstring, the summary as the model's docstring,
    nested ``TypedDict`` s converted too. Pydantic itself refuses ``typing.TypedDict`` before
    Python 3.12, which is why this does not go through ``TypeAdapter``.
    """
    hints = typing.get_type_hints(typed_dict, include_extras=True)
    summary, documented = "", dict[str, str]()
    if typed_dict.__dict__.get("__doc__"):  # its own (inspect.getdoc would give dict's)
        summary, documented = _parse_docstring(typed_dict, [], list(hints), strict=False)
    required = getattr(typed_dict, "__required_keys__", frozenset(hints))
    fields: dict[str, Any] = {}
    for name, hint in hints.items():
        default: Any = ... if name in required else None
        description = documented.get(name)
        if typing.get_origin(hint) is typing.Annotated:
            hint, *extras = typing.get_args(hint)
            if extras and not isinstance(extras[0], str):
                default = extras.pop(0)
            description = next((e for e in extras if isinstance(e, str)), description)
        fields[name] = (_typed_dicts_as_models(hint), Field(default, description=description))
    model: type[BaseModel] = create_model(  # type: ignore[call-overload]
        typed_dict.__name__, __doc__=summary or None, **fields
    )
    return model


def _typed_dicts_as_models(hint: Any) -> Any:
    """``hint`` with every ``TypedDict`` in it (``list[TD]``, ``TD | None``) made a model."""
    if isinstance(hint, type) and typing_extensions.is_typeddict(hint):
        return typed_dict_model(hint)
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if not args or origin is None or origin is typing.Literal:
        return hint
    converted = tuple(_typed_dicts_as_models(arg) for arg in args)
    if converted == args:
        return hint
    if origin in (typing.Union, types.UnionType):
        return typing.Union[converted]  # noqa: UP007 (built at run time)
    return types.GenericAlias(origin, converted)


def injected_fields(model: type[BaseModel]) -> dict[str, bool]:
    """Names of the injected fields of ``model``, each mapped to "is it the ToolCall id"."""
    found: dict[str, bool] = {}
    for name, field in model.model_fields.items():
        if is_injected_metadata(field.metadata):
            found[name] = is_injected_metadata(field.metadata, InjectedToolCallId)
    return found


def injected_parameters(func: Callable[..., Any] | None) -> dict[str, bool]:
    """``func``'s injected parameters, each mapped to "is it the ToolCall id".

    Used for the injected parameters a custom ``args_schema`` does not list: LangChain still
    passes them to the function, so the tool must know them from the signature.
    """
    if func is None:
        return {}
    hints = _resolvable_hints(_hint_target(func))
    try:  # a partial's bound arguments are not in its signature, and are not injected
        bound = set(hints) - set(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        bound = set()
    found: dict[str, bool] = {}
    for name, annotation in hints.items():
        metadata = _annotated_metadata(with_direct_marker(annotation))
        if name != "return" and name not in bound and is_injected_metadata(metadata):
            found[name] = is_injected_metadata(metadata, InjectedToolCallId)
    return found


def subset_model(
    model: type[BaseModel], name: str, *, exclude: Iterable[str], description: str
) -> type[BaseModel]:
    """A copy of ``model`` without the ``exclude`` fields, titled ``name``, described.

    Field constraints, defaults, descriptions and the ``extra`` policy are kept, so the JSON
    schema of the copy is the original's minus the excluded properties.
    """
    dropped = set(exclude)
    fields: dict[str, Any] = {
        field_name: (field.annotation, FieldInfo.merge_field_infos(field))
        for field_name, field in model.model_fields.items()
        if field_name not in dropped
    }
    config = ConfigDict(**{k: v for k, v in model.model_config.items() if k != "title"})  # type: ignore[typeddict-item]
    subset: type[BaseModel] = create_model(  # type: ignore[call-overload]
        name, __config__=config, __doc__=description, **fields
    )
    return subset


def model_facing_parameters(func: Callable[..., Any]) -> list[inspect.Parameter]:
    """``func``'s parameters minus self/cls, callbacks, config and injected ones.

    Annotations are evaluated when possible, so ``str(inspect.Signature(...))`` shows
    ``query: str`` rather than ``query: 'str'`` under postponed annotations.
    """
    try:
        signature = inspect.signature(func, eval_str=True)
    except (NameError, TypeError, SyntaxError):
        signature = inspect.signature(func)
    kept = []
    for index, param in enumerate(signature.parameters.values()):
        if index == 0 and param.name in {"self", "cls"} and "." in _qualname(func):
            continue
        if param.name in FILTERED_ARGS or param.kind is inspect.Parameter.VAR_POSITIONAL:
            continue
        annotation = param.annotation
        if is_config_annotation(annotation) or is_injected_metadata(
            _annotated_metadata(with_direct_marker(annotation))
        ):
            continue
        if typing.get_origin(annotation) is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        kept.append(param.replace(annotation=annotation))
    return kept


def _field_info(default: Any, description: str | None) -> FieldInfo:
    extra: dict[str, Any] = {"description": description} if description else {}
    if isinstance(default, FieldInfo):
        return FieldInfo.merge_field_infos(default, **extra)
    if default is inspect.Parameter.empty:
        return Field(**extra)  # type: ignore[no-any-return]
    return Field(default=default, **extra)  # type: ignore[no-any-return]


def _annotated_metadata(annotation: Any) -> tuple[Any, ...]:
    if typing.get_origin(annotation) is typing.Annotated:
        return typing.get_args(annotation)[1:]
    return ()


def _qualname(func: Callable[..., Any]) -> str:
    return str(getattr(func, "__qualname__", "") or "")


def _hint_target(func: Callable[..., Any]) -> Any:
    """The object whose annotations describe ``func``'s parameters."""
    if isinstance(func, functools.partial):
        return _hint_target(func.func)
    wrapped = getattr(func, "__wrapped__", None)
    if callable(wrapped):  # a decorator's wrapper (functools.wraps): the original's hints
        return _hint_target(inspect.unwrap(func))
    if inspect.isclass(func):  # what calling the class runs: a metaclass __call__, else
        # an overridden __new__, else __init__ (the signature inspect.signature reports)
        if type(func).__call__ is not type.__call__:
            return type(func).__call__
        return func.__new__ if func.__new__ is not object.__new__ else func.__init__
    if inspect.isfunction(func) or inspect.ismethod(func):
        return func
    return getattr(func, "__call__", func)  # noqa: B004 (callable objects)


def _signature(func: Callable[..., Any]) -> inspect.Signature:
    try:
        return inspect.signature(func)
    except (TypeError, ValueError) as exc:
        msg = f"cannot read the signature of {func!r} to build a tool schema; pass args_schema="
        raise ConfigError(msg) from exc


def _type_hints(func: Callable[..., Any]) -> dict[str, Any]:
    target = _hint_target(func)
    try:
        return typing.get_type_hints(target, include_extras=True)
    except (NameError, TypeError) as exc:
        name = getattr(func, "__name__", repr(func))
        msg = (
            f"cannot resolve the type hints of {name!r} ({exc}); define the types it names at "
            "module level (not inside a function) or pass args_schema="
        )
        raise ConfigError(msg) from exc


def _resolvable_hints(target: Any) -> dict[str, Any]:
    """``target``'s type hints; when one cannot be resolved (a forward reference to a name
    that does not exist), each of the others still is, so one bad hint does not hide an
    injected sibling, as in LangChain."""
    try:
        return typing.get_type_hints(target, include_extras=True)
    except (NameError, TypeError):
        pass
    annotations = getattr(target, "__annotations__", None) or {}
    scope = getattr(inspect.unwrap(target), "__globals__", {})
    hints: dict[str, Any] = {}
    for name, annotation in annotations.items():
        single = types.SimpleNamespace(__annotations__={name: annotation})
        try:
            hints.update(typing.get_type_hints(single, globalns=scope, include_extras=True))
        except (NameError, TypeError):
            logger.debug("type hint %r of %r is unresolvable; skipped", name, target)
    return hints


def _parse_docstring(
    func: Callable[..., Any], model_args: list[str], signature_args: list[str], *, strict: bool
) -> tuple[str, dict[str, str]]:
    """Description and argument descriptions of a Google-style docstring."""
    name = getattr(func, "__name__", repr(func))
    doc = inspect.getdoc(func) or ""
    if strict:
        _check_docstring(name, doc, model_args)
    try:
        parsed = docstring_parser.parse(doc, style=docstring_parser.DocstringStyle.GOOGLE)
    except docstring_parser.ParseError as exc:
        if strict:
            msg = f"invalid Google-style docstring of {name!r}: {exc}"
            raise ConfigError(msg) from exc
        logger.debug("docstring of %s not parsed (%s); using it whole", name, exc)
        return doc, {}
    description = " ".join(  # LangChain joins the summary paragraphs with a space
        part.strip() for part in (parsed.short_description, parsed.long_description) if part
    )
    arg_docs = {
        p.arg_name: " ".join((p.description or "").split())
        for p in parsed.params
        if p.args and p.args[0] in _PARAM_KINDS
    }
    unknown = [arg for arg in arg_docs if arg not in signature_args]
    if unknown and strict:
        msg = (
            f"Arg {unknown[0]} in docstring not found in function signature: the docstring of "
            f"{name!r} documents {unknown}, which are not in its signature {signature_args}; "
            "fix the names or set error_on_invalid_docstring=False"
        )
        raise ConfigError(msg)
    return description, {k: v for k, v in arg_docs.items() if k not in unknown and v}


def _check_docstring(name: str, doc: str, model_args: list[str]) -> None:
    """Raise ``ConfigError`` (a ``ValueError``) for no ``Args:`` section or bad spacing."""
    lines = doc.splitlines()
    header = next((i for i, line in enumerate(lines) if _ARGS_HEADER.match(line)), None)
    if header is None:
        if model_args:
            msg = (
                f"Found invalid Google-Style docstring: {name!r} has no 'Args:' section "
                f"documenting {model_args}; add "
                "one (Google style) or set error_on_invalid_docstring=False"
            )
            raise ConfigError(msg)
        return
    if header == 0 or lines[header - 1].strip():
        msg = (
            f"Found invalid Google-Style docstring: in {name!r}, 'Args:' must follow a one-line "
            "summary and a blank line "
            "(Google style); add the summary or the blank line, or set "
            "error_on_invalid_docstring=False"
        )
        raise ConfigError(msg)
