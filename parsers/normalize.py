"""Text normalisation applied by every built-in parser, so all formats index alike.

What is done, in order, and why:

1. Line ends ``\\r\\n``/``\\r`` become ``\\n``; form feeds and vertical tabs (page and section
   breaks in extracted text) become ``\\n``.
2. Unicode NFKC: ligatures (``ﬂ`` → ``fl``, so "Auflage" not "Auﬂage"), full-width Latin
   letters and digits, Arabic presentation forms and the many Unicode space characters fold
   to the forms people type in queries. NFKC is the choice of most search engines'
   analysers; its only loss (superscripts, ``½`` → ``1⁄2``) does not hurt retrieval.
3. U+FFFD (the replacement character for glyphs without a Unicode mapping, e.g. emoji in
   some PDFs), the byte-order mark, zero-width spaces and other control characters are
   dropped: they carry no text and break tokenisers.
4. Whitespace is kept as the file has it (indentation of code, aligned columns), except
   what carries nothing: trailing spaces and tabs of each line, and runs of blank lines,
   which become one blank line (it keeps the paragraph structure the splitter uses).
   Leading blank lines and trailing whitespace of the whole text are removed; the first
   line keeps its indentation.

Search normalises whitespace on its own input, so stored text can keep the layout a reader
needs: the keyword tokenizer splits on any whitespace run, and the vector half cuts its
windows from, and embeds, :func:`compact_whitespace` of the text: one space for every run of
spaces and tabs, no space around a line break, at most one blank line, which is the text as
this module stored it before layout was kept. So keeping the layout changes neither the
tokens nor the vectors of a text.

The whole pass is a handful of C-level ``str``/``re`` operations, so it costs well under a
millisecond per page.
"""

from __future__ import annotations

import logging
import re
import unicodedata

__all__ = ["compact_whitespace", "normalize_text"]

logger = logging.getLogger(__name__)

# C0/C1 controls except \t and \n (handled by the whitespace rules), DEL, U+FFFD, BOM and
# zero-width space/joiners that NFKC keeps but that only split words invisibly.
_DROP = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\ufffd\ufeff\u200b\u2060]")
_LINE_BREAKS = re.compile("\r\n?|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_TRAILING = re.compile(r"[^\S\n]+(?=\n|\Z)")
_MANY_NL = re.compile(r"\n{3,}")
_HSPACE = re.compile(r"[^\S\n]+")
_SPACE_AROUND_NL = re.compile(r" ?\n ?")


def normalize_text(text: str) -> str:
    """Return ``text`` NFKC-normalised, cleaned of invisible characters, layout kept.

    Args:
        text: raw extracted text.

    Returns:
        The normalised text; empty when ``text`` held no visible characters.

    Example:
        >>> normalize_text("Auﬂage\\t1,  \\r\\n\\r\\n\\r\\n\\r\\n    seite\\ufffd 2 ")
        'Auflage\\t1,\\n\\n    seite 2'
    """
    if text.isascii() and text.isprintable():  # one line of plain ASCII: a table's cell
        return text.rstrip()
    text = _LINE_BREAKS.sub("\n", text)
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    text = _DROP.sub("", text)
    text = _TRAILING.sub("", text)
    text = _MANY_NL.sub("\n\n", text)
    return text.lstrip("\n").rstrip()


def compact_whitespace(text: str) -> str:
    """``text`` as search reads it: whitespace runs compacted, line structure kept.

    Runs of spaces and tabs become one space, spaces around a line break go, three or more
    line breaks become two, and the ends are stripped (see the module docstring).

    Example:
        >>> compact_whitespace("def f():\\n    return  1\\n\\n\\n\\nend ")
        'def f():\\nreturn 1\\n\\nend'
    """
    text = _HSPACE.sub(" ", text)
    text = _SPACE_AROUND_NL.sub("\n", text)
    return _MANY_NL.sub("\n\n", text).strip()
