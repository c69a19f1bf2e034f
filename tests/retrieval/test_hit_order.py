"""One tie-break rule for every path that returns hits: score descending, then chunk key.

Ties are constructed: chunks of identical text in different documents score alike in BM25,
in the (deterministic) fake embedder's vector space, in fusion and under a constant reranker.
The expected order is computed here independently (BLAKE2b-64 of the chunk id, signed), and
the same files indexed in another order, on other rows, must give the same hits.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragtools.indexes.index import Index
from ragtools.indexes.ranking import Ranking
from ragtools.indexes.testing import FakeEmbedder
from ragtools.parsers import Document
from ragtools.parsers.document import Chunk
from ragtools.retrieval.base import BaseRetriever
from ragtools.retrieval.frontpage import FrontPageRetriever
from ragtools.retrieval.fusion import fuse_hits
from ragtools.retrieval.hit import Hit, chunk_keys, top_by_key
from ragtools.retrieval.hybrid import HybridRetriever
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.rerank import CrossEncoderReranker, MMRReranker
from ragtools.retrieval.vector import VectorRetriever

TWIN = "volcano lava eruption near the old harbour"
OTHERS = ["glacier ice melting", "desert sand dunes", "coral reef fish", "volcano ash cloud"]


def key(chunk_id: str) -> int:
    digest = hashlib.blake2b(chunk_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def _documents() -> list[Document]:
    twins = [Document(id=f"twin{i}", text=TWIN) for i in range(6)]
    others = [Document(id=f"other{i}", text=f"{t} report {i}") for i, t in enumerate(OTHERS * 2)]
    return twins + others


def _build(path: Path, documents: Sequence[Document]) -> Index:
    return Index.from_documents(
        documents, path, embedder=FakeEmbedder(dim=32), chunk_size=200, chunk_overlap=0
    )


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Index, Index]:
    """The same documents indexed in two orders: the twins on different rows."""
    root = tmp_path_factory.mktemp("ties")
    documents = _documents()
    order = np.random.default_rng(7).permutation(len(documents)).tolist()
    return _build(root / "a", documents), _build(root / "b", [documents[i] for i in order])


MAKERS: dict[str, Callable[[Index], BaseRetriever]] = {
    "keyword": KeywordRetriever,
    "vector": VectorRetriever,
    "hybrid": lambda index: HybridRetriever.from_index(index),
    "hybrid_rrf": lambda index: HybridRetriever.from_index(index, fusion="rrf", weights=None),
}


def _twins(hits: Sequence[Hit]) -> list[Hit]:
    return [hit for hit in hits if hit.chunk.text == TWIN]


@pytest.mark.parametrize("mode", list(MAKERS))
def test_tied_hits_come_in_chunk_key_order_whatever_the_rows(
    indexes: tuple[Index, Index], mode: str
) -> None:
    first, second = (MAKERS[mode](index).invoke(TWIN, k=10) for index in indexes)
    twins = _twins(first)
    assert len(twins) == 6
    if mode != "hybrid_rrf":  # RRF scores ranks, so the twins' scores differ by position
        assert len({hit.score for hit in twins}) == 1
    assert [h.chunk.id for h in twins] == sorted((h.chunk.id for h in twins), key=key)
    assert [(h.chunk.id, h.score) for h in first] == [(h.chunk.id, h.score) for h in second]
    rows = [[index.chunks.index(h.chunk) for h in _twins(first)] for index in indexes]
    assert rows[0] != rows[1]  # the same hits although the index rows differ


@pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid"])
def test_a_tie_group_cut_by_k_keeps_its_lowest_keys(
    indexes: tuple[Index, Index], mode: str
) -> None:
    everything = _twins(MAKERS[mode](indexes[0]).invoke(TWIN, k=10))
    for index in indexes:
        cut = MAKERS[mode](index).invoke(TWIN, k=2)
        assert [h.chunk.id for h in cut] == [h.chunk.id for h in everything[:2]]
        assert [h.rank for h in cut] == [1, 2]


def test_front_page_ties_follow_the_rule(indexes: tuple[Index, Index]) -> None:
    # every document's first chunk scores 1.0: fourteen ties, cut at five
    first, second = (FrontPageRetriever(index).invoke("anything", k=5) for index in indexes)
    firsts = [c.id for c in indexes[0].chunks]
    assert [h.chunk.id for h in first] == sorted(firsts, key=key)[:5]
    assert [h.chunk.id for h in first] == [h.chunk.id for h in second]


class ConstantScorer:
    """A cross-encoder that finds every passage equally relevant."""

    def predict(self, pairs: Sequence[tuple[str, str]], **_: Any) -> list[float]:
        return [0.5] * len(pairs)


def _hits(texts: Sequence[str]) -> list[Hit]:
    chunks = [Chunk(doc_id=f"d{i}", text=text) for i, text in enumerate(texts)]
    return [
        Hit(chunk=c, score=10.0 - i, rank=i + 1, scores={"bm25": 10.0 - i}, stage="bm25")
        for i, c in enumerate(chunks)
    ]


def test_reranked_ties_come_in_chunk_key_order() -> None:
    hits = _hits([f"passage {i}" for i in range(8)])
    reranked = CrossEncoderReranker(ConstantScorer()).rerank("q", hits, k=5)
    assert [h.chunk.id for h in reranked] == sorted((h.chunk.id for h in hits), key=key)[:5]
    assert [h.rank for h in reranked] == [1, 2, 3, 4, 5]
    assert all(h.scores == {"bm25": h.scores["bm25"], "rerank": 0.5} for h in reranked)


def test_a_hybrid_reranker_sees_and_returns_the_rule(indexes: tuple[Index, Index]) -> None:
    found = [
        HybridRetriever.from_index(index, reranker=CrossEncoderReranker(ConstantScorer()))
        .invoke(TWIN, k=4)
        for index in indexes
    ]  # fmt: skip
    every = [c.id for c in indexes[0].chunks]
    assert [h.chunk.id for h in found[0]] == sorted(every, key=key)[:4]
    assert [h.chunk.id for h in found[0]] == [h.chunk.id for h in found[1]]


class SameVector:
    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.ones((len(texts), 4))

    def embed_query(self, text: str) -> np.ndarray:
        return np.ones(4)


def test_mmr_picks_the_lowest_key_among_equals() -> None:
    hits = _hits([f"passage {i}" for i in range(6)])
    picked = MMRReranker(SameVector(), lambda_mult=1.0).rerank("q", hits, k=3)
    assert [h.chunk.id for h in picked] == sorted((h.chunk.id for h in hits), key=key)[:3]


def test_fused_hit_lists_break_ties_by_key() -> None:
    left, right = _hits(["a", "b", "c"]), _hits(["d", "e", "f"])
    fused = fuse_hits("rrf", [left, right])
    assert [h.score for h in fused[:2]] == [fused[0].score] * 2  # both lists' firsts tie
    for pair in (fused[0:2], fused[2:4], fused[4:6]):
        assert [h.chunk.id for h in pair] == sorted((h.chunk.id for h in pair), key=key)


def test_chunk_keys_are_the_index_keys(indexes: tuple[Index, Index]) -> None:
    state = indexes[0].state
    ids = [c.id for c in state.chunks]
    every = state.chunk_keys[np.arange(len(ids))]
    assert chunk_keys(ids).tolist() == every.tolist() == [key(i) for i in ids]


def test_top_by_key_asks_deeper_while_ties_straddle_the_cut() -> None:
    scores = np.array([3.0, 2.0, 2.0, 2.0, 2.0, 2.0, 1.0])
    keys = np.array([50, 40, 30, 20, 10, 0, -10], dtype=np.int64)  # rows 1..5 tie
    asked: list[int] = []

    def rank(depth: int) -> Ranking:
        asked.append(depth)
        return Ranking.top(scores, depth)  # ties by row: keys descending, the wrong way

    top = top_by_key(rank, 3, keys)
    assert top.rows.tolist() == [0, 5, 4]  # the best, then the two lowest keys of the tie
    assert top.scores.tolist() == [3.0, 2.0, 2.0]
    assert asked == [4, 8]  # 4 rows still tied at the cut; 8 reached the end
    assert top_by_key(rank, 1, keys).rows.tolist() == [0]
    assert asked[-1] == 2  # no tie at the cut: one row more was enough
