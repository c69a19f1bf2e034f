"""parsers.document: stable ids against the JSON spelling they are defined by."""

from __future__ import annotations

import enum
import hashlib
import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ragtools.parsers.document import Chunk, Document, stable_id


def _reference(*parts: object) -> str:
    """The definition of an id: SHA-256 of ``json.dumps(parts, ensure_ascii=False,
    sort_keys=True, default=str)``, lone surrogates written as ``\\uXXXX`` escapes."""
    text = json.dumps(parts, ensure_ascii=False, sort_keys=True, default=str)
    text = re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class _Colour(enum.IntEnum):
    RED = 1


class _Name(str):
    pass


_PARTS = st.lists(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True)
    | st.text()
    | st.text(alphabet=st.sampled_from(["\ud800", "\udce9", "\udfff", "\x00", "a", "é"]))
    | st.lists(st.integers() | st.text(max_size=3), max_size=3)
    | st.dictionaries(st.text(max_size=3), st.integers(), max_size=3),
    max_size=6,
)


@settings(max_examples=500, deadline=None)
@given(_PARTS)
def test_stable_id_is_the_hash_of_the_json_of_its_parts(parts: list[object]) -> None:
    assert stable_id(*parts) == _reference(*parts)


def test_stable_id_of_the_parts_ids_are_made_of() -> None:
    cases = [
        ("doc", "records.json", 12, "alpha 12"),
        ("doc", "caf\udce9.txt", None, 'quote " backslash \\ tab \t nul \x00 ü 細胞'),
        ("chunk", "0" * 32, 0, 10**40, ""),
        ("doc", True, False, 1.5, float("nan")),
        ("doc", _Colour.RED, _Name("sub"), ("t", 1), {"b": 1, "a": [None]}),
        (),
    ]
    for parts in cases:
        assert stable_id(*parts) == _reference(*parts), parts


def test_ids_derived_by_the_models_are_stable_ids() -> None:
    document = Document(text="alpha 1", metadata={"source": "a.json", "page": 3})
    assert document.id == _reference("doc", "a.json", 3, "alpha 1")
    chunk = Chunk(doc_id=document.id, text="alpha", start=0)
    assert chunk.id == _reference("chunk", document.id, 0, 5, "alpha")
    assert Chunk.unchecked(document.id, "alpha", 0, 5, {}).id == chunk.id
    record = Document(text="alpha 1", metadata={"source": "a.json", "row": 7, "page": 3})
    assert record.id == _reference("doc", "a.json", 7, "alpha 1")  # its own "page" is data


def test_validation_never_changes_or_keeps_the_callers_dicts() -> None:
    metadata: dict[str, object] = {"source": "a.json", "row": 1}
    given = {"id": "x1", "text": "alpha", "metadata": metadata}
    document = Document.model_validate(given)  # nothing to fill in
    assert given == {"id": "x1", "text": "alpha", "metadata": {"source": "a.json", "row": 1}}
    assert document.metadata == metadata and document.metadata is not metadata
    bare: dict[str, object] = {"text": "alpha", "metadata": {"row": 1}}
    filled = Document.model_validate(bare)  # id and source filled in
    assert bare == {"text": "alpha", "metadata": {"row": 1}}
    assert filled.metadata == {"row": 1, "source": "<text>"}
    assert filled.id == _reference("doc", "<text>", 1, "alpha")  # a record's row is its place
    raw_chunk: dict[str, object] = {"doc_id": "x1", "text": "alp"}
    chunk = Chunk.model_validate(raw_chunk)
    assert raw_chunk == {"doc_id": "x1", "text": "alp"}
    assert (chunk.start, chunk.end) == (0, 3)
