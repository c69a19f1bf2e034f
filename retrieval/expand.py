"""Context around hits: small-to-big expansion and score thresholds.

An agent reads passages, not chunks: LangChain's ``ParentDocumentRetriever`` and LlamaIndex's
sentence-window and auto-merging retrievers hand the model the text around a hit. Chunks here
carry exact character offsets into their document, and every version of an index stores its
documents' full texts (:mod:`indexes.store.doc_texts`), so the surroundings are cut from the
document itself, with no re-parsing:

* ``expand="neighbors"``: ``window`` chunks on each side of the hit (default 1), or
  ``window_chars`` characters on each side instead (cut back to a word boundary);
* ``expand="section"``: the run of chunks around the hit sharing its heading path
  (``metadata["headings"]``), or, for chunks without headings, its pages (``page_start`` and
  ``page_end``), so a page-bounded expansion never crosses its page; at most ``max_chars``;
* ``expand="document"``: the whole document, at most ``max_chars`` centred on the hit.

Spans of one document that overlap, or are separated by whitespace only, merge into one
passage: one :class:`~retrieval.hit.Hit` whose chunk is the merged span (``doc_id``,
``start``, ``end``, ``text == document.text[start:end]``, the document's metadata with the
pages it covers), cited once. Its score, stage and stage scores are those of its best hit,
and ``hit.parts`` keeps every original hit it merged, so nothing is lost. Passages come back
best first, ranked 1, 2, ...; ``k`` counts hits before they merge, so fewer than ``k``
passages may come back (as from LlamaIndex's auto-merging retriever).

The passage text is ``document.text[start:end]``, sliced from the stored text, whatever
whitespace lies between chunks that do not overlap. An index written before format 4 stores
no texts (nor does a document whose chunks were added without it, or whose stored text no
longer holds its chunks): its passages are stitched from the chunks covering them, which are
exact spans. The splitter only ever trims whitespace, so the only characters no chunk covers
there are whitespace between two chunks that do not overlap: their count is known but not
their kind, and they are rendered as newlines, which is what the splitter's paragraph and
line boundaries leave (every such gap over ``../shared/pdfs`` was ``"\\n"`` or
``"\\n\\n"``, ``eval/expand_pdfs.py``); a gap of spaces or tabs comes back as newlines.

Score thresholds (``min_score=``) live in :mod:`retrieval.threshold`.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal, get_args

from ragtools.indexes.index import IndexState
from ragtools.parsers.document import Chunk
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.hit import Hit, best_of, passage_hits

__all__ = [
    "ExpandMode",
    "Expansion",
    "expand_hits",
    "expansion_of",
    "index_states",
]

ExpandMode = Literal["neighbors", "section", "document"]
logger = logging.getLogger(__name__)

_MODES: tuple[str, ...] = get_args(ExpandMode)
_GAP = "\n"
"""What an uncovered (whitespace) character between two chunks is rendered as."""


@dataclass(frozen=True)
class Expansion:
    """How to grow a hit into a passage (see the module docstring).

    Args:
        mode: ``"neighbors"``, ``"section"`` or ``"document"``.
        window: neighbour chunks on each side (``"neighbors"``).
        window_chars: characters on each side instead of whole chunks (``"neighbors"``).
        max_chars: the longest passage one hit grows into (``"section"``, ``"document"``).

    Raises:
        ConfigError: an unknown mode or a limit that is not a positive integer.
    """

    mode: ExpandMode
    window: int = 1
    window_chars: int | None = None
    max_chars: int = 4000

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            msg = f"expand must be one of {', '.join(_MODES)}, got {self.mode!r}"
            raise ConfigError(msg)
        for name, low in (("window", 0), ("window_chars", 0), ("max_chars", 1)):
            value = getattr(self, name)
            if value is None and name == "window_chars":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                msg = f"expand {name} must be an integer >= {low}, got {value!r}"
                raise ConfigError(msg)


def expansion_of(expand: ExpandMode | Expansion | Mapping[str, Any] | None) -> Expansion | None:
    """The :class:`Expansion` an ``expand=`` option means: a mode name, a mapping of
    :class:`Expansion` fields (``{"mode": "neighbors", "window": 2}``), one, or ``None``."""
    if expand is None or isinstance(expand, Expansion):
        return expand
    if isinstance(expand, str):
        return Expansion(expand)  # type: ignore[arg-type]
    if isinstance(expand, Mapping):
        try:
            return Expansion(**expand)
        except TypeError as exc:
            msg = f"invalid expand options {dict(expand)!r}: {exc}"
            raise ConfigError(msg) from exc
    msg = f"expand must be a mode name, an Expansion or a mapping, got {type(expand).__name__}"
    raise ConfigError(msg)


# --- documents as their chunks --------------------------------------------------------------


class _Layout:
    """One document's chunks in offset order, and its text: the stored one, read on first
    use, or as far as the chunks cover it."""

    def __init__(self, chunks: Iterable[Chunk], texts: Mapping[str, str] | None = None) -> None:
        self.texts = texts
        self.chunks = sorted(chunks, key=lambda c: (c.start, c.end))
        self.starts = [c.start for c in self.chunks]
        self.position = {c.id: i for i, c in enumerate(self.chunks)}
        reach = 0
        self.reach: list[int] = []  # the furthest end of chunks[: i + 1]
        for chunk in self.chunks:
            reach = max(reach, chunk.end)
            self.reach.append(reach)

    @property
    def start(self) -> int:
        return self.starts[0]

    @property
    def end(self) -> int:
        return self.reach[-1]

    @cached_property
    def document(self) -> str | None:
        """The stored text of the document, if there is one and it holds every chunk."""
        doc_id = self.chunks[0].doc_id
        text = self.texts.get(doc_id) if self.texts is not None else None
        if text is not None and any(text[c.start : c.end] != c.text for c in self.chunks):
            logger.warning("stored text of document %r does not hold its chunks", doc_id)
            return None
        return text

    def text(self, start: int, end: int) -> str:
        """``document.text[start:end]``: from the stored text, else from the chunks
        (uncovered whitespace as newlines)."""
        if self.document is not None:
            return self.document[start:end]
        parts: list[str] = []
        at = start
        first = max(0, bisect.bisect_right(self.reach, start))
        for chunk in self.chunks[first:]:
            if chunk.start >= end:
                break
            if chunk.end <= at:
                continue
            if chunk.start > at:
                parts.append(_GAP * (chunk.start - at))
                at = chunk.start
            stop = min(end, chunk.end)
            parts.append(chunk.text[at - chunk.start : stop - chunk.start])
            at = stop
        if at < end:
            parts.append(_GAP * (end - at))
        return "".join(parts)

    def span(self, first: int, last: int) -> tuple[int, int]:
        """From the start of ``chunks[first]`` to the furthest end up to ``chunks[last]``."""
        return self.chunks[first].start, self.reach[last]


class _Layouts:
    """The documents of one index state, laid out on first use."""

    def __init__(self, state: IndexState) -> None:
        by_doc: dict[str, list[Chunk]] = {}
        for chunk in state.chunks:
            by_doc.setdefault(chunk.doc_id, []).append(chunk)
        self.docs = {doc_id: _Layout(chunks, state.texts) for doc_id, chunks in by_doc.items()}


_cache: dict[int, tuple[IndexState, _Layouts]] = {}
_cache_lock = threading.Lock()
_CACHED_STATES = 8


def _layouts(state: IndexState) -> _Layouts:
    with _cache_lock:
        held = _cache.get(id(state))
        if held is not None and held[0] is state:
            return held[1]
    layouts = _Layouts(state)
    with _cache_lock:
        while len(_cache) >= _CACHED_STATES:
            _cache.pop(next(iter(_cache)))
        _cache[id(state)] = (state, layouts)
    return layouts


def index_states(retriever: object) -> list[IndexState]:
    """The index states a retriever reads: its ``index``'s, or those of its ``retrievers``."""
    index = getattr(retriever, "index", None)
    state = getattr(index, "state", None)
    if isinstance(state, IndexState):
        return [state]
    found: dict[int, IndexState] = {}
    for inner in getattr(retriever, "retrievers", ()) or ():
        for one in index_states(inner):
            found.setdefault(id(one), one)
    return list(found.values())


