"""Class-based tools: Qwen-Agent's ``BaseTool`` style and seed 001's pydantic-model style.

Two ways to write a tool as a class, beside the function-based ``@tool`` of LangChain:

* :class:`FunctionTool` (Qwen-Agent's ``BaseTool``): class attributes ``name``,
  ``description`` and ``parameters`` (the old list of ``{name, type, description, required}``
  dicts or a JSON schema), and a ``call(params, **kwargs)`` method that receives the raw
  arguments (JSON text or a dict) and parses them with :meth:`FunctionTool.verify_args`. Its
  ``function`` property is the OpenAI-compatible ``{name, description, parameters}``. The
  parameter definition is checked when the tool is instantiated, so a broken schema fails early.
  Instances take keyword configuration (``self.config``), which is what
  :func:`~retrieval.tools.registry.get_tool` passes. Qwen-Agent's descriptive attributes are
  there too: ``name_for_human`` (default: the name), ``args_format`` (how to write the
  arguments, for prompts), ``file_access`` (the tool reads files it is given), and a
  ``timeout`` (class attribute or ``timeout=`` configuration) past which a run is a
  :class:`~retrieval.tools.exceptions.ToolTimeoutError`.
* :class:`ModelTool` (seed 001's ``ToolExecutor`` entries): a pydantic model class is the
  argument schema and its ``run`` method the logic. Arguments are validated (and coerced) by
  the model; ``run`` may be an instance method (called on the validated model, no arguments),
  or a static or class method (called with the validated field values as keywords).

Both follow the duck-typed tool protocol of :class:`~retrieval.tools.node.ToolsNode`:
``invoke(tool_call)`` returns a :class:`~retrieval.tools.messages.ToolMessage` whose content is
:func:`~retrieval.tools.params.format_result` of the result; ``invoke(arguments)`` returns the
result itself; ``ainvoke`` runs ``invoke`` in a worker thread. With a ToolCall, a
:class:`~retrieval.errors.ToolInputError` (bad JSON, missing or invalid arguments) becomes an
error message the model can correct (``status="error"``) as ``handle_tool_error`` says: the
option of the same name and meaning as on :class:`~retrieval.tools.base.BaseTool`, except that
it defaults to ``True`` here (Qwen-Agent shows bad input to the model); other exceptions
propagate.
"""

from __future__ import annotations

import inspect
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, overload

from pydantic import BaseModel, ValidationError

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.errors import ToolInputError
from ragtools.retrieval.tools.concurrency import call_with_timeout, in_thread
from ragtools.retrieval.tools.exceptions import ErrorHandler, check_error_handler, handled_content
from ragtools.retrieval.tools.messages import ToolCall, ToolMessage, is_tool_call
from ragtools.retrieval.tools.output import ToolOutput
from ragtools.retrieval.tools.params import (
    ParametersSpec,
    ToolInfo,
    format_result,
    parse_arguments,
    to_json_schema,
    validate_arguments,
)

logger = logging.getLogger(__name__)

__all__ = ["FunctionTool", "ModelTool"]

ToolArguments = str | Mapping[str, Any]


