"""Indexes: chunks in, rankings out, one model for one machine and many.

The architecture, as the folders show it:

* ``text/``: the :class:`Tokenizer` (and stopwords) that BM25 applies to chunks and queries
  alike.
* ``keyword/``: BM25. ``bm25.py`` is :class:`BM25Index` (rank-bm25's formulas, vectorised:
  postings and counts in ``_corpus``/``_math``, the query kernel in ``_query``, files in
  ``_io``); ``collection.py`` scores several segments with the collection statistics of
  their live rows, in a canonical term order, so scores never depend on history: merged
  into one index, or, for a version too large to merge, each segment per query from its
  term frequencies.
* ``dense/``: the :class:`Embedder` protocol, the sentence-transformers and ONNX encoders,
  the embedding cache, faiss's :class:`VectorIndex` and windows (a long chunk scores its best
  window).
* ``store/``: what is on disk. ``persist`` (JSON, ``.npy``, checksums), ``chunks`` (the chunk
  store), ``doc_texts``, ``manifest`` (the schemas and the one migration of older layouts),
  ``versions`` (the commit protocol: writer lock, atomic pointer, reader pins, collection),
  ``segments`` (a version = immutable segments + deleted rows; the live-row mapping; the one
  tie rule, score then chunk key) and ``spill`` (documents routed to shards without holding
  them).
* ``index.py``: :class:`Index`, read-only over a version of N >= 1 segments.
* ``writer.py``: :class:`IndexWriter`, the one writer for every N: build, update (a new
  segment for what changed), add, delete, merge, the merge policy.
* ``ranking.py``: :class:`Ranking`, the one result type below a hit; ``settings.py`` and
  ``sources.py`` (how an index is built and from which files); ``ray_build.py`` and
  ``ray_shards.py`` (segments written by Ray tasks, shards served by Ray actors).

Imports flow ``index``/``writer`` → ``store``, ``keyword``, ``dense``, ``text`` → ``parsers``.
Heavy libraries (torch, sentence-transformers, faiss) are imported only when a model is
loaded or a vector index is made, so ``import ragtools.indexes`` stays fast.
"""

from __future__ import annotations

import logging

from ragtools.indexes.dense.embed import Embedder, SentenceTransformerEmbedder
from ragtools.indexes.dense.embed_cache import CachedEmbedder, EmbeddingCache
from ragtools.indexes.dense.vector import VectorIndex
from ragtools.indexes.dense.windows import WindowedVectorIndex
from ragtools.indexes.errors import (
    DimensionMismatchError,
    IndexLoadError,
    IndexStateError,
    IndexVersionError,
)
from ragtools.indexes.index import Index, IndexState
from ragtools.indexes.keyword.bm25 import BM25Index
from ragtools.indexes.ranking import Ranking
from ragtools.indexes.settings import IndexSettings
from ragtools.indexes.text.tokenize import Tokenizer
from ragtools.indexes.writer import IndexWriter, UpdateReport

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "BM25Index",
    "CachedEmbedder",
    "DimensionMismatchError",
    "Embedder",
    "EmbeddingCache",
    "Index",
    "IndexLoadError",
    "IndexSettings",
    "IndexState",
    "IndexStateError",
    "IndexVersionError",
    "IndexWriter",
    "Ranking",
    "SentenceTransformerEmbedder",
    "Tokenizer",
    "UpdateReport",
    "VectorIndex",
    "WindowedVectorIndex",
]
