"""The two records parsers produce: :class:`Document` (a file or a page) and :class:`Chunk`.

Both are frozen pydantic models so they can be persisted as JSON and travel inside tool
artifacts unchanged. Ids are content hashes, so they are stable across runs and machines:

* ``Document.id`` defaults to a SHA-256 of the source, the document's place in its file
  (its record's ``row``, or its ``page``) and the text (:func:`derived_id`; given ids are
  kept, as BEIR ``_id`` values are). The loader derives it again from the source it
  gives, a path relative to the folder loaded, so the same files give the same ids
  wherever the folder sits;
* ``Chunk.id`` is a SHA-256 of the document id, the offsets and the text, so an unchanged
  chunk keeps its id when an index is rebuilt.

Lone surrogates are the one thing a ``str`` holds that UTF-8 cannot: a file name that is not
UTF-8 has them (PEP 383) and is kept exactly (:func:`json_text`), while text and metadata from
a file's content get them from a broken escape (``"\\ud800"`` in JSON) or a library's
``surrogateescape`` decoding, and have them replaced by U+FFFD at the parser boundary
(:func:`documents_without_surrogates`, called by :mod:`parsers.loading`), so that no writer,
tokenizer or model meets one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from json.encoder import encode_basestring
from typing import Any

from pydantic import BaseModel, ConfigDict, JsonValue, model_validator

__all__ = [
    "Chunk",
    "Document",
    "derived_id",
    "document_without_surrogates",
    "documents_without_surrogates",
    "json_text",
    "replace_surrogates",
    "stable_id",
    "strict_utf8",
    "warn_replaced",
]

logger = logging.getLogger(__name__)

DEFAULT_SOURCE = "<text>"

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(value: Any, **options: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, **options)`` that is always valid UTF-8.

    A file name that is not UTF-8 (``caf\\xe9.txt``) reaches Python as a string holding a
    lone surrogate (PEP 383), which UTF-8 cannot encode. Such code points are written as
    ``\\udcXX`` escapes, which :func:`json.loads` reads back to the same string, so the name
    survives a manifest or a chunk store losslessly; any other text is left as it is.
    """
    return _escaped(json.dumps(value, ensure_ascii=False, **options))


def _escaped(text: str) -> str:
    """JSON ``text`` with each lone surrogate written as its ``\\udcXX`` escape."""
    if text.isascii():
        return text
    return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def strict_utf8(value: Any) -> Any:
    """JSON ``value`` with each lone surrogate spelt out as the text ``\\udcXX``.

    For channels that must be strict UTF-8 and cannot carry an escaped lone surrogate (MCP's
    JSON-RPC, serialised by pydantic): the name stays recognisable where the original would
    make the whole message fail.
    """
    text = json.dumps(value, ensure_ascii=False)
    return json.loads(_LONE_SURROGATE.sub(lambda match: f"\\\\u{ord(match.group()):04x}", text))


def replace_surrogates(text: str) -> tuple[str, int]:
    """``text`` with each lone surrogate replaced by U+FFFD, and how many there were.

    A lone surrogate (``"\\ud800"`` in a JSON record or a query, or text a parser library
    decoded with ``surrogateescape``) is no character: UTF-8 cannot encode it, so it would
    fail wherever the text is written or tokenized. U+FFFD is what a decoder puts where it
    met no character, and it stays visible.
    """
    if text.isascii():
        return text, 0
    return _LONE_SURROGATE.subn("\ufffd", text)


def _replace_in_value(value: JsonValue) -> tuple[JsonValue, int]:
    """:func:`replace_surrogates` over a JSON value's strings and keys (recursive: metadata
    is a few levels deep, pydantic refused deeper on construction)."""
    if isinstance(value, str):
        return replace_surrogates(value)
    if isinstance(value, list):
        items = [_replace_in_value(item) for item in value]
        return [item for item, _ in items], sum(n for _, n in items)
    if isinstance(value, dict):
        return _replace_in_mapping(value)
    return value, 0


def _replace_in_mapping(mapping: Mapping[str, JsonValue]) -> tuple[dict[str, JsonValue], int]:
    out: dict[str, JsonValue] = {}
    count = 0
    for key, item in mapping.items():
        clean_key, in_key = replace_surrogates(key)
        out[clean_key], in_item = _replace_in_value(item)
        count += in_key + in_item
    return out, count


