"""Score thresholds: ``min_score=`` on every retriever and on ``create_retriever_tool``.

``min_score`` drops hits under a threshold before expansion: a number applies to
``hit.score`` (the last stage's score), a mapping to named stages, e.g. ``{"vector": 0.3}``
or ``{"fused": 0.5, "bm25": 2.0}``. A hit the stage never scored (a BM25-only hit in a
hybrid, for ``{"vector": ...}``) fails that stage's threshold. Fewer than ``k`` hits may
then come back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TypeAlias

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.hit import Hit, renumbered

__all__ = ["MinScore", "apply_min_score", "check_min_score"]

MinScore: TypeAlias = float | Mapping[str, float]


def check_min_score(min_score: MinScore | None) -> MinScore | None:
    """``min_score`` itself if it is a finite number or a mapping of stage names to them.

    Raises:
        ConfigError: anything else, naming the bad entry.
    """
    if min_score is None:
        return None
    values = min_score.items() if isinstance(min_score, Mapping) else [("min_score", min_score)]
    for stage, value in values:
        if not isinstance(stage, str) or not _is_finite(value):
            msg = f"min_score[{stage!r}] must be a finite number, got {value!r}"
            raise ConfigError(msg)
    return dict(min_score) if isinstance(min_score, Mapping) else float(min_score)


def _is_finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def apply_min_score(hits: Sequence[Hit], min_score: MinScore | None) -> list[Hit]:
    """The hits at or above ``min_score`` (see the module docstring), ranked 1, 2, ..."""
    if min_score is None:
        return list(hits)
    if isinstance(min_score, Mapping):
        kept = [
            hit
            for hit in hits
            if all(_stage_score(hit, stage) >= value for stage, value in min_score.items())
        ]
    else:
        kept = [hit for hit in hits if hit.score >= min_score]
    return renumbered(kept)


def _stage_score(hit: Hit, stage: str) -> float:
    if stage == hit.stage:
        return hit.score
    return hit.scores.get(stage, -math.inf)
