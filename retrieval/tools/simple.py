"""``Tool``: a tool with exactly one input, after LangChain's ``Tool``.

The oldest agent tool shape: one string in, content out. The model sees one argument,
``tool_input`` (or the single field of ``args_schema`` when one is given). A dict input must
hold exactly one value; more is a :class:`ToolException` (a run-time failure the model may see)
telling the user to use :class:`~retrieval.tools.structured.StructuredTool`. As in LangChain,
a function needing more arguments is accepted at construction and fails at that call.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import BaseModel, create_model

from ragtools.retrieval.tools.base import ArgsSchema, FunctionBackedTool
from ragtools.retrieval.tools.exceptions import ToolException

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

    @property
    def args(self) -> dict[str, Any]:
        """LangChain's answer for a Tool without ``args_schema``: one untitled string."""
        if self.args_schema is None:
            return {_INPUT: {"type": "string"}}
        return super().args

    def _infer_input_schema(self) -> type[BaseModel]:
        model: type[BaseModel] = create_model(  # type: ignore[call-overload]
            self.name, __doc__=self.description, **{_INPUT: (str, ...)}
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

    def _call_arguments(
        self, kwargs: dict[str, Any], target: Callable[..., Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The one input goes first, positionally, as LangChain calls a Tool's function."""
        value = kwargs.pop(_INPUT)
        return (value,), kwargs
