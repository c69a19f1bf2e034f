"""A registry of tool classes by name (Qwen-Agent's ``register_tool`` / ``TOOL_REGISTRY``).

``@register_tool("name")`` records a tool class (a Qwen-style
:class:`~retrieval.tools.classtool.FunctionTool` subclass or a subclass of the package's own
:class:`~retrieval.tools.base.BaseTool`) in the global :data:`TOOL_REGISTRY`;
``get_tool(name, **config)`` instantiates it with that configuration; ``list_tools()`` gives
the names in registration order.

Rules, as in Qwen-Agent:

* registering a name twice is a :class:`~parsers.errors.ConfigError`, unless
  ``allow_overwrite=True``, which replaces the class and logs a warning;
* a class whose own ``name`` attribute is set and differs from the registered name is a
  ``ConfigError`` (an empty ``name`` is filled in with the registered one);
* only ``FunctionTool`` and ``BaseTool`` subclasses can be registered; ``get_tool`` gives a
  ``BaseTool`` subclass its registered name unless the configuration names it.

Looking up a name that is not registered raises :class:`UnknownToolError`, which is a
:class:`~retrieval.errors.ToolInputError` (a model asked for a tool that does not exist: show it
the message, which lists the known tools), a :class:`ValueError` (what Qwen-Agent's
``get_tool`` raises) and a :class:`KeyError` (the registry is a ``Mapping``, and
``registry[name]`` keeps the mapping contract).

:class:`ToolExecutor` is the same idea for seed 001's pydantic-model tools
(:class:`~retrieval.tools.classtool.ModelTool`): ``@executor.register("name", "description")``
on a model class with a ``run`` method, ``executor.execute(name, params)`` validates and runs,
``executor.metadata()`` exports what each tool needs, ``executor.tools()`` feeds a ToolsNode.
The seed's own method names work too: ``register_tool(name, description)``,
``execute_tool(name, params)`` (an unknown name gives a "not registered" message, not an
exception) and ``export_metadata()``.

Global state and tests: build a private :class:`ToolRegistry` and call its methods, or wrap a
test in ``with TOOL_REGISTRY.scoped():``, which restores the registry's previous content on
exit; :func:`unregister_tool` removes one name.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticUndefined

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.errors import ToolInputError
from ragtools.retrieval.tools.base import BaseTool
from ragtools.retrieval.tools.classtool import FunctionTool, ModelTool

logger = logging.getLogger(__name__)

__all__ = [
    "TOOL_REGISTRY",
    "ToolExecutor",
    "ToolRegistry",
    "UnknownToolError",
    "get_tool",
    "list_tools",
    "register_tool",
    "unregister_tool",
]

ToolClass = type[FunctionTool] | type[BaseTool]
_T = TypeVar("_T", bound=ToolClass)
_M = TypeVar("_M", bound=type[BaseModel])
_V = TypeVar("_V")


class UnknownToolError(ToolInputError, KeyError, ValueError):
    """No tool of that name exists; the message lists the known ones."""

    def __str__(self) -> str:
        # KeyError would render the message with quotes around it.
        return str(self.args[0]) if self.args else ""


class ToolRegistry(Mapping[str, ToolClass]):
    """Tool classes by name; thread-safe. ``TOOL_REGISTRY`` is the global instance."""

    def __init__(self) -> None:
        self._classes: dict[str, ToolClass] = {}
        self._lock = threading.RLock()

    def register(self, name: str, *, allow_overwrite: bool = False) -> Callable[[_T], _T]:
        """Class decorator: ``@registry.register("name")``; see :meth:`add`."""

        def decorator(cls: _T) -> _T:
            return self.add(cls, name, allow_overwrite=allow_overwrite)

        return decorator

    def add(self, cls: _T, name: str | None = None, *, allow_overwrite: bool = False) -> _T:
        """Register ``cls`` under ``name`` (default: its ``name`` attribute) and return it.

        Raises:
            ConfigError: not a FunctionTool or BaseTool subclass, an empty name, a name that
                conflicts with the class's own ``name``, or a duplicate without
                ``allow_overwrite``.
        """
        if not isinstance(cls, type) or not issubclass(cls, (FunctionTool, BaseTool)):
            msg = (
                f"Only FunctionTool or BaseTool subclasses can be registered as tools, got {cls!r}"
            )
            raise ConfigError(msg)
        own_name = _own_name(cls)
        name = name if name is not None else own_name
        if not isinstance(name, str) or not name:
            msg = f"A tool name must be a non-empty string, got {name!r} for {cls.__name__}"
            raise ConfigError(msg)
        if own_name and own_name != name:
            msg = (
                f'{cls.__name__}.name="{own_name}" conflicts with register_tool(name="{name}"); '
                "use the same name in both places or leave the class attribute empty"
            )
            raise ConfigError(msg)
        with self._lock:
            if name in self._classes:
                if not allow_overwrite:
                    msg = (
                        f"Tool {name!r} already exists ({self._classes[name].__name__}); "
                        "choose a unique name or pass allow_overwrite=True"
                    )
                    raise ConfigError(msg)
                logger.warning(
                    "Tool %r already exists (%s); overwriting it with %s",
                    name,
                    self._classes[name].__name__,
                    cls.__name__,
                )
            if issubclass(cls, FunctionTool):
                cls.name = name
            self._classes[name] = cls
        logger.debug("registered tool %r: %s", name, cls.__qualname__)
        return cls

    def unregister(self, name: str) -> ToolClass:
        """Remove ``name`` and return its class.

        Raises:
            UnknownToolError: ``name`` is not registered.
        """
        with self._lock:
            cls = self[name]
            del self._classes[name]
        return cls

    def get_tool(self, name: str, **config: Any) -> FunctionTool | BaseTool:
        """Instantiate the tool registered as ``name`` with ``config``.

        Raises:
            UnknownToolError: ``name`` is not registered (a ``ValueError``).
            ConfigError: the class rejected ``config``.
        """
        cls = self[name]
        if issubclass(cls, BaseTool):
            config = {"name": name, **config}
        try:
            return cls(**config)
        except (TypeError, ValidationError) as exc:
            msg = f"Could not create tool {name!r} with config {config!r}: {exc}"
            raise ConfigError(msg) from exc

    def list_tools(self) -> list[str]:
        """The registered names, in registration order."""
        with self._lock:
            return list(self._classes)

    @contextmanager
    def scoped(self) -> Iterator[ToolRegistry]:
        """Restore the registry's current content when the ``with`` block ends."""
        with self._lock:
            saved = dict(self._classes)
        try:
            yield self
        finally:
            with self._lock:
                self._classes = saved

    def __getitem__(self, name: str) -> ToolClass:
        with self._lock:
            return _registered(self._classes, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.list_tools())

    def __len__(self) -> int:
        return len(self._classes)

    def __contains__(self, name: object) -> bool:
        return name in self._classes


