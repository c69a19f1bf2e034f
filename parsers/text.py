"""Plain text: decoding bytes of an unknown encoding, and the catch-all ``.txt`` parser.

Decoding (:func:`decode_bytes`), in order:

1. A byte-order mark decides (UTF-8, UTF-16 and UTF-32, either byte order).
2. NUL bytes without a BOM mean binary content: :class:`ParseError`.
3. Strict UTF-8 (most files, and the fast path).
4. For the rest, :func:`parsers.encoding_guess.guess_encoding`: charset-normalizer's
   candidates and the common single-byte code pages, ranked on a bounded sample by chaos,
   plausible words (one script, sane letter case) and how widely each encoding is used.
5. Decoded text with more than 1% control characters is binary content after all.

Text files give one document; the text is normalised (:mod:`parsers.normalize`). A ``.rst``
file also gets its section titles as the outline, so its chunks carry ``headings``, and its
first title as ``title``, as Markdown does. Configuration files (``.toml``, ``.ini``,
``.cfg``, ``.conf``) are text too: their first ``[section]`` line must not make them JSON.
"""

from __future__ import annotations

import codecs
import logging
from pathlib import Path

from pydantic import JsonValue

from ragtools.parsers.document import Document
from ragtools.parsers.encoding_guess import PREFERRED_ENCODINGS, guess_encoding
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
            encoding = guess_encoding(data)
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
    ".toml",
    ".ini",
    ".cfg",
    ".conf",
    sniff=looks_like_text,
    name="text",
    _priority=FALLBACK_PRIORITY,
    _builtin=True,
)
def parse_text(path: Path, *, source: str, password: str | None = None) -> list[Document]:
    """Parse a plain-text file into one document (``title``: a reST file's first title).

    Raises:
        ParseError: unreadable, binary or undecodable.
    """
    text = normalize_text(decode_bytes(path.read_bytes(), source))
    if not text:
        logger.warning("%s: no text (only whitespace); no document", source)
        return []
    metadata: dict[str, JsonValue] = {"source": source}
    if path.suffix.lower() == ".rst":
        outline = rst_outline(text)
        metadata[OUTLINE_KEY] = outline
        if outline and isinstance(outline[0], list):
            metadata["title"] = outline[0][2]
    return [Document(text=text, metadata=metadata)]
