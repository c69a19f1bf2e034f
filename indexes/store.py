"""The chunk store: every indexed chunk, one JSON object per line, in row order.

Row ``i`` of the BM25 index and of the vector index is line ``i`` of ``chunks.jsonl``; the
row is the only link between the halves, so the store is always rewritten whole, never
patched.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from ragtools.parsers.document import Chunk
from ragtools.parsers.errors import IndexLoadError

__all__ = ["read_chunks", "write_chunks"]


def write_chunks(path: str | Path, chunks: Iterable[Chunk]) -> int:
    """Write ``chunks`` as JSON lines and fsync; returns the number written."""
    count = 0
    with open(path, "w", encoding="utf-8") as handle:
        for chunk in chunks:
            handle.write(chunk.model_dump_json())
            handle.write("\n")
            count += 1
        handle.flush()
        os.fsync(handle.fileno())
    return count


def read_chunks(path: str | Path) -> list[Chunk]:
    """Read a store written by :func:`write_chunks`.

    Raises:
        IndexLoadError: the file is missing or a line is not a valid chunk (line number given).
    """
    chunks: list[Chunk] = []
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                try:
                    chunks.append(Chunk.model_validate_json(line))
                except ValidationError as exc:
                    msg = f"line {number} is not a valid chunk ({exc.error_count()} errors)"
                    raise IndexLoadError(path, msg) from exc
    except FileNotFoundError as exc:
        raise IndexLoadError(path, "file is missing") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise IndexLoadError(path, f"not readable ({exc})") from exc
    return chunks
