"""Tokenizer, BM25 index, embedders, faiss vector index and the on-disk index bundle.

Heavy libraries (torch, sentence-transformers, faiss) are imported only when a model is
loaded or a vector index is made, so ``import ragtools.indexes`` stays fast.
"""

from __future__ import annotations

import logging

from ragtools.indexes.bm25 import BM25Index
from ragtools.indexes.bundle import Index, IndexState
from ragtools.indexes.embed import Embedder, SentenceTransformerEmbedder
from ragtools.indexes.embed_cache import CachedEmbedder, EmbeddingCache
from ragtools.indexes.ranking import Ranking
from ragtools.indexes.settings import IndexSettings
from ragtools.indexes.tokenize import Tokenizer
from ragtools.indexes.vector import VectorIndex
from ragtools.indexes.windows import WindowedVectorIndex
from ragtools.indexes.writer import IndexWriter, UpdateReport

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "BM25Index",
    "CachedEmbedder",
    "Embedder",
    "EmbeddingCache",
    "Index",
    "IndexSettings",
    "IndexState",
    "IndexWriter",
    "Ranking",
    "SentenceTransformerEmbedder",
    "Tokenizer",
    "UpdateReport",
    "VectorIndex",
    "WindowedVectorIndex",
]
