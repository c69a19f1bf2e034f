"""One bound on how deeply objects and lists may nest, checked without recursion.

JSON from outside (a model's tool arguments, a ``--filter``, a line of a queries file, a
record) can nest a hundred thousand levels in a few hundred kilobytes. Every recursive
consumer then fails with a bare ``RecursionError`` (``json``, ``json5``, ``jsonschema``,
our filter compiler), or, worse, past the interpreter's own guard. So input is measured
*before* it is parsed or validated, by code that does not recurse:

* :func:`text_too_deep` reads JSON or JSON5 text lexically: a regular expression skips
  string literals (either quote, with escapes) and comments, and only the brackets outside
  them count; text with fewer opening brackets than the limit is not scanned at all;
* :func:`too_deep` walks parsed values (mappings, lists, tuples) with an explicit stack, so a
  cyclic value stops at the limit instead of running forever.

:data:`MAX_NESTING` is 32 levels, the outermost object or list being level 1: real tool
arguments and filters are a few levels deep, and ``json5`` (pure Python, several frames a
level) exhausts the default recursion limit near 44 nested objects from the top of the
stack, so a higher bound would let it fail in its own way again. Each caller raises its own
named error (``ToolInputError`` for a model, ``ConfigError`` for a user's filter or queries
file, ``ParseError`` for a file) with :func:`nesting_problem` as the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["MAX_NESTING", "nesting_problem", "text_too_deep", "too_deep"]

MAX_NESTING = 32
"""Levels of objects and lists allowed, the outermost being level 1 (see the module
docstring for why 32)."""

# String literals (double or single quoted, JSON5), comments (JSON5), or one bracket.
_TOKENS = re.compile(
    r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|//[^\n]*|/\*.*?\*/|[\[\]{}]""", re.DOTALL
)
_OPENERS = frozenset("[{")
# dict, list and tuple first: ``isinstance`` tries them in order, and an ABC check
# (``Mapping``) costs a Python-level call.
_CONTAINERS = (dict, list, tuple, Mapping)
# Values that hold nothing: a container of only these (a flat record) needs no walk.
_SCALARS = frozenset({str, int, float, bool, type(None)})


def nesting_problem(limit: int = MAX_NESTING) -> str:
    """The reason every caller gives: what the bound is."""
    return f"objects and lists nested more than {limit} levels deep (the limit)"


def text_too_deep(text: str, limit: int = MAX_NESTING) -> bool:
    """True when the JSON or JSON5 ``text`` opens more than ``limit`` levels at some point.

    Brackets inside strings and comments do not count; an unterminated string counts its
    brackets (the text is invalid anyway, and over-counting only refuses sooner).
    """
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if len(token) != 1:
            continue
        if token in _OPENERS:
            depth += 1
            if depth > limit:
                return True
        elif depth:
            depth -= 1
    return False


def too_deep(value: object, limit: int = MAX_NESTING) -> bool:
    """True when mappings, lists and tuples in ``value`` nest more than ``limit`` levels.

    ``value`` itself is level 1 when it is a container. Iterative: each container is
    visited once (a cyclic value is cut at the limit).
    """
    if not isinstance(value, _CONTAINERS):
        return False
    stack: list[tuple[Mapping[object, object] | list[object] | tuple[object, ...], int]]
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, (dict, Mapping)) else item
        if _SCALARS.issuperset(map(type, children)):  # no container inside: one C-level pass
            continue
        stack.extend(
            (child, depth + 1)
            for child in children
            if type(child) not in _SCALARS and isinstance(child, _CONTAINERS)
        )
    return False
