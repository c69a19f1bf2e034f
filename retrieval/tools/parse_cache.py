"""A parse cache on disk: a file is parsed once per content and parser settings.

Qwen-Agent's file tools parse the files an agent hands them on every call unless the result
is cached; agents ask about the same files again and again, and parsing a PDF costs far more
than reading JSON. :class:`ParseCache` keeps each file's parsed documents as one JSON file
(no pickle) named by a SHA-256 key over

* the file's **content** (SHA-256 of its bytes, so an edited file is parsed again and a
  touched one is not),
* its absolute path (a document records its ``source``; the same bytes under another name
  must not come back with the old name),
* the parser **settings** (the package version, the password given or not, anything the
  caller passes), so a parser change never serves stale output.

Sharing between processes is safe without locks: an entry is written to a temporary file in
the same directory and moved into place with :func:`os.replace` (atomic on POSIX and
Windows), so a reader sees either no entry or a complete one; two processes missing at once
both parse and the last rename wins with identical content. An unreadable entry (truncated
by a crash of another tool, edited by hand) is logged and parsed again.

Counters (``parses``, ``hits``) say what a call did, so tests and logs can tell a cached call
from a parsing one.

**Parsing is bounded in any thread.** A miss is parsed by
:func:`~ragtools.parsers.loading.load_isolated`: in a worker process under ``time_budget``
and ``memory_limit``, killed when it overruns, and killed too as soon as the tool call it
serves is abandoned (:func:`~ragtools.retrieval.tools.concurrency.abandoned`: a
``ToolsNode`` or tool timeout). Tools run in threads, where :func:`~ragtools.parsers.load`'s
timer cannot; a crafted file (a workbook declaring ``A1:XFD1048576``, a file whose text
expands without end) is a ``ParseError`` naming it and the limit, and nothing keeps running.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ragtools.parsers import Document
from ragtools.parsers.errors import ConfigError, ParseError
from ragtools.parsers.loading import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MEMORY_LIMIT,
    DEFAULT_TIME_BUDGET,
    load_isolated,
)
from ragtools.retrieval.tools.concurrency import abandoned

__all__ = ["ParseCache", "default_cache_dir"]

logger = logging.getLogger(__name__)

_FORMAT = "ragtools-parse-cache/1"


def default_cache_dir() -> Path:
    """``$RAGTOOLS_CACHE_DIR/parsed``, else ``$XDG_CACHE_HOME/ragtools/parsed`` or
    ``~/.cache/ragtools/parsed``."""
    root = os.environ.get("RAGTOOLS_CACHE_DIR")
    if root:
        return Path(root) / "parsed"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "ragtools" / "parsed"


class ParseCache:
    """Parsed documents on disk, keyed by file content, path and parser settings.

    Args:
        directory: where entries live (created on first write); default
            :func:`default_cache_dir`.
        settings: JSON values that change what parsing produces (merged into every key).
        max_bytes: larger files are refused unread (a ``ParseError`` naming the limit).
        time_budget: seconds one file may take to parse (``None``: no limit).
        memory_limit: bytes of address space its parse may use (``None``: no bound).

    Raises:
        ConfigError: settings that are not JSON (a budget or limit that is not positive is
            refused by the first parse).

    Attributes:
        parses: files parsed by this instance (cache misses).
        hits: files served from the cache by this instance.
    """

    def __init__(
        self,
        directory: str | Path | None = None,
        *,
        settings: Mapping[str, Any] | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        time_budget: float | None = DEFAULT_TIME_BUDGET,
        memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
    ) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.settings = dict(settings or {})
        self.max_bytes = max_bytes
        self.time_budget = time_budget
        self.memory_limit = memory_limit
        try:
            json.dumps(self.settings, sort_keys=True)
        except TypeError as exc:
            msg = f"parse cache settings must be JSON values, got {self.settings!r}"
            raise ConfigError(msg) from exc
        self.parses = 0
        self.hits = 0
        self._lock = threading.Lock()

    def key(self, path: str | Path, *, password: str | None = None) -> str:
        """The entry key of ``path`` (reads the file to hash its content).

        Raises:
            ParseError: the file does not exist or cannot be read (names the file).
        """
        file = Path(path)
        try:
            digest = _sha256(file)
        except OSError as exc:
            msg = f"cannot read the file: {exc.strerror or exc}"
            raise ParseError(path, msg) from exc
        material = {
            "format": _FORMAT,
            "content": digest,
            "path": str(file.resolve()),
            "source": str(path),
            "parser": _package_version(),
            "password": password is not None,
            "settings": self.settings,
        }
        return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()

    def load(self, path: str | Path, *, password: str | None = None) -> list[Document]:
        """The documents of ``path``: from the cache, or parsed (and then cached).

        Raises:
            ParseError: the file is missing, unreadable or cannot be parsed, or its parse
                overran the time budget or the memory bound, or the call was abandoned
                (names the file and the limit).
        """
        key = self.key(path, password=password)
        entry = self.directory / f"{key}.json"
        documents = self._read(entry)
        if documents is not None:
            with self._lock:
                self.hits += 1
            logger.debug("parse cache hit for %s", path)
            return documents
        documents = load_isolated(
            path,
            password=password,
            max_bytes=self.max_bytes,
            time_budget=self.time_budget,
            memory_limit=self.memory_limit,
            cancelled=abandoned,
        )
        with self._lock:
            self.parses += 1
        self._write(entry, documents)
        logger.info("parsed %s: %d documents, cached as %s", path, len(documents), entry.name)
        return documents

    def _read(self, entry: Path) -> list[Document] | None:
        try:
            payload = json.loads(entry.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.warning("unreadable parse cache entry %s (%s); parsing again", entry, exc)
            return None
        if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
            logger.warning("parse cache entry %s has an unknown format; parsing again", entry)
            return None
        try:
            return [Document.model_validate(item) for item in payload["documents"]]
        except (KeyError, TypeError, ValueError) as exc:
            logger.warning("invalid parse cache entry %s (%s); parsing again", entry, exc)
            return None

    def _write(self, entry: Path, documents: list[Document]) -> None:
        payload = {
            "format": _FORMAT,
            "documents": [doc.model_dump(mode="json") for doc in documents],
        }
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                json.dump(payload, stream, ensure_ascii=False)
            os.replace(temporary, entry)
        except OSError as exc:  # a read-only cache costs speed, never an answer
            logger.warning("could not write parse cache entry %s: %s", entry, exc)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _package_version() -> str:
    try:
        return version("ragtools")
    except PackageNotFoundError:
        return "unknown"
