"""Rerankers: a second stage that re-orders the hits a retriever found.

* :class:`CrossEncoderReranker` scores each ``(query, chunk text)`` pair jointly with a
  sentence-transformers ``CrossEncoder``, which reads query and passage together and so ranks
  better than the bi-encoder or BM25 that found them (at a cost per pair, hence a reranker
  over a short list rather than a retriever).
* :class:`MMRReranker` trades relevance for diversity with maximal marginal relevance
  (Carbonell and Goldstein, SIGIR 1998), so near-duplicate chunks do not fill the top k.

Both follow the :class:`Reranker` protocol, ``rerank(query, hits, k=None) -> list[Hit]``, and
share these rules:

* Hits are deduplicated by chunk id (the first occurrence is kept), re-sorted by the new score
  in hit order (ties by chunk key, :mod:`retrieval.hit`), cut to ``k`` (or ``top_n`` when
  ``k`` is None, or all), and ranked 1, 2, ...
* Nothing that explains a result is thrown away: a reranked hit's ``scores`` keeps every
  previous stage and adds this stage's score (``"rerank"`` or ``"mmr"``); if the previous
  ``score`` is under no key it is kept as ``"prior"``, and if the stage key is already taken
  (reranking twice) the earlier value moves to ``"<stage>_prior"``.

The cross-encoder is loaded on first use, from a local directory or the Hugging Face cache
only (``local_files_only=True``: never a network call) and with ``trust_remote_code=False``,
so no code from a model repository runs. A prebuilt ``CrossEncoder`` (or any object with a
compatible ``predict``) may be passed instead, which is how tests inject fakes.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ragtools.indexes.errors import DimensionMismatchError
from ragtools.parsers.errors import ConfigError
from ragtools.parsers.optional import require
from ragtools.retrieval.hit import Hit, chunk_keys, key_order, rescored, restaged

__all__ = [
    "CrossEncoderReranker",
    "MMRReranker",
    "PairScorer",
    "Reranker",
    "TextEmbedder",
    "mmr_select",
]

logger = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float64]


@runtime_checkable
class Reranker(Protocol):
    """Anything that re-orders hits for a query."""

    def rerank(self, query: str, hits: Sequence[Hit], k: int | None = None) -> list[Hit]:
        """Return at most ``k`` of ``hits`` re-scored, best first, ranked 1, 2, ..."""
        ...


class PairScorer(Protocol):
    """What :class:`CrossEncoderReranker` needs of a model: sentence-transformers'
    ``CrossEncoder.predict(pairs, batch_size=..., show_progress_bar=...)`` returning one
    score per pair (higher is more relevant)."""

    def predict(self, *args: Any, **kwargs: Any) -> Any:
        """Score ``(query, passage)`` pairs."""
        ...


class TextEmbedder(Protocol):
    """What :class:`MMRReranker` needs: the two methods of ``indexes``' ``Embedder``."""

    def embed_documents(self, texts: Sequence[str]) -> Any:
        """An ``(n, d)`` array, one row per text."""
        ...

    def embed_query(self, text: str) -> Any:
        """A ``(d,)`` array."""
        ...


# --- shared rules ---------------------------------------------------------------------------


def _check_count(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or value < 1):
        msg = f"{name} must be an integer >= 1 or None, got {value!r}"
        raise ConfigError(msg)


def _keys(hits: Sequence[Hit]) -> npt.NDArray[np.int64]:
    return chunk_keys(hit.chunk_id for hit in hits)


def _dedup(hits: Sequence[Hit]) -> list[Hit]:
    seen: set[str] = set()
    unique: list[Hit] = []
    for hit in hits:
        if hit.chunk_id not in seen:
            seen.add(hit.chunk_id)
            unique.append(hit)
    return unique


# --- cross-encoder --------------------------------------------------------------------------