def _holds(value: JsonValue) -> bool:
    """Whether a list or object metadata value holds a lone surrogate, in one C-level pass
    over its JSON (a DOCX outline of 300,000 headings took seconds walked in Python)."""
    if not isinstance(value, (list, dict)):
        return False
    return _LONE_SURROGATE.search(json.dumps(value, ensure_ascii=False)) is not None


def document_without_surrogates(
    document: Document, keep: frozenset[str] = frozenset()
) -> tuple[Document, int]:
    """``document`` with lone surrogates in its text and metadata replaced by U+FFFD (see
    :func:`replace_surrogates`), and how many there were; ``document`` itself when none.

    Args:
        document: a parser's document.
        keep: metadata keys left as they are: a file name that is not UTF-8 reaches Python
            with lone surrogates (PEP 383) and is kept exactly (:func:`json_text`), since it
            names a real file.

    The id is derived again when it was derived from the text (a given id, such as a BEIR
    ``_id`` that qrels refer to, is kept).
    """
    if document.text.isascii() and all(
        key.isascii() and (value.isascii() if isinstance(value, str) else not _holds(value))
        for key, value in document.metadata.items()
    ):  # no lone surrogate: what nearly every document is, checked at C speed
        return document, 0
    text, count = replace_surrogates(document.text)
    kept = {key: value for key, value in document.metadata.items() if key in keep}
    rest = {key: value for key, value in document.metadata.items() if key not in keep}
    metadata, in_metadata = _replace_in_mapping(rest)
    count += in_metadata
    if not count:
        return document, 0
    metadata.update(kept)
    if document.id == derived_id(document.metadata.get("source"), document.metadata, document.text):
        return Document(text=text, metadata=metadata), count
    return Document(id=document.id, text=text, metadata=metadata), count


def documents_without_surrogates(
    documents: Iterable[Document], source: str, keep: frozenset[str] = frozenset()
) -> tuple[list[Document], int]:
    """:func:`document_without_surrogates` over a file's documents, with the total, which
    is logged (WARNING, naming ``source``) when not zero."""
    totals: list[int] = []
    cleaned = list(iter_without_surrogates(documents, source, keep, totals.append))
    warn_replaced(source, sum(totals))
    return cleaned, sum(totals)


def warn_replaced(source: str, total: int) -> None:
    """Log (WARNING) the lone surrogates replaced in a file's documents, if any."""
    if total:
        logger.warning("%s: %d lone surrogates (not characters) replaced by U+FFFD", source, total)


def iter_without_surrogates(
    documents: Iterable[Document],
    source: str,
    keep: frozenset[str],
    counted: Callable[[int], None],
) -> Iterator[Document]:
    """:func:`documents_without_surrogates` one document at a time (a file's documents
    streamed, never listed), unlogged; the total goes to ``counted`` once the last one is
    read (for :func:`warn_replaced`)."""
    total = 0
    for document in documents:
        clean, count = document_without_surrogates(document, keep)
        total += count
        yield clean
    counted(total)


_ID_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str)
"""``json.dumps(..., sort_keys=True, default=str)`` without building an encoder per call
(that was most of the cost of an id, and a file of a million records needs a million)."""

_PLAIN_PARTS: dict[type, Callable[[Any], str]] = {
    str: encode_basestring,  # the function the encoder itself uses with ensure_ascii=False
    int: int.__repr__,  # as the encoder writes an int (bool, a subclass, is not this key)
    type(None): lambda _: "null",
}
"""The JSON of the parts nearly every id is made of (strings, integers, ``None``), written
without the encoder's per-call set-up, which cost more than the hash itself; an id of any
other part goes through :data:`_ID_ENCODER`, and both spell the same JSON."""


def stable_id(*parts: object) -> str:
    """Hex SHA-256 (first 32 characters) of the JSON encoding of ``parts``."""
    try:
        encoded = "[" + ", ".join([_PLAIN_PARTS[type(part)](part) for part in parts]) + "]"
    except KeyError:  # a list, a mapping, a float...
        encoded = _ID_ENCODER.encode(parts)
    payload = _escaped(encoded)  # as json_text writes it
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:32]


def derived_id(source: JsonValue, metadata: Mapping[str, JsonValue], text: str) -> str:
    """The id of a document that was given none: a hash of its ``source``, its place in
    the file and its ``text``. The place is a record's ``row`` (a record file's documents
    have one; a record's own ``page`` field is data), else the ``page``: two records or two
    pages of one file may hold the same text.

    One derivation for every document, so a derived id can be told from a given one (it
    equals this hash) and derived again when the source changes (the loader's relative
    source, :func:`~parsers.file_metadata.with_file_metadata`)."""
    place = metadata["row"] if "row" in metadata else metadata.get("page")
    return stable_id("doc", source, place, text)


