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
splits them inside the file's time budget, and appends the chunks to one file, their BM25
tokens to another and the documents' texts to a third; the segment is then written from
those files in bounded batches. A file of a million records thus never becomes a million
``Document`` and ``Chunk`` objects at once: what stays in memory per file is a few offsets
and its rows by source file, and per document its id and its text's length (to store each
text once).

A big CSV or JSON file is taken in parts (:class:`SpillParts`, see
:class:`~parsers.loading.PartedSink`): each of the loader's worker processes splits and spills
its share of the records into a spill of its own in a subdirectory, and the spill adopts the
parts in order, appending their bytes to its files: the same bytes, rows and texts as taking
the file whole, made on two cores (the documents and chunks of a million records are most of
a build's time).

The files are JSON lines, as the chunk store is, or plain text (tokens, and texts as the text
store holds them): no pickle. They are deleted when the build ends, whether it succeeds or
not.
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
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, cast

import numpy as np
import numpy.typing as npt
from pydantic import JsonValue
from pydantic_core import PydanticSerializationError

from ragtools.indexes.keyword.bm25 import TokenRows
from ragtools.indexes.settings import IndexSettings
from ragtools.indexes.store.chunks import FileRows, add_file_rows, chunk_line, extend_file_rows
from ragtools.indexes.store.doc_texts import encode_text
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

Tokens = Callable[[Sequence[Chunk]], list[list[str]]]
"""Chunks to the BM25 tokens of each, as the index's settings make them."""


def keyword_tokens(settings: IndexSettings) -> Tokens | None:
    """Chunks to their BM25 tokens with ``settings`` (``None``: no BM25 half): what
    :meth:`BM25Index.add` makes of each chunk's :meth:`IndexSettings.keyword_text`."""
    if not settings.keyword:
        return None
    tokenizer = settings.new_bm25().tokenizer

    def tokens(chunks: Sequence[Chunk]) -> list[list[str]]:
        return [tokenizer(settings.keyword_text(c)) for c in chunks]

    return tokens


@dataclass(frozen=True)
class SpillParts:
    """How a :class:`ChunkSpill` made from ``settings`` in ``directory`` has the parts of a
    big record file spilled: each worker process of the loader opens a spill of its own in
    a subdirectory (this recipe travels to the workers, pickled in memory), which the
    spill then adopts (:meth:`ChunkSpill.adopt`) as if it had taken the whole file."""

    directory: Path
    settings: IndexSettings

    def path(self, file: int, part: int) -> Path:
        return self.directory / f"part-{file}-{part}"

    def open(self, file: int, part: int) -> ChunkSpill:
        """A new spill for part ``part`` of the batch's file ``file``
        (:class:`~parsers.loading.PartedSink`)."""
        directory = self.path(file, part)
        shutil.rmtree(directory, ignore_errors=True)  # a killed attempt's
        directory.mkdir()
        return ChunkSpill.of(directory, self.settings)


@dataclass
class _FileSpill:
    """What :class:`ChunkSpill` keeps of one file: where its bytes are in each spill, its
    rows, the ids and encoded lengths of the texts it stored first, and its rows by source
    file (:data:`~indexes.store.chunks.FileRows`, from its first row)."""

    chunks: tuple[int, int] = (0, 0)
    texts: tuple[int, int] = (0, 0)
    tokens: tuple[int, int] = (0, 0)
    rows: int = 0
    ids: list[str] = field(default_factory=list)
    lengths: array[int] = field(default_factory=lambda: array("q"))
    files: FileRows = field(default_factory=dict)


class ChunkSpill:
    """The chunks of a batch of files, split as each file is parsed, kept in a staging
    directory until the segment is written (see the module docstring).

    Besides the chunks (JSON lines, the chunk store's own), it keeps what indexing them
    needs, made while they are in memory: each chunk's BM25 tokens (a line of tokens joined
    by spaces: a token holds no whitespace), each new document's text (encoded as the text
    store holds it) and each file's rows by source. Writing the segment then reads no chunk
    back for its BM25 half, its texts or its map of sources: at a million rows, rebuilding
    the chunks from JSON cost as much as parsing them.

    Args:
        directory: a staging directory (:func:`staging`).
        split: documents to chunks, with the index's settings.
        tokens: chunks to their BM25 tokens; ``None`` when the index has no BM25 half.
    """

    def __init__(
        self,
        directory: Path,
        split: Callable[[Sequence[Document]], list[Chunk]],
        tokens: Tokens | None = None,
        parts: SpillParts | None = None,
    ):
        self._split = split
        self._tokens = tokens
        self._parts = parts
        self._chunks = open(directory / "chunks.jsonl", "w+b")  # noqa: SIM115 - see close
        self._texts = open(directory / "texts.txt", "w+b")  # noqa: SIM115
        self._token_lines = open(directory / "tokens.txt", "w+b")  # noqa: SIM115
        self._files: dict[int, _FileSpill] = {}
        self._seen: set[str] = set()
        self._taking: tuple[int, _FileSpill] = (-1, _FileSpill())
        """The file being taken, and what it has spilled so far."""
        self.rows = 0
        """Chunks spilled, over every file."""

    @classmethod
    def of(cls, directory: Path, settings: IndexSettings) -> ChunkSpill:
        """The spill of an index with ``settings``, which takes big record files in parts."""
        parts = SpillParts(directory, settings)
        return cls(directory, settings.split, keyword_tokens(settings), parts)

    def __enter__(self) -> ChunkSpill:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the spill's files (they stay, for :meth:`adopt` when this is a part's)."""
        for handle in (self._chunks, self._texts, self._token_lines):
            handle.close()

    @property
    def documents(self) -> int:
        """Documents with at least one chunk (each stored once)."""
        return len(self._seen)

    def take(self, file: int, documents: Iterable[Document]) -> None:
        """Split and spill one file's documents (:class:`~parsers.loading.DocumentSink`)."""
        spilled = self._begin()
        self._taking = (file, spilled)
        parsed = iter(documents)
        while batch := list(itertools.islice(parsed, _SPLIT_DOCUMENTS)):
            chunks = self._split(batch)
            self._chunks.write("".join(map(chunk_line, chunks)).encode("utf-8"))
            if self._tokens is not None:
                lines = "".join(" ".join(tokens) + "\n" for tokens in self._tokens(chunks))
                self._token_lines.write(lines.encode("utf-8", "surrogatepass"))
            add_file_rows(spilled.files, spilled.rows, chunks)
            spilled.rows += len(chunks)
            split = {chunk.doc_id for chunk in chunks}
            for document in batch:
                if document.id in split and document.id not in self._seen:
                    self._keep_text(spilled, document.id, encode_text(document.text))
        self._end(file, spilled)

    def _begin(self) -> _FileSpill:
        """What a file spills, from where each spill ends now."""
        spilled = _FileSpill()
        spilled.chunks = (self._chunks.tell(), self._chunks.tell())
        spilled.texts = (self._texts.tell(), self._texts.tell())
        spilled.tokens = (self._token_lines.tell(), self._token_lines.tell())
        return spilled

    def _end(self, file: int, spilled: _FileSpill) -> None:
        """Keep ``spilled``, up to where each spill ends now, as ``file``'s."""
        spilled.chunks = (spilled.chunks[0], self._chunks.tell())
        spilled.texts = (spilled.texts[0], self._texts.tell())
        spilled.tokens = (spilled.tokens[0], self._token_lines.tell())
        self._files[file] = spilled
        self.rows += spilled.rows

    def _keep_text(self, spilled: _FileSpill, doc_id: str, data: bytes) -> None:
        """Store the encoded text of document ``doc_id``, not stored yet, for ``spilled``'s
        file (a document's first text is the one kept)."""
        self._seen.add(doc_id)
        self._texts.write(data)
        spilled.ids.append(doc_id)
        spilled.lengths.append(len(data))

    def drop(self, file: int) -> None:
        """Forget what :meth:`take` spilled of ``file``, the file it was taking (or none,
        when the file failed before its first document) (:class:`~parsers.loading.DocumentSink`)."""
        taking, spilled = self._taking
        if taking != file or file in self._files:
            return
        starts = (spilled.chunks[0], spilled.texts[0], spilled.tokens[0])
        for handle, at in zip((self._chunks, self._texts, self._token_lines), starts, strict=True):
            handle.seek(at)
            handle.truncate()
        self._seen.difference_update(spilled.ids)
        self._taking = (-1, _FileSpill())

    @property
    def parts(self) -> SpillParts | None:
        """The recipe of the spills of a file's parts; ``None``: this spill takes files
        whole (:class:`~parsers.loading.PartedSink`)."""
        return self._parts

    def state(self, file: int) -> dict[str, JsonValue]:
        """What :meth:`adopt` needs of this part's spill of ``file``, which it holds alone
        (:class:`~parsers.loading.PartedSink`)."""
        spilled = self._files[file]
        state = {
            "rows": spilled.rows,
            "ids": spilled.ids,
            "lengths": spilled.lengths.tolist(),
            "files": spilled.files,
        }
        return cast(dict[str, JsonValue], state)

    def adopt(self, file: int, states: list[JsonValue]) -> None:
        """Take ``file`` from the spills of its parts (the ``state`` of each, in order), as
        :meth:`take` would have taken its documents: their bytes appended to these spills,
        each document's text kept once; the parts' spills are then deleted
        (:class:`~parsers.loading.PartedSink`)."""
        whole = self._begin()
        parts = self._recipe()
        for part, state in enumerate(states):
            directory = parts.path(file, part)
            got = cast(dict[str, Any], state)
            for name, handle in (("chunks.jsonl", self._chunks), ("tokens.txt", self._token_lines)):
                with open(directory / name, "rb") as spilled:
                    shutil.copyfileobj(spilled, handle, _COPY_BYTES)
            with open(directory / "texts.txt", "rb") as texts:
                self._adopt_texts(whole, texts, got["ids"], got["lengths"])
            extend_file_rows(whole.files, whole.rows, got["files"])
            whole.rows += got["rows"]
            shutil.rmtree(directory, ignore_errors=True)
        self._end(file, whole)

    def _adopt_texts(
        self, whole: _FileSpill, texts: BinaryIO, ids: list[str], lengths: list[int]
    ) -> None:
        """A part's texts appended, but those of documents taken already."""
        if self._seen.isdisjoint(ids):  # nearly always: copied at once
            shutil.copyfileobj(texts, self._texts, _COPY_BYTES)
            self._seen.update(ids)
            whole.ids.extend(ids)
            whole.lengths.extend(lengths)
            return
        for doc_id, length in zip(ids, lengths, strict=True):
            data = texts.read(length)
            if doc_id not in self._seen:
                self._keep_text(whole, doc_id, data)

    def discard(self, file: int, parts: int) -> None:
        """Delete the spills of ``file``'s ``parts`` parts: one failed
        (:class:`~parsers.loading.PartedSink`)."""
        recipe = self._recipe()
        for part in range(parts):
            shutil.rmtree(recipe.path(file, part), ignore_errors=True)

    def _recipe(self) -> SpillParts:
        if self._parts is None:  # (the loader sends no parts then)
            msg = "this spill takes files whole: make it with ChunkSpill.of to take parts"
            raise TypeError(msg)
        return self._parts

    def write_chunks(self, path: Path, files: Iterable[int]) -> None:
        """The chunk store of ``files``' chunks, in the order of ``files``; fsynced."""
        self._chunks.flush()
        with open(path, "wb") as out:
            for spilled in self._spilled(files):
                for block in _blocks(self._chunks, spilled.chunks, "chunk"):
                    out.write(block)
            out.flush()
            os.fsync(out.fileno())
        self._chunks.seek(0, os.SEEK_END)

    def texts(self, files: Iterable[int]) -> Iterator[tuple[str, bytes]]:
        """``(doc_id, encoded text)`` of ``files``' documents, each id once, in the order of
        ``files`` (for :func:`~indexes.store.doc_texts.write_encoded_texts`)."""
        self._texts.flush()
        for spilled in self._spilled(files):
            self._texts.seek(spilled.texts[0])
            for doc_id, length in zip(spilled.ids, spilled.lengths, strict=True):
                yield doc_id, self._texts.read(length)
        self._texts.seek(0, os.SEEK_END)

    def tokens(self, files: Iterable[int], size: int) -> Iterator[TokenRows]:
        """The BM25 tokens of ``files``' chunks, in row order, ``size`` rows at a time.

        The lines are read in blocks and cut into rows with numpy, each batch decoded and
        split at once: a list per row, made line by line, cost more than counting the
        tokens (a million rows for a file of a million records).

        Raises:
            OSError: the spill ends before a file's lines do.
        """
        self._token_lines.flush()

        def rows_of(lines: bytes) -> TokenRows:
            codes = np.frombuffer(lines, np.uint8)
            ends = np.flatnonzero(codes == 0x0A)
            gaps = (codes == 0x20) | (codes == 0x0A)  # a token holds no whitespace
            starts = np.cumsum(~gaps & np.concatenate(([True], gaps[:-1])), dtype=np.int64)
            counted = starts[ends]
            lengths = np.diff(counted, prepend=np.int64(0))
            return TokenRows(lines.decode("utf-8", "surrogatepass").split(), lengths)

        held = bytearray()  # lines read and not yet handed out
        ends = np.zeros(0, np.int64)  # where each of them ends in it
        for spilled in self._spilled(files):
            for block in _blocks(self._token_lines, spilled.tokens, "token"):
                found = np.flatnonzero(np.frombuffer(block, np.uint8) == 0x0A) + len(held)
                ends = np.concatenate([ends, found])
                held += block
                first = 0
                for cut in (ends[size - 1 :: size] + 1).tolist():
                    yield rows_of(bytes(held[first:cut]))
                    first = cut
                del held[:first]
                ends = ends[len(ends) - len(ends) % size :] - first
        if held:
            yield rows_of(bytes(held))
        self._token_lines.seek(0, os.SEEK_END)

    def files_rows(self, files: Iterable[int]) -> FileRows:
        """The rows of each source file in the store :meth:`write_chunks` writes."""
        runs: FileRows = {}
        first = 0
        for spilled in self._spilled(files):
            extend_file_rows(runs, first, spilled.files)
            first += spilled.rows
        return runs

    def _spilled(self, files: Iterable[int]) -> Iterator[_FileSpill]:
        """What was kept of each of ``files`` taken whole, in the order of ``files`` (a file
        that failed, or had no document, has nothing)."""
        return (self._files[file] for file in files if file in self._files)


def _blocks(handle: BinaryIO, span: tuple[int, int], spill: str) -> Iterator[bytes]:
    """The bytes of ``handle`` from ``span[0]`` to ``span[1]``, a block at a time.

    Raises:
        OSError: the ``spill`` spill ends before ``span`` does (never loop on a spill cut
            short under it).
    """
    start, end = span
    handle.seek(start)
    while start < end:
        block = handle.read(min(_COPY_BYTES, end - start))
        if not block:
            msg = f"the {spill} spill ends at byte {start}, before {end}"
            raise OSError(msg)
        start += len(block)
        yield block
