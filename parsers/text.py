"""Plain text: decoding bytes of an unknown encoding, and the catch-all ``.txt`` parser.

Decoding (:func:`decode_bytes`), in order:

1. A byte-order mark decides (UTF-8, UTF-16 and UTF-32, either byte order).
2. NUL bytes without a BOM mean binary content: :class:`ParseError`.
3. Strict UTF-8 (most files, and the fast path).
4. charset-normalizer for the rest. Its single best guess is unreliable on short texts
   (a 5-character GBK string comes back as Korean cp949, French Latin-1 as Czech cp1250),
   so among its candidates that decode with the least chaos and the best coherence we take
   the most widely used encoding (:data:`PREFERRED_ENCODINGS`: GB18030 (a superset of GBK),
   then Windows-1252/Latin-1, Shift-JIS, Big5, ...). A Korean text that GB18030 also
   decodes cleanly is therefore read as Chinese: the price of getting GBK right.
5. Decoded text with more than 1% control characters is binary content after all.

Text files give one document; the text is normalised (:mod:`parsers.normalize`). A ``.rst``
file also gets its section titles as the outline, so its chunks carry ``headings``.
"""

from __future__ import annotations

import codecs
import logging
from pathlib import Path

from pydantic import JsonValue

from ragtools.parsers.document import Document
from ragtools.parsers.errors import ParseError
from ragtools.parsers.normalize import normalize_text
from ragtools.parsers.outline import OUTLINE_KEY, rst_outline
from ragtools.parsers.registry import FALLBACK_PRIORITY, is_html, is_pdf, is_zip, register_parser

__all__ = ["PREFERRED_ENCODINGS", "decode_bytes", "looks_like_text", "parse_text"]

logger = logging.getLogger(__name__)

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16 LE: it starts with the same bytes
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)

#: Tie-break among charset-normalizer's equally good candidates: most used first.
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

# Controls that text files contain; any other (NUL, ESC, ...) counts as a sign of binary data.
_TEXT_CONTROLS = frozenset("\t\n\r\x0b\x0c")
_MAX_CONTROL_RATIO = 0.01


def _bom_encoding(data: bytes) -> str | None:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding
    return None


def looks_like_text(head: bytes) -> bool:
    """True when ``head`` could be plain text: a BOM, or no NUL byte and no binary magic."""
    if _bom_encoding(head) is not None:
        return not is_html(head)
    return b"\x00" not in head and not (is_pdf(head) or is_zip(head) or is_html(head))


def _control_ratio(text: str) -> float:
    if not text:
        return 0.0
    sample = text[:65536]
    controls = sum(1 for ch in sample if ch < " " and ch not in _TEXT_CONTROLS)
    controls += sample.count("\x7f")
    return controls / len(sample)


def _detect(data: bytes) -> str | None:
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data))
    if not matches:
        return None
    least_chaos = min(m.chaos for m in matches)
    close = [m for m in matches if m.chaos <= least_chaos + 0.01]
    best_coherence = max(m.coherence for m in close)
    tied = [m for m in close if m.coherence >= best_coherence - 0.05]
    rank = {name: i for i, name in enumerate(PREFERRED_ENCODINGS)}
    best_rank, best_encoding = len(rank), tied[0].encoding
    for match in tied:
        for encoding in match.could_be_from_charset or [match.encoding]:
            if rank.get(encoding, len(rank)) < best_rank:
                best_rank, best_encoding = rank[encoding], encoding
    return str(best_encoding)


def decode_bytes(data: bytes, path: str | Path) -> str:
    """Decode the bytes of a text file whose encoding is unknown (see module docstring).

    Args:
        data: the file content.
        path: the file, for error messages.

    Returns:
        The decoded, not yet normalised, text.

    Raises:
        ParseError: the content is binary or in no recognisable encoding.
    """
    encoding = _bom_encoding(data)
    text: str | None = None
    if encoding is not None:
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            text = None
    if text is None:
        if b"\x00" in data:
            msg = "binary content (NUL bytes), not text; give the file its format's suffix"
            raise ParseError(path, msg)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            encoding = _detect(data)
            if encoding is None:
                msg = "not text: binary content or an unrecognised character encoding"
                raise ParseError(path, msg) from None
            logger.debug("%s: decoding as %s", path, encoding)
            text = data.decode(encoding, errors="replace")
    if _control_ratio(text) > _MAX_CONTROL_RATIO:
        msg = "binary content (control characters), not text"
        raise ParseError(path, msg)
    return text


@register_parser(
    ".txt",
    ".text",
    ".log",
    ".rst",
    sniff=looks_like_text,
    name="text",
    _priority=FALLBACK_PRIORITY,
    _builtin=True,
)
def parse_text(path: Path, *, source: str, password: str | None = None) -> list[Document]:
    """Parse a plain-text file into one document (``title`` is not set: text has none).

    Raises:
        ParseError: unreadable, binary or undecodable.
    """
    text = normalize_text(decode_bytes(path.read_bytes(), source))
    if not text:
        logger.warning("%s: no text (only whitespace); no document", source)
        return []
    metadata: dict[str, JsonValue] = {"source": source}
    if path.suffix.lower() == ".rst":
        metadata[OUTLINE_KEY] = rst_outline(text)
    return [Document(text=text, metadata=metadata)]
