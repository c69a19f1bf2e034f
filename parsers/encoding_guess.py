"""Choosing the encoding of a text file that is neither UTF-8 nor marked by a BOM.

charset-normalizer proposes the candidates and measures their "chaos" (symbols and
punctuation where letters belong). Its own pick is unreliable on legacy single-byte text:
Russian in KOI8-R comes back as Shift-JIS, short or repetitive cp1251 as Korean cp949, French
cp1252 as Baltic cp1257. So the candidates, plus the common single-byte code pages that decode
the bytes, are ranked here on evidence any reader would use:

1. little chaos (within a margin: charset-normalizer's measure is noisy);
2. few implausible words: a word (a run of letters) that mixes scripts, or whose case is
   neither lower, UPPER nor Title, is what a wrong code page produces (``Cafй``, ``пРЙБЕФ``);
3. the most cased letters in plausible words: case patterns that hold word after word are
   evidence for a reading; uncased readings (Chinese, Korean, Japanese) offer none, so a
   Russian text whose bytes also decode as Hangul is read as Russian, while real CJK text,
   whose single-byte readings are full of broken words, keeps its CJK reading;
4. the fewest upper-case letters (within a margin): prose is mostly lower case, and KOI8-R
   read as cp1251, or the reverse, swaps the case of every Cyrillic letter;
5. the most widely used encoding (:data:`PREFERRED_ENCODINGS`).

Only a bounded sample is examined: lines with non-ASCII bytes, up to :data:`SAMPLE_BYTES`, so
a 100 MB file costs the same as a small one and a long ASCII preamble does not hide the
evidence.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import unicodedata

__all__ = ["PREFERRED_ENCODINGS", "SAMPLE_BYTES", "guess_encoding"]

#: Tie-break among equally good candidates: most used first.
PREFERRED_ENCODINGS: tuple[str, ...] = (
    "ascii",
    "utf_8",
    "gb18030",
    "gbk",
    "gb2312",
    "cp1252",
    "latin_1",
    "iso8859_15",
    "cp932",
    "shift_jis",
    "euc_jp",
    "big5",
    "big5hkscs",
    "cp949",
    "euc_kr",
    "cp1251",
    "koi8_r",
    "cp1250",
    "iso8859_2",
    "cp1253",
    "cp1254",
    "cp1255",
    "cp1256",
    "cp874",
)
#: Single-byte code pages always tried, whether or not charset-normalizer proposes them.
_SINGLE_BYTE = ("cp1252", "cp1251", "koi8_r", "cp1250", "cp1253", "cp1254", "cp1257")
SAMPLE_BYTES = 32 * 1024
_NON_ASCII_LINES = re.compile(rb"[^\n]*[\x80-\xff][^\n]*\n?")
_WORD = re.compile(r"[^\W\d_]+")
_CHAOS_MARGIN = 0.1
_SHARE_MARGIN = 0.05
_UPPER_MARGIN = 0.2


def _sample(data: bytes) -> bytes:
    """Up to SAMPLE_BYTES of the lines that hold non-ASCII bytes, cut at line ends."""
    parts: list[bytes] = []
    size = 0
    for match in _NON_ASCII_LINES.finditer(data):
        parts.append(match.group())
        size += len(parts[-1])
        if size >= SAMPLE_BYTES:
            break
    return b"".join(parts)


@functools.lru_cache(maxsize=4096)
def _script(ch: str) -> str:
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0]


@dataclasses.dataclass(frozen=True)
class _Reading:
    encoding: str
    chaos: float
    implausible: float
    """Share of letters in implausible words."""
    cased: float
    """Share of letters in plausible words that have case."""
    upper: float
    """Share of letters that are upper case."""


def _read(encoding: str, text: str, chaos: float) -> _Reading:
    """Score a reading on its words with non-ASCII letters (the others read alike in all)."""
    letters = implausible = cased = upper = 0
    for word in _WORD.findall(text):
        if word.isascii():
            continue
        letters += len(word)
        upper += sum(1 for ch in word if ch.isupper())
        if len({_script(ch) for ch in word}) > 1:
            implausible += len(word)
        elif word.lower() != word.upper():  # a cased script
            if word.islower() or word.isupper() or word.istitle():
                cased += len(word)
            else:
                implausible += len(word)
    total = max(letters, 1)
    return _Reading(encoding, chaos, implausible / total, cased / total, upper / total)


def guess_encoding(data: bytes) -> str | None:
    """The most plausible encoding of ``data`` (not UTF-8, no BOM), or None if nothing fits."""
    from charset_normalizer import from_bytes
    from charset_normalizer.md import mess_ratio

    sample = _sample(data) or data[:SAMPLE_BYTES]
    readings: dict[str, _Reading] = {}
    for match in from_bytes(sample):
        text = str(match)
        reading = _read(match.encoding, text, mess_ratio(text, 1.0))
        for encoding in match.could_be_from_charset or [match.encoding]:
            readings.setdefault(encoding, dataclasses.replace(reading, encoding=encoding))
    for encoding in _SINGLE_BYTE:
        if encoding in readings:
            continue
        try:
            text = sample.decode(encoding)
        except UnicodeDecodeError:
            continue
        readings[encoding] = _read(encoding, text, mess_ratio(text, 1.0))
    if not readings:
        return None
    candidates = list(readings.values())
    least_chaos = min(r.chaos for r in candidates)
    candidates = [r for r in candidates if r.chaos <= least_chaos + _CHAOS_MARGIN]
    fewest = min(r.implausible for r in candidates)
    candidates = [r for r in candidates if r.implausible <= fewest + _SHARE_MARGIN]
    most = max(r.cased for r in candidates)
    candidates = [r for r in candidates if r.cased >= most - _SHARE_MARGIN]
    # Prose is mostly lower case: KOI8-R read as cp1251 (or back) swaps the case of each letter.
    least_upper = min(r.upper for r in candidates)
    candidates = [r for r in candidates if r.upper <= least_upper + _UPPER_MARGIN]
    rank = {name: i for i, name in enumerate(PREFERRED_ENCODINGS)}
    return min(candidates, key=lambda r: (rank.get(r.encoding, len(rank)), r.chaos)).encoding
