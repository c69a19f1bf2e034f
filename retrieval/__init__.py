"""Retrievers, fusion, rerankers, agent tools and evaluation over ``indexes``."""

from __future__ import annotations

import logging

from retrieval.base import Filter, Retriever
from retrieval.hit import Hit

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = ["Filter", "Hit", "Retriever"]
