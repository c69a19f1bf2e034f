"""The format registry: which parser handles a file, by suffix and by sniffing its content.

A parser is a function ``parse(path, *, source, password) -> Iterable[Document]`` that reads
one file (``source`` is the path as the caller spelt it, for messages and the ``source``
metadata of every document, which the loader then replaces with the name people cite, see
:mod:`parsers.file_metadata`; ``password`` is for encrypted formats and may be ignored).
:func:`register_parser` adds one::

    @register_parser(".eml", sniff=lambda head: head.startswith(b"From:"))
    def parse_eml(path, *, source, password=None):
        return [Document(text=path.read_text(), metadata={"source": source})]

Dispatch (:func:`resolve`), chosen so that a wrong or missing suffix still works and a
right one is never second-guessed without evidence:

1. The parser registered for the suffix, if its ``sniff`` accepts the first bytes (or it
   has no ``sniff``).
2. Otherwise the first parser whose ``sniff`` accepts the content. User parsers are asked
   first (latest registration first), then the built-ins from the most specific magic to
   the least: PDF (``%PDF-``), Office zip (``PK`` with ``word/``, ``ppt/``, ``xl/``), HTML,
   JSON. Plain text (anything without NUL bytes or one of those magics) is the catch-all,
   asked only when the suffix has no parser: a broken ``.json`` stays a JSON error.
3. Otherwise the suffix's parser anyway: it raises the precise :class:`ParseError`.

So a PDF or an HTML page saved as ``.txt`` is parsed as what it is, and a file without a
suffix by its content.

Magic numbers come from the ``filetype`` package where it covers the case: zip archives
(:func:`is_zip`) and DOCX, PPTX and XLSX told apart by their first member names
(:func:`is_ooxml`). Hand-written checks remain for what it does not cover:

* PDF (:func:`is_pdf`): filetype wants ``%PDF`` at byte 0 (after a UTF-8 BOM), but readers
  (and pypdf) accept junk before the header within the first KiB, such as a mail or HTTP
  header left in front of a saved attachment.
* HTML (:func:`is_html`): filetype knows binary formats only; markup is text.
* Plain text, NUL bytes and encodings (:mod:`parsers.text`): filetype never claims text.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import filetype

from ragtools.parsers.document import Document
from ragtools.parsers.errors import ConfigError

__all__ = [
    "FALLBACK_PRIORITY",
    "HEAD_BYTES",
    "ParserFn",
    "ParserSpec",
    "Sniff",
    "get_parser",
    "is_html",
    "is_ooxml",
    "is_pdf",
    "is_zip",
    "register_parser",
    "registered_suffixes",
    "resolve",
    "resolve_by_content",
    "unregister_parser",
]

logger = logging.getLogger(__name__)

#: How many leading bytes sniffers see: enough for a zip's first entry names and an
#: HTML head, small enough to read for every file of a large tree.
HEAD_BYTES = 64 * 1024

#: Priority of user-registered parsers when sniffing: before every built-in.
USER_PRIORITY = 0
#: Parsers at or above this priority (plain text) accept almost anything: they claim a file
#: by content only when its suffix has no parser of its own.
FALLBACK_PRIORITY = 100

Sniff = Callable[[bytes], bool]


class ParserFn(Protocol):
    """What a registered parser looks like."""

    def __call__(self, path: Path, *, source: str, password: str | None) -> Iterable[Document]: ...


F = TypeVar("F", bound=ParserFn)


@dataclass(frozen=True)
class ParserSpec:
    """One registered format."""

    name: str
    """Unique name (the function's qualified name unless given); used across processes."""
    fn: ParserFn
    """The parser function."""
    suffixes: tuple[str, ...]
    """Lower-case suffixes with their dot, e.g. ``(".md", ".markdown")``."""
    sniff: Sniff | None
    """Predicate on the first :data:`HEAD_BYTES` bytes; ``None``: suffix only."""
    priority: int
    """Sniffing order: lower is asked first."""
    builtin: bool
    """True for the parsers of this package (importable in worker processes)."""
    order: int
    """Registration counter; later registrations win ties."""


_COUNTER = itertools.count(1)
_BY_NAME: dict[str, ParserSpec] = {}
_BY_SUFFIX: dict[str, ParserSpec] = {}


def _check_suffix(suffix: str) -> str:
    if not isinstance(suffix, str) or not suffix.startswith(".") or len(suffix) < 2:
        msg = f"parser suffix {suffix!r} is invalid: give suffixes with their dot, like '.md'"
        raise ConfigError(msg)
    return suffix.lower()


def register_parser(
    *suffixes: str,
    sniff: Sniff | None = None,
    name: str | None = None,
    _priority: int = USER_PRIORITY,
    _builtin: bool = False,
) -> Callable[[F], F]:
    """Register the decorated function as the parser of ``suffixes`` (and sniffed content).

    A later registration of the same suffix replaces the earlier one, so users can override a
    built-in format.

    Args:
        *suffixes: file suffixes with their dot, case-insensitive (``".eml"``).
        sniff: optional predicate on the first bytes of a file; lets the parser claim files
            whose suffix is missing or wrong, and vetoes files of its suffix that do not
            match (they go to whichever parser sniffs them, else back to this one).
        name: registry name; defaults to ``module.qualname`` of the function.

    Returns:
        A decorator that registers the function and returns it unchanged.

    Raises:
        ConfigError: no suffix and no sniff, or a suffix without its leading dot.

    Example:
        >>> @register_parser(".note")
        ... def parse_note(path, *, source, password=None):
        ...     return [Document(text=path.read_text(), metadata={"source": source})]
    """
    checked = tuple(_check_suffix(s) for s in suffixes)
    if not checked and sniff is None:
        msg = "register_parser needs at least one suffix (like '.md') or a sniff= predicate"
        raise ConfigError(msg)

    def decorator(fn: F) -> F:
        spec_name = name or f"{fn.__module__}.{getattr(fn, '__qualname__', repr(fn))}"
        spec = ParserSpec(
            name=spec_name,
            fn=fn,
            suffixes=checked,
            sniff=sniff,
            priority=_priority,
            builtin=_builtin,
            order=next(_COUNTER),
        )
        _BY_NAME[spec_name] = spec
        for suffix in checked:
            previous = _BY_SUFFIX.get(suffix)
            if previous is not None and previous.name != spec_name:
                logger.debug("suffix %s: parser %s replaces %s", suffix, spec_name, previous.name)
            _BY_SUFFIX[suffix] = spec
        return fn

    return decorator


def unregister_parser(name: str) -> None:
    """Remove the parser registered under ``name`` and its suffixes (no-op if unknown)."""
    spec = _BY_NAME.pop(name, None)
    if spec is None:
        return
    for suffix in spec.suffixes:
        if _BY_SUFFIX.get(suffix) is spec:
            del _BY_SUFFIX[suffix]


def get_parser(name: str) -> ParserSpec:
    """The parser registered under ``name``.

    Raises:
        ConfigError: no parser has that name.
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        msg = f"no parser named {name!r}; registered: {sorted(_BY_NAME)}"
        raise ConfigError(msg) from None


def registered_suffixes() -> list[str]:
    """All suffixes with a parser, sorted."""
    return sorted(_BY_SUFFIX)


_ZIP = filetype.get_type(ext="zip")
_OOXML = frozenset({"docx", "pptx", "xlsx"})
_HTML_START = re.compile(
    rb"^(?:\s|<!--.*?-->|<\?xml[^>]*>)*<(?:!doctype\s+html|html)[\s>]", re.I | re.S
)


def is_pdf(head: bytes) -> bool:
    """PDF magic: ``%PDF-`` within the first KiB (the spec tolerates leading junk)."""
    return b"%PDF-" in head[:1024]


def is_zip(head: bytes) -> bool:
    """A zip archive (DOCX, PPTX and XLSX are zip packages), by filetype's zip matcher."""
    return bool(_ZIP.match(head))


def is_ooxml(extension: str) -> Sniff:
    """The sniffer of one Office Open XML format: ``"docx"``, ``"pptx"`` or ``"xlsx"``.

    filetype reads the member names of the zip's first entries (``word/``, ``ppt/``,
    ``xl/``), so a plain zip or another Office format is not taken for this one.
    """
    matcher = filetype.get_type(ext=extension)
    if matcher is None or extension not in _OOXML:
        msg = f"no Office Open XML format {extension!r}; choose one of {sorted(_OOXML)}"
        raise ConfigError(msg)

    def sniff(head: bytes) -> bool:
        return bool(matcher.match(head))

    return sniff


def is_html(head: bytes) -> bool:
    """An HTML document: ``<!doctype html`` or ``<html`` first (after a BOM, comments)."""
    start = head[:2048]
    for bom in (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"):
        if start.startswith(bom):
            start = start[len(bom) :]
            if bom != b"\xef\xbb\xbf":  # UTF-16: test the ASCII-compatible bytes only
                start = start.replace(b"\x00", b"")
            break
    return _HTML_START.match(start) is not None


def _sniff_order() -> list[ParserSpec]:
    specs = [s for s in _BY_NAME.values() if s.sniff is not None]
    return sorted(specs, key=lambda s: (s.priority, -s.order))


def _sniffs(spec: ParserSpec, head: bytes) -> bool:
    if spec.sniff is None:
        return False
    try:
        return bool(spec.sniff(head))
    except Exception:  # a buggy user sniffer must not break dispatch of other files
        logger.warning("sniff function of parser %s failed; ignoring it", spec.name, exc_info=True)
        return False


def resolve_by_content(head: bytes, *, fallback: bool = True) -> ParserSpec | None:
    """The first parser (in sniffing order) whose ``sniff`` accepts ``head``, or ``None``.

    Args:
        head: the first bytes of the file.
        fallback: also ask the catch-all parsers (plain text).
    """
    for spec in _sniff_order():
        if not fallback and spec.priority >= FALLBACK_PRIORITY:
            continue
        if _sniffs(spec, head):
            return spec
    return None


def resolve(path: Path, head: bytes) -> ParserSpec | None:
    """Choose the parser for ``path`` whose first bytes are ``head`` (see module docstring).

    Returns:
        The parser, or ``None`` when neither the suffix nor the content is recognised.
    """
    by_suffix = _BY_SUFFIX.get(path.suffix.lower()) if path.suffix else None
    if by_suffix is not None and (by_suffix.sniff is None or _sniffs(by_suffix, head)):
        return by_suffix
    by_content = resolve_by_content(head, fallback=by_suffix is None)
    if by_content is not None:
        if by_suffix is not None:
            logger.debug("%s: content looks like %s, not %s", path, by_content.name, by_suffix.name)
        return by_content
    return by_suffix
