"""Heading structure: where a document's sections start, and the heading path of a chunk.

Parsers of structured formats (Markdown, HTML, DOCX) record their headings in the
document's metadata under :data:`OUTLINE_KEY`: a list of ``[offset, level, title]``
(``offset`` into the document text, ``level`` 1 for a top heading). The splitter cuts at
those offsets first, so a chunk holds one section (a section with nothing but its heading
joins the next one, so "# Install" does not become a chunk of its own), and gives every
chunk ``headings``: the titles from the top level down to the section its last character
is in (``["Install", "From source"]``; ``[]`` before the first heading). The outline itself
stays on the document: chunks carry the path, not the whole table of contents.

Formats whose text is Markdown keep their ``#`` lines, so :func:`markdown_outline` reads
headings from the normalised text itself (ATX and setext, outside fenced code); likewise
:func:`rst_outline` for reStructuredText's underlined titles. Formats
whose headings are markup (HTML, DOCX) build the text from blocks with :func:`join_blocks`,
which knows each heading's offset as it joins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import JsonValue

from ragtools.parsers.normalize import normalize_text

__all__ = [
    "OUTLINE_KEY",
    "heading_path",
    "join_blocks",
    "markdown_outline",
    "rst_outline",
    "section_bounds",
]

OUTLINE_KEY = "outline"
"""Document metadata key of the heading table: ``[[offset, level, title], ...]``."""

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+")


def join_blocks(blocks: Iterable[tuple[str, int]]) -> tuple[str, list[JsonValue]]:
    """Join text blocks with a blank line, recording where the headings land.

    Args:
        blocks: ``(text, level)`` in reading order; ``level`` 0 for a body block (paragraph,
            code, table), 1-6 for a heading. Each text is normalised on its own.

    Returns:
        ``(text, outline)``: the normalised text (equal to normalising the joined blocks),
        and its ``[offset, level, title]`` entries.
    """
    parts: list[str] = []
    outline: list[JsonValue] = []
    offset = 0
    for raw, level in blocks:
        text = normalize_text(raw)
        if not text:
            continue
        if parts:
            offset += 2
        if level:
            outline.append([offset, level, " ".join(text.split())])
        parts.append(text)
        offset += len(text)
    return "\n\n".join(parts), outline


_ATTRIBUTE = r"""(?:[#.][^\s{}#.=]+|[\w-]+=(?:"[^"]*"|'[^']*'|[^\s{}"']+))"""
_ATTRIBUTES = re.compile(rf"[ \t]*\{{[ \t]*{_ATTRIBUTE}(?:[ \t]+{_ATTRIBUTE})*[ \t]*\}}[ \t]*$")


def heading_title(raw: str) -> str:
    """A Markdown heading's title without its attribute list: ``Default values { #defaults
    .note }`` (Python-Markdown's ``attr_list``, used by MkDocs sites such as FastAPI's, and
    Pandoc's header attributes) is ``Default values``. Braces that hold no ``#id``,
    ``.class`` or ``key=value`` stay: ``Use {braces}``.
    """
    return _ATTRIBUTES.sub("", raw).strip()


def markdown_outline(text: str) -> list[JsonValue]:
    """The ATX (``## Title``) and setext (``Title`` over ``===``) headings of Markdown
    ``text`` outside fenced code, as ``[offset, level, title]``."""
    outline: list[JsonValue] = []
    fence: str | None = None
    offset = 0
    previous: tuple[int, str] | None = None  # (offset, line) of a possible setext title
    for line in text.split("\n"):
        opened = _FENCE.match(line)
        if opened is not None:
            marker = opened.group(1)
            fence = None if fence == marker else (fence or marker)
            previous = None
        elif fence is None:
            atx = _ATX.match(line)
            setext = _SETEXT.match(line)
            if atx is not None:
                outline.append([offset, len(atx.group(1)), heading_title(atx.group(2))])
                previous = None
            elif setext is not None and previous is not None:
                level = 1 if setext.group(1).startswith("=") else 2
                outline.append([previous[0], level, heading_title(previous[1])])
                previous = None
            else:
                plain = line.strip() and not _LIST_ITEM.match(line)
                previous = (offset, line) if plain else None
        offset += len(line) + 1
    return outline


_RST_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}[ \t]*$")


def rst_outline(text: str) -> list[JsonValue]:
    """The section titles of reStructuredText ``text`` as ``[offset, level, title]``.

    A title is a line underlined (and optionally overlined) by a run of one punctuation
    character at least as long as it; levels follow the order in which adornment styles
    first appear, as docutils assigns them.
    """
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    styles: list[tuple[str, bool]] = []
    outline: list[JsonValue] = []
    index = 1
    while index < len(lines):
        under = _RST_ADORNMENT.match(lines[index])
        title = lines[index - 1].strip()
        if under is None or not title or _RST_ADORNMENT.match(lines[index - 1]):
            index += 1
            continue
        if len(lines[index].rstrip()) < len(title):
            index += 1
            continue
        over = index >= 2 and lines[index - 2].rstrip() == lines[index].rstrip()
        style = (under.group(1), over)
        if style not in styles:
            styles.append(style)
        first = index - 2 if over else index - 1
        outline.append([starts[first], styles.index(style) + 1, title])
        index += 2
    return outline


def _entries(outline: object) -> list[tuple[int, int, str]]:
    """The well-formed entries of a metadata outline, by offset."""
    if not isinstance(outline, list):
        return []
    entries = []
    for entry in outline:
        if (
            isinstance(entry, list)
            and len(entry) == 3
            and isinstance(entry[0], int)
            and isinstance(entry[1], int)
            and isinstance(entry[2], str)
        ):
            entries.append((entry[0], entry[1], entry[2]))
    return sorted(entries)


def section_bounds(text: str, outline: object) -> list[tuple[int, int]]:
    """``(start, end)`` of each section of ``text``: cut at every heading, except that a
    section holding only its heading (no blank line inside) joins the next one."""
    headings = {offset for offset, _, _ in _entries(outline) if 0 <= offset < len(text)}
    bounds: list[tuple[int, int]] = []
    section_start = previous = 0
    for start in sorted(headings - {0}):
        body = text[previous:start].strip()
        if body and ("\n\n" in body or previous not in headings):
            bounds.append((section_start, start))
            section_start = start
        previous = start
    bounds.append((section_start, len(text)))
    return [(start, end) for start, end in bounds if text[start:end].strip()]


def heading_path(outline: object, offset: int) -> list[str]:
    """Titles of the headings in effect at ``offset``, top level first."""
    return HeadingPaths(outline).at(offset)


class HeadingPaths:
    """:func:`heading_path` for many offsets of one document, the outline read once.

    Offsets asked in increasing order (a document's chunks) cost one pass over the outline
    in all: a call per chunk that read the whole outline made a document of 300,000
    headings quadratic (past its time budget). A smaller offset than the last starts the
    pass again.
    """

    def __init__(self, outline: object) -> None:
        self._entries = _entries(outline)
        self._restart()

    def _restart(self) -> None:
        self._next = 0
        self._stack: list[tuple[int, str]] = []
        self._offset = -1

    def at(self, offset: int) -> list[str]:
        """Titles of the headings in effect at ``offset``, top level first."""
        if offset < self._offset:
            self._restart()
        self._offset = offset
        entries, stack = self._entries, self._stack
        while self._next < len(entries) and entries[self._next][0] <= offset:
            _, level, title = entries[self._next]
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            self._next += 1
        return [title for _, title in stack]
