"""What every framework adapter hands over for a hit: its text, and metadata that keeps
everything the hit says (the chunk's metadata, where it lies, every stage's score, and for an
expanded passage the original hits it merged)."""

from __future__ import annotations

from typing import Any

from ragtools.indexes.ranking import check_k
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.hit import Hit

HIT_KEYS = ("chunk_id", "doc_id", "start", "end", "score", "rank", "stage", "scores", "parts")
"""The keys an adapter adds to the chunk's metadata (they win over metadata of that name)."""


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """The chunk's metadata plus :data:`HIT_KEYS` (``parts`` only for an expanded passage),
    JSON values only, so a framework can store or serialise it."""
    chunk = hit.chunk
    metadata: dict[str, Any] = {
        **chunk.metadata,
        "chunk_id": chunk.id,
        "doc_id": chunk.doc_id,
        "start": chunk.start,
        "end": chunk.end,
        "score": hit.score,
        "rank": hit.rank,
        "stage": hit.stage,
        "scores": dict(hit.scores),
    }
    if hit.parts:
        metadata["parts"] = [
            {
                "chunk_id": part.chunk.id,
                "start": part.chunk.start,
                "end": part.chunk.end,
                "score": part.score,
                "rank": part.rank,
                "stage": part.stage,
            }
            for part in hit.parts
        ]
    else:
        metadata.pop("parts", None)
    return metadata


def check_wrapped(retriever: Any, k: object = None, name: str = "k") -> None:
    """Refuse what no adapter can wrap: a retriever without ``invoke``, or a ``k`` that is
    neither ``None`` nor a positive integer (:class:`ConfigError`)."""
    if not callable(getattr(retriever, "invoke", None)):
        msg = f"retriever must have invoke(query, *, k=None, filter=None), got {retriever!r}"
        raise ConfigError(msg)
    if k is not None:
        check_k(k, name)
