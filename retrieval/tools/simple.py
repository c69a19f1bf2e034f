"""``Tool``: a tool with exactly one input, after LangChain's ``Tool``.

The oldest agent tool shape: one string in, content out. The model sees one argument,
``tool_input`` (or the single field of ``args_schema`` when one is given). A dict input must
hold exactly one value; more is a :class:`ToolException` (a run-time failure the model may see)
telling the user to use :class:`~retrieval.tools.structured.StructuredTool`. Building a ``Tool``
from a function that needs more than one argument is a construction mistake, so it raises
:class:`~parsers.errors.ConfigError` at once.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.tools.arguments import config_parameter, declares_callbacks
from ragtools.retrieval.tools.base import ArgsSchema, FunctionBackedTool
from ragtools.retrieval.tools.concurrency import run_coroutine_sync
from ragtools.retrieval.tools.exceptions import ToolException
from ragtools.retrieval.tools.schema import FILTERED_ARGS

__all__ = ["Tool"]

logger = logging.getLogger(__name__)

_INPUT = "tool_input"


class Tool(FunctionBackedTool):
    """A single-input tool wrapping ``func`` and/or ``coroutine``.

    Attributes:
        func: the sync function, called with the one input (and ``config`` if it declares a
            ``RunConfig`` parameter).
        coroutine: the async function; either may be missing, the other is used.

    ``Tool(name, func, description)`` positionally works, as in LangChain.
    """

    def __init__(
        self,
        name: str | None = None,
        func: Callable[..., Any] | None = None,
        description: str | None = None,
        **kwargs: Any,
    ) -> None:
        """Take LangChain's positional ``(name, func, description)`` or keywords."""
        given = {"name": name, "func": func, "description": description}
        super().__init__(**{k: v for k, v in given.items() if v is not None}, **kwargs)

    def _check_settings(self) -> None:
        """Reject functions that need more than one argument."""
        super()._check_settings()
        for fn in (self.func, self.coroutine):
            required = _required_parameters(fn)
            if len(required) > 1:
                msg = (
                    f"Tool {self.name!r} takes a single input but its function needs "
                    f"{required}; use StructuredTool (or @tool) for several arguments"
                )
                raise ConfigError(msg)

    @classmethod
    def from_function(
        cls,
        func: Callable[..., Any] | None,
        name: str,
        description: str,
        return_direct: bool = False,
        args_schema: ArgsSchema | None = None,
        coroutine: Callable[..., Awaitable[Any]] | None = None,
        **kwargs: Any,
    ) -> Tool:
        """Build a Tool (LangChain's signature: name and description are required)."""
        return cls(
            name=name,
            func=func,
            coroutine=coroutine,
            description=description,
            return_direct=return_direct,
            args_schema=args_schema,
            **kwargs,
        )

    def _infer_input_schema(self) -> type[BaseModel]:
        model: type[BaseModel] = create_model(  # type: ignore[call-overload]
            self.name,
            __config__=ConfigDict(extra="forbid"),
            __doc__=self.description,
            **{_INPUT: (str, Field(description="The input of the tool."))},
        )
        return model

    def _parse_arguments(
        self, tool_input: str | dict[str, Any], call_id: str | None, injected: Mapping[str, Any]
    ) -> dict[str, Any]:
        if self.args_schema is not None:
            values = list(super()._parse_arguments(tool_input, call_id, injected).values())
        elif isinstance(tool_input, str):
            values = [tool_input]
        else:
            values = list(tool_input.values())
        if len(values) != 1:
            msg = (
                f"Too many arguments to single-input tool {self.name!r}: got {len(values)}; "
                "send one value, or use StructuredTool for several arguments"
            )
            raise ToolException(msg)
        return {_INPUT: values[0]}

    def _config_parameter(self, *, for_async: bool) -> str | None:
        return config_parameter(self._target(for_async=for_async))

    def _takes_callbacks(self, *, for_async: bool) -> bool:
        return declares_callbacks(self._target(for_async=for_async))

    def _target(self, *, for_async: bool) -> Callable[..., Any] | None:
        return self.coroutine if for_async and self.coroutine else self.func or self.coroutine

    def _run(self, **kwargs: Any) -> Any:
        value = kwargs.pop(_INPUT)
        if self.func is not None:
            return self.func(value, **kwargs)
        coroutine = self.coroutine
        if coroutine is None:
            msg = f"tool {self.name!r} has neither func nor coroutine"
            raise ConfigError(msg)
        return run_coroutine_sync(lambda: coroutine(value, **kwargs))

    async def _arun(self, **kwargs: Any) -> Any:
        if self.coroutine is None:
            return await super()._arun(**kwargs)
        value = kwargs.pop(_INPUT)
        return await self.coroutine(value, **kwargs)


def _required_parameters(fn: Callable[..., Any] | None) -> list[str]:
    """Parameters of ``fn`` without a default, other than plumbing and config."""
    if fn is None:
        return []
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    config = config_parameter(fn)
    return [
        p.name
        for p in parameters
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        and p.name not in FILTERED_ARGS
        and p.name != config
    ]
