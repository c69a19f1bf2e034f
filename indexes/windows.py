"""Vector windows: several embeddings per chunk, so that a long chunk is embedded whole.

Sentence-transformers models silently truncate their input (all-MiniLM-L6-v2 at 256 word
pieces, roughly 1,000 characters of English), so one vector for a long chunk represents its
opening only. The vector half therefore embeds a chunk longer than ``size`` characters as
overlapping windows cut by the same splitter as chunks, and scores the chunk by its best
window (max pooling, as BEIR's document-level scoring does with passages). A chunk that fits
in one window is embedded as it is, so with the default chunk size (1,000) every chunk keeps
exactly one vector and the owner map is not needed at all.

On SciFact *train* (whole abstracts as chunks, up to 10,000 characters) windows of 1,000
characters with 200 overlap raised the vector half's nDCG@10 from 0.660 to 0.682.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ragtools.parsers.document import Document
from ragtools.parsers.errors import ConfigError
from ragtools.parsers.splitting import split

__all__ = ["allow_mask", "best_per_owner", "split_windows"]

Rows = npt.NDArray[np.int64]


def split_windows(texts: Sequence[str], size: int, overlap: int) -> tuple[list[str], Rows]:
    """Cut each text into windows of at most ``size`` characters.

    Returns:
        ``(windows, owners)``: the window texts in order, and for each the index of the text
        it was cut from (non-decreasing). ``size == 0`` gives one window per text.
    """
    if size <= 0:
        return list(texts), np.arange(len(texts), dtype=np.int64)
    windows: list[str] = []
    owners: list[int] = []
    for i, text in enumerate(texts):
        pieces = [text]
        if len(text) > size:
            cut = split([Document(text=text)], chunk_size=size, chunk_overlap=overlap)
            pieces = [c.text for c in cut] or [text]
        windows += pieces
        owners += [i] * len(pieces)
    return windows, np.asarray(owners, dtype=np.int64)


def best_per_owner(window_rows: Rows, owners: Rows, k: int) -> Rows:
    """Positions in a best-first window ranking of each owner's first (best) window.

    At most ``k`` positions, in ranking order: the top ``k`` owners by their best window.
    """
    chunk_rows = owners[window_rows]
    _, first = np.unique(chunk_rows, return_index=True)
    first.sort()
    return first[:k]


def allow_mask(allow: npt.ArrayLike, n_rows: int, name: str = "allow") -> npt.NDArray[np.bool_]:
    """A row filter (boolean mask by row, or a sequence of rows) as a mask of ``n_rows``."""
    array = np.asarray(allow)
    if array.dtype == np.bool_:
        if array.ndim != 1:
            msg = f"{name} mask must be one-dimensional, got shape {array.shape}"
            raise ConfigError(msg)
        mask = np.zeros(n_rows, dtype=np.bool_)
        n = min(n_rows, len(array))
        mask[:n] = array[:n]
        return mask
    if array.size == 0:
        return np.zeros(n_rows, dtype=np.bool_)
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        msg = f"{name} must be a boolean mask or a sequence of integer rows"
        raise ConfigError(msg)
    mask = np.zeros(n_rows, dtype=np.bool_)
    rows = array[(array >= 0) & (array < n_rows)]
    mask[rows] = True
    return mask