def _chunk_id(doc_id: str, start: int, end: int, text: str) -> str:
    """A chunk's id: stable over its document, offsets and text."""
    return stable_id("chunk", doc_id, start, end, text)


class _Record(BaseModel):
    """What both records share: frozen, no unknown fields, and defaults (an id derived from
    the content) filled in by :meth:`_with_defaults` before validation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _fill_defaults(cls, data: Any) -> Any:
        return cls._with_defaults(data) if isinstance(data, dict) else data

    @classmethod
    def _with_defaults(cls, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` with the defaults filled in: a new dict when something is filled (the
        caller's is never changed), else ``data`` itself."""
        return data


class Document(_Record):
    """One unit of parsed text: a whole text file, or one page of a PDF.

    Attributes:
        id: stable identifier; defaults to :func:`derived_id`, a hash of
            ``metadata["source"]``, the record row or page, and ``text``.
        text: the normalised text.
        metadata: JSON values only. Always has ``source``; paged formats add ``page``
            (1-based) and ``page_label``; formats with a title add ``title``.
    """

    id: str = ""
    text: str
    metadata: dict[str, JsonValue] = {}

    @classmethod
    def _with_defaults(cls, data: dict[str, Any]) -> dict[str, Any]:
        given = data.get("metadata")
        if data.get("id") and isinstance(given, dict) and "source" in given:
            return data  # nothing to fill (a parser's record): validation copies the dict
        metadata = dict(given or {})
        metadata.setdefault("source", DEFAULT_SOURCE)
        data = {**data, "metadata": metadata}
        if not data.get("id"):
            data["id"] = derived_id(metadata["source"], metadata, data["text"])
        return data

    @property
    def source(self) -> str:
        """The file path or URL this document came from."""
        return str(self.metadata.get("source", DEFAULT_SOURCE))


class Chunk(_Record):
    """A span of a document: the unit that is indexed and retrieved.

    Invariant: ``document.text[chunk.start:chunk.end] == chunk.text``.

    Attributes:
        id: stable identifier derived from ``doc_id``, offsets and text.
        doc_id: the id of the document this chunk was cut from.
        text: the chunk text.
        start: character offset of the first character in the document text.
        end: character offset one past the last character.
        metadata: the document's metadata, plus ``page_start``/``page_end`` when the chunk
            lies on pages.
    """

    id: str = ""
    doc_id: str
    text: str
    start: int = 0
    end: int = -1
    metadata: dict[str, JsonValue] = {}

    @classmethod
    def _with_defaults(cls, data: dict[str, Any]) -> dict[str, Any]:
        data = dict(data)
        start = int(data.get("start", 0))
        if data.get("end", -1) == -1:
            data["end"] = start + len(data.get("text", ""))
        if not data.get("id"):
            data["id"] = _chunk_id(data["doc_id"], start, data["end"], data["text"])
        return data

    @classmethod
    def unchecked(
        cls, doc_id: str, text: str, start: int, end: int, metadata: dict[str, JsonValue]
    ) -> Chunk:
        """A chunk built without validation, its id derived as validation derives it.

        For fields known to be valid: a validated document's, cut at offsets that span the
        text (validating costs as much as splitting itself on short documents).
        """
        chunk_id = _chunk_id(doc_id, start, end, text)
        return cls.model_construct(
            id=chunk_id, doc_id=doc_id, text=text, start=start, end=end, metadata=metadata
        )

    @model_validator(mode="after")
    def _check_offsets(self) -> Chunk:
        if self.start < 0 or self.end - self.start != len(self.text):
            msg = (
                f"chunk {self.id}: offsets start={self.start} end={self.end} do not span "
                f"its text of length {len(self.text)}"
            )
            raise ValueError(msg)
        return self

    @classmethod
    def from_document(
        cls, document: Document, start: int, end: int, **extra_metadata: JsonValue
    ) -> Chunk:
        """Cut ``document.text[start:end]`` into a chunk carrying the document's metadata."""
        metadata: dict[str, JsonValue] = {**document.metadata, **extra_metadata}
        return cls(
            doc_id=document.id,
            text=document.text[start:end],
            start=start,
            end=end,
            metadata=metadata,
        )

    @property
    def source(self) -> str:
        """The file path or URL of the document this chunk came from."""
        return str(self.metadata.get("source", DEFAULT_SOURCE))
