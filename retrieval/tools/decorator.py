"""The ``@tool`` decorator, in LangChain's four forms.

::

    @tool                                   # name from the function, schema inferred
    def search(query: str) -> str: ...

    @tool("web_search")                     # explicit name
    def search(query: str) -> str: ...

    @tool(parse_docstring=True, response_format="content_and_artifact")
    def search(query: str) -> tuple[str, list[Hit]]: ...

    upper = tool("upper", runnable, description="Upper-cases text.")   # wrap an object

A function becomes a :class:`~retrieval.tools.structured.StructuredTool` (a ``Tool`` when
``infer_schema=False`` and no ``args_schema``); ``async def`` functions become the tool's
coroutine. The wrapped object of the fourth form is either *runnable-like* (it has
``invoke``, and maybe ``ainvoke``: a LangChain Runnable, a retriever, a chain) or a plain
callable object. A runnable-like object gets the validated arguments as one dict when there
is a schema (``args_schema``, or an ``input_schema`` model with fields, as LangChain runnables
expose), otherwise its one input unchanged, a string or a whole dict
(:class:`~retrieval.tools.convert.RunnableTool`), so the seed's
``tool("uppercase", RunnableLambda(lambda x: x["query"].upper()))`` answers
``invoke({"query": "abc"})``. Its description defaults to its own ``description``, or for a
LangChain Runnable to its ``repr`` (as LangChain's decorator does). A callable object is
treated like a function (schema from its ``__call__`` signature).

``error_on_invalid_docstring`` defaults to True here, as in LangChain's decorator (it only
matters with ``parse_docstring=True``).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, overload

from pydantic import BaseModel

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.tools.base import ArgsSchema, BaseTool, ResponseFormat
from ragtools.retrieval.tools.convert import RunnableTool, runnable_description
from ragtools.retrieval.tools.schema import Variadic
from ragtools.retrieval.tools.simple import Tool
from ragtools.retrieval.tools.structured import StructuredTool

__all__ = ["tool"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Options:
    description: str | None
    return_direct: bool
    args_schema: ArgsSchema | None
    infer_schema: bool
    response_format: ResponseFormat
    parse_docstring: bool
    error_on_invalid_docstring: bool
    variadic: Variadic


@overload
def tool(
    name_or_callable: str,
    runnable: Any,
    *,
    description: str | None = None,
    return_direct: bool = False,
    args_schema: ArgsSchema | None = None,
    infer_schema: bool = True,
    response_format: ResponseFormat = "content",
    parse_docstring: bool = False,
    error_on_invalid_docstring: bool = True,
    variadic: Variadic = "fields",
) -> BaseTool: ...


@overload
def tool(
    name_or_callable: Callable[..., Any],
    *,
    description: str | None = None,
    return_direct: bool = False,
    args_schema: ArgsSchema | None = None,
    infer_schema: bool = True,
    response_format: ResponseFormat = "content",
    parse_docstring: bool = False,
    error_on_invalid_docstring: bool = True,
    variadic: Variadic = "fields",
) -> BaseTool: ...


@overload
def tool(
    name_or_callable: str | None = None,
    *,
    description: str | None = None,
    return_direct: bool = False,
    args_schema: ArgsSchema | None = None,
    infer_schema: bool = True,
    response_format: ResponseFormat = "content",
    parse_docstring: bool = False,
    error_on_invalid_docstring: bool = True,
    variadic: Variadic = "fields",
) -> Callable[[Callable[..., Any]], BaseTool]: ...


def tool(
    name_or_callable: str | Callable[..., Any] | None = None,
    runnable: Any = None,
    *,
    description: str | None = None,
    return_direct: bool = False,
    args_schema: ArgsSchema | None = None,
    infer_schema: bool = True,
    response_format: ResponseFormat = "content",
    parse_docstring: bool = False,
    error_on_invalid_docstring: bool = True,
    variadic: Variadic = "fields",
) -> BaseTool | Callable[[Callable[..., Any]], BaseTool]:
    """Turn a function (or a runnable-like object) into a tool.

    Args:
        name_or_callable: the function (bare ``@tool``), or the tool name.
        runnable: with a name: the object to wrap (``tool("name", obj)``).
        description: default: the function's docstring (or its parsed summary).
        return_direct: an agent should return this tool's output as its answer.
        args_schema: a pydantic model or JSON-schema dict instead of the inferred one.
        infer_schema: infer the schema from the signature; False gives a single-input Tool.
        response_format: ``"content_and_artifact"`` when the function returns a pair.
        parse_docstring: take argument descriptions from a Google-style docstring.
        error_on_invalid_docstring: with ``parse_docstring``, raise ``ConfigError`` (a
            ``ValueError``) on a malformed docstring.
        variadic: ``"fields"`` shows ``*args``/``**kwargs`` as LangChain does (optional
            ``args``/``kwargs`` fields); ``"extra_keys"`` lets keys the schema does not name
            reach ``**kwargs`` (see :mod:`retrieval.tools.schema`).

    Returns:
        The tool, or a decorator producing it (forms ``@tool("name")`` and
        ``@tool(...options)``).

    Raises:
        ConfigError: nothing to name the tool after, no description to be found, or an
            invalid docstring with ``error_on_invalid_docstring``.

    Example:
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> add.name, add.invoke({"a": 2, "b": "4"})
        ('add', 6)
    """
    options = _Options(
        description=description,
        return_direct=return_direct,
        args_schema=args_schema,
        infer_schema=infer_schema,
        response_format=response_format,
        parse_docstring=parse_docstring,
        error_on_invalid_docstring=error_on_invalid_docstring,
        variadic=variadic,
    )
    if runnable is not None:
        if not isinstance(name_or_callable, str):
            msg = f"tool(name, runnable) needs a string name first, got {name_or_callable!r}"
            raise ConfigError(msg)
        return _build(name_or_callable, runnable, options)
    if isinstance(name_or_callable, str):
        tool_name = name_or_callable
        return lambda fn: _build(tool_name, fn, options)
    if name_or_callable is None:
        return lambda fn: _build(_name_of(fn), fn, options)
    if callable(name_or_callable):
        return _build(_name_of(name_or_callable), name_or_callable, options)
    msg = f"@tool expects a function or a name, got {name_or_callable!r}"
    raise ConfigError(msg)


def _name_of(obj: Any) -> str:
    name = getattr(obj, "__name__", None)
    if not isinstance(name, str) or not name or name == "<lambda>":
        msg = f"cannot name a tool after {obj!r}; use tool('name', obj)"
        raise ConfigError(msg)
    return name


def _build(name: str, obj: Any, options: _Options) -> BaseTool:
    if _is_runnable_like(obj):
        return _from_runnable(name, obj, options)
    if not callable(obj):
        msg = f"tool {name!r}: cannot wrap {obj!r}; give a function, a callable or a runnable"
        raise ConfigError(msg)
    is_async = inspect.iscoroutinefunction(obj) or inspect.iscoroutinefunction(
        getattr(obj, "__call__", None)  # noqa: B004 (async callable objects)
    )
    func, coroutine = (None, obj) if is_async else (obj, None)
    if options.infer_schema or options.args_schema is not None:
        return StructuredTool.from_function(
            func=func,
            coroutine=coroutine,
            name=name,
            description=options.description,
            return_direct=options.return_direct,
            args_schema=options.args_schema,
            infer_schema=options.infer_schema,
            response_format=options.response_format,
            parse_docstring=options.parse_docstring,
            error_on_invalid_docstring=options.error_on_invalid_docstring,
            variadic=options.variadic,
        )
    description = options.description or inspect.getdoc(obj)
    if not description:
        msg = (
            "Function must have either a docstring or description when infer_schema is False: "
            f"tool {name!r} needs a docstring or description= (the model "
            "reads it to know what the single input is)"
        )
        raise ConfigError(msg)
    return Tool(
        name=name,
        func=func,
        coroutine=coroutine,
        description=description,
        return_direct=options.return_direct,
        response_format=options.response_format,
    )


def _is_runnable_like(obj: Any) -> bool:
    return callable(getattr(obj, "invoke", None)) and not inspect.isroutine(obj)


def _from_runnable(name: str, obj: Any, options: _Options) -> BaseTool:
    description = options.description or runnable_description(obj)
    if not description:
        msg = f"tool {name!r} wraps {type(obj).__name__}; pass description= for the model"
        raise ConfigError(msg)
    schema = options.args_schema or _runnable_input_schema(obj)
    has_async = callable(getattr(obj, "ainvoke", None))
    if schema is None:

        def call_one(tool_input: Any) -> Any:
            return obj.invoke(tool_input)

        async def acall_one(tool_input: Any) -> Any:
            return await obj.ainvoke(tool_input)

        return RunnableTool(  # the input goes in whole: a string, or the dict
            name=name,
            func=call_one,
            coroutine=acall_one if has_async else None,
            description=description,
            return_direct=options.return_direct,
            response_format=options.response_format,
        )

    def call(**kwargs: Any) -> Any:
        return obj.invoke(kwargs)

    async def acall(**kwargs: Any) -> Any:
        return await obj.ainvoke(kwargs)

    return StructuredTool(
        name=name,
        func=call,
        coroutine=acall if has_async else None,
        description=description,
        args_schema=schema,
        return_direct=options.return_direct,
        response_format=options.response_format,
    )


def _runnable_input_schema(obj: Any) -> type[BaseModel] | None:
    """A LangChain-style ``input_schema`` model with named fields, if the object has one."""
    try:
        schema = getattr(obj, "input_schema", None)
    except Exception:  # a property that cannot compute a schema: treat as absent
        logger.debug("input_schema of %r unavailable", obj, exc_info=True)
        return None
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        fields = schema.model_fields
        if fields and "root" not in fields:
            return schema
    return None
