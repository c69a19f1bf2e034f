"""What every document of a file says about the file: ``source``, ``path``, ``file_type``,
``mtime`` and ``size``.

* ``source`` is the name people read, cite and filter on: the path relative to the root
  given to :func:`parsers.load_dir` (POSIX separators, so an index built on Windows filters
  like one built on Linux), or, for one file, the path as given (only its name when given
  as an absolute path: the build machine's directories are no business of a model that
  reads the citation).
* ``path`` is the absolute path, for the application (open the file, re-parse it); it is
  never part of what the retriever tool shows a model.

Both name the file as it was walked, symbolic links not resolved: a link ``inner.txt`` to
``sub/b.txt`` is a file of its own (``source`` ``inner.txt``), as ``find`` lists it, and an
index finds its chunks under the path it selected (resolving made them ``sub/b.txt``'s).
* ``file_type`` is the format's usual suffix without the dot (``pdf``, ``md``, ``html``,
  ``txt``, ``docx``...): the suffix, spelt the common way (``.htm`` is ``html``,
  ``.markdown`` is ``md``), or, for a file parsed by content (a PDF saved as ``.txt``),
  the type of the parser that read it.
* ``mtime`` is the modification time in UTC, ISO 8601 to the second
  (``2026-11-24T03:33:27Z``), so ``{"mtime": {"$gte": "2026-01-01"}}`` compares as text;
  ``size`` is in bytes.

The parser's own metadata wins for keys it sets, except ``source`` and ``path``, which are
the loader's. A document with an outline (:mod:`parsers.outline`) also gets ``headings``:
its heading titles in reading order (each of its chunks then carries its own heading path
under that key instead).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from pydantic import JsonValue

from ragtools.parsers.document import Document, derived_id
from ragtools.parsers.outline import OUTLINE_KEY
from ragtools.parsers.registry import ParserSpec

__all__ = ["FILE_NAMES", "file_metadata", "file_type", "source_name", "with_file_metadata"]

FILE_NAMES = frozenset({"source", "path"})
"""The metadata that name the file: the loader's, and kept exactly (a name that is not UTF-8
holds lone surrogates legitimately, PEP 383)."""

_SPELLINGS = {
    "htm": "html",
    "xhtml": "html",
    "markdown": "md",
    "mdown": "md",
    "mkd": "md",
    "text": "txt",
    "yml": "yaml",
}


def file_type(file: Path, spec: ParserSpec) -> str:
    """The ``file_type`` of ``file`` read by ``spec`` (see the module docstring)."""
    suffix = file.suffix.lower()
    if not suffix or (spec.suffixes and suffix not in spec.suffixes):
        suffix = spec.suffixes[0] if spec.suffixes else f".{spec.name}"
        if spec.name == "text":
            suffix = ".txt"
    name = suffix[1:]
    return _SPELLINGS.get(name, name)


def source_name(given: str | os.PathLike[str], root: str | os.PathLike[str] | None) -> str:
    """The ``source`` of the file ``given`` under ``root`` (see the module docstring).

    Args:
        given: the file, as the caller spelt it (relative or absolute).
        root: the directory sources are relative to; ``None`` for a file on its own.
    """
    path = Path(os.fspath(given))
    if root is not None:
        for file, base in (
            (Path(os.path.abspath(path)), Path(os.path.abspath(root))),  # as walked
            (path.resolve(), Path(os.fspath(root)).resolve()),  # one spelt through a link
        ):
            if file.is_relative_to(base):
                return file.relative_to(base).as_posix()
        return path.name  # not under the root
    return path.name if path.is_absolute() else os.fspath(given)


def file_metadata(file: Path, spec: ParserSpec, stat: os.stat_result) -> dict[str, JsonValue]:
    """``path``, ``file_type``, ``mtime`` and ``size`` of ``file`` (``stat`` is its stat)."""
    return {
        "path": os.path.abspath(file),
        "file_type": file_type(file, spec),
        "mtime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stat.st_mtime)),
        "size": stat.st_size,
    }


def with_file_metadata(
    document: Document, source: str, extra: dict[str, JsonValue] | None = None
) -> Document:
    """``document`` with ``source`` and the file's metadata; an id derived from the old
    source is derived again (given ids, like BEIR ``_id`` values, are kept)."""
    metadata = {**(extra or {}), **document.metadata, "source": source}
    if extra and "path" in extra:
        metadata["path"] = extra["path"]
    outline = metadata.get(OUTLINE_KEY)
    if isinstance(outline, list) and "headings" not in metadata:
        metadata["headings"] = [entry[2] for entry in outline if isinstance(entry, list)]
    if metadata == document.metadata:
        return document
    old = document.metadata.get("source")
    doc_id = document.id
    # An id derived from an unchanged source stays what it is: only a new source needs
    # the hash that tells a derived id from a given one.
    if old != source and doc_id == derived_id(old, document.metadata, document.text):
        doc_id = derived_id(source, document.metadata, document.text)
    # a copy, not a new model: the fields were validated and extra holds JSON scalars, and
    # validating again cost most of the time of a file of a million records
    return document.model_copy(update={"id": doc_id, "metadata": metadata})
