"""The ONNX file of a model's encoder: exported once, kept on disk, checked before every use.

A process that embeds with ONNX Runtime needs the transformer as an ``.onnx`` file. Making it
takes torch and several seconds, so it is done once per model and precision and kept in the
user's cache directory (``$RAGTOOLS_CACHE_DIR``, else the platform's cache folder +
``ragtools``), under ``onnx/<key>/``:

- ``model.onnx``: the encoder (token ids in, last hidden states out), already through ONNX
  Runtime's portable graph optimisations (constant folding, fused layer norms, bias + GELU,
  MatMul + scale), so opening it later has less to do;
- ``export.json``: the file's SHA-256, the precision and what the key was made of.

The key is a hash of the model's weights and configuration files (not of its name or path,
so a model updated in place gets a new file and two copies of one model share one), of the
precision and of this module's export recipe. ``export.json`` is written last, through a
temporary file and ``os.replace``: it is the commit point, so a crash mid-export leaves no
file that looks finished. A ``model.onnx`` whose digest differs from ``export.json`` (a
truncated copy, a disk error, tampering) is logged and exported again, never opened. Two
processes exporting the same key wait on one ``filelock`` lock, so the second reuses the
first one's file.

Precisions (``PRECISIONS``):

- ``fp32``: the model's own float32 weights; vectors equal sentence-transformers' within 1e-5.
- ``int8``: ONNX Runtime's transformer fusions (one ``Attention`` node per layer, fused layer
  norms and GELU), then dynamic quantisation of the attention and MatMul weights to int8 per
  output channel (activations quantised per batch at run time), through
  ``onnxruntime.quantization``. On CPUs with int8 dot products (VNNI, AMX) it embeds about
  twice as fast as fp32 or more; vectors move (cosine to fp32 about 0.995 on SciFact), so
  they are cached apart (see ``SentenceTransformerEmbedder``), and texts of at most
  ``onnx_encoder.SHORT_TOKENS`` tokens are embedded by the fp32 file (see there).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import uuid
import warnings
from pathlib import Path
from typing import Any

from ragtools.indexes.errors import IndexLoadError
from ragtools.indexes.store.persist import fsync_dir, read_json, sha256_file, write_json
from ragtools.parsers.errors import ConfigError
from ragtools.parsers.optional import require

__all__ = [
    "PRECISIONS",
    "RECIPE",
    "cache_root",
    "export_dir",
    "exported_model",
    "weights_digest",
]

logger = logging.getLogger(__name__)

PRECISIONS = ("fp32", "int8")
"""Precisions of the exported encoder, the first being the reference."""

RECIPE = 2
"""Version of the export procedure; part of the key, so a changed recipe exports anew."""

MODEL_FILE = "model.onnx"
DIGESTS_FILE = "digests.json"
RECORD_FILE = "export.json"
_WEIGHT_SUFFIXES = (".safetensors", ".bin")
_CONFIG_FILES = ("config.json", "tokenizer.json")


def onnx_runtime() -> Any:
    """ONNX Runtime, imported with its telemetry off.

    Official builds record events (OS, CPU, memory, Python path) and a persistent device id
    under the user's cache folder as soon as the module is imported, and carry an uploader;
    a retrieval library has no business reporting its users' machines.
    ``ORT_DISABLE_TELEMETRY=1``, read when ONNX Runtime initialises, prevents all of it (its
    Privacy.md); a value the user set is kept. The API call covers an earlier import.
    """
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime as ort

    ort.disable_telemetry_events()
    return ort


def openvino_runtime() -> Any:
    """OpenVINO, imported with its telemetry off.

    ``import openvino`` imports its model converter, which sends a usage event to Google
    Analytics and writes a client id under ``~/intel`` unless the user opted out with
    ``opt_in_out`` (no consent file counts as consent): a network attempt on every cold
    start of a library that promises none. OpenVINO falls back to its own no-op stub
    (``openvino.tools.ovc.telemetry_stub``) when ``openvino_telemetry`` cannot be imported,
    so that package is marked unimportable before the first import of OpenVINO. A process
    that imported OpenVINO itself keeps its own choice.

    Raises:
        MissingDependencyError: OpenVINO is not installed.
    """
    if "openvino" not in sys.modules:
        sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type]
    return require("openvino")


def cache_root() -> Path:
    """Where exported files are kept: ``$RAGTOOLS_CACHE_DIR`` or the user's cache folder."""
    configured = os.environ.get("RAGTOOLS_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = str(Path.home() / "Library" / "Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragtools"


def weights_digest(transformer_dir: Path, *, root: Path | None = None) -> str:
    """SHA-256 over the names and contents of the weight and configuration files.

    Hashing the weights takes a noticeable part of a cold start, so the digest is remembered
    in ``<root>/onnx/digests.json`` under the files' paths, sizes, modification times and
    inodes, and computed again when any of them changes (as git's index does).

    Raises:
        ConfigError: the directory holds no weights file.
    """
    weights = sorted(
        p for p in transformer_dir.iterdir() if p.is_file() and p.suffix in _WEIGHT_SUFFIXES
    )
    if not weights:
        msg = f"no weights file (*.safetensors, *.bin) in model directory {transformer_dir}"
        raise ConfigError(msg)
    files = [*weights, *(p for p in (transformer_dir / n for n in _CONFIG_FILES) if p.is_file())]
    stats = [(str(p.resolve()), p.stat()) for p in files]
    memo_key = hashlib.sha256(
        "\n".join(f"{n}|{s.st_size}|{s.st_mtime_ns}|{s.st_ino}" for n, s in stats).encode()
    ).hexdigest()
    memo_path = (root or cache_root()) / "onnx" / DIGESTS_FILE
    memo = _read_memo(memo_path)
    if isinstance(memo.get(memo_key), str):
        return str(memo[memo_key])
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.name}\0{sha256_file(path)}\0".encode())
    memo[memo_key] = digest.hexdigest()
    try:
        memo_path.parent.mkdir(parents=True, exist_ok=True)
        temporary = memo_path.with_name(f".{DIGESTS_FILE}.{uuid.uuid4().hex[:12]}.tmp")
        write_json(temporary, memo)
        os.replace(temporary, memo_path)
    except OSError as exc:  # a read-only cache still works, it just hashes every time
        logger.info("cannot remember the weights digest in %s (%s)", memo_path, exc)
    return digest.hexdigest()


