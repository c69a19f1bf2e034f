"""The spills of a build: :class:`~indexes.store.spill.ChunkSpill`, the chunks of parsed files
kept on disk in file order, and what counts against a file's time budget."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from ragtools.indexes.keyword.bm25 import TokenRows
from ragtools.indexes.store.chunks import FileRows, add_file_rows, read_chunks
from ragtools.indexes.store.doc_texts import encode_text
from ragtools.indexes.store.spill import ChunkSpill
from ragtools.parsers import Chunk, Document, split
from ragtools.parsers.errors import ParseError
from ragtools.parsers.loading import load_files


def _split(documents: Sequence[Document]) -> list[Chunk]:
    return split(documents, chunk_size=40, chunk_overlap=10)


def _failing(documents: list[Document]) -> Iterator[Document]:
    yield from documents[:-1]
    raise ParseError("f.json", "a bad record after the others")


def test_files_taken_in_any_order_are_written_in_file_order_and_a_dropped_file_leaves_nothing(
    tmp_path: Path,
) -> None:
    docs = {
        n: [
            Document(text=f"file {n} paragraph {p}. " * 6, metadata={"source": f"f{n}.md"})
            for p in range(3)
        ]
        for n in range(4)
    }
    shared = Document(id="same", text="one text stored once, whichever file has it first")
    docs[1].append(shared)
    docs[3].append(shared)
    with ChunkSpill(tmp_path, _split, _tokens) as spilled:
        for n in (2, 0, 3):
            spilled.take(n, docs[n])
        with pytest.raises(ParseError):
            spilled.take(1, _failing(docs[1]))  # fails part-way ...
        spilled.drop(1)  # ... and is forgotten
        spilled.drop(0)  # a file taken whole is kept
        spilled.write_chunks(tmp_path / "chunks.out", range(4))
        texts = list(spilled.texts(range(4)))
        batches = list(spilled.tokens(range(4), 5))
        tokens = [row for batch in batches for row in _rows(batch)]
        files_rows = spilled.files_rows(range(4))
        kept = [d for n in (0, 2, 3) for d in docs[n]]
        assert spilled.rows == len(_split(kept))
        assert spilled.documents == len(kept)
    chunks = _split(kept)
    assert read_chunks(tmp_path / "chunks.out") == chunks
    assert texts == [(d.id, encode_text(d.text)) for d in kept]  # in row order, each once
    assert tokens == _tokens(chunks)
    assert [len(batch) for batch in batches] == [5] * (len(chunks) // 5) + (
        [len(chunks) % 5] if len(chunks) % 5 else []
    )  # batches of the size asked, across the files
    whole: FileRows = {}
    add_file_rows(whole, 0, chunks)
    assert files_rows == whole  # the runs of files spilled one by one, as of the whole


def _rows(batch: TokenRows) -> list[list[str]]:
    ends = list(itertools.accumulate(batch.lengths.tolist()))
    return [
        batch.tokens[end - n : end] for end, n in zip(ends, batch.lengths.tolist(), strict=True)
    ]


def test_token_batches_are_cut_at_rows_wherever_the_blocks_end(tmp_path: Path) -> None:
    """Rows are read back in blocks of bytes: a row (and a multi-byte character) cut by
    a block's end is whole in its batch, and rows of every length keep their tokens."""
    docs = [  # some 1.8 MB of tokens: more than one block
        Document(text=" ".join(f"w{i}é{j}" for j in range(i % 90)) + " x", metadata={"row": i})
        for i in range(5000)
    ]
    rows = [d.text.split() for d in docs]
    with ChunkSpill(tmp_path, list_split, lambda chunks: [c.text.split() for c in chunks]) as s:
        s.take(0, docs[:1700])
        s.take(1, docs[1700:])
        for size in (1, 7, 1000, 5000, 9000):
            batches = list(s.tokens(range(2), size))
            assert [row for batch in batches for row in _rows(batch)] == rows
            assert all(len(batch) == size for batch in batches[:-1])


def list_split(documents: Sequence[Document]) -> list[Chunk]:
    """One chunk per document, its whole text."""
    return [Chunk.unchecked(d.id, d.text, 0, len(d.text), d.metadata) for d in documents]


def _tokens(chunks: Sequence[Chunk]) -> list[list[str]]:
    """Any tokens will do: the spill keeps what it is given, row by row; a text with a lone
    surrogate and an empty row among them."""
    return [[*c.text.split(), "caf\udce9"] if i % 3 else [] for i, c in enumerate(chunks)]


def test_a_split_that_overruns_the_files_budget_fails_that_file_alone(tmp_path: Path) -> None:
    """#38 item 8: the split after the parse ran outside the per-file budget. What the sink
    does with a file's documents (a build splits them there) is inside it now: a text
    whose split into two-character chunks takes seconds ends in the named budget error,
    and the other file of the batch is split and kept."""
    big = tmp_path / "big.txt"
    big.write_text("ab " * 200_000)
    small = tmp_path / "small.txt"
    small.write_text("a small file that is split in time")
    with ChunkSpill(tmp_path, lambda d: split(d, chunk_size=2, chunk_overlap=0)) as spilled:
        result = load_files([big, small], time_budget=0.5, sink=spilled, workers=1)
        (error,) = result.errors
        assert error.path == str(big) and error.error == "ParseError"
        assert "longer than the time budget" in error.message
        assert result.documents == []
        spilled.write_chunks(tmp_path / "chunks.out", range(2))
    chunks = read_chunks(tmp_path / "chunks.out")
    assert {c.metadata["source"] for c in chunks} == {"small.txt"}
    assert "".join(c.text for c in chunks).replace(" ", "") == "asmallfilethatissplitintime"
