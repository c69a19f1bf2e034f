"""Every document's full text, stored beside a version's chunks so that passages are exact.

A chunk is an exact span of its document, but the whitespace between two chunks that do not
overlap is in no chunk. A passage grown around a hit (:mod:`retrieval.expand`) must be
``document.text[start:end]``, so every version keeps the text of each document its chunks
come from, in the folder ``documents/``:

* ``ids.json``: the document ids, in row order (a JSON list);
* ``offsets.npy``: ``int64`` byte offsets, one more than there are ids, into
* ``texts.txt``: the texts, UTF-8, one after another. A lone surrogate (which the parsers
  replace on the way in, but a text given directly may hold) is written with
  ``surrogatepass``, as the chunk store escapes it (:func:`parsers.document.json_text`), so
  writing never fails and the text reads back exactly.

Opening reads only the ids (the chunks, read whole at open, are larger); the offsets and the
texts are memory-mapped, so a text takes memory only while it is used, and the mapping keeps
a version readable after a later writer collects its files. A change (update, add, delete)
writes the texts of the documents its chunks come from: new texts where it parsed documents
again, the previous version's for the others. A document with neither (chunks added without
their document, or an index written before format 4 and not parsed again) has no stored text.
"""

from __future__ import annotations

import json
import mmap
import os
import threading
from array import array
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import numpy as np

from ragtools.indexes.errors import IndexLoadError
from ragtools.indexes.store.persist import (
    load_npy,
    read_bytes,
    read_json,
    save_npy,
    write_json,
)

__all__ = [
    "TEXTS_DIR",
    "ChainedTexts",
    "DocumentTexts",
    "encode_text",
    "write_encoded_texts",
    "write_text_pairs",
    "write_texts",
]

TEXTS_DIR = "documents"
_IDS, _OFFSETS, _TEXTS = "ids.json", "offsets.npy", "texts.txt"


