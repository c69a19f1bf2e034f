"""A deterministic, dependency-free embedder for tests and examples.

Real models are slow to load and their vectors are opaque, so index logic is tested with
:class:`FakeEmbedder`: every lowercase word is hashed (BLAKE2b, stable across processes,
unlike :func:`hash`) into one of ``dim`` buckets, the bucket is set to one, and the vector is
L2-normalised. Texts that share words therefore have a positive cosine, texts that share none
score zero (up to hash collisions), and the same text always gives the same vector.

The counters ``calls``, ``texts_embedded`` and ``query_calls`` let tests check exactly how
much work reached the "model" (for example that a cached rebuild embeds one changed text).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ragtools.parsers.errors import ConfigError

__all__ = ["FakeEmbedder", "live_segment"]

logger = logging.getLogger(__name__)

_WORD = re.compile(r"\w+")


class FakeEmbedder:
    """Keyword-hashing bag-of-words embedder that implements the ``Embedder`` protocol.

    Example:
        >>> emb = FakeEmbedder(dim=16)
        >>> v = emb.embed_documents(["red apple", "green apple", "blue sky"])
        >>> bool(v[0] @ v[1] > v[0] @ v[2])
        True
    """

    def __init__(self, dim: int = 64) -> None:
        """Create the embedder.

        Args:
            dim: vector dimension (number of hash buckets), at least 1.

        Raises:
            ConfigError: ``dim`` is not a positive integer.
        """
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            msg = f"dim must be a positive integer, got {dim!r}"
            raise ConfigError(msg)
        self._dim = dim
        self.calls = 0
        """Number of ``embed_documents`` calls."""
        self.texts_embedded = 0
        """Total number of texts passed to ``embed_documents``."""
        self.query_calls = 0
        """Number of ``embed_query`` calls."""

    @property
    def dim(self) -> int:
        """The vector dimension."""
        return self._dim

    @property
    def model_id(self) -> str:
        """A stable identifier that changes with ``dim`` (so caches never mix dimensions)."""
        return f"fake-keyword-hash-{self._dim}"

    def _vector(self, text: str) -> npt.NDArray[np.float32]:
        vec = np.zeros(self._dim, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8)
            vec[int.from_bytes(digest.digest(), "little") % self._dim] = 1.0
        norm = float(np.linalg.norm(vec))
        if norm > 0.0:
            vec /= norm
        return vec

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts; a text without any word gets the zero vector.

        Returns:
            float32 array of shape ``(len(texts), dim)``, rows L2-normalised.
        """
        if isinstance(texts, str):
            msg = "embed_documents takes a sequence of texts, got a single str; wrap it in a list"
            raise ConfigError(msg)
        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self._vector(text)
        return out

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """Embed one query exactly like a document.

        Returns:
            float32 array of shape ``(dim,)``.
        """
        self.query_calls += 1
        return self._vector(text)


def live_segment(root: str | Path, number: int = 0) -> Path:
    """The folder of segment ``number`` of the live version of the index ``root``: where a
    test finds the files of an index it damages on purpose."""
    from ragtools.indexes.store.versions import current_version

    manifest = current_version(root) / "version.json"
    entries = json.loads(manifest.read_text(encoding="utf-8"))["segments"]
    return Path(root) / str(entries[number]["path"])
