"""One metadata filter language for both index halves (BM25 and vector).

A filter is a JSON object in the MongoDB style that Chroma, Qdrant's payload filters and
LangChain's structured query translators all speak::

    {"source": "a.pdf", "page": {"$gte": 3}}
    {"$or": [{"source": "a.pdf"}, {"tags": {"$in": ["x", "y"]}}]}

* Keys are metadata field names, or the chunk's own ``"doc_id"`` and ``"chunk_id"`` (these
  two always come from the chunk and win over metadata keys of the same name).
* Several keys are joined by AND; a bare value means ``$eq``.
* Field operators: ``$eq $ne $gt $gte $lt $lte $in $nin $exists $not``, and for text
  ``$prefix``, ``$glob`` and ``$contains``; logical operators at the top level: ``$and``
  and ``$or`` (a non-empty list of filters) and ``$not`` (a filter).

Text operators, each taking one string::

    {"source": {"$prefix": "docs/"}}          # a folder (sources are relative paths)
    {"source": {"$glob": "papers/**/*.pdf"}}  # gitignore wildcards: * stays within a folder
    {"title": {"$contains": "BM25"}}          # a substring (case-sensitive)
    {"file_type": {"$in": ["pdf", "md"]}}     # PDFs and Markdown only

``$contains`` on a list-valued field (``tags``) matches an element equal to the operand or
a string element containing it.

Semantics follow MongoDB, chosen because it is the language users already know:

* A missing field fails ``$eq``, ``$in`` and the order comparisons, and **passes** their
  negations ``$ne``, ``$nin`` and ``$not`` (``{"page": {"$ne": 3}}`` keeps chunks without a
  page). ``{"f": None}`` matches a null or missing ``f``.
* A list-valued field matches when the whole list or any element matches (so
  ``{"tags": "x"}`` keeps chunks tagged ``x``).
* Types are compared strictly: booleans equal only booleans (``True`` is not ``1``), and an
  order comparison between incomparable values (page ``"iv"`` against 3) is False, never an
  error.

Filters are validated when compiled: an unknown operator, an operand of the wrong type
(``$in`` with a non-list, ``$gt`` with a dict), a bad shape, or objects and lists nested
more than :data:`MAX_FILTER_DEPTH` deep raises :class:`~parsers.errors.ConfigError` naming
the place in the filter.

:func:`filter_mask` evaluates a filter over a whole chunk sequence column by column: each
field is read once per chunk and each leaf is one tight loop, combined with numpy boolean
operations, instead of walking the filter tree per chunk, which costs Python calls per node
and per chunk.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

import numpy as np

from ragtools.parsers.document import Chunk
from ragtools.parsers.errors import ConfigError
from ragtools.parsers.nesting import MAX_NESTING, nesting_problem, too_deep
from ragtools.retrieval._filter_nodes import (
    _MISSING,
    Predicate,
    _And,
    _Columns,
    _eq_scalar,
    _in_scalar,
    _is_number,
    _Leaf,
    _Node,
    _Not,
    _Or,
    _order_scalar,
    _text_scalar,
)
from ragtools.retrieval._filter_nodes import BoolArray as BoolArray  # re-exported for retrievers

__all__ = [
    "MAX_FILTER_DEPTH",
    "SYMBOL_OPERATORS",
    "CompiledFilter",
    "FilterSpec",
    "check_depth",
    "compile_filter",
    "filter_mask",
]

logger = logging.getLogger(__name__)

FilterSpec: TypeAlias = Mapping[str, Any]
"""A filter such as ``{"source": "a.pdf", "page": {"$gte": 3}}``."""

MAX_FILTER_DEPTH = MAX_NESTING
"""Objects and lists nested deeper than this are refused: real filters are a few levels
deep, and compiling a filter is recursive (a 330-deep ``$not`` chain would otherwise
overflow Python's stack). The one nesting bound of :mod:`parsers.nesting`, which tool
arguments and queries files share."""

SYMBOL_OPERATORS = {
    "==": "$eq",
    "!=": "$ne",
    ">": "$gt",
    ">=": "$gte",
    "<": "$lt",
    "<=": "$lte",
    "in": "$in",
}
"""Our operator for each comparison symbol the frameworks' filter languages share (Haystack's
and LlamaIndex's); each adaptor adds its own spelling of "not in"."""

_COMPARISONS = ("$gt", "$gte", "$lt", "$lte")
_TEXT_OPS = ("$prefix", "$glob", "$contains")
_FIELD_OPS = ("$eq", "$ne", *_COMPARISONS, "$in", "$nin", "$exists", "$not", *_TEXT_OPS)
_LOGICAL_OPS = ("$and", "$or", "$not")


# --- compilation ----------------------------------------------------------------------------


def _fail(where: str, problem: str) -> ConfigError:
    return ConfigError(f"invalid filter at {where}: {problem}")


def check_depth(spec: Any) -> None:
    """Refuse nesting past :data:`MAX_FILTER_DEPTH` before anything recurses into ``spec``
    (:mod:`parsers.nesting` walks it iteratively).

    Raises:
        ConfigError: naming the limit.
    """
    if too_deep(spec, MAX_FILTER_DEPTH):
        where = "filter"
        raise _fail(where, nesting_problem(MAX_FILTER_DEPTH))


def _type_name(value: object) -> str:
    return type(value).__name__


def _compile_operator(field: str, op: str, operand: Any, where: str) -> _Node:
    if op in ("$eq", "$ne"):
        return _Leaf(field, _eq_scalar(operand), negate=op == "$ne")
    if op in _COMPARISONS:
        if not (_is_number(operand) or isinstance(operand, str)):
            problem = (
                f"{op} takes a number or a string, got {_type_name(operand)} {operand!r}; "
                "use $in for a list of values"
            )
            raise _fail(where, problem)
        return _Leaf(field, _order_scalar(op, operand))
    if op in ("$in", "$nin"):
        if not isinstance(operand, (list, tuple)):
            problem = f"{op} takes a list of values, got {_type_name(operand)} {operand!r}"
            raise _fail(where, problem)
        if any(isinstance(item, (Mapping, list, tuple)) for item in operand):
            raise _fail(where, f"{op} takes a list of JSON scalars, got {list(operand)!r}")
        return _Leaf(field, _in_scalar(operand), negate=op == "$nin")
    if op in _TEXT_OPS:
        if not isinstance(operand, str):
            problem = f"{op} takes a string, got {_type_name(operand)} {operand!r}"
            raise _fail(where, problem)
        return _Leaf(field, _text_scalar(op, operand, f"{op} pattern at {where}"))
    if op == "$exists":
        if not isinstance(operand, bool):
            problem = f"$exists takes true or false, got {_type_name(operand)} {operand!r}"
            raise _fail(where, problem)
        exists: Predicate = lambda value: value is not _MISSING  # noqa: E731
        return _Leaf(field, exists, negate=not operand, elementwise=False)
    if op == "$not":
        if not isinstance(operand, Mapping) or not operand:
            problem = f"$not on a field takes an operator object like {{'$gt': 3}}, got {operand!r}"
            raise _fail(where, problem)
        return _Not(_compile_field_ops(field, operand, where))
    problem = f"unknown operator {op!r} on field {field!r}; accepted: {', '.join(_FIELD_OPS)}"
    raise _fail(where, problem)


def _compile_field_ops(field: str, ops: Mapping[Any, Any], where: str) -> _Node:
    """Compile ``{"$gte": 3, "$lt": 9}`` (operators joined by AND) into one node."""
    keys = list(ops)
    if not keys:
        raise _fail(where, f"the value of {field!r} is an empty object; give an operator")
    dollar = [key for key in keys if isinstance(key, str) and key.startswith("$")]
    if len(dollar) != len(keys):
        problem = (
            f"the value of {field!r} mixes operators and plain keys ({keys!r}); write "
            f"{{'$eq': {{...}}}} to compare with an object, or use operators such as $gte"
            if dollar
            else f"the value of {field!r} is an object with no operator ({keys!r}); "
            "nested objects are not matched: use operators such as {'$gte': 3}"
        )
        raise _fail(where, problem)
    nodes = [_compile_operator(field, op, ops[op], f"{where}.{op}") for op in keys]
    return nodes[0] if len(nodes) == 1 else _And(tuple(nodes))


def _compile_list(op: str, operand: Any, where: str) -> tuple[_Node, ...]:
    if not isinstance(operand, (list, tuple)) or not operand:
        problem = f"{op} takes a non-empty list of filters, got {_type_name(operand)} {operand!r}"
        raise _fail(where, problem)
    return tuple(_compile_node(part, f"{where}[{i}]") for i, part in enumerate(operand))


def _compile_node(spec: Any, where: str) -> _Node:
    if not isinstance(spec, Mapping):
        problem = f"expected a filter object like {{'source': 'a.pdf'}}, got {spec!r}"
        raise _fail(where, problem)
    parts: list[_Node] = []
    for key, value in spec.items():
        if not isinstance(key, str) or not key:
            raise _fail(where, f"field names must be non-empty strings, got {key!r}")
        here = f"{where}.{key}"
        if key in ("$and", "$or"):
            children = _compile_list(key, value, here)
            parts.append(_And(children) if key == "$and" else _Or(children))
        elif key == "$not":
            if not isinstance(value, Mapping) or not value:
                raise _fail(here, f"$not takes a non-empty filter object, got {value!r}")
            parts.append(_Not(_compile_node(value, here)))
        elif key.startswith("$"):
            accepted = ", ".join(_LOGICAL_OPS)
            problem = (
                f"unknown operator {key!r}; at this level use {accepted} or a field name "
                f"(field operators such as $gte go inside a field: {{'page': {{'$gte': 3}}}})"
            )
            raise _fail(where, problem)
        elif isinstance(value, Mapping):
            parts.append(_compile_field_ops(key, value, here))
        else:
            parts.append(_compile_operator(key, "$eq", value, here))
    return parts[0] if len(parts) == 1 else _And(tuple(parts))


# --- public API -----------------------------------------------------------------------------


def _record(chunk: Chunk) -> dict[str, Any]:
    return {**chunk.metadata, "doc_id": chunk.doc_id, "chunk_id": chunk.id}


class CompiledFilter:
    """A validated filter: call it on a metadata mapping, or use :meth:`matches`/:meth:`mask`.

    Build it with :func:`compile_filter`.
    """

    __slots__ = ("_root", "spec")

    def __init__(self, spec: FilterSpec, root: _Node) -> None:
        self.spec = spec
        self._root = root

    def __call__(self, record: Mapping[str, Any]) -> bool:
        """True when ``record`` (a chunk's metadata, plus ``doc_id``/``chunk_id``) matches."""
        return self._root.test(record)

    def matches(self, chunk: Chunk) -> bool:
        """True when ``chunk`` matches (its metadata plus its ``doc_id`` and ``chunk_id``)."""
        return self._root.test(_record(chunk))

    def mask(self, chunks: Sequence[Chunk]) -> BoolArray:
        """Boolean array, ``mask[i]`` True when ``chunks[i]`` matches."""
        if not chunks:
            return np.zeros(0, dtype=np.bool_)
        return self._root.mask(_Columns(chunks))

    def __repr__(self) -> str:
        return f"CompiledFilter({dict(self.spec)!r})"


_MATCH_ALL = _And(())


def compile_filter(spec: FilterSpec | CompiledFilter | None) -> CompiledFilter:
    """Validate a filter once and return a fast matcher.

    Args:
        spec: a filter such as ``{"source": "a.pdf", "page": {"$gte": 3}}``; ``None`` or
            ``{}`` match everything; a :class:`CompiledFilter` is returned unchanged.

    Returns:
        A :class:`CompiledFilter`, callable on a metadata mapping (``Callable[[Mapping[str,
        Any]], bool]``) and offering ``matches(chunk)`` and ``mask(chunks)``.

    Raises:
        ConfigError: unknown operator, wrong operand type or bad shape; the message names
            the place in the filter, e.g. ``filter.page.$in``.

    Example:
        >>> only = compile_filter({"source": "a.pdf", "page": {"$gte": 3}})
        >>> only({"source": "a.pdf", "page": 4}), only({"source": "a.pdf", "page": "iv"})
        (True, False)
    """
    if isinstance(spec, CompiledFilter):
        return spec
    if spec is None:
        return CompiledFilter({}, _MATCH_ALL)
    check_depth(spec)
    root = _compile_node(spec, "filter")
    return CompiledFilter(spec, root)


def filter_mask(spec: FilterSpec | CompiledFilter | None, chunks: Sequence[Chunk]) -> BoolArray:
    """Evaluate a filter over chunks: row ``i`` of the mask is ``chunks[i]``.

    The index halves use this as their pre-filter (a row mask for BM25, an ID selector for
    faiss), so exactly k results come back whenever k chunks match.

    Args:
        spec: a filter, a :class:`CompiledFilter`, or ``None`` (everything matches).
        chunks: the chunks in row order.

    Returns:
        A ``bool`` array of shape ``(len(chunks),)``.

    Raises:
        ConfigError: the filter is invalid.
    """
    compiled = compile_filter(spec)
    mask = compiled.mask(chunks)
    logger.debug("filter %r keeps %d of %d chunks", compiled.spec, int(mask.sum()), len(chunks))
    return mask
