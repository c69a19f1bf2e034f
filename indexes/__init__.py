"""Tokenizer, BM25 index, embedders, faiss vector index and the on-disk index bundle.

Heavy libraries (torch, sentence-transformers, faiss) are imported only when a model is
loaded or a vector index is made, so ``import indexes`` stays fast.
"""

from __future__ import annotations

import logging

from ragtools.indexes.bm25 import BM25Index
from ragtools.indexes.bundle import Index, UpdateReport
from ragtools.indexes.embed import Embedder, SentenceTransformerEmbedder
from ragtools.indexes.embed_cache import CachedEmbedder, EmbeddingCache
from ragtools.indexes.settings import IndexSettings
from ragtools.indexes.tokenize import Tokenizer
from ragtools.indexes.vector import VectorIndex

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "BM25Index",
    "CachedEmbedder",
    "Embedder",
    "EmbeddingCache",
    "Index",
    "IndexSettings",
    "SentenceTransformerEmbedder",
    "Tokenizer",
    "UpdateReport",
    "VectorIndex",
]
