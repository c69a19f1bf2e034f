"""DOCX, PPTX and XLSX through python-docx, python-pptx and openpyxl (the ``office`` extra).

The libraries are imported lazily with :func:`parsers.optional.require`, so ``parsers``
works without them and a user who feeds an Office file gets an error naming
``pip install "ragtools[office]"``.

* DOCX: one document per file. Paragraphs and tables in reading order (body only; page
  headers and footers are furniture), paragraphs separated by a blank line, table rows one
  per line with cells joined by `` | ``. ``title``: the core property, else the first
  paragraph styled ``Title`` or ``Heading ...``. Those paragraphs are the outline
  (``Title`` and ``Heading 1`` level 1, ``Heading N`` level N), so chunks carry their
  heading path (:mod:`parsers.outline`).
* PPTX: one document per slide with text: shapes (groups and tables included) then the
  speaker notes, which often hold most of a talk's words. ``page`` and ``page_label`` are the
  slide number (slides are the pages of a deck, so chunks get ``page_start``/``page_end``
  and citations work as for PDF); ``title`` is the slide's title, else the deck's.
* XLSX: one document per sheet with values: cached formula results (``data_only``), rows
  one per line, cells joined by `` | ``, empty rows dropped; ``sheet`` is the sheet name.
  The range a sheet declares (its ``<dimension>``) is not trusted: openpyxl's read-only
  mode pads every row to the declared width and yields every declared row, so a 1.5 KB
  file declaring ``A1:XFD1048576`` meant 17 billion empty cells (past 120 s). Its
  ``reset_dimensions()`` reads the rows the sheet holds, each as wide as its last cell,
  which is also right for a file whose declared range is too small. What a sheet can
  still imply (a row numbered past Excel's 1,048,576, or rows of one far cell each) is
  bounded: :data:`MAX_ROWS` rows per sheet and :data:`MAX_CELLS` cells per workbook, empty
  ones included, each a ``ParseError`` naming the limit.

Decompression bombs: ``max_bytes`` sees only the compressed size, and a 1 MB package can
inflate to gigabytes of XML, or an XLSX can repeat one shared string in a million cells.
So before a library opens the package, the sizes its zip directory declares are checked
(:data:`MAX_UNZIPPED_BYTES` for all members, :data:`MAX_XML_BYTES` for the XML that
python-docx and python-pptx parse into whole trees; openpyxl streams a sheet); while
inflating, :mod:`zipfile` stops at the declared size (a member that lies fails its CRC
check); and the text produced is counted as it grows, up to
:data:`parsers._budget.MAX_TEXT_CHARS`. Each limit is a ``ParseError`` naming the file and
the limit.
"""

from __future__ import annotations

import logging
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from ragtools.parsers._budget import TextLimit
from ragtools.parsers.document import Document
from ragtools.parsers.errors import ParseError
from ragtools.parsers.normalize import normalize_text
from ragtools.parsers.optional import require
from ragtools.parsers.outline import OUTLINE_KEY, join_blocks
from ragtools.parsers.registry import is_ooxml, register_parser

__all__ = ["parse_docx", "parse_pptx", "parse_xlsx"]

logger = logging.getLogger(__name__)

_CELL_SEPARATOR = " | "
_OFFICE_PRIORITY = 20  # sniffed after PDF (10), before HTML, JSON and text

MAX_UNZIPPED_BYTES = 512 * 1024 * 1024
"""Declared uncompressed size of all members (images and media included: python-docx and
python-pptx read every part into memory)."""
MAX_ROWS = 1_048_576
"""Rows of one sheet: Excel's own limit (a row numbered past it is not a real sheet's)."""
MAX_CELLS = 100_000_000
"""Cells of one workbook, counting the empty ones before each row's last cell (what a reader
makes of a row): a million rows of a hundred columns; a real sheet that large would pass
:data:`parsers._budget.MAX_TEXT_CHARS` first."""
MAX_XML_BYTES = 32 * 1024 * 1024
"""Declared uncompressed size of the XML members of a DOCX or PPTX, which become whole trees
of about 18 times their size in memory when the XML is tiny elements (120 MB of one-word
paragraphs peaked at 2.1 GB): at this limit a file stays under 1 GB. A 1,000-page book's
``document.xml`` is some 10 MB."""