class DocumentTexts(Mapping[str, str]):
    """Document id -> full text of one version, read from its memory-mapped files.

    ``ids`` is the list of document ids, or (``lazy``) the bytes of ``ids.json``, parsed
    and checked at the first lookup: a shard of a ten-million-document index would
    otherwise hold every id and a dict of them (some 150 bytes a document) from the moment
    it is opened, though a search reads no text.
    """

    def __init__(
        self, ids: list[str] | bytes, offsets: np.ndarray, blob: bytes | mmap.mmap, where: Path
    ) -> None:
        self._ids = ids
        self._rows: dict[str, int] | None = None
        self._offsets = offsets
        self._blob = blob
        self._where = where
        self._lock = threading.Lock()
        if isinstance(ids, list):
            self._rows = self._index(ids)

    def _index(self, ids: object) -> dict[str, int]:
        where = self._where / _IDS
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise IndexLoadError(where, "not a list of document ids")
        rows = {doc_id: row for row, doc_id in enumerate(ids)}
        if len(rows) != len(ids):
            raise IndexLoadError(where, "a document id is listed twice")
        if self._offsets.shape != (len(ids) + 1,):
            msg = f"offsets do not cut {_TEXTS} into {len(ids)} texts"
            raise IndexLoadError(self._where / _OFFSETS, msg)
        return rows

    @property
    def _row(self) -> dict[str, int]:
        if self._rows is None:
            with self._lock:
                if self._rows is None and isinstance(self._ids, bytes):
                    try:
                        ids = json.loads(self._ids.decode("utf-8"))
                    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
                        msg = f"not readable JSON ({exc})"
                        raise IndexLoadError(self._where / _IDS, msg) from exc
                    self._rows, self._ids = self._index(ids), b""
        assert self._rows is not None
        return self._rows

    @classmethod
    def open(
        cls, directory: str | Path, listed: Iterable[str], *, lazy: bool = False
    ) -> DocumentTexts:
        """The texts of the version in ``directory``, whose manifest lists (and so has
        checked) the files ``listed``; ``lazy``: the ids are parsed at the first lookup.

        Raises:
            IndexLoadError: a file is not listed or missing, or the ids and offsets do not
                fit the texts.
        """
        folder = Path(directory) / TEXTS_DIR
        unlisted = set(_names()) - set(listed)
        if unlisted:
            msg = f"the manifest stores document texts but does not list {sorted(unlisted)}"
            raise IndexLoadError(folder, msg)
        ids: list[str] | bytes = read_bytes(folder / _IDS) if lazy else read_json(folder / _IDS)
        offsets = load_npy(folder / _OFFSETS, mmap=True)
        try:
            with open(folder / _TEXTS, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                blob = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        except OSError as exc:
            raise IndexLoadError(folder / _TEXTS, f"unreadable ({exc})") from exc
        if (
            offsets.dtype != np.int64
            or offsets.ndim != 1
            or len(offsets) == 0
            or offsets[0] != 0
            or offsets[-1] != size
            or bool(np.any(np.diff(offsets) < 0))
        ):
            msg = f"offsets do not cut {_TEXTS} into texts"
            raise IndexLoadError(folder / _OFFSETS, msg)
        return cls(ids, offsets, blob, folder)

    def __getitem__(self, doc_id: str) -> str:
        row = self._row[doc_id]
        start, end = int(self._offsets[row]), int(self._offsets[row + 1])
        try:
            return bytes(self._blob[start:end]).decode("utf-8", "surrogatepass")
        except UnicodeDecodeError as exc:
            msg = f"the text of document {doc_id!r} is not UTF-8"
            raise IndexLoadError(TEXTS_DIR + "/" + _TEXTS, msg) from exc

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._row

    def __iter__(self) -> Iterator[str]:
        return iter(self._row)

    def __len__(self) -> int:
        return len(self._row)


class ChainedTexts(Mapping[str, str]):
    """The texts of several mappings as one, the first holding an id winning: a sharded
    index's shards (each document lives in one), or new texts over a previous version's."""

    def __init__(self, parts: Iterable[Mapping[str, str]]) -> None:
        self.parts = list(parts)

    def __getitem__(self, doc_id: str) -> str:
        for part in self.parts:
            if doc_id in part:
                return part[doc_id]
        raise KeyError(doc_id)

    def __contains__(self, doc_id: object) -> bool:
        return any(doc_id in part for part in self.parts)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(doc_id for part in self.parts for doc_id in part))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def write_texts(directory: Path, doc_ids: Iterable[str], texts: Mapping[str, str]) -> list[str]:
    """Write the text of each of ``doc_ids`` (once) into ``directory``, those ``texts``
    holds; returns the file names written, for the manifest. One text is in memory at a
    time."""
    wanted = (
        (doc_id, text)
        for doc_id in dict.fromkeys(doc_ids)
        if (text := texts.get(doc_id)) is not None
    )
    return write_text_pairs(directory, wanted)


def write_text_pairs(directory: Path, pairs: Iterable[tuple[str, str]]) -> list[str]:
    """:func:`write_texts` from ``(doc_id, text)`` pairs of distinct ids, in order."""
    return write_encoded_texts(directory, ((doc_id, encode_text(text)) for doc_id, text in pairs))


def encode_text(text: str) -> bytes:
    """``text`` as ``texts.txt`` holds it (see the module docstring)."""
    return text.encode("utf-8", "surrogatepass")


def write_encoded_texts(directory: Path, pairs: Iterable[tuple[str, bytes]]) -> list[str]:
    """:func:`write_text_pairs` from texts already encoded by :func:`encode_text` (a build's
    spill keeps them so: a million texts are not decoded and encoded again)."""
    folder = directory / TEXTS_DIR
    folder.mkdir()
    written: list[str] = []
    offsets = array("q", [0])
    with open(folder / _TEXTS, "wb") as handle:
        for doc_id, data in pairs:
            handle.write(data)
            offsets.append(offsets[-1] + len(data))
            written.append(doc_id)
        handle.flush()
        os.fsync(handle.fileno())
    write_json(folder / _IDS, written, indent=None)
    save_npy(folder / _OFFSETS, np.frombuffer(offsets, dtype=np.int64))
    return _names()


def _names() -> list[str]:
    return [f"{TEXTS_DIR}/{name}" for name in (_IDS, _OFFSETS, _TEXTS)]