class _InvokeMixin:
    """``invoke``/``ainvoke`` on top of a ``_run(arguments, **kwargs)`` method."""

    name: str
    handle_tool_error: ErrorHandler = True
    timeout: float | None = None

    def _run(self, arguments: ToolArguments, **kwargs: Any) -> Any:
        raise NotImplementedError

    def _timed_run(self, arguments: ToolArguments, **kwargs: Any) -> Any:
        return call_with_timeout(lambda: self._run(arguments, **kwargs), self.timeout, self.name)

    @overload
    def invoke(self, tool_input: ToolCall, **kwargs: Any) -> ToolMessage: ...

    @overload
    def invoke(self, tool_input: ToolArguments, **kwargs: Any) -> Any: ...

    def invoke(self, tool_input: ToolCall | ToolArguments, **kwargs: Any) -> Any:
        """Run the tool.

        Args:
            tool_input: a ToolCall dict (gives a ToolMessage), or the arguments as a dict or
                JSON text (gives the raw result).
            **kwargs: passed on to the tool's ``call``.

        Raises:
            ToolInputError: invalid arguments (a ToolException included), when not invoked
                with a ToolCall (or when ``handle_tool_error`` is off).
        """
        if not (isinstance(tool_input, Mapping) and is_tool_call(tool_input)):
            result = self._timed_run(tool_input, **kwargs)
            return result.content if isinstance(result, ToolOutput) else result
        call_id = str(tool_input.get("id") or "")
        try:
            result = self._timed_run(tool_input["args"], **kwargs)
        except ToolInputError as exc:
            content = handled_content(self.handle_tool_error, exc, str(exc))
            logger.info("tool %r rejected its input: %s", self.name, exc)
            return ToolMessage(
                content=content, tool_call_id=call_id, name=self.name, status="error"
            )
        artifact = result.artifact if isinstance(result, ToolOutput) else None
        content = result.content if isinstance(result, ToolOutput) else result
        return ToolMessage(
            content=format_result(content), artifact=artifact, tool_call_id=call_id, name=self.name
        )

    async def ainvoke(self, tool_input: ToolCall | ToolArguments, **kwargs: Any) -> Any:
        """Async :meth:`invoke` (runs it in a worker thread, so the event loop stays free)."""
        invoke: Callable[..., Any] = self.invoke
        return await in_thread(invoke, tool_input, **kwargs)