def _check_package(path: Path, source: str, kind: str) -> None:
    """Refuse a package whose zip directory declares more than the limits, before inflating."""
    xml_limit = MAX_XML_BYTES if kind in ("DOCX", "PPTX") else None
    try:
        with zipfile.ZipFile(path) as package:
            members = package.infolist()
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        msg = f"not a readable {kind} file ({type(exc).__name__}: {exc})"
        raise ParseError(source, msg) from exc
    total = sum(m.file_size for m in members)
    xml = sum(m.file_size for m in members if m.filename.lower().endswith((".xml", ".rels")))
    for size, limit, what in (
        (total, MAX_UNZIPPED_BYTES, "all members"),
        (xml, xml_limit, "its XML members"),
    ):
        if limit is not None and size > limit:
            msg = (
                f"{what} would inflate to {size} bytes, over the limit of {limit} bytes "
                "(a decompression bomb?); the file was not opened"
            )
            raise ParseError(source, msg)


def _open(loader: Any, path: Path, source: str, kind: str) -> Any:
    _check_package(path, source, kind)
    try:
        return loader(str(path))
    except Exception as exc:
        msg = f"not a readable {kind} file ({type(exc).__name__}: {exc})"
        raise ParseError(source, msg) from exc


def _row_text(values: list[str]) -> str:
    cells = [v.strip() for v in values]
    return _CELL_SEPARATOR.join(c for c in cells if c)


def _docx_table_rows(table: Any) -> Iterator[str]:
    for row in table.rows:
        seen: set[int] = set()
        values: list[str] = []
        # A cell spanning n grid columns is the same object n times in ``row.cells`` (and
        # the tuple keeps every cell alive, so ids are not reused): keep each once.
        for cell in row.cells:
            if id(cell) in seen:
                continue
            seen.add(id(cell))
            values.append(cell.text)
        line = _row_text(values)
        if line:
            yield line


def _heading_level(style: str) -> int:
    """Outline level of a paragraph style: ``Title`` 1, ``Heading 2`` 2, else 0."""
    if style == "Title":
        return 1
    level = style.removeprefix("Heading").strip()
    return min(int(level), 6) if style.startswith("Heading") and level.isdigit() else 0


def _paragraph_parts() -> Any:
    """A compiled XPath to a paragraph's text parts: ``paragraph.text`` is the ``str`` of
    each (python-docx's element classes map ``w:tab`` to a tab, ``w:br`` to a newline...),
    in document order, as python-docx computes it; python-docx compiles its two XPaths on
    every call, which is most of the time of a file of many short paragraphs."""
    from docx.oxml.ns import nsmap
    from lxml import etree

    kinds = ("br", "cr", "noBreakHyphen", "ptab", "t", "tab")
    paths = [f"{run}/w:{kind}" for run in ("w:r", "w:hyperlink/w:r") for kind in kinds]
    return etree.XPath(" | ".join(paths), namespaces=nsmap)


@register_parser(
    ".docx", sniff=is_ooxml("docx"), name="docx", _priority=_OFFICE_PRIORITY, _builtin=True
)
def parse_docx(path: Path, *, source: str, password: str | None = None) -> list[Document]:
    """Parse a Word document into one document.

    Raises:
        ParseError: not a readable DOCX, or python-docx is not installed.
    """
    docx = require("docx", "office")
    document = _open(docx.Document, path, source, "DOCX")
    blocks: list[tuple[str, int]] = []
    heading: str | None = None
    limit = TextLimit(source)
    # Style names by id, read once: python-docx's ``paragraph.style`` scans every style of
    # the document for each paragraph without one (a million tiny paragraphs: minutes).
    names = {style.style_id: style.name for style in document.styles}
    parts = _paragraph_parts()
    from docx.oxml.text.paragraph import CT_P
    from docx.table import Table

    # The body's paragraph and table elements in reading order, the ones iter_inner_content
    # wraps: a paragraph is read off its element, which python-docx's proxy keeps private.
    for element in document.element.body.inner_content_elements:
        if not isinstance(element, CT_P):  # a table
            rows = [limit.add(row) for row in _docx_table_rows(Table(element, document))]
            if rows:
                blocks.append(("\n".join(rows), 0))
            continue
        text = limit.add("".join(str(e) for e in parts(element)).strip())
        if not text:
            continue
        style_id = element.style  # None: the default paragraph style (body text)
        level = _heading_level(names.get(style_id) or "" if style_id else "")
        blocks.append((text, level))
        if heading is None and level:
            heading = text
    text, outline = join_blocks(blocks)
    if not text:
        logger.warning("%s: the DOCX has no text; no document", source)
        return []
    title = normalize_text(document.core_properties.title or "") or heading
    metadata: dict[str, JsonValue] = {"source": source, OUTLINE_KEY: outline}
    if title:
        metadata["title"] = normalize_text(title)
    return [Document(text=text, metadata=metadata)]


