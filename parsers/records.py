"""Record files: CSV, JSON and JSONL, and BEIR ``corpus.jsonl``; one document per record.

* The text of a record is one field: the one asked for (:func:`load_records`'s
  ``text_field``), else ``"text"``, else the first field (in column or key order) whose
  strings average at least :data:`LONG_FIELD_CHARS` characters over the first records,
  else the field with the longest strings. The other fields become metadata (JSON values
  as they are; CSV cells are strings), plus ``row``: the 1-based record number (the line
  number for JSON Lines). A field named like a key the loader owns (``source``, ``row``) is
  kept under ``record_<name>``.
* BEIR corpora are detected by an ``_id`` in every record: ``Document.id`` is the ``_id``
  exactly (qrels refer to it), the text is ``title + "\\n\\n" + text`` when the title is not
  empty, and ``title`` is metadata. A duplicated ``_id`` is an error (ids must be unique).
  :func:`load_beir_corpus` is the same conversion for a file that must be BEIR (``rag eval``
  reads its corpus with it), so an evaluation measures the text ``rag build`` indexes.
* Records whose text is empty are skipped (logged at DEBUG with their count).
* JSON may be an array of records (objects, or strings taken as text) or one object. A
  ``.json`` holding JSON Lines, or a ``.jsonl`` holding one JSON document, is read anyway.
* A record nested more than :data:`~parsers.nesting.MAX_NESTING` levels (the record itself
  being level 1) is a ``ParseError`` naming its record or line: its fields become metadata,
  which later steps copy and validate recursively.
* CSV and JSON Lines are line-oriented: a line longer than
  :data:`~parsers.text.MAX_LINE_BYTES` is a ``ParseError`` (:func:`parsers.text.read_lines`).
* CSV dialect (comma, semicolon, tab, pipe) is sniffed; ``.tsv`` is tab-separated. The
  first row is the header.
* A CSV row is searchable by every column, since a table's numbers and names are what
  people look rows up by ("limit 1000" must find the row whose ``limit`` column holds
  1000): its text is one ``column: value`` line per non-empty cell, in column order, as
  LangChain's ``CSVLoader`` writes it (LlamaIndex's ``CSVReader`` joins the cells with
  commas, losing the column names a query may use). Every column is metadata too, for
  filters. The row's ``title`` is its cell in the *title column*: the first column named
  ``title`` or ``name`` (any case), else the first column holding something other than
  numbers in the first rows, else the first column. ``load_records(text_field=...)``
  still takes one column as the text.
* Content is taken for JSON only when it starts like JSON (``{"``, ``{}``, ``[`` then a
  value): an INI or TOML file's ``[section]`` line is not a JSON array.
"""

from __future__ import annotations

import csv
import json
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from ragtools.parsers.document import Document, derived_id, documents_without_surrogates
from ragtools.parsers.errors import ParseError
from ragtools.parsers.nesting import nesting_problem, too_deep
from ragtools.parsers.normalize import normalize_text
from ragtools.parsers.registry import register_parser
from ragtools.parsers.text import decode_bytes, read_lines

__all__ = [
    "LONG_FIELD_CHARS",
    "PARTED",
    "load_beir_corpus",
    "load_records",
    "parse_csv",
    "parse_json",
    "parse_part",
]

logger = logging.getLogger(__name__)

#: A field whose strings average this many characters is "long": prose, not a label.
LONG_FIELD_CHARS = 20
_SAMPLE = 100
_RESERVED = frozenset({"source", "row"})
_JSON_START = re.compile(rb'\{\s*["}]|\[\s*(?:[\[{"\]0-9-]|true\b|false\b|null\b)')
_TITLE_COLUMNS = ("title", "name")
_CSV_SUFFIXES = (".csv", ".tsv")
_NUMBER = re.compile(r"\s*[-+]?[\d.,]*\d[\d.,]*%?\s*")

Record = tuple[int, Mapping[str, Any]]


def _sniff_json(head: bytes) -> bool:
    start = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    while start.startswith(b"[["):  # [[1]] is JSON, [[tool.x]] (TOML) is not
        start = start[1:].lstrip()
    return _JSON_START.match(start) is not None


