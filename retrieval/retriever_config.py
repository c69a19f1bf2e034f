"""Our retrievers as plain JSON settings, and back: what a framework writes to a pipeline file.

A framework that saves pipelines (Haystack's ``Pipeline.dumps``) needs a component's
settings, not its objects: an open index, a thread pool and an embedding model cannot be
written to YAML. :func:`retriever_config` describes a retriever by the directory of its
index and its options, and :func:`retriever_from_config` opens the index and builds the same
retriever again::

    {"kind": "hybrid", "k": 5, "weights": [0.6, 0.4], "fusion": "relative_score",
     "rrf_k": 60, "candidate_k": 1000, "min_score": null, "expand": null,
     "retrievers": [{"kind": "keyword", "index": "docs-index", ...},
                    {"kind": "vector", "index": "docs-index", ...}]}

The kinds are a closed set (``keyword``, ``vector``, ``hybrid``) mapped to our classes, so a
file never names a class to import; an index kind is built by
:func:`~retrieval.names.retriever_for`, as every named retriever is. What the settings
cannot say is refused with a :class:`~parsers.errors.ConfigError` naming it: a retriever of
another class, a reranker (an object holding a model), an index that lives in memory only.
The index path is written as the index was opened (relative paths stay relative to the
working directory), and the index is reopened with the embedding model its manifest names,
as ``Index.open`` does: an embedder passed to ``Index.open(embedder=...)`` is not part of
the settings. Retrievers over the same directory share one opened index.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragtools.indexes.index import Index
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.base import BaseRetriever, IndexRetriever
from ragtools.retrieval.hybrid import HybridRetriever
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.names import retriever_for
from ragtools.retrieval.vector import VectorRetriever

__all__ = ["retriever_config", "retriever_from_config"]

_INDEX_KINDS: dict[str, type[IndexRetriever]] = {
    "keyword": KeywordRetriever,
    "vector": VectorRetriever,
}
_OPTIONS = ("k", "min_score", "expand")
_HYBRID_OPTIONS = ("weights", "fusion", "rrf_k", "candidate_k")
_KEYS = {
    "keyword": ("kind", "index", *_OPTIONS, "rm3"),
    "vector": ("kind", "index", *_OPTIONS),
    "hybrid": ("kind", "retrievers", *_OPTIONS, *_HYBRID_OPTIONS),
}


def retriever_config(retriever: Any) -> dict[str, Any]:
    """The JSON settings that rebuild ``retriever`` (see the module docstring).

    Raises:
        ConfigError: the retriever is not one of ours over an index on disk, or holds a
            reranker; the message says what cannot be written.
    """
    common = {"k": getattr(retriever, "k", None), "min_score": None, "expand": None}
    if isinstance(retriever, BaseRetriever):
        common["min_score"] = retriever.min_score
        common["expand"] = (
            dataclasses.asdict(retriever.expand) if retriever.expand is not None else None
        )
    kind = next((k for k, c in _INDEX_KINDS.items() if type(retriever) is c), None)
    if kind is not None:
        path = getattr(retriever.index, "path", None)
        if not isinstance(path, Path):
            msg = f"the {kind} retriever's index has no directory; save it (Index.save) first"
            raise ConfigError(msg)
        extra = {}
        if isinstance(retriever, KeywordRetriever) and retriever.rm3 is not None:
            extra["rm3"] = retriever.rm3.to_dict()
        return {"kind": kind, "index": str(path), **common, **extra}
    if type(retriever) is HybridRetriever:
        if retriever.reranker is not None:
            msg = (
                f"a hybrid retriever with a reranker ({type(retriever.reranker).__name__}) "
                "cannot be written as settings; rerank in a later pipeline component, or "
                "wrap the retriever without it"
            )
            raise ConfigError(msg)
        return {
            "kind": "hybrid",
            **common,
            "retrievers": [retriever_config(inner) for inner in retriever.retrievers],
            "weights": retriever.weights,
            "fusion": retriever.fusion,
            "rrf_k": retriever.rrf_k,
            "candidate_k": retriever.candidate_k,
        }
    msg = (
        f"a {type(retriever).__name__} cannot be written as settings: only ragtools' "
        "KeywordRetriever, VectorRetriever and HybridRetriever over an index directory can"
    )
    raise ConfigError(msg)


def retriever_from_config(config: Mapping[str, Any]) -> BaseRetriever:
    """Open the index(es) and build the retriever ``config`` describes.

    Raises:
        ConfigError: an unknown kind or key, or a bad option value (named).
        IndexLoadError: an index directory is missing or damaged.
    """
    return _build(config, "retriever", {})


def _build(config: Any, where: str, opened: dict[str, Index]) -> BaseRetriever:
    if not isinstance(config, Mapping) or config.get("kind") not in _KEYS:
        kind = config.get("kind") if isinstance(config, Mapping) else None
        msg = f"{where}: expected settings with a kind of {', '.join(_KEYS)}, got kind {kind!r}"
        raise ConfigError(msg)
    kind = str(config["kind"])
    unknown = sorted(set(config) - set(_KEYS[kind]))
    if unknown:
        msg = f"{where}: unknown {kind} retriever settings {unknown}; known: {list(_KEYS[kind])}"
        raise ConfigError(msg)
    options = {key: config[key] for key in _OPTIONS if config.get(key) is not None}
    if kind == "keyword" and config.get("rm3") is not None:
        options["rm3"] = config["rm3"]
    if kind == "hybrid":
        inner = config.get("retrievers")
        if not isinstance(inner, list) or not inner:
            msg = f"{where}.retrievers: a hybrid needs a non-empty list of retriever settings"
            raise ConfigError(msg)
        retrievers = [_build(c, f"{where}.retrievers[{i}]", opened) for i, c in enumerate(inner)]
        hybrid = {k: config[k] for k in _HYBRID_OPTIONS if config.get(k) is not None}
        return HybridRetriever(retrievers, **hybrid, **options)  # type: ignore[arg-type]
    path = config.get("index")
    if not isinstance(path, str) or not path:
        msg = f"{where}.index: the index directory must be a non-empty string, got {path!r}"
        raise ConfigError(msg)
    if path not in opened:
        opened[path] = Index.open(path)
    return retriever_for(opened[path], kind, **options)
