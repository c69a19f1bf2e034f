"""Documents routed to shards without holding them all: one JSON-lines file per shard.

A sharded build from documents (rather than files) cannot write shard 0 before it has seen
the last document, since any document may belong to it. Holding every document until then
makes the build's memory grow with the corpus. Instead :func:`spill` reads the documents
once, lazily, and appends each to its shard's file in a staging directory inside the index
directory (a path every Ray node reaches when the index does). Each shard's build then reads
back only its own documents (:func:`read_spill`), so peak memory is one shard's documents
plus what is kept per document: its shard number (four bytes).

The files are JSON lines, as the chunk store is (no pickle), and are deleted when the build
ends, whether it succeeds or not.
"""

from __future__ import annotations

import json
import shutil
import uuid
from array import array
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import numpy.typing as npt
from pydantic_core import PydanticSerializationError

from ragtools.indexes.store.segments import SEGMENTS, shard_of
from ragtools.parsers.document import Document, json_text

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