# --- expansion ------------------------------------------------------------------------------


def _section_key(chunk: Chunk) -> object:
    headings = chunk.metadata.get("headings")
    if headings:
        return ("headings", tuple(headings) if isinstance(headings, list) else headings)
    page = chunk.metadata.get("page_start", chunk.metadata.get("page"))
    return ("pages", page, chunk.metadata.get("page_end", page))


def _limit(bounds: tuple[int, int], core: tuple[int, int], max_chars: int) -> tuple[int, int]:
    """At most ``max_chars`` of ``bounds`` centred on ``core`` (never cutting ``core``)."""
    start, end = bounds
    if end - start <= max_chars:
        return bounds
    extra = max(0, max_chars - (core[1] - core[0]))
    left = min(core[0] - start, extra // 2)
    right = min(end - core[1], extra - left)
    left = min(core[0] - start, extra - right)
    return core[0] - left, core[1] + right


def _to_words(layout: _Layout, span: tuple[int, int], core: tuple[int, int]) -> tuple[int, int]:
    """``span`` cut inwards to whitespace where it ends mid-word (never inside ``core``)."""
    start, end = span
    if start < core[0] and start > layout.start and not layout.text(start - 1, start).isspace():
        head = layout.text(start, core[0])  # starts mid-word: drop that word's tail
        cut = next((i for i, ch in enumerate(head) if ch.isspace()), None)
        start += cut if cut is not None else 0
    if end > core[1] and end < layout.end and not layout.text(end, end + 1).isspace():
        tail = layout.text(core[1], end)  # ends mid-word: drop that word's head
        cut = next((i for i in range(len(tail) - 1, -1, -1) if tail[i].isspace()), None)
        end = core[1] + cut if cut is not None else end
    head, tail = layout.text(start, core[0]), layout.text(core[1], end)
    start += len(head) - len(head.lstrip())
    end -= len(tail) - len(tail.rstrip())
    return start, end


def _span(layout: _Layout, chunk: Chunk, expansion: Expansion) -> tuple[int, int]:
    at = layout.position[chunk.id]
    core = (chunk.start, chunk.end)
    last = len(layout.chunks) - 1
    if expansion.mode == "neighbors":
        if expansion.window_chars is None:
            low, high = max(0, at - expansion.window), min(last, at + expansion.window)
            first_start, reach = layout.span(low, high)
            return min(first_start, chunk.start), max(reach, chunk.end)
        wide = (
            max(layout.start, chunk.start - expansion.window_chars),
            min(layout.end, chunk.end + expansion.window_chars),
        )
        return _to_words(layout, wide, core)
    low, high = 0, last
    if expansion.mode == "section":
        key = _section_key(chunk)
        low = at
        while low > 0 and _section_key(layout.chunks[low - 1]) == key:
            low -= 1
        high = at
        while high < last and _section_key(layout.chunks[high + 1]) == key:
            high += 1
    bounds = layout.span(low, high)
    bounds = (min(bounds[0], chunk.start), max(bounds[1], chunk.end))
    limited = _limit(bounds, core, expansion.max_chars)
    return limited if limited == bounds else _to_words(layout, limited, core)


@dataclass
class _Passage:
    layout: _Layout
    start: int
    end: int
    hits: list[Hit]


def expand_hits(
    hits: Sequence[Hit], expansion: Expansion, states: Sequence[IndexState]
) -> list[Hit]:
    """Grow each hit into its passage and merge the passages of one document that overlap or
    touch (see the module docstring). A hit whose chunk no state holds any more (the index
    changed since it was found) stays a passage of its own chunk."""
    layouts = [_layouts(state) for state in states]
    passages: dict[str, list[_Passage]] = {}
    for hit in hits:
        layout = _layout_of(hit.chunk, layouts)
        if layout is None:
            layout = _Layout([hit.chunk])
        start, end = _span(layout, hit.chunk, expansion)
        passages.setdefault(hit.chunk.doc_id, []).append(_Passage(layout, start, end, [hit]))
    merged = [one for group in passages.values() for one in _merge(group)]
    return passage_hits([(_passage_chunk(passage), passage.hits) for passage in merged])


def _layout_of(chunk: Chunk, layouts: Sequence[_Layouts]) -> _Layout | None:
    for one in layouts:
        layout = one.docs.get(chunk.doc_id)
        if layout is not None and chunk.id in layout.position:
            return layout
    return None


def _merge(group: list[_Passage]) -> list[_Passage]:
    group.sort(key=lambda p: (p.start, p.end))
    merged = [group[0]]
    for passage in group[1:]:
        last = merged[-1]
        if passage.layout is last.layout and (
            passage.start <= last.end or not last.layout.text(last.end, passage.start).strip()
        ):
            last.end = max(last.end, passage.end)
            last.hits.extend(passage.hits)
        else:
            merged.append(passage)
    return merged


def _passage_chunk(passage: _Passage) -> Chunk:
    """The merged span as a chunk, with the metadata of its best hit and the pages it covers."""
    best = best_of(passage.hits)
    covered = [
        c for c in passage.layout.chunks if c.start < passage.end and c.end > passage.start
    ] or [best.chunk]
    metadata = dict(best.chunk.metadata)
    if "page_start" in metadata:
        pages = [c.metadata.get(key) for c in covered for key in ("page_start", "page_end")]
        numbers = [p for p in pages if isinstance(p, int)]
        if numbers:
            metadata["page_start"], metadata["page_end"] = min(numbers), max(numbers)
    return Chunk(
        doc_id=best.chunk.doc_id,
        text=passage.layout.text(passage.start, passage.end),
        start=passage.start,
        end=passage.end,
        metadata=metadata,
    )
