"""Embedding documents and queries with ONNX Runtime, with no torch in the process.

sentence-transformers' ``encode`` pays PyTorch's per-operator overhead and, before the first
vector, the import of torch and the model load (seconds). A sentence-transformers model whose
pipeline is *transformer → mean or CLS pooling → optional normalisation* is fully described by
files in its directory, so this module reproduces it without torch:

- :func:`read_plan` reads ``modules.json``, ``sentence_bert_config.json`` and the pooling
  config, and says whether the model has this plain pipeline (else the caller keeps
  sentence-transformers);
- tokenisation is the model's own ``tokenizer.json`` through the ``tokenizers`` library
  (what sentence-transformers' fast tokenizer runs), truncated at the model's
  ``max_seq_length``;
- the transformer runs in ONNX Runtime from the file :mod:`indexes.dense.onnx_export` keeps on
  disk (at ``bf16``, the fp32 file in OpenVINO, whose CPU plugin runs its matrix products in
  bfloat16 on AMX tiles: ONNX Runtime has no bfloat16 kernels for the CPU); pooling and
  normalisation are a few numpy lines.

Documents are sorted by their token count and cut into batches padded to their own longest
text, so short texts are not padded to long ones. A reduced precision leaves the shortest
texts to the fp32 model (:data:`SHORT_TOKENS`). The engine uses every core; ONNX Runtime's
idle workers do not spin, because on a shared or small machine spinning takes the cores the
caller's next step (a vector search) needs.

:func:`shared_encoder` keeps one encoder per model file and process, so several indexes (or
embedders) over one model hold one copy of it.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ragtools.indexes.dense.onnx_export import (
    MODEL_FILE,
    export_dir,
    exported_model,
    onnx_runtime,
    openvino_runtime,
)
from ragtools.parsers.progress import counter

__all__ = ["OnnxEncoder", "OnnxPlan", "read_plan", "shared_encoder"]

logger = logging.getLogger(__name__)

_SBERT_KEYS = {"max_seq_length", "do_lower_case"}
"""``sentence_bert_config.json`` keys the plan understands; any other (model or tokenizer
arguments) may change the model's behaviour, so such a model keeps sentence-transformers."""

SHORT_TOKENS = 32
"""Texts of at most this many tokens (special tokens included) skip a reduced-precision
model (int8, bf16) and are embedded by the fp32 one.

Dynamic int8 quantises each batch's activations with one range per tensor, which the few
large values BERT-style models carry on their special tokens stretch: the fewer the tokens,
the larger their share, and the cosine of an int8 vector to its fp32 one fell to 0.96-0.98
for an empty text and about 0.99 for a short CJK one, against 0.994 and above from a
sentence on. Short texts cost little to embed, so they (search queries, titles, empty
texts) keep their fp32 vectors at almost no cost to the speed-up. A text gets the same
vector whatever its role, so a query matches the documents as the index recorded them; and
a search with a short query never loads OpenVINO (about a second and 150 MB)."""

Engine = Literal["onnxruntime", "openvino"]
"""What runs the ONNX file: ONNX Runtime (fp32, int8) or OpenVINO (bf16)."""

_FIELDS = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
"""The ``tokenizers.Encoding`` attribute that feeds each model input."""


@dataclass(frozen=True)
class OnnxPlan:
    """What the ONNX path needs to know about a sentence-transformers model directory.

    Attributes:
        transformer_dir: the folder with the transformer's weights and ``tokenizer.json``.
        pooling: ``"mean"`` (over non-padding tokens) or ``"cls"`` (the first token).
        normalize: the pipeline ends with a ``Normalize`` module.
        max_length: tokens kept per text (``max_seq_length``), special tokens included.
        lower_case: the text is lower-cased before tokenisation (``do_lower_case``).
        dim: the vector dimension.
    """

    transformer_dir: Path
    pooling: Literal["mean", "cls"]
    normalize: bool
    max_length: int
    lower_case: bool
    dim: int