def _registered(table: Mapping[str, _V], name: str) -> _V:
    """``table[name]``, or :class:`UnknownToolError` naming the tools that are registered."""
    found = table.get(name)
    if found is None:
        known = ", ".join(table) or "(none)"
        msg = f"Tool {name!r} is not registered; registered tools: {known}"
        raise UnknownToolError(msg)
    return found


def _own_name(cls: ToolClass) -> str:
    """The name a tool class gives itself: a FunctionTool's attribute, a BaseTool's default."""
    if issubclass(cls, BaseTool):
        default = cls.model_fields["name"].default
        return "" if default is PydanticUndefined or default is None else str(default)
    return str(getattr(cls, "name", "") or "")


TOOL_REGISTRY = ToolRegistry()
"""The global registry used by :func:`register_tool`, :func:`get_tool` and :func:`list_tools`."""


def register_tool(name: str, allow_overwrite: bool = False) -> Callable[[_T], _T]:
    """Class decorator registering a FunctionTool subclass in :data:`TOOL_REGISTRY`.

    Example:
        >>> @register_tool("echo")  # doctest: +SKIP
        ... class Echo(FunctionTool):
        ...     description = "Repeat the text."
        ...     parameters = [{"name": "text", "type": "string", "required": True}]
        ...     def call(self, params, **kwargs):
        ...         return self.verify_args(params)["text"]

    Raises:
        ConfigError: duplicate name (without ``allow_overwrite``) or a conflicting ``name``.
    """
    return TOOL_REGISTRY.register(name, allow_overwrite=allow_overwrite)


