"""Retrievers, fusion, rerankers, filters, agent tools and evaluation over ``indexes``.

The main job takes one import line::

    from ragtools.retrieval import Index, HybridRetriever, create_retriever_tool

``import ragtools.retrieval`` does not import torch, sentence-transformers or faiss; they load
when a model or a vector index is first used. Nor does it import the agent tool layer
(``ragtools.retrieval.tools``, some thirty modules and Qwen-Agent's tool registrations): its
names here (``create_retriever_tool``, ``RetrieverInput``) load it on first access
(PEP 562's module ``__getattr__``), so a script that only searches never pays for it.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

from ragtools.indexes.index import Index
from ragtools.retrieval.base import (
    BaseRetriever,
    Filter,
    IndexRetriever,
    RankedChunks,
    Ranker,
    Retriever,
)
from ragtools.retrieval.errors import ToolInputError
from ragtools.retrieval.expand import Expansion
from ragtools.retrieval.filters import compile_filter, filter_mask
from ragtools.retrieval.frontpage import FrontPageRetriever
from ragtools.retrieval.fusion import (
    distribution_based_score_fusion,
    fuse,
    fuse_hits,
    fuse_rankings,
    reciprocal_rank_fusion,
    relative_score_fusion,
)
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.hybrid import HybridRetriever
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.names import retriever_for
from ragtools.retrieval.rerank import CrossEncoderReranker, MMRReranker, Reranker
from ragtools.retrieval.vector import VectorRetriever

if TYPE_CHECKING:
    from ragtools.retrieval.tools.retriever_tool import RetrieverInput, create_retriever_tool

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "BaseRetriever",
    "CrossEncoderReranker",
    "Expansion",
    "Filter",
    "FrontPageRetriever",
    "Hit",
    "HybridRetriever",
    "Index",
    "IndexRetriever",
    "KeywordRetriever",
    "MMRReranker",
    "RankedChunks",
    "Ranker",
    "Reranker",
    "Retriever",
    "RetrieverInput",
    "ToolInputError",
    "VectorRetriever",
    "compile_filter",
    "create_retriever_tool",
    "distribution_based_score_fusion",
    "filter_mask",
    "fuse",
    "fuse_hits",
    "fuse_rankings",
    "reciprocal_rank_fusion",
    "relative_score_fusion",
    "retriever_for",
]

_TOOL_NAMES = {
    "RetrieverInput": "ragtools.retrieval.tools.retriever_tool",
    "create_retriever_tool": "ragtools.retrieval.tools.retriever_tool",
}
"""Exported names whose module loads the tool layer, imported when first looked up."""


def __getattr__(name: str) -> Any:
    """Load a tool-layer name on first access (then it is an ordinary module global)."""
    module = _TOOL_NAMES.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