def _choose_text_field(records: Sequence[Record], source: str) -> str:
    sample = [fields for _, fields in records[:_SAMPLE]]
    if any(isinstance(f.get("text"), str) for f in sample):
        return "text"
    totals: dict[str, list[int]] = {}
    for fields in sample:
        for key, value in fields.items():
            if isinstance(value, str):
                totals.setdefault(key, []).append(len(value))
    if not totals:
        msg = "no string field to take the text from; pass text_field= to load_records"
        raise ParseError(source, msg)
    means = {key: sum(lengths) / len(sample) for key, lengths in totals.items()}
    for key, mean in means.items():
        if mean >= LONG_FIELD_CHARS:
            return key
    return max(means, key=lambda k: means[k])


def _metadata(
    fields: Mapping[str, Any], skip: frozenset[str], source: str, row: int
) -> dict[str, JsonValue]:
    metadata: dict[str, JsonValue] = {"source": source, "row": row}
    for key, value in fields.items():
        if key in skip or not isinstance(key, str):
            continue
        if key == "metadata" and isinstance(value, Mapping):  # BEIR's nested metadata
            for inner, inner_value in value.items():
                metadata.setdefault(
                    f"record_{inner}" if inner in _RESERVED else str(inner), inner_value
                )
            continue
        metadata[f"record_{key}" if key in _RESERVED else key] = value
    return metadata


def _share(records: Sequence[Record], span: range | None) -> range:
    return range(len(records)) if span is None else span


def _beir_ids(records: Sequence[Record], source: str) -> dict[str, int]:
    """The row of each ``_id`` of ``records`` (those before a part's share: a duplicate is
    reported where it is, whichever share holds it)."""
    seen: dict[str, int] = {}
    for row, fields in records:
        _check_unique(seen, str(fields["_id"]), row, source)
    return seen


def _check_unique(seen: dict[str, int], doc_id: str, row: int, source: str) -> None:
    if doc_id in seen:
        msg = f"duplicate _id {doc_id!r} in records {seen[doc_id]} and {row}; ids must be unique"
        raise ParseError(source, msg)
    seen[doc_id] = row


def _beir_documents(
    records: Sequence[Record], source: str, seen: dict[str, int]
) -> Iterator[Document]:
    """The documents of BEIR ``records``, whose ``_id`` must not be in ``seen`` (the rows
    of the ids before them) nor repeat."""
    for row, fields in records:
        doc_id = str(fields["_id"])
        _check_unique(seen, doc_id, row, source)
        title = normalize_text(str(fields.get("title") or ""))
        body = normalize_text(str(fields.get("text") or ""))
        text = f"{title}\n\n{body}" if title and body else (title or body)
        if not text:
            continue
        metadata = _metadata(fields, frozenset({"_id", "title", "text"}), source, row)
        if title:
            metadata["title"] = title
        yield Document(id=doc_id, text=text, metadata=metadata)


def _text_field(records: Sequence[Record], source: str, text_field: str | None) -> str:
    field = text_field or _choose_text_field(records, source)
    if text_field is not None and not any(field in fields for _, fields in records):
        msg = f"text field {field!r} is in no record; fields: {sorted(records[0][1])}"
        raise ParseError(source, msg)
    return field


def _field_documents(records: Sequence[Record], source: str, field: str) -> Iterator[Document]:
    skip = frozenset({field})
    for row, fields in records:
        value = fields.get(field)
        text = normalize_text(value if isinstance(value, str) else "")
        if not text:
            continue
        metadata = _metadata(fields, skip, source, row)
        yield Document(id=derived_id(source, metadata, text), text=text, metadata=metadata)


def _cell(value: Any) -> str:
    """A CSV cell as text: a row's surplus cells (under ``extra``) are a list."""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value if v)
    return "" if value is None else str(value)