def get_tool(name: str, **config: Any) -> FunctionTool | BaseTool:
    """Instantiate a globally registered tool.

    Raises:
        UnknownToolError: ``name`` is not registered (a ``ValueError``, as in Qwen-Agent).
    """
    return TOOL_REGISTRY.get_tool(name, **config)


def list_tools() -> list[str]:
    """Names in the global registry, in registration order."""
    return TOOL_REGISTRY.list_tools()


def unregister_tool(name: str) -> ToolClass:
    """Remove a name from the global registry and return its class."""
    return TOOL_REGISTRY.unregister(name)


class ToolExecutor:
    """Pydantic-model tools registered by name and executed by name (seed 001).

    Example:
        >>> executor = ToolExecutor()
        >>> @executor.register("multiply", "Multiply two integers.")
        ... class Multiply(BaseModel):
        ...     x: int
        ...     y: int
        ...     @staticmethod
        ...     def run(x: int, y: int) -> int:
        ...         return x * y
        >>> executor.execute("multiply", {"x": 3, "y": 5})
        15
    """

    def __init__(self) -> None:
        self._tools: dict[str, ModelTool] = {}
        self._lock = threading.RLock()

    def register(
        self, name: str, description: str | None = None, *, allow_overwrite: bool = False
    ) -> Callable[[_M], _M]:
        """Class decorator registering a model class with a ``run`` method under ``name``.

        Raises:
            ConfigError: not a model with ``run``, or a duplicate name without
                ``allow_overwrite`` (which logs a warning instead).
        """

        def decorator(model: _M) -> _M:
            tool = ModelTool(model, name=name, description=description)
            with self._lock:
                if name in self._tools:
                    if not allow_overwrite:
                        msg = (
                            f"Tool {name!r} already exists; choose a unique name "
                            "or pass allow_overwrite=True"
                        )
                        raise ConfigError(msg)
                    logger.warning(
                        "Tool %r already exists; overwriting it with %s", name, model.__name__
                    )
                self._tools[name] = tool
            return model

        return decorator

    def get(self, name: str) -> ModelTool:
        """The tool registered as ``name``; raises :class:`UnknownToolError` if unknown."""
        with self._lock:
            return _registered(self._tools, name)

    def execute(self, name: str, params: str | Mapping[str, Any]) -> Any:
        """Validate ``params`` with the tool's model and run it.

        Raises:
            UnknownToolError: ``name`` is not registered.
            ToolInputError: the arguments are not valid JSON or fail validation.
        """
        return self.get(name).execute(params)

    def metadata(self) -> dict[str, dict[str, Any]]:
        """Each tool's ``description`` and ``parameters`` (the model's JSON schema), by name."""
        with self._lock:
            tools = list(self._tools.values())
        return {
            tool.name: {"description": tool.description, "parameters": tool.function["parameters"]}
            for tool in tools
        }

    # Seed 001's own method names.

    def register_tool(
        self, name: str, description: str | None = None, *, allow_overwrite: bool = False
    ) -> Callable[[_M], _M]:
        """Seed 001's name for :meth:`register`."""
        return self.register(name, description, allow_overwrite=allow_overwrite)

    def execute_tool(self, name: str, params: str | Mapping[str, Any]) -> Any:
        """Seed 001's ``execute_tool``: like :meth:`execute`, but an unknown name gives the
        message ``"Tool 'x' is not registered; ..."`` as the result instead of raising, so the
        text can go straight back to the model.

        Raises:
            ToolInputError: the arguments are not valid JSON or fail validation.
        """
        try:
            tool = self.get(name)
        except UnknownToolError as exc:
            return str(exc)
        return tool.execute(params)

    def export_metadata(self) -> dict[str, dict[str, Any]]:
        """Seed 001's name for :meth:`metadata`."""
        return self.metadata()

    def tools(self) -> list[ModelTool]:
        """The registered tools, in registration order (for a ToolsNode)."""
        with self._lock:
            return list(self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools
