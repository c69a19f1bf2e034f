"""parsers.nesting: the depth of parsed values and of JSON text, against a recursive oracle."""

from __future__ import annotations

import json
from collections import OrderedDict, UserDict
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtools.parsers.nesting import MAX_NESTING, text_too_deep, too_deep


def _depth(value: object) -> int:
    """Levels of mappings, lists and tuples in ``value``, recursively (the oracle)."""
    if isinstance(value, Mapping):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, (list, tuple)):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=2), inner, max_size=4)
        | st.dictionaries(st.text(max_size=2), inner, max_size=3).map(UserDict)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.integers(min_value=0, max_value=6))
def test_too_deep_agrees_with_the_recursive_depth(value: object, limit: int) -> None:
    assert too_deep(value, limit) == (_depth(value) > limit)


@settings(max_examples=200, deadline=None)
@given(_VALUES, st.integers(min_value=0, max_value=6))
def test_text_too_deep_agrees_on_json(value: object, limit: int) -> None:
    plain = json.loads(json.dumps(value, default=dict))  # UserDict as an object
    assert text_too_deep(json.dumps(plain), limit) == (_depth(plain) > limit)


def _nested(levels: int, leaf: object = 1) -> object:
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    "record",
    [
        {"n": 1, "text": "alpha 1", "ok": True, "none": None, "x": 1.5},  # flat: the fast path
        {},
        {"deep": _nested(MAX_NESTING - 1)},  # exactly at the limit
        OrderedDict(a=_nested(MAX_NESTING - 1)),
        {"text": "x", "t": (1, (2, {"k": _nested(MAX_NESTING - 4)}))},
    ],
)
def test_records_within_the_limit_are_not_too_deep(record: Mapping[str, object]) -> None:
    assert _depth(record) <= MAX_NESTING
    assert not too_deep(record)


@pytest.mark.parametrize(
    "record",
    [
        {"deep": _nested(MAX_NESTING)},
        {"flat": 1, "then": UserDict(a=_nested(MAX_NESTING - 1))},  # a Mapping that is no dict
        {"t": (1, (2, {"k": _nested(MAX_NESTING - 3)}))},
    ],
)
def test_records_past_the_limit_are_too_deep(record: Mapping[str, object]) -> None:
    assert _depth(record) == MAX_NESTING + 1
    assert too_deep(record)


def test_scalar_subclasses_and_strings_are_not_containers() -> None:
    class Text(str):
        pass

    assert not too_deep({"a": Text("[[[["), "b": b"[[", "c": 3}, limit=1)
    assert not too_deep(Text("x"), limit=0)


def test_a_cyclic_value_stops_at_the_limit() -> None:
    cycle: list[object] = []
    cycle.append(cycle)
    assert too_deep(cycle)
    loop: dict[str, object] = {"flat": 1}
    loop["self"] = loop
    assert too_deep(loop)
