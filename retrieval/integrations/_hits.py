"""What every framework adapter hands over for a hit: its text, and metadata that keeps
everything the hit says (the chunk's metadata, where it lies, every stage's score, and for an
expanded passage the original hits it merged).

It also says which metadata stays away from models: :data:`FILE_KEYS` (the build
machine's absolute ``path``, the file's ``mtime`` and ``size``) describe a file on the
disk, not the passage, and the README promises that no directory of the build machine
reaches a model. Adapters hide them wherever the framework lets a model read metadata
(LlamaIndex's ``excluded_llm_metadata_keys``, MCP results), unless the user names them in
``show_metadata`` (:func:`hidden_file_keys`). The application keeps them where the
framework separates what a model reads from what code reads (LlamaIndex node metadata).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ragtools.indexes.ranking import check_k
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.hit import Hit

FILE_KEYS = ("path", "mtime", "size")
"""Metadata about the file on the build machine, hidden from models unless asked for by name
(see the module docstring)."""


def hidden_file_keys(show_metadata: Iterable[str] = ()) -> tuple[str, ...]:
    """The :data:`FILE_KEYS` a model must not see: all but those named in ``show_metadata``.

    Raises:
        ConfigError: ``show_metadata`` is a bare string or names a key that is not one of
            :data:`FILE_KEYS` (every other key is shown already).
    """
    if isinstance(show_metadata, str):
        msg = (
            f"show_metadata takes a list of keys, got the string {show_metadata!r}; "
            f"write [{show_metadata!r}]"
        )
        raise ConfigError(msg)
    shown = list(show_metadata)
    unknown = [key for key in shown if key not in FILE_KEYS]
    if unknown:
        msg = (
            f"show_metadata names {unknown!r}; it opts in to the hidden file keys only: "
            f"{', '.join(FILE_KEYS)} (every other metadata key is shown already)"
        )
        raise ConfigError(msg)
    return tuple(key for key in FILE_KEYS if key not in shown)


def without_keys(hit: Hit, keys: Iterable[str]) -> Hit:
    """``hit`` with ``keys`` removed from its chunk's metadata and from its parts' chunks."""
    drop = frozenset(keys)
    metadata = hit.chunk.metadata
    if not drop or (drop.isdisjoint(metadata) and not hit.parts):
        return hit
    chunk = hit.chunk.model_copy(
        update={"metadata": {k: v for k, v in metadata.items() if k not in drop}}
    )
    parts = tuple(without_keys(part, drop) for part in hit.parts)
    return hit.model_copy(update={"chunk": chunk, "parts": parts})


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """The chunk's metadata plus :data:`~retrieval.hit.HIT_KEYS` (``parts`` only for an
    expanded passage), JSON values only, so a framework can store or serialise it."""
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
