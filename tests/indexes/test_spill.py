"""The spills of a build: :class:`~indexes.store.spill.ChunkSpill`, the chunks of parsed files
kept on disk in file order."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from ragtools.indexes.store.chunks import read_chunks
from ragtools.indexes.store.spill import ChunkSpill
from ragtools.parsers import Chunk, Document, split
from ragtools.parsers.errors import ParseError


def _split(documents: Sequence[Document]) -> list[Chunk]:
    return split(documents, chunk_size=40, chunk_overlap=10)


def _failing(documents: list[Document]) -> Iterator[Document]:
    yield from documents[:-1]
    raise ParseError("f.json", "a bad record after the others")


def test_files_taken_in_any_order_are_written_in_file_order_and_a_dropped_file_leaves_nothing(
    tmp_path: Path,
) -> None:
    docs = {n: [Document(text=f"file {n} paragraph {p}. " * 6) for p in range(3)] for n in range(4)}
    shared = Document(id="same", text="one text stored once, whichever file has it first")
    docs[1].append(shared)
    docs[3].append(shared)
    with ChunkSpill(tmp_path, _split) as spilled:
        for n in (2, 0, 3):
            spilled.take(n, docs[n])
        with pytest.raises(ParseError):
            spilled.take(1, _failing(docs[1]))  # fails part-way ...
        spilled.drop(1)  # ... and is forgotten
        spilled.drop(0)  # a file taken whole is kept
        spilled.write_chunks(tmp_path / "chunks.out", range(4))
        texts = dict(spilled.texts(range(4)))
        kept = [d for n in (0, 2, 3) for d in docs[n]]
        assert spilled.rows == len(_split(kept))
        assert spilled.documents == len(kept)
    assert read_chunks(tmp_path / "chunks.out") == _split(kept)
    assert texts == {d.id: d.text for d in kept}
