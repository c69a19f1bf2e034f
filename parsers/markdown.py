"""Markdown: front matter to metadata, the text (headings included) as one document.

The Markdown itself is kept as text: headings, lists and emphasis markers are few
characters, they help a reader of a retrieved chunk, and stripping them would need a full
CommonMark parser. What is parsed:

* Front matter: a block between a first line ``---`` and a closing ``---`` (or ``...``)
  line. Only the simple YAML everyone writes is understood, by hand and never through
  ``yaml.load`` (which can build arbitrary objects): ``key: value`` lines, where the value
  is read as JSON when it is valid JSON (numbers, ``true``, ``null``, quoted strings,
  ``["a", "b"]``), as a list for ``[a, b]``, as a string otherwise; and block lists
  (``key:`` followed by ``- item`` lines). Nested mappings are skipped with a DEBUG log.
  Keys that the parser owns (``source``) are not overwritten.
* ``outline``: the headings, so chunks get their heading path (:mod:`parsers.outline`).
* ``title``: the front matter's ``title``, else the first ATX (``# Title``) or setext
  (``Title`` over ``=====``) heading outside code fences.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

from pydantic import JsonValue

from ragtools.parsers.document import Document
from ragtools.parsers.normalize import normalize_text
from ragtools.parsers.outline import OUTLINE_KEY, heading_title, markdown_outline
from ragtools.parsers.registry import register_parser
from ragtools.parsers.text import decode_bytes, read_lines

__all__ = ["first_heading", "parse_front_matter", "parse_markdown"]

logger = logging.getLogger(__name__)

_RESERVED = frozenset({"source", "outline", "headings"})
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S | re.M)
_KEY_VALUE = re.compile(r"^([A-Za-z_][\w.-]*)[ \t]*:(?:[ \t]+(.*?))?[ \t]*$")
_LIST_ITEM = re.compile(r"^[ \t]+-[ \t]+(.*?)[ \t]*$|^-[ \t]+(.*?)[ \t]*$")
_ATX = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def _scalar(raw: str) -> JsonValue:
    raw = raw.strip()
    if not raw:
        return ""
    try:
        value: JsonValue = json.loads(raw)
    except ValueError:
        pass
    else:
        return value
    if raw.startswith("[") and raw.endswith("]"):
        return [_unquote(part) for part in raw[1:-1].split(",") if part.strip()]
    return _unquote(raw)


def _unquote(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    return raw


def parse_front_matter(text: str) -> tuple[dict[str, JsonValue], str]:
    """Split ``text`` into its front matter (as metadata) and the Markdown body.

    Args:
        text: the whole Markdown file.

    Returns:
        ``(metadata, body)``; ``({}, text)`` when there is no front matter block.

    Example:
        >>> parse_front_matter("---\\ntitle: Hi\\ntags: [a, b]\\n---\\n# Body\\n")
        ({'title': 'Hi', 'tags': ['a', 'b']}, '# Body\\n')
    """
    match = _FRONT_MATTER.match(text)
    if match is None:
        return {}, text
    metadata: dict[str, JsonValue] = {}
    list_key: str | None = None
    block_lists: set[str] = set()
    for line in match.group(1).splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = _LIST_ITEM.match(line)
        if item is not None and list_key is not None:
            current = metadata[list_key]
            if isinstance(current, list):
                current.append(_scalar(item.group(1) or item.group(2) or ""))
            continue
        pair = _KEY_VALUE.match(line)
        if pair is None or line[:1].isspace():
            logger.debug("front matter: skipping unsupported line %r", line)
            continue
        key, raw = pair.group(1), pair.group(2)
        list_key = None
        if key in _RESERVED:
            logger.debug("front matter: key %r is reserved; skipped", key)
            continue
        if raw is None or not raw.strip():
            metadata[key] = []
            list_key = key
            block_lists.add(key)
        else:
            metadata[key] = _scalar(raw)
    for key in block_lists:
        if metadata.get(key) == []:  # ``key:`` with no value and no items: an empty string
            metadata[key] = ""
    return metadata, text[match.end() :]


def first_heading(markdown: str) -> str | None:
    """The text of the first ATX or setext heading outside fenced code, or ``None``."""
    in_fence: str | None = None
    previous = ""
    for line in markdown.splitlines():
        fence = _FENCE.match(line)
        if fence is not None:
            marker = fence.group(1)
            in_fence = None if in_fence == marker else (in_fence or marker)
            previous = ""
            continue
        if in_fence is not None:
            continue
        atx = _ATX.match(line)
        if atx is not None:
            return heading_title(atx.group(1))
        if previous.strip() and _SETEXT.match(line) and not _LIST_ITEM.match(previous):
            return heading_title(previous)
        previous = line
    return None


@register_parser(".md", ".markdown", ".mdown", ".mkd", name="markdown", _builtin=True)
def parse_markdown(path: Path, *, source: str, password: str | None = None) -> list[Document]:
    """Parse a Markdown file into one document with front matter and ``title`` as metadata.

    Raises:
        ParseError: unreadable, binary, undecodable, or a line over ``MAX_LINE_BYTES``.
    """
    front, body = parse_front_matter(decode_bytes(read_lines(path, source), source))
    text = normalize_text(body)
    if not text:
        logger.warning("%s: no text after the front matter; no document", source)
        return []
    metadata: dict[str, JsonValue] = {**front, "source": source}
    metadata[OUTLINE_KEY] = markdown_outline(text)
    title = front.get("title")
    if isinstance(title, (str, int, float)) and not isinstance(title, bool) and str(title).strip():
        metadata["title"] = str(title).strip()
    else:
        metadata.pop("title", None)
        heading = normalize_text(first_heading(body) or "")
        if heading:
            metadata["title"] = heading
    return [Document(text=text, metadata=metadata)]
