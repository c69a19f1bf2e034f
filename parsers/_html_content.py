"""The main content of an HTML page as text blocks, headings and code kept with their layout.

Site furniture (an mdBook sidebar, its keyboard help and theme menu, cookie banners, "share"
links) is not a fixed set of tags, so a fixed drop list cannot remove it. trafilatura finds
the main content by the text and link density of the page's blocks. It was chosen by
``eval/compare_html_extractors.py`` on 64 real pages (Rust book mdBook chapters, libffi's
texinfo manual): as used here it drops all furniture and keeps every heading and every code
block byte for byte, where readability-lxml, the closest, keeps 85% of the headings (it
empties mdBook's linked headings; 76% when given the same preparation), and jusText and
inscriptis keep furniture and lose code layout. trafilatura as it comes scores poorly (36
furniture lines, 48% of headings, 58% of code blocks): the preparation below is what makes
it right. Its XML output is rendered here rather than its Markdown, which escapes ``_`` and
``*`` inside words (``ffi\\_prep\\_cif``).

On top of it, what it lacks: texinfo's navigation line ("Next: Simple Example, Up: Using
libffi [Index]"), which it takes for a paragraph, is dropped; code listings wrapped in a
``<figure>`` (mdBook's numbered listings) are unwrapped first, as trafilatura drops figures
whole, and a ``<pre>`` without ``<code>`` inside (texinfo's examples) gets one, as
trafilatura reads a bare ``<pre>`` as a quotation and collapses its whitespace.

A page without a ``<main>`` or ``<article>`` gets its body wrapped in an ``<article>``
before extraction: without a content container, trafilatura keeps the paragraphs but drops
every heading (a texinfo page loses "2.1 The Basics", a bare page its ``<h1>``).

trafilatura's ``MIN_EXTRACTED_SIZE`` (250 characters) is set to 1: below it, trafilatura
falls back to one flat paragraph of the whole page, furniture and all, which loses every
block boundary of a short page.

When trafilatura finds no main content (a page that is all furniture, or too short for its
heuristics) the whole body is rendered instead, so no page loses its text.
"""

from __future__ import annotations

import logging
import re
from typing import Any

logger = logging.getLogger(__name__)

_TEXINFO_NAV = re.compile(
    r"^\s*(?:(?:Next|Previous|Prev|Up|Contents|Index):.*(?:,\s*(?:Next|Previous|Prev|Up):|"
    r"\[(?:Index|Contents)\])|\[(?:Index|Contents)\]$)",
    re.S,
)
_HEAD_LEVEL = re.compile(r"h([1-6])")
_BLANK = re.compile(r"^\s+$")
# Inline elements after which trafilatura drops a blank tail ("<em>a</em> <b>b</b>" -> "ab").
_INLINE = re.compile(
    r"a|abbr|b|bdi|bdo|cite|code|data|dfn|em|i|kbd|mark|q|s|samp|small|span|strong|sub|sup|time|u|var"
)


def _inline(element: Any) -> str:
    """The text of an element, line breaks (``<lb/>``) kept, tags dropped."""
    parts = [element.text or ""]
    for child in element:
        parts.append("\n" if child.tag == "lb" else _inline(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _list_lines(element: Any, depth: int) -> list[str]:
    lines: list[str] = []
    for item in element:
        if item.tag != "item":
            continue
        nested = [child for child in item if child.tag == "list"]
        for child in nested:
            item.remove(child)
        text = " ".join(_inline(item).split())
        if text:
            lines.append(f"{'  ' * depth}- {text}")
        for child in nested:
            lines += _list_lines(child, depth + 1)
    return lines


def _blocks(element: Any, out: list[tuple[str, int]]) -> None:
    for child in element:
        tag = child.tag
        if tag == "head":
            level = _HEAD_LEVEL.fullmatch(child.get("rend") or "")
            out.append((" ".join(_inline(child).split()), int(level.group(1)) if level else 2))
        elif tag == "code":
            out.append((_inline(child), 0))
        elif tag == "list":
            out.append(("\n".join(_list_lines(child, 0)), 0))
        elif tag == "table":
            rows = [[" ".join(_inline(c).split()) for c in row] for row in child.iter("row")]
            out.append(("\n".join(" | ".join(c for c in row if c) for row in rows), 0))
        elif tag in ("div", "main", "section"):
            _blocks(child, out)
        elif tag not in ("graphic", "comments"):
            out.append((_inline(child), 0))


def drop_navigation(text: str) -> str:
    """``text`` without its texinfo navigation paragraphs (for the whole-body fallback)."""
    paragraphs = text.split("\n\n")
    return "\n\n".join(p for p in paragraphs if not _TEXINFO_NAV.match(p))


def _prepared(markup: str) -> str:
    """The page with a content container, its code listings out of ``<figure>`` and the
    blanks between inline elements inside them."""
    from bs4 import BeautifulSoup, Tag

    soup = BeautifulSoup(markup, "html.parser")
    for figure in soup.find_all("figure"):
        if figure.find("pre") is not None:
            figure.unwrap()
    for pre in soup.find_all("pre"):
        if pre.find("code") is None:
            code = soup.new_tag("code")
            code.string = pre.get_text()
            pre.clear()
            pre.append(code)
    for blank in soup.find_all(string=_BLANK):
        before = blank.previous_sibling
        if not isinstance(before, Tag) or blank.find_parent("pre") is not None:
            continue
        if _INLINE.fullmatch(before.name):
            before.append(" ")  # the space moves inside, where trafilatura keeps it
            blank.replace_with("")
    body = soup.body
    if body is not None and soup.find(("main", "article")) is None:
        article = soup.new_tag("article")
        for child in list(body.contents):
            article.append(child.extract())
        body.append(article)
    return str(soup)


def main_content_blocks(markup: str) -> list[tuple[str, int]] | None:
    """``(text, heading level or 0)`` blocks of the page's main content, or ``None`` when
    trafilatura finds none."""
    import xml.etree.ElementTree as ElementTree  # trafilatura's own output: no DTD, no entities

    import trafilatura
    from trafilatura.settings import use_config

    config = use_config()
    config.set("DEFAULT", "MIN_EXTRACTED_SIZE", "1")
    xml = trafilatura.extract(
        _prepared(markup),
        output_format="xml",
        include_formatting=True,
        include_tables=True,
        include_comments=False,
        include_images=False,
        include_links=False,
        favor_recall=True,
        deduplicate=False,
        config=config,
    )
    if not xml:
        return None
    root = ElementTree.fromstring(xml)
    main = root.find("main")
    blocks: list[tuple[str, int]] = []
    _blocks(main if main is not None else root, blocks)
    blocks = [(text, level) for text, level in blocks if level or not _TEXINFO_NAV.match(text)]
    return blocks if any(text.strip() for text, _ in blocks) else None
