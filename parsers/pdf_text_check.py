"""Text that is not text: spotting garbled PDF pages and re-reading them with pdfminer.six.

A font without a ``/ToUnicode`` map gives pypdf nothing but glyph ids. With a CID font in
``Identity-H`` encoding (common in Japanese slides) pypdf then returns the CIDs themselves as
code points: a Japanese page comes out as a run of Greek, Arabic, Thaana, Lao and unassigned
characters, and searching it in Japanese finds nothing. pdfminer.six ships Adobe's CMaps
(Japan1, GB1, CNS1, Korea1), so it maps the CIDs of a font whose ``/CIDSystemInfo`` names one
of those orderings to Unicode without a ``/ToUnicode`` map. It is slower than pypdf, so it
only re-reads the pages that need it: those drawn in such a font
(:func:`uses_unmapped_cjk_font`, which catches kana that pypdf turns into passable Greek) and
those whose text :func:`looks_garbled`.

The test is script-based, since the wrong code points are real characters: a page is garbled
when many of its characters are unassigned, private-use, controls, replacement characters or
leftover combining marks, or when, within runs without spaces, the script changes from one
letter to the next (kanji and kana count as one script). Real text stays in one script for a
word at least, so multilingual pages (English, Arabic, Russian, Chinese and Hebrew lines on one
page, a German text quoting Greek, Japanese with Latin product names) pass.
"""

from __future__ import annotations

import itertools
import logging
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["looks_garbled", "pdfminer_pages", "uses_unmapped_cjk_font"]

logger = logging.getLogger(__name__)

#: pdfminer's rendering of a CID it cannot map.
_UNMAPPED_CID = re.compile(r"\(cid:\d+\)")
_WORD = re.compile(r"[^\W\d_]+")
_BAD_CATEGORIES = frozenset({"Cn", "Co", "Cs", "Cc"})
#: Japanese and Chinese text mixes these in one word; they count as one script.
_EAST_ASIAN = frozenset({"CJK", "HIRAGANA", "KATAKANA", "HALFWIDTH", "FULLWIDTH", "IDEOGRAPHIC"})
#: Name prefixes of marks, modifiers and digits shared by every script.
_NEUTRAL = frozenset({"COMBINING", "MODIFIER", "DIGIT", "SUPERSCRIPT", "SUBSCRIPT", "VULGAR"})
SAMPLE_CHARS = 20_000
_MAX_BAD_SHARE = 0.3
_MIN_PAIRS = 4
_MAX_SWITCH_SHARE = 0.3


def _script(ch: str) -> str | None:
    """The script of a letter, mark or digit, from its Unicode name; None if script-neutral."""
    if ch.isascii():
        return "LATIN" if ch.isalpha() else None
    if unicodedata.category(ch)[0] not in "LMN":
        return None
    first = unicodedata.name(ch, "").split(" ", 1)[0]
    if first in _EAST_ASIAN or first.startswith(("KATAKANA", "CJK")):
        return "CJK"
    return None if first in _NEUTRAL else first or None


def _is_bad(ch: str) -> bool:
    """Unassigned, private-use, surrogate, control, replacement or a stray combining mark."""
    if ch == "\ufffd" or unicodedata.category(ch) in _BAD_CATEGORIES:
        return True
    # Text is NFKC-normalised, so accents are composed: generic combining marks left over
    # (U+0300-036F and the like) are rare in real text and common in CIDs read as code points.
    return unicodedata.category(ch) == "Mn" and unicodedata.name(ch, "").startswith("COMBINING")


def looks_garbled(text: str) -> bool:
    """True when ``text`` is glyph ids read as code points rather than words (see module doc).

    ``(cid:N)`` placeholders, pdfminer's output for glyphs it cannot map, count as bad
    characters. Only the first :data:`SAMPLE_CHARS` characters are judged: a page is written
    in one font far more often than not, and a page of megabytes must not cost seconds.
    """
    text = _UNMAPPED_CID.sub("\ufffd", text[:SAMPLE_CHARS])
    tokens = text.split()
    n_chars = sum(len(token) for token in tokens)
    if n_chars == 0:
        return False
    bad = sum(1 for token in tokens for ch in token if _is_bad(ch))
    if bad / n_chars > _MAX_BAD_SHARE:
        return True
    # Within a space-free run, real text stays in one script for many characters at a time;
    # code points chosen by glyph id jump between scripts from one character to the next.
    pairs = switches = 0
    for token in tokens:
        scripts = [s for s in map(_script, token) if s is not None]
        pairs += max(len(scripts) - 1, 0)
        switches += sum(1 for a, b in itertools.pairwise(scripts) if a != b)
    return pairs >= _MIN_PAIRS and switches / pairs > _MAX_SWITCH_SHARE


#: The Adobe character collections whose CMaps pdfminer.six ships.
_CJK_ORDERINGS = frozenset({"Japan1", "GB1", "CNS1", "Korea1"})


def uses_unmapped_cjk_font(page: Any) -> bool:
    """True when a pypdf page draws with a CID font of a CJK collection and no ToUnicode map.

    pypdf reads such a font's CIDs as code points, and a page of kana can come out as Greek
    words that :func:`looks_garbled` cannot tell from real Greek; the font says it for sure.
    """
    try:
        fonts = page["/Resources"]["/Font"].get_object()
        for ref in fonts.values():
            font = ref.get_object()
            if font.get("/Subtype") != "/Type0" or "/ToUnicode" in font:
                continue
            for descendant in font.get("/DescendantFonts", []):
                info = descendant.get_object().get("/CIDSystemInfo")
                ordering = info.get_object().get("/Ordering") if info is not None else None
                if str(ordering) in _CJK_ORDERINGS:
                    return True
    except (KeyError, AttributeError, TypeError, ValueError):  # no or malformed resources
        return False
    return False


def pdfminer_pages(
    path: Path, indexes: Iterable[int], password: str | None
) -> dict[int, str] | None:
    """The text pdfminer.six extracts from the 0-based pages ``indexes``, or None without it.

    One pass over the file for all the pages, so a deck of garbled pages is opened once.
    """
    try:
        from pdfminer.high_level import extract_pages
        from pdfminer.layout import LAParams, LTTextContainer
    except ImportError:
        return None
    wanted = sorted(set(indexes))
    layouts = extract_pages(path, password=password or "", page_numbers=wanted, laparams=LAParams())
    texts: dict[int, str] = {}
    for index, layout in zip(
        wanted, layouts, strict=False
    ):  # pages come in file order, as ``wanted``
        parts = [item.get_text() for item in layout if isinstance(item, LTTextContainer)]
        texts[index] = "".join(parts)
    return texts