def _title_column(records: Sequence[Record]) -> str | None:
    columns = [key for key in records[0][1] if isinstance(key, str)] if records else []
    for wanted in _TITLE_COLUMNS:
        for column in columns:
            if column.strip().lower() == wanted:
                return column
    sample = [fields for _, fields in records[:_SAMPLE]]
    for column in columns:
        cells = [_cell(fields.get(column)).strip() for fields in sample]
        if any(cell and not _NUMBER.fullmatch(cell) for cell in cells):
            return column
    return columns[0] if columns else None


def _row_documents(
    records: Sequence[Record], source: str, span: range | None = None
) -> Iterator[Document]:
    """One document per CSV row (of the rows at the positions ``span`` only, when given:
    a part, see :func:`parse_part`; the title column is decided over all of them), every
    column searchable (see the module docstring)."""
    title_column = _title_column(records)
    span = _share(records, span)
    records = records[span.start : span.stop]  # a part's frees the other rows
    names: dict[Any, str] = {}  # each column's name as the text spells it, normalised once
    made = 0
    for row, fields in records:
        lines = []
        title = ""
        for key, value in fields.items():
            cell = normalize_text(_cell(value))
            if cell:  # lines of normalised parts, joined, are normalised text
                if key not in names:
                    names[key] = normalize_text(str(key).strip())
                lines.append(f"{names[key]}: {cell}")
                title = cell if key == title_column else title
        if not lines:
            continue
        text = "\n".join(lines)
        metadata = _metadata(fields, frozenset(), source, row)
        if title:
            metadata["title"] = " ".join(title.split())
        made += 1
        yield Document(id=derived_id(source, metadata, text), text=text, metadata=metadata)
    if made < len(span):
        logger.debug("%s: %d empty rows skipped", source, len(span) - made)


def _to_documents(
    records: Sequence[Record], source: str, text_field: str | None, span: range | None = None
) -> Iterator[Document]:
    """The documents of ``records`` (of the records at the positions ``span`` only, when
    given: a part, see :func:`parse_part`; what kind of records they are is decided over
    all of them), one at a time: a file of a million records is never a list of a million
    documents (the loader's consumer takes them as they come)."""
    span = _share(records, span)
    if not records:
        logger.warning("%s: no records; no document", source)
        return
    is_beir = text_field is None and all(
        isinstance(fields, dict)  # (a part's records outside its share are not checked)
        and isinstance(fields.get("_id"), (str, int))
        and not isinstance(fields["_id"], bool)
        for _, fields in records
    )
    documents = (
        _beir_documents(
            records[span.start : span.stop], source, _beir_ids(records[: span.start], source)
        )
        if is_beir
        else _field_documents(
            records[span.start : span.stop], source, _text_field(records, source, text_field)
        )
    )
    del records  # a part's documents need its own records only: the others are freed
    made = 0
    for document in documents:
        made += 1
        yield document
    if made < len(span):
        logger.debug("%s: %d records without text skipped", source, len(span) - made)


def _record(item: Any, number: int, source: str, *, lines: bool, check: bool = True) -> Any:
    """``item`` as a record: an object, or in a JSON array a string read as its text;
    errors name it as record ``number`` (line ``number`` in JSON Lines). ``check=False``
    returns any other item as it is (a part's record outside its share, see
    :func:`_json_records`)."""
    if isinstance(item, str) and not lines:
        return {"text": item}
    if not check:
        return item
    where = "line" if lines else "record"
    if not isinstance(item, dict):
        kinds = (
            "JSON Lines records must be objects" if lines else "records must be objects or strings"
        )
        raise ParseError(source, f"{where} {number} is a {type(item).__name__}; {kinds}")
    if too_deep(item):
        raise ParseError(source, f"{where} {number}: {nesting_problem()}; flatten its fields")
    return item


