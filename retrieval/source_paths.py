"""A ``source`` filter takes the path as the user typed it, relative or absolute.

Chunk sources are relative to the index's source root (``rag build docs/`` stores
``guide.md``; :mod:`indexes.sources`). People type paths as their shell sees them:
``docs/guide.md`` from the project directory, or an absolute path. So, before a filter is
evaluated against an index, every string operand of a ``source`` test (a bare value,
``$eq``, ``$ne``, ``$in``, ``$nin``, ``$prefix``) that is an absolute path, or names a file
or folder that exists relative to the working directory, and lies under the source root, is
rewritten to the stored form (``docs/guide.md`` -> ``guide.md``; ``docs/`` as a prefix ->
every source under it). Anything else is compared as typed, so the stored form
(``guide.md``) always works, on any machine. An index built before sources were relative
(no source root) compares as typed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["resolve_source_paths"]

_FIELD = "source"
_SCALAR_OPS = ("$eq", "$ne", "$prefix")
_LIST_OPS = ("$in", "$nin")


def _stored(value: Any, root: Path) -> Any:
    if not isinstance(value, str) or not value:
        return value
    typed = Path(value).expanduser()
    if not typed.is_absolute():
        typed = Path.cwd() / typed
        if not typed.exists():
            return value
    try:
        relative = typed.resolve().relative_to(root)
    except (ValueError, OSError):
        return value
    stored = relative.as_posix()
    if stored == ".":
        return ""
    return stored + "/" if value.endswith(("/", os.sep)) else stored


def _field(value: Any, root: Path) -> Any:
    if not isinstance(value, Mapping):
        return _stored(value, root)
    out: dict[str, Any] = {}
    for op, operand in value.items():
        if op in _SCALAR_OPS:
            out[op] = _stored(operand, root)
        elif op in _LIST_OPS and isinstance(operand, (list, tuple)):
            out[op] = [_stored(item, root) for item in operand]
        elif op == "$not" and isinstance(operand, Mapping):
            out[op] = _field(operand, root)
        else:
            out[op] = operand
    return out


def resolve_source_paths(spec: Any, root: str | None) -> Any:
    """``spec`` with its ``source`` operands in the stored form (see the module docstring).

    Args:
        spec: a filter; returned unchanged when it has no ``source`` test or ``root`` is
            ``None``. Invalid shapes are passed through for the compiler to reject.
        root: the index's source root (manifest ``source_root``), absolute.
    """
    if root is None or not isinstance(spec, Mapping):
        return spec
    base = Path(root)
    out: dict[str, Any] = {}
    for key, value in spec.items():
        if key == _FIELD:
            out[key] = _field(value, base)
        elif key in ("$and", "$or") and isinstance(value, (list, tuple)):
            out[key] = [resolve_source_paths(part, root) for part in value]
        elif key == "$not":
            out[key] = resolve_source_paths(value, root)
        else:
            out[key] = value
    return out
