"""The metadata filter language: every operator, nesting, Mongo missing-field semantics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pathspec
import pytest

from ragtools.parsers.document import Chunk
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.filters import CompiledFilter, compile_filter, filter_mask

RECORDS: list[dict[str, Any]] = [
    {"source": "a.pdf", "page": 1, "tags": ["x", "y"], "draft": False},
    {"source": "a.pdf", "page": 3, "tags": ["y"], "score": 2.5},
    {"source": "a.pdf", "page": "iv", "draft": True},
    {"source": "b.pdf", "page": 7, "tags": [], "score": None},
    {"source": "notes.md"},
]


def matching(spec: Any) -> list[int]:
    """Indices of RECORDS the filter keeps, checked against the vectorised mask too."""
    compiled = compile_filter(spec)
    by_record = [i for i, record in enumerate(RECORDS) if compiled(record)]
    chunks = [Chunk(doc_id=f"doc{i}", text=f"t{i}", metadata=r) for i, r in enumerate(RECORDS)]
    by_mask = np.flatnonzero(filter_mask(spec, chunks)).tolist()
    by_chunk = [i for i, chunk in enumerate(chunks) if compiled.matches(chunk)]
    assert by_record == by_mask == by_chunk
    return by_record


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"source": "a.pdf"}, [0, 1, 2]),
        ({"source": {"$eq": "b.pdf"}}, [3]),
        ({"page": 3}, [1]),
        ({"page": 3.0}, [1]),  # ints and floats compare by value
        ({"source": {"$ne": "a.pdf"}}, [3, 4]),
        ({"page": {"$gt": 1}}, [1, 3]),
        ({"page": {"$gte": 3}}, [1, 3]),
        ({"page": {"$lt": 3}}, [0]),
        ({"page": {"$lte": 3}}, [0, 1]),
        ({"page": {"$gte": 2, "$lt": 7}}, [1]),
        ({"source": {"$in": ["b.pdf", "notes.md"]}}, [3, 4]),
        ({"page": {"$in": [1, 7, "iv"]}}, [0, 2, 3]),
        ({"source": {"$nin": ["a.pdf"]}}, [3, 4]),
        ({"score": {"$exists": True}}, [1, 3]),
        ({"score": {"$exists": False}}, [0, 2, 4]),
        ({"draft": False}, [0]),
        ({"page": {"$gt": "a"}}, [2]),  # strings compare with strings only
    ],
)
def test_field_operators(spec: dict[str, Any], expected: list[int]) -> None:
    assert matching(spec) == expected


def test_implicit_and_across_keys() -> None:
    assert matching({"source": "a.pdf", "page": {"$gte": 3}}) == [1]


def test_nesting_and_or_not() -> None:
    assert matching({"$or": [{"source": "b.pdf"}, {"page": 1}]}) == [0, 3]
    assert matching({"$and": [{"source": "a.pdf"}, {"$or": [{"page": 3}, {"draft": True}]}]}) == [
        1,
        2,
    ]
    assert matching({"$not": {"source": "a.pdf"}}) == [3, 4]
    assert matching({"page": {"$not": {"$gte": 3}}}) == [0, 2, 4]
    assert matching({"$not": {"$or": [{"source": "a.pdf"}, {"page": {"$exists": False}}]}}) == [3]


def test_missing_field_semantics_follow_mongo() -> None:
    # $ne, $nin and $not keep records without the field; $eq, $in and comparisons do not.
    assert matching({"page": {"$ne": 3}}) == [0, 2, 3, 4]
    assert matching({"page": {"$nin": [1, 3]}}) == [2, 3, 4]
    assert matching({"title": {"$ne": "x"}}) == [0, 1, 2, 3, 4]
    assert matching({"title": "x"}) == []
    assert matching({"title": {"$lt": 100}}) == []
    # a null operand matches null and missing values
    assert matching({"score": None}) == [0, 2, 3, 4]
    assert matching({"score": {"$ne": None}}) == [1]


def test_incomparable_types_are_false_not_errors() -> None:
    assert matching({"page": {"$gte": 3}}) == [1, 3]  # page "iv" skipped, no TypeError
    assert matching({"page": {"$lt": "z"}}) == [2]
    assert matching({"tags": {"$gt": 0}}) == []  # lists of strings vs a number


def test_booleans_are_not_numbers() -> None:
    records = [{"flag": True}, {"flag": 1}, {"flag": 1.0}, {"flag": False}, {"flag": 0}]

    def kept(spec: dict[str, Any]) -> list[bool]:
        compiled = compile_filter(spec)
        return [compiled(record) for record in records]

    assert kept({"flag": True}) == [True, False, False, False, False]
    assert kept({"flag": 1}) == [False, True, True, False, False]
    assert kept({"flag": {"$in": [0]}}) == [False, False, False, False, True]
    assert kept({"flag": {"$gte": 0}}) == [False, True, True, False, True]


def test_list_fields_match_any_element() -> None:
    assert matching({"tags": "y"}) == [0, 1]
    assert matching({"tags": {"$in": ["x", "z"]}}) == [0]
    assert matching({"tags": {"$ne": "y"}}) == [2, 3, 4]
    assert matching({"tags": ["y"]}) == [1]  # the whole list can match too
    assert matching({"tags": {"$eq": []}}) == [3]


def test_doc_id_and_chunk_id_come_from_the_chunk() -> None:
    chunks = [
        Chunk(doc_id="d1", text="one", metadata={"doc_id": "spoofed"}),
        Chunk(doc_id="d2", text="two"),
        Chunk(doc_id="d1", text="three"),
    ]
    assert filter_mask({"doc_id": "d1"}, chunks).tolist() == [True, False, True]
    assert filter_mask({"chunk_id": {"$in": [chunks[1].id]}}, chunks).tolist() == [
        False,
        True,
        False,
    ]
    assert compile_filter({"doc_id": "d1"}).matches(chunks[0])


def test_filter_mask_shape_dtype_and_match_all() -> None:
    chunks = [Chunk(doc_id="d", text=str(i), metadata={"page": i}) for i in range(6)]
    mask = filter_mask({"page": {"$in": [1, 4]}}, chunks)
    assert mask.dtype == np.bool_
    assert mask.shape == (6,)
    assert mask.tolist() == [False, True, False, False, True, False]
    assert filter_mask(None, chunks).all()
    assert filter_mask({}, chunks).all()
    assert filter_mask({"page": 1}, []).shape == (0,)
    compiled = compile_filter({"page": {"$gt": 3}})
    assert compile_filter(compiled) is compiled
    assert isinstance(compiled, CompiledFilter)
    assert filter_mask(compiled, chunks).tolist() == [False] * 4 + [True, True]


def test_filter_mask_large_sequence_agrees_with_per_chunk_matching() -> None:
    chunks = [
        Chunk(
            doc_id=f"d{i % 97}",
            text=f"t{i}",
            metadata={"source": f"s{i % 7}.pdf", "page": i % 13, "tags": [f"k{i % 5}"]},
        )
        for i in range(3000)
    ]
    spec = {
        "$or": [
            {"source": {"$in": ["s1.pdf", "s2.pdf"]}, "page": {"$gte": 5}},
            {"tags": "k3", "page": {"$ne": 4}},
        ]
    }
    compiled = compile_filter(spec)
    expected = [compiled.matches(chunk) for chunk in chunks]
    assert filter_mask(spec, chunks).tolist() == expected
    assert 0 < sum(expected) < len(chunks)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ({"page": {"$regex": "x"}}, r"unknown operator '\$regex' on field 'page'"),
        ({"$nor": [{"page": 1}]}, r"unknown operator '\$nor'"),
        ({"source": {"$in": "a.pdf"}}, r"filter\.source\.\$in: \$in takes a list"),
        ({"source": {"$nin": 3}}, r"\$nin takes a list"),
        ({"source": {"$in": [["a"]]}}, r"list of JSON scalars"),
        ({"page": {"$gt": {"x": 1}}}, r"\$gt takes a number or a string, got dict"),
        ({"page": {"$lte": [1, 2]}}, r"\$lte takes a number or a string, got list"),
        ({"page": {"$gte": None}}, r"\$gte takes a number or a string"),
        ({"page": {"$lt": True}}, r"\$lt takes a number or a string, got bool"),
        ({"page": {"$exists": 1}}, r"\$exists takes true or false"),
        ({"$and": {"page": 1}}, r"\$and takes a non-empty list of filters"),
        ({"$or": []}, r"\$or takes a non-empty list"),
        ({"$and": [{"page": 1}, "page"]}, r"filter\.\$and\[1\]: expected a filter object"),
        ({"$not": [{"page": 1}]}, r"\$not takes a non-empty filter object"),
        ({"page": {"$not": 3}}, r"\$not on a field takes an operator object"),
        ({"page": {}}, r"empty object"),
        ({"page": {"gte": 3}}, r"object with no operator"),
        ({"page": {"$gte": 3, "lt": 5}}, r"mixes operators and plain keys"),
        ({"": 1}, r"non-empty strings"),
        ({1: 1}, r"non-empty strings"),
    ],
)
def test_invalid_filters_raise_config_error(spec: Any, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        compile_filter(spec)


def test_non_mapping_filter_raises() -> None:
    with pytest.raises(ConfigError, match="expected a filter object"):
        compile_filter(["source", "a.pdf"])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown operator"):
        filter_mask({"page": {"$between": [1, 2]}}, [])


# ---- $glob in linear time ----------------------------------------------------------------------

GLOB_PATHOLOGICAL = [  # (pattern, a source it must not match, a source it must match)
    ("*a" * 25 + "b", "a" * 80, "docs/" + "a" * 25 + "b"),
    ("*" * 5000 + "x", "y" * 300, "yx"),
    ("**/" * 40 + "*.md", "a/" * 60 + "x.txt", "a/" * 60 + "x.md"),
]


@pytest.mark.parametrize(("pattern", "miss", "hit"), GLOB_PATHOLOGICAL)
def test_glob_patterns_that_backtrack_are_matched_quickly(
    pattern: str, miss: str, hit: str
) -> None:
    """A filter runs per chunk: a backtracking pattern cost more than a minute per chunk."""
    pair = [
        Chunk(doc_id="d", text="t", start=0, end=1, metadata={"source": s}) for s in [miss, hit]
    ]
    chunks = pair * 500
    mask = filter_mask({"source": {"$glob": pattern}}, chunks)
    assert mask.tolist() == [False, True] * 500


@pytest.mark.parametrize(
    ("pattern", "source"),
    [("*.md", "a/b.md"), ("docs/*", "docs/x/y"), ("d?cs/**", "docs/x/y"), ("[ab]*", "c"),
     ("**/x/*.txt", "p/x/y.txt"), ("/a/*", "a/b"), ("a*b*c", "axbyc"), ("a*b*c", "ab/c")],
)  # fmt: skip
def test_glob_agrees_with_pathspecs_own_matcher(pattern: str, source: str) -> None:
    expected = pathspec.GitIgnoreSpec.from_lines([pattern], backend="simple").match_file(source)
    assert compile_filter({"source": {"$glob": pattern}})({"source": source}) == expected


def test_an_overlong_glob_names_its_place_in_the_filter() -> None:
    with pytest.raises(ConfigError, match=r"\$glob pattern at filter\.source\.\$glob .*4096"):
        compile_filter({"source": {"$glob": "ab" * 3000}})
    with pytest.raises(ConfigError, match=r"invalid \$glob pattern at filter\.source\.\$glob"):
        compile_filter({"source": {"$glob": "ab\\"}})
