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

Line-oriented files (plain text, Markdown, CSV, JSON Lines) are read by :func:`read_lines`,
which refuses a line longer than :data:`MAX_LINE_BYTES` as soon as it has read that far, so a
file of one endless line (a log without line ends, a sparse file of zeros) costs a few
mebibytes and a clear ``ParseError``, never the whole file decoded, normalised and split as
one line. The file as a whole is bounded before any read, from its ``stat`` size
(:mod:`parsers.loading`'s ``max_bytes``). HTML and JSON documents are not line-oriented
(minified markup and exports are one line by design) and have the file bound only.
"""

from __future__ import annotations

import codecs
import itertools
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from pydantic import JsonValue

from ragtools.parsers.document import Document
from ragtools.parsers.encoding_guess import PREFERRED_ENCODINGS, guess_encoding
from ragtools.parsers.errors import ParseError
from ragtools.parsers.normalize import normalize_text
from ragtools.parsers.outline import OUTLINE_KEY, rst_outline
from ragtools.parsers.registry import FALLBACK_PRIORITY, is_html, is_pdf, is_zip, register_parser

__all__ = [
    "MAX_LINE_BYTES",
    "PREFERRED_ENCODINGS",
    "decode_bytes",
    "iter_lines",
    "looks_like_text",
    "parse_text",
    "read_lines",
]

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

MAX_LINE_BYTES = 8 * 1024 * 1024
"""The longest line a line-oriented file may have, in bytes: a hundred times the longest
paragraph of ordinary prose, and small enough that refusing costs nothing."""
_BLOCK = 1024 * 1024  # smaller than MAX_LINE_BYTES: only lines across blocks can be too long


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


def _line_too_long(source: str | Path, line: int, limit: int) -> ParseError:
    msg = (
        f"line {line} is longer than {limit} bytes, the limit for one line of a "
        "line-oriented file (text, Markdown, CSV, JSON Lines, a query list; "
        "parsers.text.MAX_LINE_BYTES); break the line or convert the file"
    )
    return ParseError(source, msg)


def read_lines(path: Path, source: str | Path, limit: int | None = None) -> bytes:
    """The bytes of a line-oriented file, refused at the first line over ``limit`` bytes
    (``None``: :data:`MAX_LINE_BYTES`).

    A line ends at ``\\n`` or ``\\r``. The file is read in blocks, so refusing reads at
    most ``limit`` bytes past the last line end.

    Raises:
        ParseError: a line longer than ``limit`` (naming its number and the limit).
        OSError: the file cannot be read.
    """
    limit = MAX_LINE_BYTES if limit is None else limit
    blocks: list[bytes] = []
    run = 0  # bytes since the last line end
    line = 1
    with open(path, "rb") as handle:
        while block := handle.read(_BLOCK):
            blocks.append(block)
            first = min((i for i in (block.find(b"\n"), block.find(b"\r")) if i >= 0), default=-1)
            if first < 0:
                run += len(block)
            else:
                if run + first > limit:
                    raise _line_too_long(source, line, limit)
                line += block.count(b"\n") or block.count(b"\r")
                run = len(block) - max(block.rfind(b"\n"), block.rfind(b"\r")) - 1
            if run > limit:
                raise _line_too_long(source, line, limit)
    return b"".join(blocks)


def iter_lines(handle: BinaryIO, source: str | Path, limit: int | None = None) -> Iterator[bytes]:
    """The lines of a binary stream one at a time (each with its ``\\n``), refused at the
    first line over ``limit`` bytes (``None``: :data:`MAX_LINE_BYTES`).

    For input read as it comes (a pipe, standard input, a query file), where
    :func:`read_lines` would hold the whole file: an endless line (``/dev/zero``) costs
    ``limit`` bytes and a clear error, never all memory. Lines end at ``\\n`` only.

    Raises:
        ParseError: a line longer than ``limit`` (naming ``source``, its number and the
            limit).
        OSError: the stream cannot be read.
    """
    limit = MAX_LINE_BYTES if limit is None else limit
    for number in itertools.count(1):
        line = handle.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            raise _line_too_long(source, number, limit)
        yield line


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
        ParseError: unreadable, binary, undecodable, or a line over :data:`MAX_LINE_BYTES`.
    """
    text = normalize_text(decode_bytes(read_lines(path, source), source))
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
