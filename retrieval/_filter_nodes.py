"""Compiled filter nodes and their evaluation, split from :mod:`ragtools.retrieval.filters`.

:mod:`~ragtools.retrieval.filters` parses and validates the filter language and owns the public
API; this module holds what a compiled filter is made of: the scalar predicates that give each
operator its JSON value semantics, the node types (a field test, AND, OR, NOT) and their two
evaluations, :meth:`test` over one record and :meth:`mask` over the columns of a chunk
sequence. It exists so that the language and its evaluation stay separate, each small enough
to read on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from ragtools.parsers.document import Chunk
from ragtools.parsers.selection import compile_patterns

Predicate: TypeAlias = Callable[[Any], bool]
BoolArray: TypeAlias = npt.NDArray[np.bool_]


class _Missing:
    """Marks a field that a record does not have (distinct from a JSON null)."""

    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()
_NUMBER_TYPES = frozenset({int, float})
_STRING_TYPES = frozenset({str})


# --- value semantics ----------------------------------------------------------------------
#
# Each operator compiles to a *scalar* predicate that is exact for a non-list value (and for
# a list compared as a whole); Mongo's array semantics and negation ($ne, $nin, $not) are
# applied around it by the nodes, so the hot loop is one small function per value.


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _equal(left: object, right: object) -> bool:
    """JSON equality: booleans only equal booleans; ints and floats compare by value."""
    if isinstance(left, bool) != isinstance(right, bool):
        return False
    return bool(left == right)


def _eq_scalar(operand: Any) -> Predicate:
    if operand is None:
        return lambda value: value is None or value is _MISSING
    if isinstance(operand, str):
        return lambda value: value == operand  # a str equals only a str
    if isinstance(operand, bool):
        return lambda value: value is operand
    if _is_number(operand):
        return lambda value: value == operand and not isinstance(value, bool)
    return lambda value: value is not _MISSING and _equal(value, operand)


def _in_scalar(operand: Sequence[Any]) -> Predicate:
    """Set lookups per JSON type, so a long ``$in`` list costs O(1) per value."""
    strings = frozenset(item for item in operand if isinstance(item, str))
    if len(strings) == len(operand):
        return lambda value: isinstance(value, str) and value in strings
    numbers = frozenset(item for item in operand if _is_number(item))
    booleans = frozenset(item for item in operand if isinstance(item, bool))
    with_null = any(item is None for item in operand)

    def scalar(value: Any) -> bool:
        if isinstance(value, str):
            return value in strings
        if isinstance(value, bool):
            return value in booleans
        if _is_number(value):
            return value in numbers
        return with_null and (value is None or value is _MISSING)

    return scalar


def _order_scalar(op: str, operand: float | str) -> Predicate:
    """Order comparison; False (never an error) when the value is not of the operand's kind.

    The kind test is an exact type lookup (JSON metadata holds plain ``int``, ``float`` and
    ``str``); it keeps the per-value cost to one set lookup and one comparison.
    """
    kinds = _STRING_TYPES if isinstance(operand, str) else _NUMBER_TYPES
    if op == "$gt":
        return lambda value: type(value) in kinds and value > operand
    if op == "$gte":
        return lambda value: type(value) in kinds and value >= operand
    if op == "$lt":
        return lambda value: type(value) in kinds and value < operand
    return lambda value: type(value) in kinds and value <= operand


def _text_scalar(op: str, operand: str, where: str) -> Predicate:
    """``$prefix``, ``$glob`` and ``$contains`` (a substring); False for values that are not
    strings (list values are tested element by element by the node, so ``$contains`` finds a
    tag in a list too).

    ``$glob`` matches as the build's include and exclude patterns do (gitignore wildcards,
    with ``pathspec``, in time linear in the value: :func:`parsers.selection.compile_patterns`):
    ``*`` and ``?`` stay within one ``/``-separated part, ``**`` crosses parts, and a pattern
    without ``/`` matches the last part at any depth (``*.md``). A leading ``#`` or ``!`` is
    taken literally. A filter is evaluated per chunk, so a pattern that backtracked (``*a``
    25 times, then ``b``) would cost minutes per search.

    Raises:
        ConfigError: a pattern longer than ``MAX_PATTERN_CHARS`` or not readable as one,
            naming ``where``.
    """
    if op == "$prefix":
        return lambda value: type(value) is str and value.startswith(operand)
    if op == "$glob":
        literal = "\\" + operand if operand.startswith(("#", "!")) else operand
        patterns = compile_patterns([literal], where)
        return lambda value: type(value) is str and patterns.match(value)
    return lambda value: value == operand or (type(value) is str and operand in value)


# --- compiled nodes -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Leaf:
    """One field test: ``scalar`` per value, any-element for lists, optional negation."""

    field: str
    scalar: Predicate
    negate: bool = False
    elementwise: bool = True

    def _positive(self, value: Any) -> bool:
        if self.scalar(value):
            return True
        return (
            self.elementwise
            and isinstance(value, list)
            and any(self.scalar(item) for item in value)
        )

    def test(self, record: Mapping[str, Any]) -> bool:
        return self._positive(record.get(self.field, _MISSING)) != self.negate

    def mask(self, columns: _Columns) -> BoolArray:
        column = columns.get(self.field)
        result = np.fromiter(map(self.scalar, column), dtype=np.bool_, count=len(column))
        if self.elementwise:
            for row in columns.list_rows(self.field):
                result[row] = self._positive(column[row])
        if self.negate:
            np.logical_not(result, out=result)
        return result


@dataclass(frozen=True)
class _And:
    parts: tuple[_Node, ...]

    def test(self, record: Mapping[str, Any]) -> bool:
        return all(part.test(record) for part in self.parts)

    def mask(self, columns: _Columns) -> BoolArray:
        result = np.ones(columns.size, dtype=np.bool_)
        for part in self.parts:
            result &= part.mask(columns)
        return result


@dataclass(frozen=True)
class _Or:
    parts: tuple[_Node, ...]

    def test(self, record: Mapping[str, Any]) -> bool:
        return any(part.test(record) for part in self.parts)

    def mask(self, columns: _Columns) -> BoolArray:
        result = np.zeros(columns.size, dtype=np.bool_)
        for part in self.parts:
            result |= part.mask(columns)
        return result


@dataclass(frozen=True)
class _Not:
    part: _Node

    def test(self, record: Mapping[str, Any]) -> bool:
        return not self.part.test(record)

    def mask(self, columns: _Columns) -> BoolArray:
        return ~self.part.mask(columns)


_Node: TypeAlias = "_Leaf | _And | _Or | _Not"


class _Columns:
    """Field values of a chunk sequence, read once per field and cached."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = chunks
        self.size = len(chunks)
        self._values: dict[str, list[Any]] = {}
        self._list_rows: dict[str, list[int]] = {}

    def get(self, field: str) -> list[Any]:
        column = self._values.get(field)
        if column is None:
            if field == "doc_id":
                column = [chunk.doc_id for chunk in self.chunks]
            elif field == "chunk_id":
                column = [chunk.id for chunk in self.chunks]
            else:
                column = [chunk.metadata.get(field, _MISSING) for chunk in self.chunks]
            self._values[field] = column
        return column

    def list_rows(self, field: str) -> list[int]:
        """Rows whose value of ``field`` is a list (they need the any-element rule)."""
        rows = self._list_rows.get(field)
        if rows is None:
            column = self.get(field)
            rows = []
            if list in set(map(type, column)):  # a C-speed pass; list values are rare
                rows = [row for row, value in enumerate(column) if isinstance(value, list)]
            self._list_rows[field] = rows
        return rows