def _json(path: Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def read_plan(directory: Path) -> OnnxPlan | None:
    """The plan of the model in ``directory``, or ``None`` when its pipeline is not the plain
    transformer → mean/CLS pooling → (normalise) one, or it configures prompts.

    Unreadable or inconsistent files also give ``None`` (logged), never an exception: the
    caller then loads the model through sentence-transformers, which reports real errors.
    """
    try:
        return _read_plan(directory)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        logger.info("no ONNX path for %s (%s)", directory, exc)
        return None


def _read_plan(directory: Path) -> OnnxPlan | None:
    modules = _json(directory / "modules.json")
    kinds = [str(m["type"]).rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        logger.info("no ONNX path for %s: its pipeline is %s", directory, kinds)
        return None
    transformer_dir = directory / str(modules[0].get("path", ""))
    sbert_path = transformer_dir / "sentence_bert_config.json"
    sbert = _json(sbert_path) if sbert_path.is_file() else {}
    pooling = _json(directory / str(modules[1]["path"]) / "config.json")
    settings = (
        _json(directory / "config_sentence_transformers.json")
        if (directory / "config_sentence_transformers.json").is_file()
        else {}
    )
    modes = [key for key, on in pooling.items() if key.startswith("pooling_mode_") and on]
    mode = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}.get(
        modes[0] if len(modes) == 1 else ""
    )
    problems = [
        f"pooling {modes}" if mode is None else "",
        "prompts excluded from pooling" if pooling.get("include_prompt", True) is False else "",
        f"settings {sorted(set(sbert) - _SBERT_KEYS)}" if set(sbert) - _SBERT_KEYS else "",
        "configured prompts" if any((settings.get("prompts") or {}).values()) else "",
        "a default prompt" if settings.get("default_prompt_name") else "",
        "no tokenizer.json" if not (transformer_dir / "tokenizer.json").is_file() else "",
    ]
    if any(problems) or mode is None:
        logger.info("no ONNX path for %s: %s", directory, "; ".join(p for p in problems if p))
        return None
    return OnnxPlan(
        transformer_dir=transformer_dir,
        pooling="mean" if mode == "mean" else "cls",
        normalize=len(kinds) == 3,
        max_length=_max_length(transformer_dir, sbert),
        lower_case=bool(sbert.get("do_lower_case", False)),
        dim=int(pooling["word_embedding_dimension"]),
    )


def _max_length(transformer_dir: Path, sbert: dict[str, Any]) -> int:
    """``max_seq_length`` as sentence-transformers sets it (its config, else the tokenizer's
    ``model_max_length``, else the model's position embeddings)."""
    if isinstance(sbert.get("max_seq_length"), int):
        return int(sbert["max_seq_length"])
    tokenizer_config = transformer_dir / "tokenizer_config.json"
    if tokenizer_config.is_file():
        limit = _json(tokenizer_config).get("model_max_length")
        if isinstance(limit, int) and 0 < limit < 1_000_000:
            return limit
    return int(_json(transformer_dir / "config.json")["max_position_embeddings"])


class _OrtRunner:
    """The model in an ONNX Runtime session (thread-safe: ``run`` may be called at once)."""

    def __init__(self, model: bytes, threads: int) -> None:
        ort = onnx_runtime()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        self.inputs = [item.name for item in self._session.get_inputs()]

    def __call__(self, feeds: dict[str, npt.NDArray[np.int64]]) -> npt.NDArray[np.float32]:
        return np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)


class _OpenVinoRunner:
    """The model compiled by OpenVINO's CPU plugin with bfloat16 inference precision.

    The bytes are read from memory (the verified ones, as for ONNX Runtime). One infer
    request serves the encoder, under a lock, since a request is not thread-safe.
    """

    def __init__(self, model: bytes, threads: int) -> None:
        ov = openvino_runtime()
        core = ov.Core()
        network = core.read_model(model, ov.Tensor(np.empty(0, dtype=np.uint8)))
        config = {
            "INFERENCE_PRECISION_HINT": "bf16",
            "INFERENCE_NUM_THREADS": threads,
            "PERFORMANCE_HINT": "LATENCY",
        }
        self._request = core.compile_model(network, "CPU", config).create_infer_request()
        self.inputs = [item.get_any_name() for item in network.inputs]
        self._lock = threading.Lock()

    def __call__(self, feeds: dict[str, npt.NDArray[np.int64]]) -> npt.NDArray[np.float32]:
        with self._lock:
            result = self._request.infer(feeds)
            return np.array(result[0], dtype=np.float32)  # a copy: the request reuses it


