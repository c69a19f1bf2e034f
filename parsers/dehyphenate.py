"""Joining words that typesetting hyphenated across a line break ("se-\\nquence").

Justified text in PDFs (LaTeX papers, books, multi-column articles) breaks long words at
the end of a line with a hyphen. Extracted text keeps the hyphen and the line break, so
"sequence" is indexed as "se" and "quence" and a reader sees "se- quence". A hyphen at a
line end is also the natural place for a real compound ("Hewlett-\\nPackard",
"state-of-\\nthe-art") to wrap, so each break is decided on evidence from the whole
document, in this order:

1. the hyphenated form (``left-right``) occurs elsewhere in the document on one line: a
   real compound; the hyphen stays;
2. the joined form (``leftright``) occurs elsewhere in the document: a hyphenated word;
   it is joined;
3. the break is inside a longer compound (``state-of-\\nthe-art``: a hyphen right before
   the left half or right after the right half): the hyphen stays;
4. both halves are lower-case letters (the shape of a syllable break): joined;
5. otherwise (a capital, a digit: ``Hewlett-\\nPackard``, ``GPT-\\n4``) the hyphen stays.

Either way the word is made whole on one line and the line break moves to the space after
it (with any punctuation that ends the word), so the line structure, which the splitter
uses, survives. Words are compared lower-cased.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

__all__ = ["dehyphenate"]

_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
_BREAK = re.compile(r"(?<![\w-])((?:\w+-)*)(\w+)-\n([ \t]*)(\w+)((?:-\w+)*)(\S*)([ \t]*)")


def _vocabulary(texts: Iterable[str]) -> tuple[set[str], set[str]]:
    """Words, and adjacent pairs of compounds (``of-the`` of ``state-of-the-art``), that
    occur within one line, lower-cased."""
    words: set[str] = set()
    pairs: set[str] = set()
    for text in texts:
        for match in _WORD.finditer(text):
            parts = match.group().lower().split("-")
            words.update(parts)
            pairs.update(f"{a}-{b}" for a, b in itertools.pairwise(parts))
    return words, pairs


def _keeps_hyphen(
    left: str, right: str, in_compound: bool, vocabulary: tuple[set[str], set[str]]
) -> bool:
    """The rules of the module docstring, in order."""
    words, pairs = vocabulary
    if f"{left}-{right}".lower() in pairs:
        return True
    if (left + right).lower() in words:
        return False
    if in_compound:
        return True
    syllables = left.isalpha() and right.isalpha() and right.islower()
    return not (syllables and (len(left) == 1 or left[1:].islower()))


def dehyphenate(texts: list[str]) -> list[str]:
    """The texts (pages of one document) with line-break hyphenation resolved.

    Args:
        texts: normalised page texts of one file; the vocabulary is the whole file's.

    Returns:
        One text per page, in order; a text without a hyphen at a line end is unchanged.

    Example:
        >>> dehyphenate(["the se-\\nquence of a Hewlett-\\nPackard printer, Interest-\\ningly."])
        ['the sequence\\nof a Hewlett-Packard\\nprinter, Interestingly.']
    """
    if not any("-\n" in text for text in texts):
        return list(texts)
    vocabulary = _vocabulary(texts)

    def resolve(match: re.Match[str]) -> str:
        prefix, left, indent, right, suffix, trail, space = match.groups()
        hyphen = "-" if _keeps_hyphen(left, right, bool(prefix or suffix), vocabulary) else ""
        word = f"{prefix}{left}{hyphen}{right}{suffix}{trail}"
        return f"{word}\n{indent}" if space else word

    return [_BREAK.sub(resolve, text) if "-\n" in text else text for text in texts]
