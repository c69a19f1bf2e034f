"""The chunk store: every indexed chunk, one JSON object per line, in row order.

Row ``i`` of the BM25 index and of the vector index is line ``i`` of ``chunks.jsonl``; the
row is the only link between the halves, so the store is always rewritten whole, never
patched.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from ragtools.indexes.errors import IndexLoadError
from ragtools.parsers.document import Chunk, json_text

__all__ = [
    "FileRows",
    "add_file_rows",
    "chunk_batches",
    "chunk_file",
    "chunk_line",
    "chunk_of_line",
    "extend_file_rows",
    "iter_chunks",
    "read_chunks",
    "write_chunks",
]


FileRows = dict[str, list[list[int]]]
"""The rows of each source file in a store, as ``[first, count]`` runs in row order (a
segment's ``sources``: what an update reads to delete a changed file's rows)."""


def chunk_file(chunk: Chunk) -> str:
    """The file ``chunk`` came from: its absolute ``path`` when the loader gave one, else its
    ``source``."""
    return str(chunk.metadata.get("path", chunk.source))


def add_file_rows(runs: FileRows, first: int, chunks: Iterable[Chunk]) -> None:
    """The rows of ``chunks`` (rows ``first`` on) added to ``runs`` by :func:`chunk_file`."""
    row = first
    for file, run in itertools.groupby(map(chunk_file, chunks)):  # a file's rows are together
        count = sum(1 for _ in run)
        _add_run(runs, file, row, count)
        row += count


def extend_file_rows(runs: FileRows, first: int, more: Mapping[str, list[list[int]]]) -> None:
    """``more`` (runs counted from row 0) added to ``runs`` as rows ``first`` on: the
    runs of a store written in parts, part after part, equal those of the whole."""
    for file, spans in more.items():
        for start, count in spans:
            _add_run(runs, file, first + start, count)


def _add_run(runs: FileRows, file: str, row: int, count: int) -> None:
    spans = runs.setdefault(file, [])
    if spans and spans[-1][0] + spans[-1][1] == row:
        spans[-1][1] += count
    else:
        spans.append([row, count])


def write_chunks(path: str | Path, chunks: Iterable[Chunk]) -> int:
    """Write ``chunks`` as JSON lines and fsync; returns the number written."""
    count = 0
    with open(path, "w", encoding="utf-8") as handle:
        for chunk in chunks:
            handle.write(chunk_line(chunk))
            count += 1
        handle.flush()
        os.fsync(handle.fileno())
    return count


def chunk_line(chunk: Chunk) -> str:
    """One line of a store: ``chunk`` as JSON, then a line break."""
    try:
        return chunk.model_dump_json() + "\n"
    except PydanticSerializationError:  # a source name that is not UTF-8
        return json_text(chunk.model_dump(mode="json")) + "\n"


def chunk_batches(path: str | Path, size: int) -> Iterator[list[Chunk]]:
    """The chunks of a store this process has just written, ``size`` at a time, in row
    order: a store of a million rows is read without holding a million chunks. They were
    validated when they were made, so they are rebuilt without validating them again
    (``model_construct``, as :func:`~indexes.store.spill.read_spill` does)."""
    with open(path, encoding="utf-8") as handle:
        while lines := list(itertools.islice(handle, size)):
            yield [Chunk.model_construct(**json.loads(line)) for line in lines]


def chunk_of_line(line: str) -> Chunk:
    """The chunk one line of a store holds (what :func:`read_chunks` reads line by line, and
    the chunk file of an opened index reads one row at a time).

    Raises:
        pydantic.ValidationError: the line is not a valid chunk.
    """
    try:
        return Chunk.model_validate_json(line)
    except ValidationError as exc:
        # pydantic's JSON reader refuses the escaped lone surrogates of a file name that is
        # not UTF-8 (see parsers.document.json_text); the json module reads them back.
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            raise exc from None
        return Chunk.model_validate(value)


def read_chunks(path: str | Path) -> list[Chunk]:
    """Read a store written by :func:`write_chunks`.

    Raises:
        IndexLoadError: the file is missing or a line is not a valid chunk (line number given).
    """
    return list(iter_chunks(path))


def iter_chunks(path: str | Path) -> Iterator[Chunk]:
    """:func:`read_chunks` one chunk at a time.

    Raises:
        IndexLoadError: as :func:`read_chunks`.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                try:
                    chunk = chunk_of_line(line)
                except ValidationError as exc:
                    msg = f"line {number} is not a valid chunk ({exc.error_count()} errors)"
                    raise IndexLoadError(path, msg) from exc
                yield chunk
    except FileNotFoundError as exc:
        raise IndexLoadError(path, "file is missing") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise IndexLoadError(path, f"not readable ({exc})") from exc