def _shape_texts(shapes: Any) -> Iterator[str]:
    for shape in shapes:
        if hasattr(shape, "shapes"):  # a group shape
            yield from _shape_texts(shape.shapes)
        elif getattr(shape, "has_text_frame", False):
            yield shape.text_frame.text
        elif getattr(shape, "has_table", False):
            rows = (_row_text([c.text for c in row.cells]) for row in shape.table.rows)
            yield "\n".join(r for r in rows if r)


@register_parser(
    ".pptx", sniff=is_ooxml("pptx"), name="pptx", _priority=_OFFICE_PRIORITY, _builtin=True
)
def parse_pptx(path: Path, *, source: str, password: str | None = None) -> list[Document]:
    """Parse a PowerPoint deck into one document per slide with text.

    Raises:
        ParseError: not a readable PPTX, or python-pptx is not installed.
    """
    pptx = require("pptx", "office")
    deck = _open(pptx.Presentation, path, source, "PPTX")
    deck_title = normalize_text(deck.core_properties.title or "")
    documents: list[Document] = []
    limit = TextLimit(source)
    for number, slide in enumerate(deck.slides, start=1):
        parts = [limit.add(t.strip()) for t in _shape_texts(slide.shapes)]
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            parts.append(limit.add(slide.notes_slide.notes_text_frame.text.strip()))
        text = normalize_text("\n\n".join(p for p in parts if p))
        if not text:
            logger.debug("%s: slide %d has no text", source, number)
            continue
        title_shape = slide.shapes.title
        title = normalize_text(title_shape.text_frame.text) if title_shape is not None else ""
        metadata: dict[str, JsonValue] = {
            "source": source,
            "page": number,
            "page_label": str(number),
        }
        if title or deck_title:
            metadata["title"] = title or deck_title
        documents.append(Document(text=text, metadata=metadata))
    return documents


class _CellCount:
    """The cells read so far from one workbook (:data:`MAX_CELLS`)."""

    def __init__(self) -> None:
        self.cells = 0


def _sheet_rows(sheet: Any, source: str, read: _CellCount) -> Iterator[tuple[Any, ...]]:
    """The rows of a read-only sheet that hold cells, as the sheet holds them (its declared
    range ignored; see the module docstring).

    Raises:
        ParseError: past :data:`MAX_ROWS` rows or :data:`MAX_CELLS` cells.
    """
    if hasattr(sheet, "reset_dimensions"):  # read-only sheets; the others hold their cells
        sheet.reset_dimensions()
    for rows, row in enumerate(sheet.iter_rows(values_only=True), start=1):
        read.cells += len(row)
        if rows > MAX_ROWS or read.cells > MAX_CELLS:
            what = (
                f"has more than {MAX_ROWS} rows (parsers.office.MAX_ROWS, Excel's limit)"
                if rows > MAX_ROWS
                else f"takes the workbook past {MAX_CELLS} cells (parsers.office.MAX_CELLS, "
                "empty cells before a row's last one included)"
            )
            msg = f"sheet {sheet.title!r} {what}; not a workbook a reader can take whole"
            raise ParseError(source, msg)
        if row:
            yield row


@register_parser(
    ".xlsx",
    ".xlsm",
    sniff=is_ooxml("xlsx"),
    name="xlsx",
    _priority=_OFFICE_PRIORITY,
    _builtin=True,
)
def parse_xlsx(path: Path, *, source: str, password: str | None = None) -> list[Document]:
    """Parse an Excel workbook into one document per sheet with values.

    Raises:
        ParseError: not a readable XLSX, or openpyxl is not installed.
    """
    openpyxl = require("openpyxl", "office")

    def load(name: str) -> Any:
        return openpyxl.load_workbook(name, read_only=True, data_only=True)

    workbook = _open(load, path, source, "XLSX")
    try:
        book_title = normalize_text(workbook.properties.title or "")
        documents: list[Document] = []
        limit = TextLimit(source)
        read = _CellCount()
        for index, sheet in enumerate(workbook.worksheets, start=1):
            lines = []
            for row in _sheet_rows(sheet, source, read):
                values = [str(v) for v in row if v is not None]
                limit.count(sum(map(len, values)))  # before joining: cells may repeat one string
                line = _row_text(values)
                if line:
                    lines.append(line)
            text = normalize_text("\n".join(lines))
            if not text:
                logger.debug("%s: sheet %r is empty", source, sheet.title)
                continue
            metadata: dict[str, JsonValue] = {
                "source": source,
                "sheet": sheet.title,
                "sheet_index": index,
            }
            if book_title:
                metadata["title"] = book_title
            documents.append(Document(text=text, metadata=metadata))
    finally:
        workbook.close()
    return documents
