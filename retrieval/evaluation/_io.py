"""Atomic file writes for evaluation outputs: a temporary sibling, then ``os.replace``.

A crash or a full disk mid-write leaves the previous report or run file intact instead of a
truncated one that a later ``trec_eval`` or dashboard would read as valid.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)


def atomic_write(path: str | Path, data: bytes | str) -> Path:
    """Write ``data`` (text is UTF-8 encoded, newlines kept) to ``path`` atomically.

    Args:
        path: the target file; missing parent directories are created.
        data: the full file content.

    Returns:
        The path written.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    logger.debug("wrote %s (%d bytes)", target, len(payload))
    return target
