"""Fast single-query embedding: the model's encoder run by ONNX Runtime.

An agent embeds one short query per call, and PyTorch's eager mode spends most of such a call
in per-operator overhead: on this project's 2-core machine all-MiniLM-L6-v2 took 20 ms per
SciFact query through sentence-transformers against about 10 ms for the same weights in ONNX
Runtime (7 ms with spinning workers, which then slow the vector search that follows), with
vectors equal within 1e-6. The encoder is exported from the already loaded
model on first use (about 2 s, through a temporary file deleted at once) and tokenisation stays
sentence-transformers' own. Only the plain pipeline is accelerated: transformer, then mean or
CLS pooling, then optional normalisation; any other model (or a query prompt) keeps
sentence-transformers' ``encode``. Document batches always use sentence-transformers.
"""

from __future__ import annotations

import logging
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["OnnxQueryEncoder"]

logger = logging.getLogger(__name__)

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _disable_telemetry() -> None:
    """Turn ONNX Runtime's telemetry off before it initialises.

    Official builds record events (OS, CPU, memory, Python path) and a persistent device id
    under the user's cache folder (``Microsoft/DeveloperTools/.onnxruntime``) as soon as
    the module is imported, and carry an uploader; a retrieval library has no business
    reporting its users' machines. ``ORT_DISABLE_TELEMETRY=1``, read when ONNX Runtime
    initialises, prevents all of it (its Privacy.md); a value the user set is kept.
    """
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


class OnnxQueryEncoder:
    """Embeds one text at a time with an ONNX Runtime copy of a sentence-transformers model.

    Build it with :meth:`from_model`, which returns ``None`` when the model's pipeline is not
    supported or the export fails; callers then keep using the model itself.
    """

    def __init__(
        self, model: Any, session: Any, inputs: tuple[str, ...], pooling: str, normalize: bool
    ) -> None:
        self._model = model
        self._session = session
        self._inputs = inputs
        self._pooling = pooling
        self._normalize = normalize

    @classmethod
    def from_model(
        cls, model: Any, *, normalize: bool = False, threads: int | None = None
    ) -> OnnxQueryEncoder | None:
        """Export ``model``'s encoder to ONNX and open an in-memory inference session.

        ``normalize`` L2-normalises the output even if the model has no ``Normalize`` module
        (as ``encode(normalize_embeddings=True)`` does).
        """
        plan = _plan(model)
        if plan is None:
            return None
        pooling, has_normalize = plan
        normalize = normalize or has_normalize
        _disable_telemetry()
        try:
            import onnxruntime as ort
            import torch
        except ImportError as exc:
            logger.info("ONNX Runtime unavailable (%s); queries use sentence-transformers", exc)
            return None
        ort.disable_telemetry_events()  # in case it was imported, and initialised, earlier
        try:
            sample = model.preprocess(["an example query for the export"])
            inputs = tuple(name for name in _INPUTS if name in sample)
            encoder = _make_encoder(model[0].auto_model, inputs).eval()
            axes = {name: {0: "batch", 1: "tokens"} for name in (*inputs, "hidden")}
            with (
                torch.inference_mode(),
                warnings.catch_warnings(),
                tempfile.TemporaryDirectory(prefix="rag-onnx-") as tmp,
            ):
                warnings.simplefilter("ignore")  # tracer warnings about shape-dependent code
                path = Path(tmp) / "encoder.onnx"
                torch.onnx.export(
                    encoder,
                    tuple(sample[name] for name in inputs),
                    str(path),
                    input_names=list(inputs),
                    output_names=["hidden"],
                    dynamic_axes=axes,
                    opset_version=17,
                    dynamo=False,
                )
                model_bytes = path.read_bytes()
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
            options.log_severity_level = 3
            # Idle workers must not spin: the caller's next step (BLAS search) needs the cores.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            logger.warning("ONNX export failed (%s); queries use sentence-transformers", exc)
            return None
        logger.info("query encoder running in ONNX Runtime (%s pooling)", pooling)
        return cls(model, session, inputs, pooling, normalize)

    def encode(self, text: str) -> npt.NDArray[np.float32]:
        """The embedding of one text, shape ``(dim,)``, as the model's ``encode`` gives it."""
        features = self._model.preprocess([text])
        feeds = {name: features[name].numpy() for name in self._inputs}
        hidden = self._session.run(None, feeds)[0][0]  # (tokens, dim)
        if self._pooling == "cls":
            vector = hidden[0]
        else:
            mask = feeds["attention_mask"][0].astype(np.float32)
            vector = (hidden * mask[:, None]).sum(axis=0) / max(float(mask.sum()), 1e-9)
        vector = vector.astype(np.float32)
        if self._normalize:
            norm = float(np.linalg.norm(vector))
            vector = vector / max(norm, 1e-12)
        return np.ascontiguousarray(vector, dtype=np.float32)


def _plan(model: Any) -> tuple[str, bool] | None:
    """``(pooling, normalize)`` when ``model`` is transformer → mean/CLS pooling → normalise."""
    try:
        modules = list(model)
    except TypeError:
        return None
    names = [type(module).__name__ for module in modules]
    if len(modules) not in (2, 3) or names[0] != "Transformer" or names[1] != "Pooling":
        logger.debug("no ONNX query path for a %s pipeline", names)
        return None
    if len(modules) == 3 and names[2] != "Normalize":
        return None
    if not hasattr(modules[0], "auto_model") or str(getattr(model, "device", "cpu")) != "cpu":
        return None
    pooling = getattr(modules[1], "pooling_mode", None)
    if pooling not in ("mean", "cls"):
        return None
    return str(pooling), len(modules) == 3


def _make_encoder(auto_model: Any, inputs: tuple[str, ...]) -> Any:
    """The transformer alone with positional inputs: what the ONNX export traces."""
    import torch

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.auto_model = auto_model

        def forward(self, *tensors: Any) -> Any:
            return self.auto_model(**dict(zip(inputs, tensors, strict=True))).last_hidden_state

    return Encoder()
