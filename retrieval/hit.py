"""The result record every retriever returns, and the one place hits are built and ordered.

Every path that returns hits (keyword, vector, front page, fused, reranked, thresholded,
expanded, adapted from another framework's retriever) builds them with the functions of this
module, so one rule orders them all:

    **score descending, then the chunk's 64-bit key ascending.**

The key is :func:`chunk_keys`: BLAKE2b-64 of the chunk id as a signed integer, the value
:attr:`IndexState.chunk_keys <indexes.index.IndexState.chunk_keys>` holds for every row. It
depends on the chunk id alone, so it is *history-independent*: an index updated file by file
and a fresh build of the same files hold the same chunks on different rows (an update appends
the changed files' chunks), yet they order tied hits alike, and so do one index, its shards
and its segments. A tie broken by row would follow the index's history; one broken by the id
string would need Python string comparisons where the arrays already carry the keys (fusion
joins runs on them). The cut at ``k`` follows the same rule: :func:`top_by_key` asks an index
deeper while ties straddle the cut, so the ``k`` hits kept are the ``k`` first by the rule,
not the first by row.

Hits are built with validation, a list at a time: one ``TypeAdapter(list[Hit])`` call, in which
pydantic-core checks the fields in Rust, costs less than a constructor call per hit, and less
than ``model_construct``'s Python loop. They are built for the ``k`` hits returned only: hot
paths stay on arrays of rows, keys and scores until then.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ragtools.indexes.index import chunk_keys_of
from ragtools.indexes.ranking import Ranking
from ragtools.parsers.document import Chunk

__all__ = [
    "HIT_KEYS",
    "Hit",
    "KeyRun",
    "best_of",
    "chunk_keys",
    "fused_hits",
    "key_order",
    "passage_hits",
    "ranked_hits",
    "renumbered",
    "rescored",
    "restaged",
    "top_by_key",
]

Keys = npt.NDArray[np.int64]

HIT_KEYS = ("chunk_id", "doc_id", "start", "end", "score", "rank", "stage", "scores", "parts")
"""The keys a framework adapter adds to a chunk's metadata to carry the hit itself (they win
over metadata of that name), and that a hit read back from such metadata leaves out of its
chunk's metadata."""


class Hit(BaseModel):
    """One retrieved chunk with its score, its rank and every stage's score.

    Attributes:
        chunk: the retrieved chunk (text, offsets, metadata with source and page).
        score: the final score; higher is better. Its scale depends on the last stage
            (BM25 score, cosine similarity, fused score or reranker score).
        rank: 1-based position in the result list.
        scores: the score of every stage that produced this hit, keyed by stage name
            (``bm25``, ``vector``, ``fused``, ``rerank``, ...): nothing that explains a
            result is thrown away.
        stage: the stage that produced ``score`` (``score == scores[stage]``), said
            explicitly rather than guessed from equal floats.
        parts: for a passage grown by ``expand=`` (:mod:`retrieval.expand`), the original
            hits it merged, by rank; empty for a plain hit.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    chunk: Chunk
    score: float
    rank: int = Field(ge=1)
    scores: dict[str, float] = {}
    stage: str
    parts: tuple[Hit, ...] = ()

    @property
    def chunk_id(self) -> str:
        """Shortcut for ``hit.chunk.id``."""
        return self.chunk.id


_HITS = TypeAdapter(list[Hit])


def _hit(
    chunk: Chunk,
    score: float,
    rank: int,
    scores: dict[str, float],
    stage: str,
    parts: tuple[Hit, ...] = (),
) -> dict[str, Any]:
    """One hit's fields, every one given (a default costs pydantic a copy of it)."""
    return {"chunk": chunk, "score": score, "rank": rank, "scores": scores, "stage": stage,
            "parts": parts}  # fmt: skip


def _built(records: list[dict[str, Any]]) -> list[Hit]:
    """Hits from their fields, validated in one call: one pass of pydantic-core over the
    list costs less than a model constructor per hit."""
    return _HITS.validate_python(records)


# --- the rule ---------------------------------------------------------------------------------


def chunk_keys(chunk_ids: Iterable[str]) -> Keys:
    """The 64-bit key of each chunk id, as :attr:`IndexState.chunk_keys` holds it.

    The ids are wrapped as bare chunks (``model_construct``: only the id is read) so the key
    has one implementation, :func:`indexes.index.chunk_keys_of`.
    """
    return chunk_keys_of(Chunk.model_construct(id=i, doc_id="", text="") for i in chunk_ids)


def _keys_of(hits: Iterable[Hit]) -> Keys:
    return chunk_keys_of(hit.chunk for hit in hits)


def key_order(scores: npt.ArrayLike, keys: npt.ArrayLike) -> npt.NDArray[np.intp]:
    """Positions of ``scores`` in hit order: score descending, then key ascending."""
    values = np.asarray(scores, dtype=np.float64)
    order: npt.NDArray[np.intp] = np.lexsort((np.asarray(keys), -values))
    return order


