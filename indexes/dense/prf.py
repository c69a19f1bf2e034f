"""Vector pseudo-relevance feedback: Rocchio on the query embedding.

Li, Mourad, Zhuang, Koopman and Zuccon ("Pseudo Relevance Feedback with Deep Language Models
and Dense Retrievers: Successes and Pitfalls", TOIS 2023; Pyserini's ``--prf-method
rocchio``) move a dense query towards the vectors of its first pass's best passages:

    q' = alpha * q + beta * mean(d_1, ..., d_depth)

and search again with ``q'``. Their "Average" method is the special case ``alpha = 1 / (depth
+ 1)``, ``beta = depth / (depth + 1)``. Pyserini's defaults are kept (``depth=5`` is their
best Rocchio row on TREC DL 2019, with ``alpha=0.4, beta=0.6``; the CLI's own defaults are
``alpha=0.9, beta=0.1``); this module keeps the names ``depth``, ``alpha``, ``beta``.

Where this differs from Pyserini, and why:

* ``q`` and every ``d_i`` are unit vectors (the vector half searches by cosine and stores
  normalised vectors; ``q`` is normalised as the search would normalise it), so ``alpha``
  and ``beta`` weigh directions, whatever norm an embedder happens to return;
* a chunk embedded as several windows (:mod:`indexes.dense.windows`) feeds back the window
  that gave it its score (its best window for ``q``): the passage that matched, as in the
  paper, where a passage is one vector;
* ``q'`` is searched as any query is (normalised), so scores stay cosines in [-1, 1].
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ragtools.indexes.options import settings_of
from ragtools.parsers.errors import ConfigError

__all__ = ["Rocchio"]

Floats = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Rocchio:
    """Rocchio vector feedback settings (Pyserini's names).

    Attributes:
        depth: feedback chunks: the first pass's best this many (``>= 1``).
        alpha: the weight of the query's unit vector (``>= 0``).
        beta: the weight of the mean of the feedback chunks' unit vectors (``>= 0``;
            ``alpha + beta > 0``). Only the ratio matters to the ranking.

    Raises:
        ConfigError: a value out of range, naming it.
    """

    depth: int = 5
    alpha: float = 0.4
    beta: float = 0.6

    def __post_init__(self) -> None:
        if isinstance(self.depth, bool) or not isinstance(self.depth, int) or self.depth < 1:
            msg = f"Rocchio depth must be an integer >= 1, got {self.depth!r}"
            raise ConfigError(msg)
        for name in ("alpha", "beta"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value < 0
            ):
                msg = f"Rocchio {name} must be a finite number >= 0, got {value!r}"
                raise ConfigError(msg)
        if self.alpha + self.beta <= 0:
            msg = "Rocchio alpha and beta must not both be 0 (the query would be the zero vector)"
            raise ConfigError(msg)

    @classmethod
    def of(cls, value: Rocchio | Mapping[str, Any] | bool | None) -> Rocchio | None:
        """Settings from a retriever argument: ``None``/``False`` (off), ``True`` (the
        defaults), a mapping of the fields, or an instance.

        Raises:
            ConfigError: an unknown field, a value out of range, or another type.
        """
        return settings_of(cls, value, "prf")

    def to_dict(self) -> dict[str, Any]:
        """The settings as a JSON-ready mapping."""
        return asdict(self)

    def expand(self, query: npt.ArrayLike, feedback: npt.ArrayLike) -> Floats:
        """``alpha * unit(query) + beta * mean(unit(feedback rows))``, computed in float64
        and returned as float32. A zero vector stays zero (as the vector half normalises),
        and ``query`` comes back as it is when there is no feedback row or it is zero
        (a query with no direction has nothing to move towards).

        Raises:
            ConfigError: ``feedback`` is not ``(n, dim)`` with ``query``'s dimension, or a
                value is not finite.
        """
        q = _unit(np.asarray(query, dtype=np.float64).reshape(1, -1), "query")[0]
        rows = np.asarray(feedback, dtype=np.float64)
        if rows.size == 0 or not q.any():
            return np.asarray(query, dtype=np.float32)
        if rows.ndim != 2 or rows.shape[1] != q.shape[0]:
            msg = f"feedback vectors must have shape (n, {q.shape[0]}), got {rows.shape}"
            raise ConfigError(msg)
        mean = _unit(rows, "feedback vector").mean(axis=0)
        out: Floats = (self.alpha * q + self.beta * mean).astype(np.float32)
        return out


def _unit(rows: npt.NDArray[np.float64], what: str) -> npt.NDArray[np.float64]:
    """``rows`` scaled to unit length, a zero row left zero."""
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)):
        msg = f"a {what} is not finite; embed with a model that returns finite vectors"
        raise ConfigError(msg)
    return rows / np.where(norms == 0, 1.0, norms)
