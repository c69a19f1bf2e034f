"""SVG: the words of a drawing (its ``<title>``, ``<desc>`` and ``<text>``), never its markup.

An SVG file is text, so a plain-text reader indexes its markup: path data, styles and
coordinates that no one searches for and that crowd every result list (one draw.io
diagram of a documentation folder made 1,257 chunks of ``<path d="M 10 20 ...">``). The
words a reader sees or a screen reader speaks are in three elements, which SVG defines for
exactly this (SVG 2, "Accessibility"): ``<title>``, ``<desc>`` and ``<text>`` (with its
``<tspan>``s). Only those become the document, one line each in document order; the
``<title>`` directly under the root ``<svg>`` is the document's ``title``. draw.io writes
each label twice, as HTML in a ``<foreignObject>`` and as a ``<text>`` fallback for
viewers without HTML; the fallback is taken, so a label counts once.

A drawing without any of those elements has no words: the loader skips it with that
reason (:func:`svg_words` tells it, from the same extraction the parser runs), rather than
indexing nothing under a document name. Other readers differ: LlamaIndex's
``SimpleDirectoryReader`` and ripgrep read an SVG as the text it is (the markup problem
above); Haystack has no SVG converter and skips it. The words-only reading is what search
engines do with SVG images (their ``<title>`` and text are indexed, the shapes are not).

The markup is read with the standard library's forgiving ``html.parser`` (as
:mod:`parsers.html`'s fallback), not an XML parser: a drawing with a stray ``&`` or an
unclosed tag still gives its words, and no entity is ever expanded from a DTD (no
"billion laughs").
"""

from __future__ import annotations

import logging
import re
from html.parser import HTMLParser
from pathlib import Path

from pydantic import JsonValue

from ragtools.parsers.document import Document
from ragtools.parsers.normalize import normalize_text
from ragtools.parsers.registry import register_parser
from ragtools.parsers.text import decode_bytes

__all__ = ["TEXT_ELEMENTS", "is_svg", "parse_svg", "svg_words"]

logger = logging.getLogger(__name__)

#: The SVG elements whose content is text for people.
TEXT_ELEMENTS = frozenset({"title", "desc", "text"})

_SVG_START = re.compile(
    rb"^(?:\s|<!--.*?-->|<\?xml[^>]*>|<!doctype[^>\[]*(?:\[.*?\])?\s*>)*<(?:[\w-]+:)?svg[\s>/]",
    re.I | re.S,
)
_WORD_ELEMENT = re.compile(rb"<(?:[\w-]+:)?(?:title|desc|text)[\s>]", re.I)


def is_svg(head: bytes) -> bool:
    """An SVG document: ``<svg`` first, after a BOM, an XML declaration, comments, a doctype."""
    return _SVG_START.match(head.removeprefix(b"\xef\xbb\xbf")[:4096]) is not None


def _local(tag: str) -> str:
    return tag.rsplit(":", 1)[-1].lower()


class _Words(HTMLParser):
    """Collects the content of the outermost title/desc/text elements, in document order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.pieces: list[str] = []
        self.title: str | None = None
        self._open: list[str] = []  # elements open above the current position
        self._inside = 0  # depth inside a title/desc/text element
        self._current: list[str] = []
        self._is_root_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        name = _local(tag)
        if name in TEXT_ELEMENTS:
            if not self._inside:
                self._current = []
                self._is_root_title = name == "title" and self._open == ["svg"]
            self._inside += 1
        elif self._inside and name == "tspan" and self._current:
            self._current.append(" ")  # lines of a <text> are tspans: keep words apart
        self._open.append(name)

    def handle_endtag(self, tag: str) -> None:
        name = _local(tag)
        if name not in self._open:
            return  # a stray end tag: ignore, as browsers do
        while self._open:
            closed = self._open.pop()
            if closed in TEXT_ELEMENTS and self._inside:
                self._inside -= 1
                if not self._inside:
                    self._finish()
            if closed == name:
                break

    def handle_data(self, data: str) -> None:
        if self._inside:
            self._current.append(data)

    def close(self) -> None:
        super().close()
        while self._inside and self._open:  # an element left open at the end still counts
            self.handle_endtag(self._open[-1])

    def _finish(self) -> None:
        words = " ".join("".join(self._current).split())
        if words:
            self.pieces.append(words)
            if self._is_root_title and self.title is None:
                self.title = words


def svg_words(data: bytes, source: str | Path) -> tuple[str, str | None]:
    """The text and the title of an SVG file's bytes (see the module docstring).

    Returns:
        ``(text, title)``: the normalised words of its title/desc/text elements, one line
        each (``""`` when it has none), and the root ``<title>`` or ``None``.

    Raises:
        ParseError: the bytes are binary or in no recognisable encoding.
    """
    if _WORD_ELEMENT.search(data) is None:  # most drawings: no need to parse the markup
        return "", None
    reader = _Words()
    reader.feed(decode_bytes(data, source))
    reader.close()
    title = normalize_text(reader.title) if reader.title else None
    return normalize_text("\n".join(reader.pieces)), title or None


@register_parser(".svg", sniff=is_svg, name="svg", _builtin=True)
def parse_svg(path: Path, *, source: str, password: str | None = None) -> list[Document]:
    """Parse an SVG drawing into one document of its words (none when it has no words).

    Raises:
        ParseError: unreadable, binary or undecodable.
    """
    text, title = svg_words(path.read_bytes(), source)
    if not text:
        logger.warning("%s: SVG without <title>, <desc> or <text>; no document", source)
        return []
    metadata: dict[str, JsonValue] = {"source": source}
    if title:
        metadata["title"] = title
    return [Document(text=text, metadata=metadata)]
