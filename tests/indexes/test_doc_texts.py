"""Document texts beside a version's chunks: exact round trip, lone surrogates included."""

from __future__ import annotations

from pathlib import Path

from ragtools.indexes.store.doc_texts import DocumentTexts, write_texts


def test_texts_round_trip_exactly_even_with_a_lone_surrogate(tmp_path: Path) -> None:
    """The parsers replace lone surrogates, but a text given directly may hold one: writing
    it must not fail (it used to raise UnicodeEncodeError), and it reads back the same."""
    texts = {"a": "plain", "b": "caf\udce9 \ud800 end", "c": "日本語", "d": ""}
    names = write_texts(tmp_path, ["b", "a", "missing", "c", "d", "a"], texts)
    opened = DocumentTexts.open(tmp_path, names)
    assert list(opened) == ["b", "a", "c", "d"]
    assert {doc_id: opened[doc_id] for doc_id in opened} == {k: texts[k] for k in "bacd"}
