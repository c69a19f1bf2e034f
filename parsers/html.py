"""HTML: the main content of a page, its headings as an outline, its ``<title>`` as metadata.

The main content comes from trafilatura (:mod:`parsers._html_content`, which says why that
library): headings, paragraphs, lists, tables and code blocks, each a block separated by a
blank line, code with its indentation and blank lines, headings recorded in the outline so
chunks carry their heading path (:mod:`parsers.outline`). Site furniture (sidebars, menus,
keyboard help, texinfo navigation lines) is left out.

When trafilatura finds no main content, the whole body is rendered with beautifulsoup4 and
the standard library's ``"html.parser"`` (forgiving, like browsers): a blank line around
block elements, a line break after list items, table rows and ``<br>``; ``script``,
``style``, ``noscript``, ``template``, ``svg``, ``nav``, ``header``, ``footer``, comments and
texinfo navigation lines dropped.

An element with more than :data:`MAX_ATTRIBUTES` attributes is a ``ParseError`` naming the
bound, found by one linear scan of the tags before any parser runs: lxml (under trafilatura)
checks each attribute against the element's others, so its time grows with the square of
their number and more (20,000 attributes took 3 s, 40,000 took 30 s, and the 500,000 of a
crafted 6 MB page would take hours, inside C code no timer reaches). No real page comes
near the bound; a browser has none, but a browser does not run lxml.

Encoding: a BOM, else a ``<meta charset>`` (or ``http-equiv`` content type) declaration in
the first bytes, else the same detection as plain text (:func:`parsers.text.decode_bytes`).
"""

from __future__ import annotations

import codecs
import logging
import re
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from ragtools.parsers._html_content import drop_navigation, main_content_blocks
from ragtools.parsers.document import Document
from ragtools.parsers.errors import ParseError
from ragtools.parsers.normalize import normalize_text
from ragtools.parsers.outline import OUTLINE_KEY, join_blocks
from ragtools.parsers.registry import is_html, register_parser
from ragtools.parsers.text import decode_bytes

__all__ = ["DROPPED_TAGS", "MAX_ATTRIBUTES", "html_to_text", "parse_html"]

logger = logging.getLogger(__name__)

DROPPED_TAGS = ("script", "style", "noscript", "template", "svg", "nav", "header", "footer", "head")
# Blocks are paragraphs (a blank line around them); line tags end a line only, so list
# items and table rows stay together as one paragraph.
# fmt: off
_BLOCK_TAGS = frozenset({
    "address", "article", "aside", "blockquote", "dl", "div", "fieldset", "figure", "form",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "main", "ol", "p", "pre", "section", "table", "ul",
})
# fmt: on
_LINE_TAGS = frozenset(["br", "caption", "dd", "dt", "figcaption", "li", "tr"])
MAX_ATTRIBUTES = 1000
"""Attributes one element may have (see the module docstring); real pages stay under 100."""
# A start tag's name and the rest up to its end (or the next "<"), then its attributes as
# html.parser tokenises them: each match consumes what it counts, so a scan is linear.
_START_TAG = re.compile(r"<[A-Za-z][^\s/>]*([^<>]*)")
_ATTRIBUTE = re.compile(r"""[^\s"'>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]*))?""")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)


def _declared_encoding(data: bytes) -> str | None:
    match = _META_CHARSET.search(data[:4096])
    if match is None:
        return None
    name = match.group(1).decode("ascii", "replace")
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _decode_html(data: bytes, source: str) -> str:
    if not data.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        declared = _declared_encoding(data)
        if declared is not None and b"\x00" not in data[:4096]:
            # Browsers treat a declared Latin-1 as Windows-1252 (WHATWG Encoding Standard).
            if declared in ("latin-1", "iso8859-1", "ascii"):
                declared = "cp1252"
            return data.decode(declared, errors="replace")
    return decode_bytes(data, source)


def _check_attributes(markup: str, source: str) -> None:
    """Raises: ParseError: an element has more than :data:`MAX_ATTRIBUTES` attributes."""
    for tag in _START_TAG.finditer(markup):
        body = tag.group(1)
        if body.count("=") + len(body.split()) <= MAX_ATTRIBUTES:
            continue  # a bound on the count, cheap: every tag of a real page stops here
        count = sum(1 for _ in _ATTRIBUTE.finditer(body))
        if count > MAX_ATTRIBUTES:
            line = markup.count("\n", 0, tag.start()) + 1
            msg = (
                f"line {line}: an element has {count} attributes, more than "
                f"{MAX_ATTRIBUTES} (parsers.html.MAX_ATTRIBUTES), which no real page has and "
                "which would take the HTML parser hours; remove the attributes"
            )
            raise ParseError(source, msg)


def html_to_text(markup: str) -> tuple[str, str | None, list[JsonValue]]:
    """Extract the main content, the title and the headings of an HTML document.

    Args:
        markup: the decoded HTML.

    Returns:
        ``(text, title, outline)``: normalised text (empty when nothing is visible), the
        normalised ``<title>`` or ``None`` when it is missing or empty, and the
        ``[offset, level, title]`` of each heading in the text.
    """
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(markup, "html.parser")
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text(" ").split()) if title_tag is not None else ""
    title = normalize_text(title)
    blocks = main_content_blocks(markup)
    if blocks is not None:
        text, outline = join_blocks(blocks)
        return text, (title or None), outline
    return drop_navigation(normalize_text(_visible_text(soup))), (title or None), []


def _visible_text(root: Any) -> str:
    """The text of ``root`` with the separators of its block, line and cell tags.

    One iterative walk, linear in the tree however wide or deep: inserting separator
    strings into the tree instead costs a scan of the siblings (and of a subtree's last
    descendants) per insert, quadratic on 40,000 sibling paragraphs or 10,000 nested divs,
    and a recursive walk would overflow the stack on deep nesting. Only plain text and
    CDATA count (no comments, doctypes or processing instructions), as for ``get_text``.
    """
    from bs4.element import CData, NavigableString

    pieces: list[str] = []
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):  # a separator due after a tag's children
            pieces.append(node[0])
        elif isinstance(node, NavigableString):
            if type(node) in (NavigableString, CData):
                pieces.append(str(node))
        elif node.name not in DROPPED_TAGS:
            if node.name in _BLOCK_TAGS:
                pieces.append("\n\n")
                stack.append(("\n\n",))
            elif node.name in _LINE_TAGS:
                stack.append(("\n",))
            elif node.name in ("td", "th"):  # cells of a row stay on one line
                stack.append((" ",))
            stack.extend(reversed(node.contents))
    return "".join(pieces)


@register_parser(".html", ".htm", ".xhtml", sniff=is_html, name="html", _builtin=True)
def parse_html(path: Path, *, source: str, password: str | None = None) -> list[Document]:
    """Parse an HTML file into one document with ``title`` from ``<title>``.

    Raises:
        ParseError: unreadable, binary or undecodable.
    """
    markup = _decode_html(path.read_bytes(), source)
    if "\x00" in markup:
        msg = "binary content (NUL characters), not HTML"
        raise ParseError(source, msg)
    _check_attributes(markup, source)
    text, title, outline = html_to_text(markup)
    if not text:
        logger.warning("%s: no visible text in the HTML; no document", source)
        return []
    metadata: dict[str, JsonValue] = {"source": source, OUTLINE_KEY: outline}
    if title:
        metadata["title"] = title
    return [Document(text=text, metadata=metadata)]
