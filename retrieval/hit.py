"""The result record every retriever returns."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ragtools.parsers.document import Chunk

__all__ = ["Hit"]


class Hit(BaseModel):
    """One retrieved chunk with its score, its rank and every stage's score.

    Attributes:
        chunk: the retrieved chunk (text, offsets, metadata with source and page).
        score: the final score; higher is better. Its scale depends on the last stage
            (BM25 score, cosine similarity, fused score or reranker score).
        rank: 1-based position in the result list.
        scores: the score of every stage that produced this hit, keyed by stage name
            (``bm25``, ``vector``, ``fused``, ``rerank``, ...): nothing that explains a
            result is thrown away.
        stage: the stage that produced ``score`` (``score == scores[stage]``), said
            explicitly rather than guessed from equal floats.
        parts: for a passage grown by ``expand=`` (:mod:`retrieval.expand`), the original
            hits it merged, by rank; empty for a plain hit.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    chunk: Chunk
    score: float
    rank: int = Field(ge=1)
    scores: dict[str, float] = {}
    stage: str
    parts: tuple[Hit, ...] = ()

    @property
    def chunk_id(self) -> str:
        """Shortcut for ``hit.chunk.id``."""
        return self.chunk.id