def _read_memo(path: Path) -> dict[str, Any]:
    try:
        memo = read_json(path)
    except IndexLoadError:
        return {}
    return memo if isinstance(memo, dict) else {}


def export_dir(transformer_dir: Path, precision: str, *, root: Path | None = None) -> Path:
    """The directory that holds (or will hold) one model's encoder at one precision.

    Raises:
        ConfigError: unknown precision or no weights in the directory.
    """
    if precision not in PRECISIONS:
        msg = f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}"
        raise ConfigError(msg)
    root = root or cache_root()
    material = f"{weights_digest(transformer_dir, root=root)}|{precision}|recipe-{RECIPE}"
    return root / "onnx" / hashlib.sha256(material.encode()).hexdigest()[:32]


def exported_model(
    transformer_dir: Path, precision: str, *, root: Path | None = None
) -> tuple[Path, bytes, bool]:
    """The verified ``.onnx`` file of ``transformer_dir`` at ``precision``, exported if needed.

    Returns:
        ``(path, data, exported)``: the file, its bytes (the very bytes whose checksum was
        verified, so nothing else can be loaded), and whether this call had to export it
        (which imports torch); a reused file costs one checksum and no torch import.

    Raises:
        ConfigError: unknown precision or no weights in the directory.
        MissingDependencyError: torch, transformers or onnx is missing and there is no file.
    """
    target = export_dir(transformer_dir, precision, root=root)
    data = _verified(target)
    if data is not None:
        return target / MODEL_FILE, data, False
    from filelock import FileLock

    target.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target / ".lock")):
        data = _verified(target)  # another process may have exported it while we waited
        if data is not None:
            return target / MODEL_FILE, data, False
        _export(transformer_dir, precision, target)
    data = _verified(target)
    if data is None:  # pragma: no cover - only if the disk changes the file under us
        raise IndexLoadError(target / MODEL_FILE, "fails its checksum right after export")
    return target / MODEL_FILE, data, True


def _verified(target: Path) -> bytes | None:
    """The model file's bytes if ``export.json`` exists and their SHA-256 matches it."""
    record_path = target / RECORD_FILE
    if not record_path.is_file():
        return None
    model = target / MODEL_FILE
    try:
        record = read_json(record_path)
        expected = record["sha256"] if isinstance(record, dict) else None
        data = model.read_bytes()
        if hashlib.sha256(data).hexdigest() != expected:
            raise IndexLoadError(model, "fails its checksum")
    except (IndexLoadError, KeyError, OSError) as exc:
        logger.warning("cached ONNX model unusable (%s); exporting it again", exc)
        return None
    return data


