"""Lazy imports of optional or heavy dependencies with an actionable error."""

from __future__ import annotations

import importlib
from types import ModuleType

from ragtools.parsers.errors import MissingDependencyError


def require(module: str, extra: str | None = None, package: str | None = None) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming the pip extra.

    Args:
        module: dotted module name to import.
        extra: the ``ragtools[extra]`` that installs it, if any.
        package: the PyPI package name, when it differs from the module name.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        hint = f'pip install "ragtools[{extra}]"' if extra else f"pip install {package or module}"
        msg = f"{module!r} is required for this feature but is not installed; run: {hint}"
        raise MissingDependencyError(msg) from exc
