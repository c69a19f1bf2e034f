"""Keyword, vector, hybrid and front-page retrievers over a real index bundle."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np
import pytest

from ragtools.indexes.index import Index
from ragtools.indexes.testing import FakeEmbedder
from ragtools.indexes.writer import IndexWriter
from ragtools.parsers import ConfigError, Document
from ragtools.retrieval.base import BaseRetriever, Filter
from ragtools.retrieval.frontpage import FrontPageRetriever
from ragtools.retrieval.fusion import fuse
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.hybrid import FusionMethod, HybridRetriever
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.rerank import MMRReranker
from ragtools.retrieval.vector import VectorRetriever

TOPICS = ["volcano lava eruption", "glacier ice melting", "desert sand dunes", "coral reef fish"]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    docs = []
    for i in range(40):
        topic = TOPICS[i % len(TOPICS)]
        text = f"Report {i} on the {topic}. " + " ".join(f"filler{j}" for j in range(i % 7))
        docs.append(
            Document(id=f"doc{i:02d}", text=text, metadata={"source": f"r{i % 5}.pdf", "page": i})
        )
    root = tmp_path_factory.mktemp("idx") / "index"
    return Index.from_documents(
        docs, root, embedder=FakeEmbedder(dim=48), chunk_size=200, chunk_overlap=0
    )


def _ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [hit.chunk.doc_id for hit in hits]


def test_hits_are_ranked_with_stage_scores(index: Index) -> None:
    for retriever, stage in ((KeywordRetriever(index), "bm25"), (VectorRetriever(index), "vector")):
        hits = retriever.invoke("volcano lava", k=5)
        assert [h.rank for h in hits] == [1, 2, 3, 4, 5]
        assert all("volcano" in h.chunk.text for h in hits)
        assert all(h.scores == {stage: h.score} for h in hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


@pytest.mark.parametrize("make", [KeywordRetriever, VectorRetriever, HybridRetriever.from_index])
def test_filter_matching_three_chunks_returns_exactly_those(index: Index, make) -> None:  # type: ignore[no-untyped-def]
    # pages 0, 4 and 8 are volcano reports from r0.pdf, r4.pdf and r3.pdf
    spec = {"page": {"$in": [0, 4, 8]}}
    hits = make(index).invoke("volcano lava eruption", k=10, filter=spec)
    assert sorted(_ids(hits)) == ["doc00", "doc04", "doc08"]
    # nothing unmatched pads the result: every hit matched in a stage with a positive score
    # (min-max fusion maps the lowest candidate of a run to 0, so the fused score may be 0)
    assert all(max(v for key, v in hit.scores.items() if key != "fused") > 0 for hit in hits)


@pytest.mark.parametrize("make", [KeywordRetriever, VectorRetriever])
def test_filter_gives_exact_k_even_when_matches_rank_low(index: Index, make) -> None:  # type: ignore[no-untyped-def]
    spec = {"source": "r1.pdf"}  # 8 chunks, of which 2 are about glaciers
    hits = make(index).invoke("glacier ice melting", k=2, filter=spec)
    assert len(hits) == 2 and all(h.chunk.metadata["source"] == "r1.pdf" for h in hits)
    assert all("glacier" in h.chunk.text for h in hits)


def test_bad_filter_and_k(index: Index) -> None:
    with pytest.raises(ConfigError, match=r"\$near"):
        KeywordRetriever(index).invoke("x", filter={"page": {"$near": 3}})
    with pytest.raises(ConfigError, match="k must be a positive integer"):
        KeywordRetriever(index).invoke("x", k=0)
    with pytest.raises(ConfigError, match="weights"):
        HybridRetriever([KeywordRetriever(index)], weights=[0.0])


def test_hybrid_equals_fusion_of_its_halves(index: Index) -> None:
    keyword, vector = KeywordRetriever(index), VectorRetriever(index)
    hybrid = HybridRetriever(
        [keyword, vector], weights=[0.3, 0.7], fusion="relative_score", candidate_k=20
    )
    query = "melting glacier"
    runs = [[(h.chunk.id, h.score) for h in r.invoke(query, k=20)] for r in (keyword, vector)]
    expected = fuse("relative_score", runs, weights=[0.3, 0.7])[:6]
    hits = hybrid.invoke(query, k=6)
    assert [(h.chunk.id, round(h.score, 12)) for h in hits] == [
        (cid, round(score, 12)) for cid, score in expected
    ]
    assert len({h.chunk.id for h in hits}) == len(hits)
    for hit in hits:
        assert hit.scores["fused"] == hit.score
        assert {"bm25", "vector"} & set(hit.scores)


def _check_against_fuse(hybrid: HybridRetriever, query: str, k: int, spec: object) -> None:
    """The hybrid's hits are exactly fuse()'s top k of its retrievers' hit lists (the
    hand-computed reference): same chunks, same floats, same order (ties by chunk id), with
    every retriever's own score kept."""
    weights = hybrid.weights or [1.0] * len(hybrid.retrievers)
    lists = [r.invoke(query, k=hybrid.candidate_k, filter=spec) for r in hybrid.retrievers]
    runs = [[(h.chunk.id, h.score) for h in hits] for hits in lists]
    expected = fuse(hybrid.fusion, runs, weights=weights)[:k]
    hits = hybrid.invoke(query, k=k, filter=spec)
    assert [(h.chunk.id, h.score) for h in hits] == expected
    for hit in hits:
        assert hit.stage == "fused" and hit.scores["fused"] == hit.score
        for retriever, found in zip(hybrid.retrievers, lists, strict=True):
            own = next((h.score for h in found if h.chunk.id == hit.chunk.id), None)
            assert hit.scores.get(retriever.stage) == own


