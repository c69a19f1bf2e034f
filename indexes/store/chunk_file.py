"""Chunks read on demand: a large segment's chunk store mapped, and a version's live rows.

A search needs the chunks of its hits, not all of them. Parsed, a chunk costs some two
kilobytes of Python objects, so holding every chunk of ten million makes opening an index
cost tens of gigabytes. A large segment therefore maps its ``chunks.jsonl`` (:class:`ChunkFile`): it
keeps where each line starts (8 bytes a row) and parses a line when asked for it. The file
is the one the version's sealed manifest checked the SHA-256 of at open, so what it parses
is what was written. :class:`LiveChunks` gives a version's live rows from its segments'.

Going over every chunk (a filter on metadata, or the first fusion's chunk keys) parses
every line once per pass: slower than a list, but in constant memory.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import overload

import numpy as np

from ragtools.indexes.errors import IndexLoadError
from ragtools.indexes.store.chunks import chunk_of_line
from ragtools.indexes.store.segments import LiveRows
from ragtools.parsers.document import Chunk

_BLOCK = 1 << 26  # line ends are found a block at a time


class _Rows(Sequence[Chunk]):
    """What both sequences share: slices, negative rows and iteration over :meth:`_row`."""

    def _row(self, row: int) -> Chunk:
        raise NotImplementedError

    @overload
    def __getitem__(self, row: int) -> Chunk: ...
    @overload
    def __getitem__(self, row: slice) -> list[Chunk]: ...
    def __getitem__(self, row: int | slice) -> Chunk | list[Chunk]:
        if isinstance(row, slice):
            return [self._row(i) for i in range(*row.indices(len(self)))]
        return self._row(range(len(self))[row])  # negative rows, and IndexError past the end

    def __iter__(self) -> Iterator[Chunk]:
        for row in range(len(self)):
            yield self._row(row)


class ChunkFile(_Rows):
    """The chunks of one chunk store (see :mod:`indexes.store.chunks`), parsed when read.

    Raises:
        IndexLoadError: the file is missing or unreadable.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        # Line ends are found by reading the file, not the mapping: a page read through the
        # mapping stays in this process's resident memory, a page read() only in the cache.
        ends = []
        try:
            with open(self.path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                self._data: mmap.mmap | bytes = (
                    mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
                )
                at = 0
                while block := handle.read(_BLOCK):
                    ends.append(np.flatnonzero(np.frombuffer(block, np.uint8) == 0x0A) + at)
                    at += len(block)
        except FileNotFoundError as exc:
            raise IndexLoadError(self.path, "file is missing") from exc
        except OSError as exc:
            raise IndexLoadError(self.path, f"not readable ({exc})") from exc
        self._ends = np.concatenate(ends) if ends else np.zeros(0, np.int64)
        self._starts = np.r_[np.int64(0), self._ends[:-1] + 1].astype(np.int64)

    def __len__(self) -> int:
        return len(self._ends)

    def _row(self, row: int) -> Chunk:
        line = self._data[int(self._starts[row]) : int(self._ends[row])]
        try:
            return chunk_of_line(bytes(line).decode("utf-8"))
        except ValueError as exc:
            msg = f"line {row + 1} is not a valid chunk ({exc})"
            raise IndexLoadError(self.path, msg) from exc


class LiveChunks(_Rows):
    """The live chunks of a version, segment after segment
    (:class:`indexes.store.segments.LiveRows`), read from the segments' chunk sequences."""

    def __init__(self, parts: Sequence[Sequence[Chunk]], live: LiveRows) -> None:
        self._parts = list(parts)
        self._live = live

    def __len__(self) -> int:
        return len(self._live)

    def _row(self, row: int) -> Chunk:
        offsets = self._live.offsets
        segment = int(np.searchsorted(offsets, row, side="right")) - 1
        local = self._live.local[segment][row - int(offsets[segment])]
        return self._parts[segment][int(local)]

    def __iter__(self) -> Iterator[Chunk]:
        for part, local in zip(self._parts, self._live.local, strict=True):
            if len(local) == len(part):
                yield from part
            else:
                for row in local.tolist():
                    yield part[row]