def _loads(text: str, source: str, where: str) -> Any:
    """``json.loads``; nesting deep enough to exhaust its recursion is a ``ParseError``."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ParseError(source, f"{where}: {nesting_problem()}; flatten its fields") from None


def _json_records(value: Any, source: str, part: tuple[int, int] = (0, 1)) -> list[Record]:
    """The records of a JSON value, each checked (:func:`_record`); for part ``part =
    (number, parts)`` of the file (:func:`parse_part`), only the part's share and the
    first records, which decide what the file's records are, are checked: the others are
    read as records (a string as its text) for those decisions, and checked by the part
    that holds them, so the first bad record fails its part, the file's first to fail."""
    items = value if isinstance(value, list) else [value]
    share = _part_span(len(items), *part)
    return [
        (n, _record(item, n, source, lines=False, check=n - 1 in share or n <= _SAMPLE))
        for n, item in enumerate(items, 1)
    ]


def _jsonl_records(text: str, source: str) -> list[Record]:
    records: list[Record] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = _loads(line, source, f"line {number}")
        except ValueError as exc:
            msg = f"line {number}: invalid JSON ({exc}); fix or remove that line"
            raise ParseError(source, msg) from exc
        records.append((number, _record(item, number, source, lines=True)))
    return records


def _read_json(path: Path, source: str, part: tuple[int, int] = (0, 1)) -> list[Record]:
    lines_first = path.suffix.lower() in (".jsonl", ".ndjson")
    text = decode_bytes(read_lines(path, source) if lines_first else path.read_bytes(), source)
    try:
        if lines_first:
            return _jsonl_records(text, source)
        return _json_records(_loads(text, source, "the JSON"), source, part)
    except (ValueError, ParseError) as first_error:
        try:
            if lines_first:
                return _json_records(_loads(text, source, "the JSON"), source, part)
            return _jsonl_records(text, source)
        except (ValueError, ParseError):
            if isinstance(first_error, ParseError):
                raise first_error from None
            msg = f"invalid JSON ({first_error})"
            raise ParseError(source, msg) from first_error


def _read_csv(path: Path, source: str) -> list[Record]:
    text = decode_bytes(read_lines(path, source), source)
    dialect: type[csv.Dialect] | csv.Dialect
    if path.suffix.lower() == ".tsv":
        dialect = csv.excel_tab
    else:
        try:
            dialect = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel
    try:
        reader = csv.DictReader(text.splitlines(), dialect=dialect, restkey="extra", restval="")
        records: list[Record] = [(row, fields) for row, fields in enumerate(reader, start=1)]
    except csv.Error as exc:
        msg = f"invalid CSV ({exc})"
        raise ParseError(source, msg) from exc
    if not reader.fieldnames:
        msg = "no header row; the first row must name the columns"
        raise ParseError(source, msg)
    return records


@register_parser(
    ".json", ".jsonl", ".ndjson", sniff=_sniff_json, name="json", _priority=40, _builtin=True
)
def parse_json(path: Path, *, source: str, password: str | None = None) -> Iterator[Document]:
    """Parse JSON or JSON Lines records (BEIR corpora included) into one document each.

    Raises:
        ParseError: invalid JSON, records that are not objects, no text field.
    """
    return _to_documents(_read_json(path, source), source, None)


@register_parser(*_CSV_SUFFIXES, name="csv", _builtin=True)
def parse_csv(path: Path, *, source: str, password: str | None = None) -> Iterator[Document]:
    """Parse CSV/TSV rows into one document each, every column searchable.

    Raises:
        ParseError: undecodable, invalid CSV, or no header.
    """
    return _row_documents(_read_csv(path, source), source)


#: The parsers whose files can be parsed in parts (:func:`parse_part`).
PARTED = frozenset({"csv", "json"})


def parse_part(
    parser: str, path: Path, *, source: str, part: int, parts: int
) -> Iterator[Document]:
    """The documents of one of ``parts`` contiguous shares of a record file's records:
    what ``parser`` (``"csv"`` or ``"json"``) makes of them, in order, as it makes them
    when it parses the whole file.

    Every share reads the whole file, so each decides what the records are (the text
    field, BEIR or not, the title column) as the whole file decides it; it checks its own
    records and the first ones, which those decisions read, so the first share to fail
    reports the file's first error; then it makes the documents of its own records only. The loader
    uses this to spread a file of a million records over its worker processes (each
    record's document costs far more than reading the file again).

    Raises:
        ParseError: as :func:`parse_csv` and :func:`parse_json` raise it.
    """
    if parser == "csv":
        rows = _read_csv(path, source)
        return _row_documents(rows, source, _part_span(len(rows), part, parts))
    records = _read_json(path, source, (part, parts))
    return _to_documents(records, source, None, _part_span(len(records), part, parts))


