"""parsers.file_metadata.with_file_metadata: the file's metadata, and ids derived again only
when they were derived from the old source."""

from __future__ import annotations

from pydantic import JsonValue

from ragtools.parsers.document import Document
from ragtools.parsers.file_metadata import with_file_metadata

EXTRA: dict[str, JsonValue] = {
    "path": "/abs/sub/a.txt",
    "file_type": "txt",
    "mtime": "2026-11-27T00:00:00Z",
    "size": 7,
}


def test_a_derived_id_follows_a_new_source() -> None:
    document = Document(text="alpha 1", metadata={"source": "/abs/sub/a.txt", "page": 2})
    finished = with_file_metadata(document, "sub/a.txt", EXTRA)
    expected = Document(text="alpha 1", metadata={"source": "sub/a.txt", "page": 2})
    assert finished.id == expected.id != document.id
    assert finished.metadata == {**EXTRA, "source": "sub/a.txt", "page": 2}
    assert list(finished.metadata) == ["path", "file_type", "mtime", "size", "source", "page"]


def test_a_records_derived_id_follows_a_new_source() -> None:
    """A record's id is derived from its row: the loader derives it again from the
    relative source, so a record file gives the same ids wherever its folder sits."""
    parsed = Document(text="alpha 1", metadata={"source": "/abs/sub/r.json", "row": 4})
    finished = with_file_metadata(parsed, "sub/r.json", EXTRA)
    expected = Document(text="alpha 1", metadata={"source": "sub/r.json", "row": 4})
    assert finished.id == expected.id != parsed.id


def test_a_given_id_is_kept_whatever_the_source() -> None:
    document = Document(id="beir-7", text="alpha 1", metadata={"source": "/abs/c.jsonl"})
    assert with_file_metadata(document, "c.jsonl", EXTRA).id == "beir-7"
    assert with_file_metadata(document, "/abs/c.jsonl", EXTRA).id == "beir-7"


def test_an_unchanged_source_keeps_the_id_and_adds_the_metadata() -> None:
    derived = Document(text="alpha 1", metadata={"source": "a.txt"})
    finished = with_file_metadata(derived, "a.txt", EXTRA)
    assert finished.id == derived.id
    assert finished.metadata == {**EXTRA, "source": "a.txt"}
    assert with_file_metadata(finished, "a.txt", EXTRA) is finished  # nothing to change


def test_an_id_derived_from_the_default_source_follows_the_file() -> None:
    """A parser that sets no ``source`` gets the default one; its derived id follows the
    file's name, as if the parser had set it."""
    document = Document(text="alpha 1")
    finished = with_file_metadata(document, "a.txt")
    assert finished.id == Document(text="alpha 1", metadata={"source": "a.txt"}).id
