"""Atomic file writes for evaluation outputs: a temporary sibling, then ``os.replace``.

A crash or a full disk mid-write leaves the previous report or run file intact instead of a
truncated one that a later ``trec_eval`` or dashboard would read as valid. The file gets the
permissions of any file the user creates (``0o666`` less the umask), as the index's files
do: ``tempfile.mkstemp`` would leave every report readable by its owner only (``0o600``).
"""

from __future__ import annotations

import logging
import os
import secrets
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
    tmp = target.parent / f".{target.name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    logger.debug("wrote %s (%d bytes)", target, len(payload))
    return target
