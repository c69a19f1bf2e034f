"""Retrievers, fusion, rerankers, filters, agent tools and evaluation over ``indexes``.

The main job takes one import line::

    from ragtools.retrieval import Index, HybridRetriever, create_retriever_tool

``import ragtools.retrieval`` does not import torch, sentence-transformers or faiss; they load
when a model or a vector index is first used.
"""

from __future__ import annotations

import logging

from ragtools.indexes.bundle import Index
from ragtools.retrieval.base import (
    BaseRetriever,
    Filter,
    IndexRetriever,
    RankedChunks,
    Ranker,
    Retriever,
)
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
from ragtools.retrieval.rerank import CrossEncoderReranker, MMRReranker, Reranker
from ragtools.retrieval.tools.retriever_tool import RetrieverInput, create_retriever_tool
from ragtools.retrieval.vector import VectorRetriever

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
]