class CrossEncoderReranker:
    """Rerank hits with a cross-encoder's relevance score for each ``(query, text)`` pair.

    Args:
        model: a local directory or a model name already in the Hugging Face cache (loaded on
            first use, offline, ``trust_remote_code=False``), or a prebuilt ``CrossEncoder``
            or any object with a compatible ``predict``.
        top_n: how many hits to return when ``rerank`` is called with ``k=None``; ``None``
            returns all of them.
        batch_size: pairs per forward pass.
        device: torch device for a model loaded from a name or path (``"cpu"``, ``"cuda"``);
            ``None`` lets sentence-transformers choose. Ignored for a prebuilt model.

    Raises:
        ConfigError: ``top_n`` or ``batch_size`` below 1.

    Example:
        With a cross-encoder saved in a local directory::

            reranker = CrossEncoderReranker("models/ms-marco-MiniLM-L-6-v2", top_n=5)
            hits = reranker.rerank("what is bm25", retriever.invoke("what is bm25", k=50))
            hits[0].scores  # every earlier stage plus "rerank", e.g. {"bm25": ..., "rerank": ...}
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | PairScorer,
        *,
        top_n: int | None = None,
        batch_size: int = 32,
        device: str | None = None,
    ) -> None:
        _check_count("top_n", top_n)
        _check_count("batch_size", batch_size)
        self.top_n = top_n
        self.batch_size = batch_size
        self.device = device
        self._source: str | None = None
        self._model: PairScorer | None = None
        if isinstance(model, (str, os.PathLike)):
            self._source = os.fspath(model)
        else:
            self._model = model
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """The name or path the model comes from, or the class name of a prebuilt model."""
        return self._source if self._source is not None else type(self._model).__name__

    def warm_up(self) -> None:
        """Load the model now instead of on the first :meth:`rerank`.

        Raises:
            ConfigError: the model cannot be found locally or is not a cross-encoder.
            MissingDependencyError: sentence-transformers is not installed.
        """
        self._get_model()

    def _get_model(self) -> PairScorer:
        with self._lock:
            if self._model is None:
                self._model = self._load(str(self._source))
            return self._model

    def _load(self, source: str) -> PairScorer:
        st = require("sentence_transformers", package="sentence-transformers")
        started = time.perf_counter()
        try:
            model: PairScorer = st.CrossEncoder(
                source, device=self.device, local_files_only=True, trust_remote_code=False
            )
        except (OSError, ValueError) as exc:
            msg = (
                f"could not load cross-encoder {source!r} offline: {exc}. Pass a local "
                "directory holding a saved CrossEncoder (or transformers sequence-"
                "classification) model, or the name of a model already in the Hugging Face cache"
            )
            raise ConfigError(msg) from exc
        logger.info("loaded cross-encoder %s in %.2fs", source, time.perf_counter() - started)
        return model

    def rerank(self, query: str, hits: Sequence[Hit], k: int | None = None) -> list[Hit]:
        """Score every hit against ``query`` and return them best first.

        Args:
            query: the user query.
            hits: candidates, usually a retriever's top 20 to 100.
            k: how many to return; ``None`` means ``top_n`` (or all when that is None too).

        Returns:
            Hits by cross-encoder score, ties by chunk key, ranked 1, 2, ...; ``score``
            and ``scores["rerank"]`` hold the model's score (for one-label models
            sentence-transformers applies a sigmoid, so it lies in [0, 1]).

        Raises:
            ConfigError: ``k < 1``, a model that cannot be loaded, or one that does not
                return one score per pair.
        """
        _check_count("k", k)
        unique = _dedup(hits)
        if not unique:
            return []
        model = self._get_model()
        pairs = [(query, hit.chunk.text) for hit in unique]
        raw = model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        values = np.asarray(raw, dtype=np.float64)
        if values.ndim == 2 and values.shape[1] == 1:
            values = values[:, 0]
        if values.shape != (len(unique),):
            msg = (
                f"cross-encoder {self.model_id!r} returned scores of shape {values.shape} for "
                f"{len(unique)} pairs; use a model with a single relevance output (num_labels=1)"
            )
            raise ConfigError(msg)
        logger.debug("reranked %d hits with %s", len(unique), self.model_id)
        return rescored(unique, values.tolist(), "rerank", k if k is not None else self.top_n)


# --- maximal marginal relevance -------------------------------------------------------------


def _unit_rows(matrix: FloatArray) -> FloatArray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    result: FloatArray = np.divide(
        matrix, norms, out=np.zeros_like(matrix), where=norms > 0
    )  # a zero vector stays zero: similarity 0 to everything
    return result


def mmr_select(
    query_vector: FloatArray, doc_vectors: FloatArray, lambda_mult: float, k: int
) -> list[tuple[int, float]]:
    """Greedy maximal marginal relevance over unit vectors (cosine similarities).

    At each step pick the document maximising ``λ·sim(d, q) − (1 − λ)·max_{s∈S} sim(d, s)``
    (the second term is 0 while nothing is selected); ties go to the lowest row index.

    Args:
        query_vector: ``(d,)`` unit vector.
        doc_vectors: ``(n, d)`` unit rows.
        lambda_mult: weight of relevance against redundancy, in [0, 1].
        k: how many rows to select (at most ``n``).

    Returns:
        ``(row, mmr value)`` in selection order; the values never increase.
    """
    relevance = lambda_mult * (doc_vectors @ query_vector)
    similarity = doc_vectors @ doc_vectors.T
    redundancy: FloatArray | None = None  # max similarity to the selected set, once non-empty
    available = np.ones(len(doc_vectors), dtype=np.bool_)
    picked: list[tuple[int, float]] = []
    for _ in range(min(k, len(doc_vectors))):
        values = (
            relevance.copy() if redundancy is None else relevance - (1.0 - lambda_mult) * redundancy
        )
        values[~available] = -np.inf
        row = int(np.argmax(values))
        picked.append((row, float(values[row])))
        available[row] = False
        column = similarity[:, row]
        redundancy = column.copy() if redundancy is None else np.maximum(redundancy, column)
    return picked


class MMRReranker:
    """Re-order hits by maximal marginal relevance (Carbonell and Goldstein, 1998).

    Each next hit maximises ``λ·cos(d, query) − (1 − λ)·max cos(d, already chosen)``, so a
    near-duplicate of a chosen chunk is pushed down. Embeddings are L2-normalised here, so any
    embedder works.

    Args:
        embedder: has ``embed_documents(texts) -> (n, d)`` and ``embed_query(text) -> (d,)``.
        lambda_mult: 1.0 ranks by relevance only, 0.0 by diversity only; 0.5 by default (as
            in LangChain).
        top_n: how many hits to return when ``rerank`` is called with ``k=None``; ``None``
            returns all of them.
        fetch_k: MMR chooses among the ``fetch_k`` best hits it is given (20, as LangChain's
            ``max_marginal_relevance_search``); ``None`` for all. Over a hybrid's thousand
            candidates, diversity would otherwise pick chunks far from the query.

    Raises:
        ConfigError: ``lambda_mult`` outside [0, 1], ``top_n`` or ``fetch_k`` below 1.
    """

    def __init__(
        self,
        embedder: TextEmbedder,
        *,
        lambda_mult: float = 0.5,
        top_n: int | None = None,
        fetch_k: int | None = 20,
    ) -> None:
        if isinstance(lambda_mult, bool) or not (
            math.isfinite(lambda_mult) and 0.0 <= lambda_mult <= 1.0
        ):
            msg = f"lambda_mult must be in [0, 1], got {lambda_mult!r} (1 = relevance only)"
            raise ConfigError(msg)
        _check_count("top_n", top_n)
        _check_count("fetch_k", fetch_k)
        self.fetch_k = fetch_k
        self.embedder = embedder
        self.lambda_mult = float(lambda_mult)
        self.top_n = top_n

    def rerank(self, query: str, hits: Sequence[Hit], k: int | None = None) -> list[Hit]:
        """Select hits one by one by marginal relevance.

        Args:
            query: the user query.
            hits: candidates, best first; the first ``fetch_k`` distinct ones are embedded.
            k: how many to return; ``None`` means ``top_n`` (or all when that is None too).

        Returns:
            Hits in selection order, ranked 1, 2, ...; ``score`` and ``scores["mmr"]`` hold the
            marginal relevance at selection, which never increases down the list.

        Raises:
            ConfigError: ``k < 1``.
            DimensionMismatchError: the embedder's shapes do not fit together.
        """
        _check_count("k", k)
        # In chunk-key order, argmax's lowest-row tie-break is the hit rule's key tie-break.
        pool = _dedup(hits)[: self.fetch_k]
        unique = [pool[i] for i in key_order(np.zeros(len(pool)), _keys(pool))]
        if not unique:
            return []
        docs = np.asarray(self.embedder.embed_documents([h.chunk.text for h in unique]))
        query_vector = np.asarray(self.embedder.embed_query(query), dtype=np.float64).ravel()
        if docs.ndim != 2 or docs.shape[0] != len(unique) or docs.shape[1] != len(query_vector):
            msg = (
                f"embedder returned document vectors of shape {docs.shape} for "
                f"{len(unique)} texts and a query vector of size {len(query_vector)}; "
                "expected (n, d) and (d,)"
            )
            raise DimensionMismatchError(msg)
        limit = k if k is not None else self.top_n
        picked = mmr_select(
            _unit_rows(query_vector),
            _unit_rows(docs.astype(np.float64)),
            self.lambda_mult,
            len(unique) if limit is None else limit,
        )
        logger.debug(
            "MMR picked %d of %d hits (lambda=%s)", len(picked), len(unique), self.lambda_mult
        )
        return restaged([unique[row] for row, _ in picked], [value for _, value in picked], "mmr")
