"""Recursive splitting of documents into chunks that are exact spans of the document text.

The algorithm is LangChain's ``RecursiveCharacterTextSplitter`` (the splitter most RAG
stacks default to), rebuilt around character offsets so that
``document.text[chunk.start:chunk.end] == chunk.text`` always holds:

1. **Pieces.** The text is cut at the coarsest boundary that exists, and every part still
   longer than ``chunk_size`` is cut again at the next boundary: paragraphs (a blank line),
   lines, sentences (``.``, ``!``, ``?`` followed by whitespace; the CJK ``。！？；`` need
   none, nor their NFKC-folded ``!?;`` after a CJK character), words (whitespace), and at
   last single characters, so even a 2,000-character URL fits. The separator stays at the
   end of the piece before it, so the pieces tile the text exactly.
2. **Windows.** Consecutive pieces are packed greedily while the chunk stays within
   ``chunk_size``. The next chunk starts as far back as it can while sharing at most
   ``chunk_overlap`` with the previous one (and still fitting the next piece), so context
   flows across the cut.
3. **Offsets.** Leading and trailing whitespace is trimmed by moving the offsets; a chunk is
   never empty and never rewritten.

Sizes are characters, or whatever ``length_function`` counts (e.g. tokens:
``lambda s: len(tokenizer.encode(s))``); measured on the trimmed chunk text. A single
character longer than ``chunk_size`` tokens is the only chunk that can exceed it.

Documents with an outline (headings recorded by the Markdown, HTML and DOCX parsers, see
:mod:`parsers.outline`) are first cut into sections at their headings, and each section is
split on its own, so a chunk never straddles two sections; each chunk gets ``headings``, its
heading path, and the outline itself is left on the document.

Chunk ids come from :class:`Chunk` (a hash of the document id, the offsets and
the text), so splitting the same documents with the same settings gives the same ids on every
run. Documents with a ``page`` give their chunks ``page_start`` and ``page_end``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from ragtools.parsers.document import Chunk, Document
from ragtools.parsers.errors import ConfigError
from ragtools.parsers.outline import OUTLINE_KEY, HeadingPaths, section_bounds

__all__ = ["DEFAULT_SEPARATORS", "split"]

logger = logging.getLogger(__name__)

_CLOSERS = "\"'”’)\\]」』）】"
# Han, kana, Hangul: after NFKC, full-width ！？； are ASCII and end a CJK sentence unspaced.
_CJK = "\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff"
#: Boundaries tried in order: paragraph, line, sentence (Latin, then CJK), word.
DEFAULT_SEPARATORS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\n[^\S\n]*\n\s*"),
    re.compile(r"\n\s*"),
    # One leading character class lets the regex engine skip ahead fast (10x on SciFact).
    re.compile(
        rf"[.!?;。！？；](?:(?<=[.!?])[{_CLOSERS}]*\s+|(?<=[。！？；])[{_CLOSERS}]*\s*"
        rf"|(?<=[{_CJK}][!?;])[{_CLOSERS}]*\s*)"
    ),
    re.compile(r"\s+"),
)

LengthFunction = Callable[[str], int]


@dataclass
class _Splitter:
    text: str
    size: int
    overlap: int
    separators: Sequence[re.Pattern[str]]
    length_function: LengthFunction | None

    def content(self, start: int, end: int) -> tuple[int, int]:
        """The span without its leading and trailing whitespace (empty: ``(end, end)``)."""
        segment = self.text[start:end]
        stripped = segment.strip()
        if not stripped:
            return end, end
        left = start + segment.find(stripped[0])
        return left, left + len(stripped)

    def measure(self, start: int, end: int) -> int:
        if self.length_function is None:
            return end - start
        return self.length_function(self.text[start:end])

    def pieces(self, start: int, end: int, level: int, out: list[tuple[int, int]]) -> None:
        """Append spans tiling ``[start, end)``, each within the size (see module docs)."""
        small = self.length_function is None and end - start <= self.size  # no need to strip
        if small or self.measure(*self.content(start, end)) <= self.size:
            out.append((start, end))
            return
        if level >= len(self.separators):
            self.characters(start, end, out)
            return
        matches = self.separators[level].finditer(self.text, start, end)
        cuts = [m.end() for m in matches if start < m.end() < end]
        if not cuts:
            self.pieces(start, end, level + 1, out)
            return
        left = start
        for cut in [*cuts, end]:
            self.pieces(left, cut, level + 1, out)
            left = cut

    def characters(self, start: int, end: int, out: list[tuple[int, int]]) -> None:
        if self.length_function is None:
            out.extend((i, min(i + self.size, end)) for i in range(start, end, self.size))
            return
        left = start
        while left < end:
            # The longest span from ``left`` within the size: gallop, then bisect, so a long
            # run without separators is not re-measured to its end at every step.
            low, high = left + 1, min(end, left + self.size)
            while high < end and self.measure(left, high) <= self.size:
                low, high = high, min(end, left + 2 * (high - left))
            while low < high:
                mid = (low + high + 1) // 2
                if self.measure(left, mid) <= self.size:
                    low = mid
                else:
                    high = mid - 1
            out.append((left, low))
            left = low

    def windows(self, pieces: list[tuple[int, int]]) -> Iterable[tuple[int, int]]:
        """Trimmed ``(start, end)`` of each chunk, packing pieces as in the module docs."""
        if len(pieces) == 1:  # a text within the size (most records): the one chunk is it
            start, end = self.content(*pieces[0])
            if end > start:
                yield start, end
            return
        bounds = [self.content(s, e) for s, e in pieces]
        count = len(bounds)
        # next_text[i]: first piece >= i with text; last_text[j]: last piece <= j with text.
        next_text = [count] * (count + 1)
        for i in range(count - 1, -1, -1):
            next_text[i] = i if bounds[i][1] > bounds[i][0] else next_text[i + 1]
        last_text = [-1] * count
        for j in range(count):
            has_text = bounds[j][1] > bounds[j][0]
            last_text[j] = j if has_text else (last_text[j - 1] if j else -1)

        def length(first: int, last: int) -> int:
            if next_text[first] > last:
                return 0
            return self.measure(bounds[next_text[first]][0], bounds[last_text[last]][1])

        first = 0
        while first < count:
            last = first
            while last + 1 < count and length(first, last + 1) <= self.size:
                last += 1
            if next_text[first] <= last:
                yield bounds[next_text[first]][0], bounds[last_text[last]][1]
            if last == count - 1:
                return
            following = last + 1
            while (
                following - 1 > first
                and length(following - 1, last) <= self.overlap
                and length(following - 1, last + 1) <= self.size
            ):
                following -= 1
            first = following


def _compile(separators: Sequence[str | re.Pattern[str]] | None) -> list[re.Pattern[str]]:
    if separators is None:
        return list(DEFAULT_SEPARATORS)
    compiled: list[re.Pattern[str]] = []
    for separator in separators:
        if isinstance(separator, re.Pattern):
            compiled.append(separator)
        elif isinstance(separator, str) and separator:
            compiled.append(re.compile(re.escape(separator)))
        elif separator != "":
            msg = f"separators must be strings or compiled patterns, got {separator!r}"
            raise ConfigError(msg)
        # "" (LangChain's "split anywhere") is the character fallback, always last anyway.
    return compiled


def split(
    documents: Iterable[Document],
    *,
    chunk_size: int = 1000,
    chunk_overlap: int = 200,
    length_function: LengthFunction | None = None,
    separators: Sequence[str | re.Pattern[str]] | None = None,
) -> list[Chunk]:
    """Split documents into overlapping chunks on the most natural boundaries available.

    Args:
        documents: the documents; empty (or whitespace-only) ones give no chunk.
        chunk_size: maximum chunk length, in characters or in ``length_function`` units.
        chunk_overlap: maximum length shared by consecutive chunks of a document.
        length_function: counts the length of a text (e.g. tokens); ``None``: characters.
        separators: boundaries tried from coarsest to finest: strings (literal) or compiled
            regular expressions, cut after each match; ``None``: :data:`DEFAULT_SEPARATORS`.
            Single characters are always the last resort.

    Returns:
        Chunks in document order, then text order. Each chunk's text is
        ``document.text[chunk.start:chunk.end]``, with the document's metadata plus
        ``page_start``/``page_end`` when the document has a ``page`` and ``headings`` when
        it has an outline (which chunks do not carry).

    Raises:
        ConfigError: ``chunk_size < 1``, ``chunk_overlap < 0``, ``chunk_overlap >=
            chunk_size``, or a separator that is neither a string nor a pattern.

    Example:
        >>> doc = Document(text="One. Two three.\\n\\nFour five six.")
        >>> [c.text for c in split([doc], chunk_size=16, chunk_overlap=0)]
        ['One. Two three.', 'Four five six.']
    """
    if chunk_size < 1:
        msg = f"chunk_size must be >= 1, got {chunk_size}"
        raise ConfigError(msg)
    if chunk_overlap < 0 or chunk_overlap >= chunk_size:
        msg = f"chunk_overlap must be >= 0 and < chunk_size ({chunk_size}), got {chunk_overlap}"
        raise ConfigError(msg)
    if length_function is not None and not callable(length_function):
        msg = f"length_function must be a callable str -> int, got {length_function!r}"
        raise ConfigError(msg)
    patterns = _compile(separators)
    chunks: list[Chunk] = []
    for document in documents:
        text = document.text
        if not text or text.isspace():
            continue
        splitter = _Splitter(text, chunk_size, chunk_overlap, patterns, length_function)
        metadata = dict(document.metadata)
        outline = metadata.pop(OUTLINE_KEY, None)
        page = metadata.get("page")
        if page is not None:
            metadata.update(page_start=page, page_end=page)
        sections = [(0, len(text))] if outline is None else section_bounds(text, outline)
        paths = None if outline is None else HeadingPaths(outline)
        for section_start, section_end in sections:
            pieces: list[tuple[int, int]] = []
            splitter.pieces(section_start, section_end, 0, pieces)
            for start, end in splitter.windows(pieces):
                if paths is not None:
                    metadata["headings"] = list[JsonValue](paths.at(end - 1))
                # A validated document's fields, cut at offsets that span its text.
                chunks.append(
                    Chunk.unchecked(document.id, text[start:end], start, end, dict(metadata))
                )
    logger.debug("split into %d chunks (chunk_size=%d)", len(chunks), chunk_size)
    return chunks