def top_by_key(rank: Callable[[int], Ranking], k: int, keys: Keys) -> Ranking:
    """The ``k`` best rows by the hit rule, from a ranker that orders its ties otherwise.

    ``rank(depth)`` returns the ``depth`` best rows of one index state by score (ties in any
    order); ``keys[rows]`` are their chunk keys. It is asked for ``k + 1`` rows, and deeper
    (doubling) while the last row returned still ties with the ``k``-th, so a tie group
    that straddles the cut is seen whole and its lowest keys are kept.

    Returns:
        A ranking of the ``k`` rows (fewer when the index has fewer), in hit order.
    """
    depth = k + 1
    while True:
        ranking = rank(depth)
        scores = ranking.scores.tolist()  # a few Python floats compare faster than numpy's
        if len(scores) < depth or scores[-1] < scores[k - 1]:
            break
        depth *= 2
    if any(high == low for high, low in pairwise(scores)):
        order = key_order(ranking.scores, keys[ranking.rows])[:k]
        return Ranking(ranking.rows[order], ranking.scores[order])
    return ranking.head(k)


# --- building hits ----------------------------------------------------------------------------


def ranked_hits(
    chunks: Sequence[Chunk], scores: Sequence[float], stage: str | Sequence[str]
) -> list[Hit]:
    """Hits in the order given (already in hit order, or a foreign retriever's order),
    ranked 1, 2, ..., each scored by its stage alone (one ``stage`` for all, or one each)."""
    stages = [stage] * len(chunks) if isinstance(stage, str) else stage
    return _built(
        [
            _hit(chunk, score, rank, {name: score}, name)
            for rank, (chunk, score, name) in enumerate(zip(chunks, scores, stages, strict=True), 1)
        ]
    )


KeyRun = Mapping[int, tuple[Chunk, Mapping[str, float]]]
"""One fused run's candidates by chunk key: the chunk, and the stage scores it gave it."""


def fused_hits(fused: Ranking, k: int, runs: Sequence[KeyRun]) -> list[Hit]:
    """The first ``k`` keys of a fused ranking (keys as rows, in hit order as
    :func:`~retrieval.fusion.fuse_rankings` returns them) as hits of stage ``fused``.

    Each hit's chunk comes from the first run that holds its key; its ``scores`` merge the
    stage scores of every run that holds it (the first run wins a stage name) and add
    ``fused``.
    """
    hits = []
    for rank, (key, score) in enumerate(fused.head(k).pairs(), start=1):
        chunk: Chunk | None = None
        scores: dict[str, float] = {}
        for run in runs:
            found = run.get(key)
            if found is None:
                continue
            chunk = found[0] if chunk is None else chunk
            for name, value in found[1].items():
                scores.setdefault(name, value)
        if chunk is None:
            msg = f"fused key {key} is in none of the runs"
            raise ValueError(msg)
        scores["fused"] = score
        hits.append(_hit(chunk, score, rank, scores, "fused"))
    return _built(hits)


def rescored(
    hits: Sequence[Hit], values: Sequence[float], stage: str, k: int | None = None
) -> list[Hit]:
    """``hits`` scored anew by ``stage`` (a reranker), in hit order, cut to ``k``
    (see :func:`restaged` for the scores kept)."""
    order = key_order(values, _keys_of(hits)).tolist()
    if k is not None:
        order = order[:k]
    return restaged([hits[i] for i in order], [values[i] for i in order], stage)


def restaged(hits: Sequence[Hit], values: Sequence[float], stage: str) -> list[Hit]:
    """``hits`` scored anew by ``stage`` in the order given (a selection order, as MMR's),
    ranked 1, 2, ...

    Every earlier score is kept: the previous stage's under its name, and when ``stage``
    already scored these hits (reranking twice) its earlier value under ``<stage>_prior``.
    """
    built = []
    for rank, (hit, value) in enumerate(zip(hits, values, strict=True), start=1):
        scores = {hit.stage: hit.score, **hit.scores}  # the stage said which score it gave
        if stage in scores:
            scores[_free_key(scores, f"{stage}_prior")] = scores[stage]
        scores[stage] = float(value)
        built.append(_hit(hit.chunk, float(value), rank, scores, stage))
    return _built(built)


def _free_key(scores: Mapping[str, float], base: str) -> str:
    key, n = base, 1
    while key in scores:
        n += 1
        key = f"{base}_{n}"
    return key


def renumbered(hits: Sequence[Hit]) -> list[Hit]:
    """``hits`` in their order, ranked 1, 2, ... (after some were dropped)."""
    return [
        hit if hit.rank == rank else hit.model_copy(update={"rank": rank})
        for rank, hit in enumerate(hits, start=1)
    ]


def best_of(hits: Iterable[Hit]) -> Hit:
    """The first of ``hits`` in hit order: the best score, then the lowest rank."""
    return min(hits, key=lambda h: (-h.score, h.rank))


def passage_hits(passages: Sequence[tuple[Chunk, Sequence[Hit]]]) -> list[Hit]:
    """Expanded passages (each a merged chunk and the hits it grew from) as hits.

    A passage takes the score, stage and stage scores of its best hit (the lowest rank among
    its best-scored ones) and keeps its hits, by rank, in ``parts``. Passages come in hit
    order of their best hits: since the hits were ranked by the rule, the best hit's rank
    breaks ties between passages.
    """
    best = [best_of(hits) for _, hits in passages]
    order = sorted(range(len(passages)), key=lambda i: (-best[i].score, best[i].rank))
    return _built([
        _hit(
            passages[i][0], best[i].score, rank, dict(best[i].scores), best[i].stage,
            tuple(sorted(passages[i][1], key=lambda h: h.rank)),
        )
        for rank, i in enumerate(order, start=1)
    ])  # fmt: skip
