"""PDF with pypdf: one document per page that has text.

pypdf is pure Python (no system library, installs everywhere, handles RC4 and, with the
``cryptography`` package of ``pypdf[crypto]``, AES encryption). It is lenient
(``strict=False``): truncated files and broken content streams give their best-effort text.

Per page: ``page`` (1-based), ``page_label`` (the label printed on the page, e.g. ``iv``,
when the PDF defines labels), the document ``title`` from the PDF metadata when set, and,
when the PDF has an outline (bookmarks), ``headings``: the path of the last outline entry
that starts on or before the page (``["2 Geometrie", "2.1 Punkte"]``; ``[]`` before the
first), which is what a reader of that page sees in the bookmark pane. An outline pypdf
cannot read gives no headings rather than failing the file.
Words hyphenated across a line break are joined, real compounds kept, on the evidence of
the whole file's vocabulary (:mod:`parsers.dehyphenate`); that runs once all pages are in,
in :func:`finish_pages`, so a PDF split over worker processes gets the same text.

A page without extractable text yields no document, and one WARNING per file names the file
and those pages, so nothing is lost silently: a page that draws images is a scanned image
(OCR is out of scope), a page that draws nothing is blank. A page whose text is glyph ids read
as code points (a CID font without a Unicode map) is re-read with pdfminer.six, which maps the
CJK collections through Adobe's CMaps (:mod:`parsers.pdf_text_check`); if that is garbage too,
or pdfminer.six is not installed, the page is skipped with a WARNING and nothing of it is
indexed. A page whose extraction fails is skipped with a WARNING as well; only a file
where every page fails, or that pypdf cannot open, raises :class:`ParseError`.

pypdf stops work past its safety limits (a stream inflating past 75 MB, a cyclic page tree:
``LimitReachedError``), which is what a decompression bomb meets. That is said as such,
never as "damaged": a page over a limit is skipped with a WARNING naming the limit, and a
file where no page could be read, or that cannot be opened for it, is a ``ParseError``
naming the file and pypdf's message.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from ragtools.parsers._budget import TextLimit
from ragtools.parsers.dehyphenate import dehyphenate
from ragtools.parsers.document import Document
from ragtools.parsers.errors import ParseError, PasswordRequiredError
from ragtools.parsers.normalize import normalize_text
from ragtools.parsers.pdf_text_check import looks_garbled, pdfminer_pages, uses_unmapped_cjk_font
from ragtools.parsers.registry import is_pdf, register_parser

__all__ = ["PdfPages", "extract_pages", "finish_pages", "format_pages", "parse_pdf"]

logger = logging.getLogger(__name__)


def format_pages(pages: list[int]) -> str:
    """Compact page list: ``[1, 2, 3, 5]`` → ``"1-3, 5"``."""
    runs: list[list[int]] = []
    for page in sorted(set(pages)):
        if runs and page == runs[-1][-1] + 1:
            runs[-1].append(page)
        else:
            runs.append([page])
    parts = [str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs]
    return ", ".join(parts)


def _open(path: Path, source: str, password: str | None) -> Any:
    from pypdf import PasswordType, PdfReader
    from pypdf.errors import DependencyError

    try:
        reader = PdfReader(path, strict=False)
    except Exception as exc:
        msg = over_limit(exc) or f"not a readable PDF ({type(exc).__name__}: {exc})"
        raise ParseError(source, msg) from exc
    if not reader.is_encrypted:
        return reader
    try:
        result = reader.decrypt(password or "")
    except DependencyError as exc:
        msg = f"encrypted PDF needs the cryptography package: pip install cryptography ({exc})"
        raise ParseError(source, msg) from exc
    except Exception as exc:
        msg = f"cannot decrypt this PDF ({type(exc).__name__}: {exc})"
        raise ParseError(source, msg) from exc
    if result == PasswordType.NOT_DECRYPTED:
        if password is None:
            msg = "the PDF is encrypted: a password is needed; pass password=..."
        else:
            msg = (
                "the PDF is encrypted and the password given is wrong: the right password is needed"
            )
        raise PasswordRequiredError(source, msg)
    return reader


def _title(reader: Any) -> str | None:
    try:
        raw = reader.metadata.title if reader.metadata is not None else None
    except Exception:  # broken info dictionaries are common; the title is optional
        logger.debug("PDF metadata unreadable", exc_info=True)
        return None
    title = normalize_text(str(raw)) if raw else ""
    return title or None


def _labels(reader: Any, n_pages: int) -> list[str]:
    try:
        labels = [str(label) for label in reader.page_labels]
    except Exception:  # an invalid /PageLabels tree: fall back to page numbers
        logger.debug("PDF page labels unreadable", exc_info=True)
        labels = []
    if len(labels) != n_pages:
        labels = [str(i + 1) for i in range(n_pages)]
    return labels


@dataclass
class PdfPages:
    """What one pass over (some of) the pages of a PDF found."""

    n_pages: int
    """Pages in the file (all of them, not only this pass's)."""
    documents: list[Document] = field(default_factory=list)
    """One per page with text, in page order."""
    no_text: list[int] = field(default_factory=list)
    """1-based pages without a text layer that draw images (scans)."""
    blank: list[int] = field(default_factory=list)
    """1-based pages that draw neither text nor images."""
    garbled: list[int] = field(default_factory=list)
    """1-based pages whose text is garbage however it is read."""
    failed: list[int] = field(default_factory=list)
    """1-based pages whose extraction raised (a limit excepted)."""
    limited: dict[int, str] = field(default_factory=dict)
    """1-based pages stopped by one of pypdf's safety limits, with its message."""


def extract_pages(
    path: Path, source: str, password: str | None, *, shard: int = 0, shards: int = 1
) -> PdfPages:
    """Extract the pages ``shard, shard + shards, ...`` (all by default) of a PDF.

    Sharding lets :func:`parsers.load_dir` spread one long PDF over worker processes: each
    opens the file (cheap, ~0.1 s for 117 pages) and extracts every ``shards``-th page.

    Raises:
        PasswordRequiredError: encrypted, and no password or a wrong one.
        ParseError: not a PDF pypdf can open, or no pages.
    """
    reader = _open(path, source, password)
    try:
        n_pages = len(reader.pages)
    except Exception as exc:
        msg = over_limit(exc) or f"cannot read the page tree ({type(exc).__name__}: {exc})"
        raise ParseError(source, msg) from exc
    if n_pages == 0:
        msg = "the PDF has no pages"
        raise ParseError(source, msg)
    title = _title(reader)
    labels = _labels(reader, n_pages)
    headings = _page_headings(reader, n_pages, source)
    result = PdfPages(n_pages)
    extracted: dict[tuple[str, ...], str] = {}
    texts: dict[int, str] = {}
    suspects: dict[int, int] = {}  # garbled page -> the first page drawn from the same objects
    first_garbled: dict[tuple[str, ...], int | None] = {}  # judged once per drawing
    limit = TextLimit(source)  # this share of the pages; finish_pages counts the whole file
    for index in range(shard, n_pages, shards):
        try:
            page = reader.pages[index]
            raw = _page_text(page, extracted)
        except Exception as exc:
            logger.debug("%s: page %d: extraction failed", source, index + 1, exc_info=True)
            if over_limit(exc):
                result.limited[index + 1] = str(exc)
            else:
                result.failed.append(index + 1)
            continue
        text = limit.add(normalize_text(raw or ""))
        if not text:
            (result.no_text if _draws_images(page) else result.blank).append(index + 1)
            continue
        key = _text_key(page)
        if key not in first_garbled:
            garbled = looks_garbled(text) or uses_unmapped_cjk_font(page)
            first_garbled[key] = index if garbled else None
        first = first_garbled[key]
        if first is None:
            texts[index] = text
        else:
            suspects[index] = first
    if suspects:
        texts.update(_reread(path, source, password, suspects, result))
    for index in sorted(texts):
        metadata: dict[str, JsonValue] = {
            "source": source,
            "page": index + 1,
            "page_label": labels[index],
        }
        if title:
            metadata["title"] = title
        if headings is not None:
            metadata["headings"] = list[JsonValue](headings[index])
        result.documents.append(Document(text=texts[index], metadata=metadata))
    return result


def _page_headings(reader: Any, n_pages: int, source: str) -> list[list[str]] | None:
    """Each page's outline path (see the module docstring); ``None``: no usable outline."""
    starts: list[tuple[int, list[str]]] = []

    def walk(items: list[Any], path: list[str]) -> None:
        last: list[str] = path
        for item in items:
            if isinstance(item, list):
                walk(item, last)  # the children of the entry just before
                continue
            page = reader.get_destination_page_number(item)
            text = " ".join(normalize_text(str(item.title or "")).split())
            last = [*path, text] if text else path
            if page is not None and 0 <= page < n_pages:
                starts.append((page, last))

    try:
        walk(list(reader.outline), [])
    except Exception:  # a broken outline is common; the pages stay readable without it
        logger.debug("%s: outline unreadable; no headings", source, exc_info=True)
        return None
    if not starts:
        return None
    starts.sort(key=lambda entry: entry[0])  # stable: entries of one page stay in order
    out: list[list[str]] = []
    at, current = 0, list[str]()
    for page in range(n_pages):
        while at < len(starts) and starts[at][0] <= page:
            current = starts[at][1]
            at += 1
        out.append(current)
    return out


def over_limit(exc: BaseException) -> str | None:
    """The reason to give for pypdf's ``LimitReachedError`` (else ``None``)."""
    from pypdf.errors import LimitReachedError

    return limit_reason(str(exc)) if isinstance(exc, LimitReachedError) else None


def limit_reason(message: str) -> str:
    """What stopping at a pypdf safety limit means, around pypdf's ``message``."""
    return (
        f"stopped at one of pypdf's safety limits ({message}): a decompression bomb, or a "
        "file bigger inside than pypdf reads"
    )


def _draws_images(page: Any) -> bool:
    """Whether a textless page draws images (a scan) rather than nothing (a blank page)."""
    try:
        return len(page.images) > 0
    except Exception:  # unreadable image resources: still more likely a scan than blank
        logger.debug("page images unreadable", exc_info=True)
        return True


def _reread(
    path: Path, source: str, password: str | None, suspects: dict[int, int], result: PdfPages
) -> dict[int, str]:
    """Re-read with pdfminer.six the pages whose pypdf text is garbled; record the lost ones.

    ``suspects`` maps each page to the first page drawn from the same objects: only that one
    is re-read, for the reason :func:`_page_text` gives.
    """
    try:
        reread = pdfminer_pages(path, sorted(set(suspects.values())), password)
    except Exception:  # pdfminer gives up on some files pypdf reads: those pages stay lost
        logger.debug("%s: pdfminer.six failed", source, exc_info=True)
        reread = {}
    if reread is None:
        logger.warning(
            "%s: page(s) %s use fonts without a Unicode map and pypdf reads them as garbage; "
            'install pdfminer.six (pip install "ragtools[cjk]") to read them',
            source,
            format_pages([index + 1 for index in suspects]),
        )
        reread = {}
    texts: dict[int, str] = {}
    for index, first in suspects.items():
        text = normalize_text(reread.get(first, ""))
        if text and not looks_garbled(text):
            texts[index] = text
        else:
            result.garbled.append(index + 1)
    return texts


def _page_text(page: Any, extracted: dict[tuple[str, ...], str]) -> str:
    """A page's text, extracted once for all pages drawn from the same objects.

    Pages may share one content stream: a 14 KB file whose 4 MB stream is drawn by 20 pages
    would otherwise be interpreted 20 times (three minutes). The key is what the text
    depends on, as the page refers to it: its content streams, its resources and its
    rotation (read raw, so references compare by object number).
    """
    key = _text_key(page)
    if key not in extracted:
        extracted[key] = page.extract_text() or ""
    return extracted[key]


def _text_key(page: Any) -> tuple[str, ...]:
    return tuple(repr(dict.get(page, name)) for name in ("/Contents", "/Resources", "/Rotate"))


def finish_pages(source: str, pages: PdfPages) -> list[Document]:
    """Log the skipped pages, join hyphenated words and return the documents in page order
    (or fail if no page could be read).

    Raises:
        ParseError: extraction failed on every page, or the pages hold more text than
            :data:`parsers._budget.MAX_TEXT_CHARS`.
    """
    if pages.limited and len(pages.failed) + len(pages.limited) == pages.n_pages:
        first = min(pages.limited)
        msg = f"no page could be read; page {first}: {limit_reason(pages.limited[first])}"
        raise ParseError(source, msg)
    if pages.failed and len(pages.failed) == pages.n_pages:
        msg = f"text extraction failed on every page ({pages.n_pages}); the PDF is damaged"
        raise ParseError(source, msg)
    if pages.limited:
        logger.warning(
            "%s: page(s) %s %s; those pages are skipped",
            source,
            format_pages(list(pages.limited)),
            limit_reason(pages.limited[min(pages.limited)]),
        )
    if pages.failed:
        logger.warning(
            "%s: text extraction failed on page(s) %s; those pages are skipped",
            source,
            format_pages(pages.failed),
        )
    if pages.no_text:
        logger.warning(
            "%s: no text layer on page(s) %s (scanned images?); OCR is out of scope, "
            "so those pages yield no text",
            source,
            format_pages(pages.no_text),
        )
    if pages.blank:
        logger.warning("%s: page(s) %s are blank", source, format_pages(pages.blank))
    if pages.garbled:
        logger.warning(
            "%s: page(s) %s give only garbage (glyphs without a Unicode mapping); "
            "nothing of them is indexed",
            source,
            format_pages(pages.garbled),
        )
    documents = sorted(pages.documents, key=_page_number)
    limit = TextLimit(source)
    texts = dehyphenate([limit.add(document.text) for document in documents])
    return [
        document if text == document.text else Document(text=text, metadata=document.metadata)
        for document, text in zip(documents, texts, strict=True)
    ]


def _page_number(document: Document) -> int:
    page = document.metadata.get("page")
    return page if isinstance(page, int) else 0


@register_parser(".pdf", sniff=is_pdf, name="pdf", _priority=10, _builtin=True)
def parse_pdf(path: Path, *, source: str, password: str | None = None) -> list[Document]:
    """Parse a PDF into one document per page with text.

    Args:
        path: the file.
        source: the path as given, stored as ``source`` metadata.
        password: the user (or owner) password of an encrypted PDF.

    Returns:
        Documents in page order; pages without text are skipped (with a WARNING).

    Raises:
        PasswordRequiredError: encrypted, and no password or a wrong one.
        ParseError: not a PDF pypdf can open, no pages, or no page could be extracted.
    """
    return finish_pages(source, extract_pages(path, source, password))