class FunctionTool(_InvokeMixin, ABC):
    """Base class of Qwen-Agent-style tools.

    Subclasses set the class attributes and implement :meth:`call`.

    Attributes:
        name: unique tool name (set by ``@register_tool`` when left empty).
        description: what the tool does, for the model.
        parameters: list form (``[{"name", "type", "description", "required"}]``) or a JSON
            schema of type object.
        strict_json: parse argument text as strict JSON instead of JSON5.
        name_for_human: the name people see, where the model sees ``name`` (Qwen-Agent's
            display name; ``name_for_human=`` configuration overrides it; default: ``name``).
        args_format: how the arguments are written, for prompts that list tools.
        file_access: the tool reads files handed to it (Qwen-Agent's flag).
        timeout: seconds a run may take (``None``: no limit); ``timeout=`` configuration
            overrides it per instance.
        handle_tool_error: how ``invoke`` with a ToolCall answers a ToolInputError (a
            ToolException included): ``True`` (its text), a string, ``exc -> str`` (a
            ``staticmethod`` when set on the class), or ``False`` to raise it.
        config: the keyword configuration given to the constructor.

    Raises:
        ConfigError: on instantiation, when ``name`` is empty, ``parameters`` is invalid or
            ``handle_tool_error`` is of the wrong kind.

    Example:
        >>> class Add(FunctionTool):
        ...     name = "add"
        ...     description = "Add two integers."
        ...     parameters = [
        ...         {"name": "a", "type": "integer", "required": True},
        ...         {"name": "b", "type": "integer", "required": True},
        ...     ]
        ...     def call(self, params, **kwargs):
        ...         args = self.verify_args(params)
        ...         return args["a"] + args["b"]
        >>> Add().call('{a: 2, b: 3,}')
        5
    """

    name: str = ""
    description: str = ""
    parameters: ParametersSpec = ()
    strict_json: bool = False
    name_for_human: str = ""
    args_format: str = "Format the arguments as a JSON object."
    file_access: bool = False

    def __init__(self, **config: Any) -> None:
        if not self.name:
            msg = (
                f"{type(self).__name__} has no name; set the class attribute or use @register_tool"
            )
            raise ConfigError(msg)
        check_error_handler(type(self).__name__, "handle_tool_error", self.handle_tool_error)
        self.config: dict[str, Any] = dict(config)
        self._schema = to_json_schema(self.parameters)
        self.timeout = self.config.get("timeout", self.timeout)
        if self.timeout is not None and not self.timeout > 0:
            msg = f"tool {self.name!r}: timeout must be > 0 seconds or None, got {self.timeout}"
            raise ConfigError(msg)
        self.name_for_human = self.config.get("name_for_human") or self.name_for_human or self.name

    @abstractmethod
    def call(self, params: ToolArguments, **kwargs: Any) -> Any:
        """Run the tool on raw ``params`` (JSON text or a dict); return str, list or dict."""

    def verify_args(self, params: ToolArguments) -> dict[str, Any]:
        """Parse ``params`` leniently and validate them against :attr:`parameters`.

        Raises:
            ToolInputError: "Parameters must be formatted as a valid JSON!", a missing
                required parameter, or a schema violation.
        """
        arguments = parse_arguments(params, strict_json=self.strict_json)
        validate_arguments(arguments, self._schema)
        return arguments

    @property
    def json_schema(self) -> dict[str, Any]:
        """The parameters as a JSON schema."""
        return dict(self._schema)

    @property
    def function(self) -> dict[str, Any]:
        """The OpenAI-compatible function: ``{"name", "description", "parameters"}``."""
        return {"name": self.name, "description": self.description, "parameters": self.json_schema}

    def tool_info(self) -> ToolInfo:
        """This tool's :class:`~retrieval.tools.params.ToolInfo`."""
        return ToolInfo(self.name, self.description, self.parameters)

    def _run(self, arguments: ToolArguments, **kwargs: Any) -> Any:
        return self.call(arguments, **kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class ModelTool(_InvokeMixin):
    """A pydantic model class with a ``run`` method, as a tool.

    Args:
        model: the model class; its fields are the tool's arguments.
        name: tool name (default: the class name).
        description: for the model (default: the class docstring).
        handle_tool_error: as on :class:`FunctionTool` (default ``True``).

    Raises:
        ConfigError: ``model`` is not a pydantic model class, has no callable ``run``, or
            ``handle_tool_error`` is of the wrong kind.

    Example:
        >>> class Multiply(BaseModel):
        ...     '''Multiply two integers.'''
        ...     x: int
        ...     y: int
        ...     def run(self) -> int:
        ...         return self.x * self.y
        >>> ModelTool(Multiply, name="multiply").execute({"x": 3, "y": "5"})
        15
    """

    def __init__(
        self,
        model: type[BaseModel],
        *,
        name: str | None = None,
        description: str | None = None,
        handle_tool_error: ErrorHandler = True,
    ) -> None:
        if not isinstance(model, type) or not issubclass(model, BaseModel):
            msg = f"A model tool must be a pydantic BaseModel subclass, got {model!r}"
            raise ConfigError(msg)
        if not callable(getattr(model, "run", None)):
            msg = f"Model tool {model.__name__} needs a callable `run` method"
            raise ConfigError(msg)
        check_error_handler(f"ModelTool {model.__name__}", "handle_tool_error", handle_tool_error)
        self.handle_tool_error = handle_tool_error
        self.model = model
        self.name = name or model.__name__
        self.description = description if description is not None else inspect.getdoc(model) or ""

    @property
    def args_schema(self) -> type[BaseModel]:
        """The argument model (the model class itself)."""
        return self.model

    @property
    def function(self) -> dict[str, Any]:
        """The OpenAI-compatible function: ``{"name", "description", "parameters"}``."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.model.model_json_schema(),
        }

    def validate(self, params: ToolArguments) -> BaseModel:
        """Parse leniently and validate (with coercion) into a model instance.

        Raises:
            ToolInputError: bad JSON, or arguments the model rejects (each problem named).
        """
        arguments = parse_arguments(params)
        try:
            return self.model.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or '(arguments)'}: {error['msg']}"
                for error in exc.errors()
            )
            msg = f"Invalid arguments for tool {self.name!r}: {problems}"
            raise ToolInputError(msg) from exc

    def execute(self, params: ToolArguments) -> Any:
        """Validate ``params`` and run the tool; returns what ``run`` returns."""
        instance = self.validate(params)
        run = inspect.getattr_static(self.model, "run")
        if isinstance(run, (staticmethod, classmethod)):
            fields = {field: getattr(instance, field) for field in type(instance).model_fields}
            return getattr(self.model, "run")(**fields)  # noqa: B009 (run is not on BaseModel)
        return getattr(instance, "run")()  # noqa: B009

    def _run(self, arguments: ToolArguments, **kwargs: Any) -> Any:
        return self.execute(arguments)

    def __repr__(self) -> str:
        return f"ModelTool({self.model.__name__}, name={self.name!r})"