def _part_span(count: int, part: int, parts: int) -> range:
    """The positions of share ``part`` of ``parts`` (sizes differing by one at most)."""
    return range(count * part // parts, count * (part + 1) // parts)


def _read_file(file: Path, name: str) -> list[Record]:
    try:
        is_csv = file.suffix.lower() in _CSV_SUFFIXES
        return _read_csv(file, name) if is_csv else _read_json(file, name)
    except OSError as exc:
        msg = f"cannot read the file ({exc.strerror or exc})"
        raise ParseError(name, msg) from exc


def load_records(
    path: str | Path, *, text_field: str | None = None, source: str | None = None
) -> list[Document]:
    """Load a CSV/TSV, JSON or JSONL file of records, choosing the text field.

    Args:
        path: the file; CSV when its suffix is ``.csv``/``.tsv``, JSON(L) otherwise.
        text_field: the field holding the text; the other fields become metadata. ``None``
            reads as :func:`parsers.load` does (every column of a CSV row; for JSON the
            text field it chooses, and BEIR corpora detected).
        source: the ``source`` metadata; defaults to ``str(path)``.

    Returns:
        One document per record with text, in file order.

    Raises:
        ParseError: unreadable file, invalid records, or ``text_field`` in no record.
    """
    name = str(path) if source is None else source
    records = _read_file(Path(path), name)
    if text_field is None and Path(path).suffix.lower() in _CSV_SUFFIXES:
        return list(_row_documents(records, name))
    return list(_to_documents(records, name, text_field))


def _check_beir_record(fields: Mapping[str, Any], source: str, row: int) -> None:
    raw_id = fields.get("_id")
    if not isinstance(raw_id, (str, int)) or isinstance(raw_id, bool) or raw_id == "":
        msg = f'record {row}: "_id" must be a non-empty string or integer, got {raw_id!r}'
        raise ParseError(source, msg)
    if "text" not in fields:
        msg = f'record {row}: document {str(raw_id)!r} has no "text" field'
        raise ParseError(source, msg)
    for key in ("title", "text"):
        value = fields.get(key)
        if value is not None and not isinstance(value, str):
            msg = f"record {row}: field {key!r} must be a string, got {type(value).__name__}"
            raise ParseError(source, msg)


def load_beir_corpus(path: str | Path, *, source: str | None = None) -> list[Document]:
    """Load a BEIR ``corpus.jsonl``: the documents :func:`parsers.load` makes of it, or an error.

    ``parsers.load`` takes records as BEIR only when every one has an ``_id``; otherwise the
    file becomes generic records with derived ids, which qrels cannot refer to. An
    evaluation must fail instead, so here every record must be BEIR-shaped: an ``_id``
    (non-empty string or integer), a ``text`` field, string (or null) ``title`` and
    ``text``. The conversion itself is the one ``parse_json`` uses, so ``rag eval`` and
    ``rag build corpus.jsonl`` index the same ids, texts and metadata (lone surrogates
    replaced by U+FFFD here as :func:`parsers.load` replaces them).

    Args:
        path: the corpus file (JSON Lines; a JSON array of records is read too).
        source: the ``source`` metadata; defaults to ``str(path)``.

    Returns:
        One document per record with text (title, text or both), in file order.

    Raises:
        ParseError: unreadable file, invalid JSON, a record that is not BEIR-shaped (named
            by its record number: its line for JSON Lines), or a duplicate ``_id``.
    """
    name = str(path) if source is None else source
    records = _read_file(Path(path), name)
    for row, fields in records:
        _check_beir_record(fields, name, row)
    documents = list(_beir_documents(records, name, {}))
    if len(documents) < len(records):
        logger.debug("%s: %d records without text skipped", name, len(records) - len(documents))
    return documents_without_surrogates(documents, name, frozenset({"source"}))[0]
