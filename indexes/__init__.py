"""Tokenizer, BM25 index, embedders, faiss vector index and the on-disk index bundle."""

from __future__ import annotations

import logging

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__: list[str] = []