class OnnxEncoder:
    """A sentence-transformers model's encode, run by ONNX Runtime (or OpenVINO), no torch.

    Build it with :func:`shared_encoder` (one per model file and process).
    """

    def __init__(
        self,
        plan: OnnxPlan,
        model: bytes | Callable[[], bytes],
        model_file: Path,
        *,
        threads: int | None = None,
        short: Callable[[], OnnxEncoder] | None = None,
        engine: Engine = "onnxruntime",
    ) -> None:
        """Open the tokenizer and ``engine`` on ``model`` (read from ``model_file``).

        ``model`` is the file's bytes, or a function that gives them: then the engine is
        opened on the first text it must embed, so an encoder whose texts all go to
        ``short`` (a search with short queries) never loads it.

        ``short`` gives the encoder that embeds texts of at most :data:`SHORT_TOKENS` tokens
        (the fp32 one, for a reduced precision); it is called on the first such text.

        Raises:
            MissingDependencyError: ``engine="openvino"`` and OpenVINO is not installed.
        """
        from tokenizers import Tokenizer

        self.plan = plan
        self.model_file = model_file
        tokenizer = Tokenizer.from_file(str(plan.transformer_dir / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(plan.max_length, strategy="longest_first")
        self._tokenizer = tokenizer
        self._engine = _OpenVinoRunner if engine == "openvino" else _OrtRunner
        self._threads = threads or os.cpu_count() or 1
        self._model = model
        self._runner: _OrtRunner | _OpenVinoRunner | None = None
        self._runner_lock = threading.Lock()
        if not callable(model):
            self._open()
        self._lock = threading.Lock()  # the tokenizer's settings are shared state
        self._short = short

    def encode(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = 32,
        normalize: bool = False,
        progress: bool | None = False,
    ) -> npt.NDArray[np.float32]:
        """Embed ``texts``: float32 ``(len(texts), dim)``, as the model's ``encode`` gives them.

        ``normalize`` L2-normalises even when the pipeline has no ``Normalize`` module (as
        ``encode(normalize_embeddings=True)`` does); ``progress`` is the ``show_progress`` of
        the embedding phase (:mod:`parsers.progress`), counted in texts.
        """
        out = np.zeros((len(texts), self.plan.dim), dtype=np.float32)
        if not texts:
            return out
        batch = [t.lower() for t in texts] if self.plan.lower_case else list(texts)
        with self._lock:
            encodings = self._tokenizer.encode_batch(batch)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(texts))
        order = np.argsort(lengths, kind="stable")
        phase = counter(len(texts), desc="embedding", unit="chunks", show_progress=progress)
        with phase as advance:
            cut = 0
            if self._short is not None:
                cut = int(np.searchsorted(lengths[order], SHORT_TOKENS, side="right"))
                if cut:
                    short = order[:cut]
                    out[short] = self._short().encode(
                        [texts[i] for i in short], batch_size=batch_size
                    )
            advance(cut)
            for start in range(cut, len(order), batch_size):
                rows = order[start : start + batch_size]
                out[rows] = self._run([encodings[i] for i in rows], int(lengths[rows].max()))
                advance(len(rows))
        if normalize or self.plan.normalize:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out /= np.maximum(norms, 1e-12)
        return out

    def _open(self) -> _OrtRunner | _OpenVinoRunner:
        """The engine, opened on first use; the model's bytes are dropped once it is."""
        with self._runner_lock:
            if self._runner is None:
                data = self._model() if callable(self._model) else self._model
                self._runner = self._engine(data, self._threads)
                self._model = b""
            return self._runner

    def _run(self, encodings: list[Any], width: int) -> npt.NDArray[np.float32]:
        """One padded batch through the engine, then pooling."""
        runner = self._open()
        feeds: dict[str, npt.NDArray[np.int64]] = {}
        for name in runner.inputs:
            matrix = np.zeros((len(encodings), width), dtype=np.int64)
            for row, encoding in enumerate(encodings):
                values = getattr(encoding, _FIELDS[name])
                matrix[row, : len(values)] = values
            feeds[name] = matrix
        hidden = runner(feeds)  # (batch, tokens, dim)
        if self.plan.pooling == "cls":
            return np.asarray(hidden[:, 0, :], dtype=np.float32)
        mask = feeds["attention_mask"].astype(np.float32)[:, :, None]
        summed = (hidden * mask).sum(axis=1)
        pooled: npt.NDArray[np.float32] = summed / np.maximum(mask.sum(axis=1), 1e-9)
        return pooled


_SHARED: dict[tuple[Path, str], OnnxEncoder] = {}


def _verified_bytes(transformer_dir: Path, precision: str) -> bytes:
    """The exported file's verified bytes (exported again if it was damaged since)."""
    _, data, _ = exported_model(transformer_dir, precision)
    return data


_SHARED_LOCK = threading.Lock()


def shared_encoder(plan: OnnxPlan, precision: str) -> OnnxEncoder:
    """The process's one :class:`OnnxEncoder` of a model at ``precision``.

    The first request verifies (or makes) the exported file and opens it; later ones, from
    any embedder of the same model, get the same object. ``bf16`` is the fp32 file run by
    OpenVINO.

    Raises:
        ConfigError: unknown precision.
        MissingDependencyError: the file must be exported and torch is missing, or
            ``bf16`` without OpenVINO.
    """
    file_precision = "fp32" if precision == "bf16" else precision
    target = export_dir(plan.transformer_dir, file_precision)
    with _SHARED_LOCK:
        encoder = _SHARED.get((target, precision))
        if encoder is None:
            short = None if precision == "fp32" else partial(shared_encoder, plan, "fp32")
            if precision == "bf16":  # verified (or exported) when first needed, not held idle
                path = target / MODEL_FILE
                loader = partial(_verified_bytes, plan.transformer_dir, file_precision)
                encoder = OnnxEncoder(plan, loader, path, short=short, engine="openvino")
            else:
                path, data, _ = exported_model(plan.transformer_dir, file_precision)
                encoder = OnnxEncoder(plan, data, path, short=short)
            _SHARED[target, precision] = encoder
            engine = "OpenVINO (bf16)" if precision == "bf16" else "ONNX Runtime"
            logger.info("embedding with %s from %s", engine, path)
        return encoder