@pytest.mark.parametrize("fusion", ["rrf", "relative_score", "dbsf", "zscore"])
def test_hybrid_equals_fusion_of_its_retrievers(index: Index, fusion: FusionMethod) -> None:
    halves = [KeywordRetriever(index), VectorRetriever(index), FrontPageRetriever(index)]
    hybrid = HybridRetriever(halves, weights=[0.5, 0.3, 0.2], fusion=fusion, candidate_k=15)
    for query in ["volcano lava", "glacier", "reef fish sand", "zzz nothing"]:
        for spec in (None, {"source": {"$in": ["r1.pdf", "r2.pdf"]}}):
            _check_against_fuse(hybrid, query, 8, spec)
    hits = hybrid.invoke("melting glacier", k=6)
    assert all({"bm25", "vector"} & set(h.scores) for h in hits if "front_page" not in h.scores)


def test_hybrid_over_one_index_compiles_its_filter_once(
    index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragtools.retrieval import base

    compiled: list[int] = []
    real = base.filter_mask

    def counting(spec, chunks):  # type: ignore[no-untyped-def]
        compiled.append(1)
        return real(spec, chunks)

    monkeypatch.setattr(base, "filter_mask", counting)
    spec = {"source": "r3.pdf"}
    hybrid = HybridRetriever([KeywordRetriever(index), VectorRetriever(index)])
    hits = hybrid.invoke("volcano lava", k=5, filter=spec)
    assert compiled == [1]
    assert hits and all(h.chunk.metadata["source"] == "r3.pdf" for h in hits)
    KeywordRetriever(index).invoke("volcano lava", k=5, filter=spec)  # alone: its own mask
    assert compiled == [1, 1]


def test_a_chunk_id_on_two_rows_is_fused_once(tmp_path: Path) -> None:
    docs = [Document(id=f"d{i}", text=f"{TOPICS[i % 4]} number {i}") for i in range(12)]
    dup = Index.from_documents(
        docs, tmp_path / "dup", embedder=FakeEmbedder(dim=32), chunk_size=200, chunk_overlap=0
    )
    IndexWriter(dup).add(dup.chunks[:3])  # the first three chunks again, on new rows
    hybrid = HybridRetriever([KeywordRetriever(dup), VectorRetriever(dup)], candidate_k=30)
    for query in ["volcano lava", "glacier ice", "number 1"]:
        _check_against_fuse(hybrid, query, 6, None)


def test_hybrid_over_two_indexes_fuses_by_chunk_id(index: Index, tmp_path: Path) -> None:
    docs = [Document(id=f"e{i}", text=f"{TOPICS[i % 4]} entry {i}") for i in range(10)]
    other = Index.from_documents(
        docs, tmp_path / "other", embedder=FakeEmbedder(dim=48), chunk_size=200, chunk_overlap=0
    )
    hybrid = HybridRetriever(
        [KeywordRetriever(index), VectorRetriever(other)], weights=[0.4, 0.6], candidate_k=20
    )
    for query in ["volcano lava", "glacier ice", "entry 3"]:
        for spec in (None, {"source": "r1.pdf"}):
            _check_against_fuse(hybrid, query, 7, spec)


def test_a_retriever_without_rankings_is_refused_by_name(index: Index) -> None:
    class HitsOnly(BaseRetriever):
        def _retrieve(self, query: str, k: int, filter: Filter | None) -> list[Hit]:
            return []

    with pytest.raises(ConfigError, match="HitsOnly cannot be fused"):
        HybridRetriever([KeywordRetriever(index), HitsOnly()])  # type: ignore[list-item]


def test_front_page_skips_documents_deleted_by_a_writer(tmp_path: Path) -> None:
    docs = [Document(id=f"d{i}", text=f"{TOPICS[i % 4]} number {i}") for i in range(6)]
    index = Index.from_documents(
        docs, tmp_path / "fp", embedder=FakeEmbedder(dim=16), chunk_size=200, chunk_overlap=0
    )
    front = FrontPageRetriever(index, k=10)
    keyword = KeywordRetriever(index)
    assert {h.chunk.doc_id for h in front.invoke("x")} == {f"d{i}" for i in range(6)}
    assert IndexWriter(index).delete(["d2", "d4"]) == 2
    assert {h.chunk.doc_id for h in front.invoke("x")} == {"d0", "d1", "d3", "d5"}
    assert {h.chunk.doc_id for h in keyword.invoke("number", k=10)} == {"d0", "d1", "d3", "d5"}
    reopened = Index.open(index.path, embedder=FakeEmbedder(dim=16))
    assert [h.chunk for h in FrontPageRetriever(reopened, k=10).invoke("x")] == [
        h.chunk for h in front.invoke("x")
    ]


def test_weight_zero_removes_a_retriever(index: Index) -> None:
    keyword, vector = KeywordRetriever(index), VectorRetriever(index)
    only_vector = HybridRetriever([keyword, vector], weights=[0.0, 1.0], fusion="rrf")
    hits = only_vector.invoke("coral reef", k=5)
    # same candidate depth as the hybrid, so tied cosines come back in the same order
    assert _ids(hits) == _ids(vector.invoke("coral reef", k=only_vector.candidate_k)[:5])
    assert all("bm25" not in h.scores for h in hits)


def test_batch_equals_a_loop_of_invoke(index: Index) -> None:
    hybrid = HybridRetriever.from_index(index, k=4)
    queries = ["volcano", "sand dunes in the desert", "fish", "nothing matches zzz"]
    assert hybrid.batch(queries) == [hybrid.invoke(q) for q in queries]


def test_ainvoke_does_not_block_the_event_loop(index: Index) -> None:
    class SlowRetriever(KeywordRetriever):
        def _retrieve(self, query, k, filter):  # type: ignore[no-untyped-def]
            time.sleep(0.05)  # CPU-bound work stands in a worker thread, not on the loop
            return super()._retrieve(query, k, filter)

    retriever = SlowRetriever(index)

    async def scenario() -> tuple[int, list]:  # type: ignore[type-arg]
        ticks = 0
        done = asyncio.Event()

        async def heartbeat() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.005)

        beat = asyncio.create_task(heartbeat())
        results = await asyncio.gather(
            *(retriever.ainvoke(f"{TOPICS[i % 4]}", k=3) for i in range(20))
        )
        done.set()
        await beat
        return ticks, results

    ticks, results = asyncio.run(scenario())
    assert len(results) == 20 and all(len(r) == 3 for r in results)
    assert ticks >= 10


