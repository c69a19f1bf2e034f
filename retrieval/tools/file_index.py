"""Indexes over the files an agent hands a tool, built once per set of file contents.

Qwen-Agent's ``Retrieval`` tool answers a query over whatever files the conversation holds, so
the index is not built ahead of time: each call names its files. :class:`FileIndexer` turns a
list of paths into an :class:`~indexes.index.Index`:

1. each file is parsed through a :class:`~retrieval.tools.parse_cache.ParseCache` (parsed
   once per content, path and parser settings);
2. the index lives in the cache directory under a key over the files' parse keys and the
   index settings (chunking, embedder), so the same files asked about again open the index
   already built instead of splitting and embedding again; a process-local table keeps the
   opened ones.

A missing or unreadable file raises :class:`~parsers.errors.ParseError` naming it; files
without any text (a scanned PDF) give no chunks, and a set of files without any text is a
``ParseError`` naming them, since there is nothing to search.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragtools.indexes import Embedder, Index
from ragtools.indexes.store.versions import is_index_root
from ragtools.parsers import Document
from ragtools.parsers.errors import ParseError
from ragtools.retrieval.tools.parse_cache import ParseCache

__all__ = ["FileIndexer"]

logger = logging.getLogger(__name__)


class FileIndexer:
    """Parse (cached) and index (cached) sets of files.

    Args:
        cache: the parse cache; its directory also holds the built indexes (``indexes/``).
        embedder: the embedder of the vector half (default: the bundled model).
        vector: build the vector half (needed by vector and hybrid search).
        chunk_size: chunk length in characters.
        chunk_overlap: characters shared by consecutive chunks.
    """

    def __init__(
        self,
        cache: ParseCache,
        *,
        embedder: Embedder | None = None,
        vector: bool = True,
        chunk_size: int = 1000,
        chunk_overlap: int = 200,
    ) -> None:
        self.cache = cache
        self.embedder = embedder
        self.settings: dict[str, Any] = {
            "chunk_size": chunk_size,
            "chunk_overlap": chunk_overlap,
            "vector": vector,
        }
        self._opened: dict[str, Index] = {}
        self._lock = threading.Lock()

    def documents(self, paths: Sequence[str]) -> list[Document]:
        """Every document of ``paths``, in order (parsed through the cache)."""
        return [doc for path in paths for doc in self.cache.load(path)]

    def index(self, paths: Sequence[str]) -> Index:
        """The index over ``paths``: opened from memory or disk, or built.

        Raises:
            ParseError: a file is missing or unreadable, or no file has any text.
        """
        keys = [self.cache.key(path) for path in paths]
        model = getattr(self.embedder, "model_id", "default") if self.settings["vector"] else None
        material = json.dumps({"files": keys, "model": model, **self.settings}, sort_keys=True)
        key = hashlib.sha256(material.encode()).hexdigest()
        with self._lock:
            found = self._opened.get(key)
            if found is None:
                found = self._open_or_build(key, paths)
                self._opened[key] = found
            return found

    def _open_or_build(self, key: str, paths: Sequence[str]) -> Index:
        directory = self.cache.directory / "indexes" / key
        if is_index_root(directory):
            logger.debug("opening the index of %d files at %s", len(paths), directory)
            return Index.open(directory, embedder=self.embedder)
        documents = [doc for doc in self.documents(paths) if doc.text.strip()]
        if not documents:
            msg = "no text to search in these files (scanned pages without a text layer?)"
            raise ParseError(", ".join(paths), msg)
        logger.info(
            "indexing %d documents of %d files at %s", len(documents), len(paths), directory
        )
        return Index.from_documents(
            documents,
            Path(directory),
            embedder=self.embedder,
            keyword=True,
            **self.settings,
        )
