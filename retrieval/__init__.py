"""Retrievers, fusion, rerankers, filters, agent tools and evaluation over ``indexes``.

``import retrieval`` does not import torch, sentence-transformers or faiss; they load when a
model or a vector index is first used.
"""

from __future__ import annotations

import logging

from retrieval.base import BaseRetriever, Filter, Retriever
from retrieval.filters import compile_filter, filter_mask
from retrieval.frontpage import FrontPageRetriever
from retrieval.fusion import (
    distribution_based_score_fusion,
    fuse,
    fuse_hits,
    reciprocal_rank_fusion,
    relative_score_fusion,
)
from retrieval.hit import Hit
from retrieval.hybrid import HybridRetriever
from retrieval.keyword import KeywordRetriever
from retrieval.rerank import CrossEncoderReranker, MMRReranker, Reranker
from retrieval.tools.retriever_tool import RetrieverInput, create_retriever_tool
from retrieval.vector import VectorRetriever

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "BaseRetriever",
    "CrossEncoderReranker",
    "Filter",
    "FrontPageRetriever",
    "Hit",
    "HybridRetriever",
    "KeywordRetriever",
    "MMRReranker",
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
    "reciprocal_rank_fusion",
    "relative_score_fusion",
]