def _export(transformer_dir: Path, precision: str, target: Path) -> None:
    """Export, optimise (and quantise) into temporary files, then commit them."""
    tag = uuid.uuid4().hex[:12]
    raw = target / f"raw-{tag}.onnx.tmp"
    fused = target / f"fused-{tag}.onnx.tmp"
    quantised = target / f"int8-{tag}.onnx.tmp"
    final = target / f"model-{tag}.onnx.tmp"
    logger.info("exporting %s to ONNX (%s); done once per model", transformer_dir, precision)
    try:
        _trace(transformer_dir, raw)
        source = raw
        if precision == "int8":
            _fuse(transformer_dir, raw, fused)
            _quantise(fused, quantised)
            source = quantised
        _optimise(source, final)
        with open(final, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(final, target / MODEL_FILE)
        record = {
            "format": "ragtools-onnx-export",
            "recipe": RECIPE,
            "precision": precision,
            "source": str(transformer_dir),
            "weights_sha256": weights_digest(transformer_dir, root=target.parent.parent),
            "sha256": sha256_file(target / MODEL_FILE),
        }
        write_json(target / f"{RECORD_FILE}.{tag}.tmp", record)
        os.replace(target / f"{RECORD_FILE}.{tag}.tmp", target / RECORD_FILE)
        fsync_dir(target)
    finally:
        for leftover in (raw, fused, quantised, final, target / f"{RECORD_FILE}.{tag}.tmp"):
            leftover.unlink(missing_ok=True)
    logger.info("exported ONNX encoder to %s", target / MODEL_FILE)


def _trace(transformer_dir: Path, path: Path) -> None:
    """``torch.onnx.export`` of the transformer: token ids in, last hidden states out.

    Attention is traced in its plain ("eager") form, so the graph does not depend on which
    fused attention kernel torch would pick; the arithmetic is the same.
    """
    torch = require("torch")
    transformers = require("transformers")
    model = transformers.AutoModel.from_pretrained(
        str(transformer_dir), local_files_only=True, attn_implementation="eager"
    ).eval()
    inputs = _input_names(model)
    sample = {name: torch.ones((2, 8), dtype=torch.int64) for name in inputs}
    if "token_type_ids" in sample:
        sample["token_type_ids"] = torch.zeros((2, 8), dtype=torch.int64)
    encoder = _positional(model, inputs)
    axes = {name: {0: "batch", 1: "tokens"} for name in (*inputs, "hidden")}
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer warnings about shape-dependent Python code
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


def _input_names(model: Any) -> tuple[str, ...]:
    """The token inputs the model's ``forward`` accepts, in a fixed order."""
    import inspect

    accepted = inspect.signature(model.forward).parameters
    names = tuple(n for n in ("input_ids", "attention_mask", "token_type_ids") if n in accepted)
    if names[:2] != ("input_ids", "attention_mask"):
        msg = f"{type(model).__name__} does not take input_ids and attention_mask"
        raise ConfigError(msg)
    return names


def _positional(model: Any, inputs: tuple[str, ...]) -> Any:
    """The model as a module with positional tensor inputs, returning the hidden states."""
    import torch

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors: Any) -> Any:
            return self.model(**dict(zip(inputs, tensors, strict=True))).last_hidden_state

    return Encoder()


def _fuse(transformer_dir: Path, source: Path, destination: Path) -> None:
    """ONNX Runtime's transformer fusions: one ``Attention`` node per layer (instead of about
    twenty MatMul, Softmax, Reshape and Transpose nodes), ``SkipLayerNormalization``,
    ``BiasGelu`` and ``EmbedLayerNormalization``.

    They matter for int8: the quantiser turns the fused ``Attention`` into ``QAttention``,
    whose int8 kernels do the query, key and value projections as one product, and no float
    tensor travels between the small nodes. BERT's fusion rules cover the encoders
    sentence-transformers ships (BERT, MiniLM, RoBERTa, MPNet-like); a graph they do not
    match stays unfused and correct.
    """
    onnx_runtime()
    optimizer = require("onnxruntime.transformers.optimizer", package="onnxruntime")
    config = json.loads((transformer_dir / "config.json").read_text(encoding="utf-8"))
    model = optimizer.optimize_model(
        str(source),
        model_type="bert",
        num_heads=int(config.get("num_attention_heads", 0)),
        hidden_size=int(config.get("hidden_size", 0)),
        opt_level=0,
        use_gpu=False,
    )
    logger.info("fused operators: %s", model.get_fused_operator_statistics())
    model.save_model_to_file(str(destination))


def _quantise(source: Path, destination: Path) -> None:
    """Dynamic int8 quantisation: weights int8 once, activations per batch at run time.

    Static quantisation would need calibration texts, and a fixed activation range that fits
    short titles and long PDF pages alike; the dynamic ranges fit every batch. Weights are
    quantised per output channel (per tensor, the cosine to fp32 fell to about 0.91 on short
    texts); the word embeddings stay float32 (quantising them gained no speed).
    """
    quantize = require("onnxruntime.quantization", package="onnxruntime")
    onnx = require("onnx")
    root = logging.getLogger()
    quiet = _NotFrom("onnxruntime")
    root.addFilter(quiet)  # it logs advice on the root logger, which a user would see
    try:
        quantize.quantize_dynamic(
            source,
            destination,
            weight_type=quantize.QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul", "Attention"],
            # the fused nodes are in Microsoft's domain, where shape inference finds no types
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    finally:
        root.removeFilter(quiet)


class _NotFrom(logging.Filter):
    """Drops records logged from a package's files (by path: it logs on the root logger)."""

    def __init__(self, package: str) -> None:
        super().__init__()
        self.marker = f"{os.sep}{package}{os.sep}"

    def filter(self, record: logging.LogRecord) -> bool:
        return self.marker not in record.pathname


def _optimise(source: Path, destination: Path) -> None:
    """Apply ONNX Runtime's portable graph fusions once and save the result."""
    ort = onnx_runtime()

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(destination)
    options.log_severity_level = 3
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    if not destination.is_file():  # pragma: no cover - onnxruntime always writes it
        raise IndexLoadError(destination, "ONNX Runtime did not write the optimised model")
