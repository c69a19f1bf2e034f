"""Documents routed to shards without holding them all: one JSON-lines file per shard.

A sharded build from documents (rather than files) cannot write shard 0 before it has seen
the last document, since any document may belong to it. Holding every document until then
makes the build's memory grow with the corpus. Instead :func:`spill` reads the documents
once, lazily, and appends each to its shard's file in a staging directory inside the index
directory (a path every Ray node reaches when the index does). Each shard's build then reads
back only its own documents (:func:`read_spill`), so peak memory is one shard's documents
plus what is kept per document: its shard number (four bytes).

A build from files spills the same way, one step later: :class:`ChunkSpill` takes each
file's documents as the loader parses them (a :class:`~parsers.loading.DocumentSink`),
splits them inside the file's time budget, and appends the chunks to one file and the
documents' texts to another; the segment is then written from those files in bounded
batches. A file of a million records thus never becomes a million ``Document`` and
``Chunk`` objects at once: what stays in memory per file is four offsets, and per document
its id (to store each text once).

The files are JSON lines, as the chunk store is (no pickle), and are deleted when the build
ends, whether it succeeds or not.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import uuid
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

import numpy as np
import numpy.typing as npt
from pydantic_core import PydanticSerializationError

from ragtools.indexes.store.chunks import chunk_line
from ragtools.indexes.store.segments import SEGMENTS, shard_of
from ragtools.parsers.document import Chunk, Document, json_text

STAGING_PREFIX = ".tmp-staging-"
"""Under ``segments/``, whose ``.tmp-`` entries are debris the next commit removes (a killed
build's staging files included)."""


@contextmanager
def staging(root: str | Path) -> Iterator[Path]:
    """A fresh staging directory under ``root``'s segments, removed on exit."""
    directory = Path(root) / SEGMENTS / f"{STAGING_PREFIX}{uuid.uuid4().hex}"
    directory.mkdir(parents=True)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def spill_path(directory: Path, number: int) -> Path:
    return directory / f"shard-{number:03d}.jsonl"


def spill(
    documents: Iterable[Document], directory: Path, n_shards: int
) -> tuple[npt.NDArray[np.int32], list[Path]]:
    """Append each document to its shard's file (by a hash of its id), in the order given.

    Returns:
        The shard of each document, in order, and the shards' files.
    """
    paths = [spill_path(directory, s) for s in range(n_shards)]
    handles = [open(p, "w", encoding="utf-8") for p in paths]  # noqa: SIM115 - closed below
    shards = array("i")
    try:
        for doc in documents:
            number = shard_of(doc.id, n_shards)
            try:
                line = doc.model_dump_json()
            except PydanticSerializationError:  # a source name that is not UTF-8
                line = json_text(doc.model_dump(mode="json"))
            handles[number].write(line + "\n")
            shards.append(number)
    finally:
        for handle in handles:
            handle.close()
    return np.frombuffer(shards, dtype=np.int32).copy(), paths


def read_spill(path: str | Path) -> Iterator[Document]:
    """The documents :func:`spill` wrote to one shard's file, in their order.

    They were validated before they were written, by this build, so they are rebuilt
    without validating them again (``model_construct``: a third of the cost).
    """
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            yield Document.model_construct(**json.loads(line))


_COPY_BYTES = 1 << 20
_SPLIT_DOCUMENTS = 256
"""Documents split in one call: a call per record costs a third more on a file of short
records, and a file's documents are split within its budget either way."""


class ChunkSpill:
    """The chunks of a batch of files, split as each file is parsed, kept in a staging
    directory until the segment is written (see the module docstring).

    Args:
        directory: a staging directory (:func:`staging`).
        split: documents to chunks, with the index's settings.
    """

    def __init__(self, directory: Path, split: Callable[[Sequence[Document]], list[Chunk]]):
        self._split = split
        self._chunks = open(directory / "chunks.jsonl", "w+b")  # noqa: SIM115 - see close
        self._texts = open(directory / "texts.jsonl", "w+b")  # noqa: SIM115
        self._regions: dict[int, tuple[int, int, int, int, int]] = {}
        """Per file: its chunks' bytes (start, end), its texts' bytes (start, end), rows."""
        self._seen: set[str] = set()
        self._taking: tuple[int, int, int, list[str]] = (-1, 0, 0, [])
        """The file being taken, where it started in each spill, and the ids it added."""
        self.rows = 0
        """Chunks spilled, over every file."""

    def __enter__(self) -> ChunkSpill:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._chunks.close()
        self._texts.close()

    @property
    def documents(self) -> int:
        """Documents with at least one chunk (each stored once)."""
        return len(self._seen)

    def take(self, file: int, documents: Iterable[Document]) -> None:
        """Split and spill one file's documents (:class:`~parsers.loading.DocumentSink`)."""
        fresh: list[str] = []
        self._taking = (file, self._chunks.tell(), self._texts.tell(), fresh)
        rows = 0
        parsed = iter(documents)
        while batch := list(itertools.islice(parsed, _SPLIT_DOCUMENTS)):
            chunks = self._split(batch)
            self._chunks.write("".join(map(chunk_line, chunks)).encode("utf-8"))
            rows += len(chunks)
            split = {chunk.doc_id for chunk in chunks}
            for document in batch:
                if document.id in split and document.id not in self._seen:  # first text kept
                    self._seen.add(document.id)
                    fresh.append(document.id)
                    self._texts.write(json.dumps([document.id, document.text]).encode() + b"\n")
        _, start, text_start, _ = self._taking
        self._regions[file] = (start, self._chunks.tell(), text_start, self._texts.tell(), rows)
        self.rows += rows

    def drop(self, file: int) -> None:
        """Forget what :meth:`take` spilled of ``file``, the file it was taking (or none,
        when the file failed before its first document) (:class:`~parsers.loading.DocumentSink`)."""
        taking, start, text_start, fresh = self._taking
        if taking != file or file in self._regions:
            return
        for handle, at in ((self._chunks, start), (self._texts, text_start)):
            handle.seek(at)
            handle.truncate()
        self._seen.difference_update(fresh)
        self._taking = (-1, start, text_start, [])

    def write_chunks(self, path: Path, files: Iterable[int]) -> None:
        """The chunk store of ``files``' chunks, in the order of ``files``; fsynced."""
        self._chunks.flush()
        with open(path, "wb") as out:
            for file in files:
                if file not in self._regions:
                    continue
                start, end = self._regions[file][:2]
                self._chunks.seek(start)
                while start < end:
                    block = self._chunks.read(min(_COPY_BYTES, end - start))
                    out.write(block)
                    start += len(block)
            out.flush()
            os.fsync(out.fileno())
        self._chunks.seek(0, os.SEEK_END)

    def texts(self, files: Iterable[int]) -> Iterator[tuple[str, str]]:
        """``(doc_id, text)`` of ``files``' documents, each id once, in the order of ``files``."""
        self._texts.flush()
        for file in files:
            if file not in self._regions:
                continue
            start, end = self._regions[file][2:4]
            self._texts.seek(start)
            while self._texts.tell() < end:
                doc_id, text = json.loads(self._texts.readline())
                yield doc_id, text
        self._texts.seek(0, os.SEEK_END)