def test_mmr_reranker_in_hybrid_keeps_every_stage(index: Index) -> None:
    reranker = MMRReranker(FakeEmbedder(dim=48), lambda_mult=0.5)
    hybrid = HybridRetriever.from_index(index, reranker=reranker, candidate_k=20, k=4)
    hits = hybrid.invoke("volcano lava eruption")
    assert len(hits) == 4 and [h.rank for h in hits] == [1, 2, 3, 4]
    for hit in hits:
        assert {"fused", "mmr"} <= set(hit.scores)


def test_front_page_returns_each_documents_first_chunk(index: Index) -> None:
    hits = FrontPageRetriever(index, k=100).invoke("anything")
    assert len(hits) == 40 and all(h.chunk.start == 0 for h in hits)
    filtered = FrontPageRetriever(index).invoke("x", filter={"source": "r2.pdf"}, k=3)
    assert [h.chunk.metadata["source"] for h in filtered] == ["r2.pdf"] * 3
    hybrid = HybridRetriever(
        [KeywordRetriever(index), FrontPageRetriever(index, k=100)], weights=[1.0, 0.1]
    )
    assert hybrid.invoke("coral reef", k=3)[0].scores.keys() >= {"front_page", "fused"}


def test_vector_scores_are_cosines(index: Index) -> None:
    query = "desert sand dunes"
    hits = VectorRetriever(index).invoke(query, k=3)
    q = FakeEmbedder(dim=48).embed_query(query)
    for hit in hits:
        v = FakeEmbedder(dim=48).embed_documents([hit.chunk.text])[0]
        assert hit.score == pytest.approx(float(np.dot(q, v)), abs=1e-5)


def test_retrievers_survive_reopen(index: Index, tmp_path: Path) -> None:
    reopened = Index.open(index.path, embedder=FakeEmbedder(dim=48))
    query = "glacier"
    assert HybridRetriever.from_index(reopened).invoke(query) == HybridRetriever.from_index(
        index
    ).invoke(query)
