"""``StructuredTool``: a tool with any number of named, typed arguments.

Built from a function with :meth:`StructuredTool.from_function`, which infers the argument
schema from the signature, type hints and (optionally) the Google-style docstring. A sync-only
function also runs from ``ainvoke`` (in a worker thread, so the event loop is not blocked); an
async-only one runs from ``invoke`` only with ``sync_over_async=True`` (in a fresh event loop),
otherwise ``invoke`` raises ``NotImplementedError``, as in LangChain.

Description, first match wins, as in LangChain: the ``description`` argument; the function
docstring (unless ``parse_docstring``); the ``args_schema`` docstring (with ``parse_docstring``
the docstring's summary, which the inferred schema carries) or the dict schema's
``description``. A docstring is taken as LangChain takes it, ``textwrap.dedent`` and stripped,
so an ``Args:`` block under a summary on the first line keeps its indentation. A function
without any of these is rejected: the description is how the model decides when to call the
tool.
"""

from __future__ import annotations

import functools
import inspect
import logging
import textwrap
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.tools.base import ArgsSchema, FunctionBackedTool, ResponseFormat
from ragtools.retrieval.tools.schema import Variadic, create_schema_from_function

__all__ = ["StructuredTool"]

logger = logging.getLogger(__name__)


class StructuredTool(FunctionBackedTool):
    """A multi-argument tool wrapping ``func`` and/or ``coroutine``.

    Attributes:
        func: the sync function, called with the validated arguments as keywords.
        coroutine: the async function; either may be missing, the other is used.
    """

    @classmethod
    def from_function(
        cls,
        func: Callable[..., Any] | None = None,
        coroutine: Callable[..., Awaitable[Any]] | None = None,
        name: str | None = None,
        description: str | None = None,
        return_direct: bool = False,
        args_schema: ArgsSchema | None = None,
        infer_schema: bool = True,
        *,
        response_format: ResponseFormat = "content",
        parse_docstring: bool = False,
        error_on_invalid_docstring: bool = False,
        variadic: Variadic = "fields",
        **kwargs: Any,
    ) -> StructuredTool:
        """Build a tool from a sync and/or async function.

        Args:
            func: the sync function.
            coroutine: the async function (``func`` may be omitted).
            name: the tool name; default the function's ``__name__``.
            description: default the (parsed) docstring; see the module docstring.
            return_direct: an agent should return this tool's output as its answer.
            args_schema: a pydantic model or JSON-schema dict; inferred when None.
            infer_schema: infer the schema from the signature when ``args_schema`` is None;
                when False the tool accepts any arguments and passes them on unchecked.
            response_format: ``"content_and_artifact"`` when the function returns
                ``(content, artifact)``.
            parse_docstring: take argument descriptions from a Google-style docstring.
            error_on_invalid_docstring: raise ``ConfigError`` (a ``ValueError``) on a malformed
                docstring.
            variadic: how ``*args``/``**kwargs`` are shown: ``"fields"`` (LangChain's), or
                ``"extra_keys"`` (unnamed keys reach ``**kwargs``); see
                :mod:`retrieval.tools.schema`.
            **kwargs: further :class:`BaseTool` fields (``handle_tool_error``, ``extras``,
                ``metadata``, ...).

        Returns:
            The tool.

        Raises:
            ConfigError: no function, no name, no description, or an invalid docstring with
                ``error_on_invalid_docstring`` (a ``ValueError``, as the seed documents).

        Example:
            >>> def add(a: int, b: int) -> int:
            ...     '''Add two integers.'''
            ...     return a + b
            >>> StructuredTool.from_function(add).invoke({"a": 2, "b": "4"})
            6
        """
        source = func if func is not None else coroutine
        if source is None:
            msg = "StructuredTool.from_function needs func and/or coroutine"
            raise ConfigError(msg)
        tool_name = name or getattr(source, "__name__", None)
        if not tool_name:
            msg = f"cannot name a tool after {source!r}; pass name="
            raise ConfigError(msg)
        if args_schema is None and infer_schema:
            args_schema = create_schema_from_function(
                tool_name,
                source,
                parse_docstring=parse_docstring,
                error_on_invalid_docstring=error_on_invalid_docstring,
                variadic=variadic,
            )
        text = _description(source, description, args_schema, parse_docstring=parse_docstring)
        if text is None:
            msg = (
                f"Function must have a docstring if description not provided: tool {tool_name!r}; "
                "pass description= (the "
                "model reads it to decide when to call the tool)"
            )
            raise ConfigError(msg)
        return cls(
            name=tool_name,
            func=func,
            coroutine=coroutine,
            description=text,
            return_direct=return_direct,
            args_schema=args_schema,
            response_format=response_format,
            variadic=variadic,
            **kwargs,
        )

    def _infer_input_schema(self) -> type[BaseModel]:
        """With no schema at all, accept any arguments and pass them on."""
        model: type[BaseModel] = create_model(  # type: ignore[call-overload]
            self.name, __config__=ConfigDict(extra="allow"), __doc__=self.description
        )
        return model


def _description(
    source: Callable[..., Any],
    description: str | None,
    args_schema: ArgsSchema | None,
    *,
    parse_docstring: bool,
) -> str | None:
    if description is not None:
        return description
    if isinstance(source, functools.partial):
        source = source.func
    if inspect.isclass(source):  # its own docstring only, never pydantic's inherited one
        return inspect.cleandoc(source.__dict__.get("__doc__") or "")
    doc = None if parse_docstring else source.__doc__
    if not doc and isinstance(args_schema, dict):
        doc = args_schema.get("description")
    elif not doc and isinstance(args_schema, type):
        doc = args_schema.__doc__
    return textwrap.dedent(str(doc)).strip() if doc else None
