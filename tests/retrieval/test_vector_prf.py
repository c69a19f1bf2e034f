"""``VectorRetriever(prf=...)``: Rocchio feedback from the first pass's stored vectors,
against a brute-force reference; windows, filters and the embedding cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from ragtools.indexes.dense.prf import Rocchio
from ragtools.indexes.dense.windows import split_windows
from ragtools.indexes.index import Index
from ragtools.indexes.testing import FakeEmbedder
from ragtools.parsers import ConfigError, Document
from ragtools.retrieval.names import retriever_for
from ragtools.retrieval.vector import VectorRetriever

WORDS = ["zebra", "horse", "grass", "savanna", "water", "boat", "wind", "oak", "tree"]
WORDS += ["river", "stone", "cloud"]
DIM = 64


def _texts() -> dict[str, str]:
    """Twelve documents of overlapping words, so that feedback moves the ranking."""
    return {
        f"d{i:02d}": " ".join(WORDS[(i + j) % len(WORDS)] for j in range(1 + i % 4))
        for i in range(12)
    }


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    docs = [Document(id=i, text=t, metadata={"source": f"{i}.txt"}) for i, t in _texts().items()]
    root = tmp_path_factory.mktemp("prf") / "i"
    return Index.from_documents(
        docs, root, embedder=FakeEmbedder(DIM), chunk_size=200, chunk_overlap=0
    )


def _unit(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(n == 0, 1.0, n)


def _reference(
    texts: list[str], keys: npt.NDArray[np.int64], query: str, rocchio: Rocchio, allow: list[bool]
) -> tuple[list[int], list[float]]:
    """Brute force in float64: cosine of every allowed text, the top ``depth`` in hit order
    (score descending, then chunk key), Rocchio by hand, every allowed text ranked again."""
    fake = FakeEmbedder(DIM)
    docs = _unit(fake.embed_documents(texts).astype(np.float64))
    q = _unit(fake.embed_query(query).astype(np.float64))
    allowed = np.flatnonzero(allow)
    first = docs[allowed] @ q
    order = allowed[np.lexsort((keys[allowed], -np.round(first, 6)))][: rocchio.depth]
    moved = rocchio.alpha * q + rocchio.beta * docs[order].mean(axis=0)
    second = docs[allowed] @ _unit(moved)
    ranked = allowed[np.lexsort((keys[allowed], -np.round(second, 6)))]
    return [int(r) for r in ranked], [float(s) for s in docs[ranked] @ _unit(moved)]


@pytest.mark.parametrize("rocchio", [Rocchio(1, 0.5, 0.5), Rocchio(3, 0.4, 0.6)])
def test_prf_ranks_by_the_rocchio_query_of_the_first_pass(index: Index, rocchio: Rocchio) -> None:
    state = index.state
    texts = [c.text for c in state.chunks]
    query = "grass water"
    expected_rows, expected_scores = _reference(
        texts, state.chunk_keys, query, rocchio, [True] * len(texts)
    )
    hits = VectorRetriever(index, prf=rocchio).invoke(query, k=len(texts))
    by_row = {c.id: row for row, c in enumerate(state.chunks)}
    got = [by_row[h.chunk.id] for h in hits]
    scores = [h.scores["vector"] for h in hits]
    np.testing.assert_allclose(sorted(scores, reverse=True), scores)
    np.testing.assert_allclose(scores, [expected_scores[expected_rows.index(r)] for r in got],
                               atol=1e-6)  # fmt: skip
    np.testing.assert_allclose(scores, expected_scores[: len(scores)], atol=1e-6)
    plain = VectorRetriever(index).invoke(query, k=len(texts))
    assert not np.allclose([h.score for h in plain], scores)  # feedback moved the query


def test_feedback_reads_the_stored_vectors_not_the_model(tmp_path: Path, index: Index) -> None:
    fake = FakeEmbedder(DIM)
    reopened = Index.open(index.path, embedder=fake)
    VectorRetriever(reopened, prf=Rocchio(3, 0.5, 0.5)).invoke("zebra water", k=3)
    assert fake.calls == 0 and fake.query_calls == 1  # the build's cache held every window
    assert reopened.embedder.hits == 3 and reopened.embedder.misses == 0


def test_feedback_and_results_keep_the_filter(index: Index) -> None:
    state = index.state
    texts = [c.text for c in state.chunks]
    allowed = {"d01.txt", "d04.txt", "d05.txt", "d07.txt", "d09.txt", "d10.txt"}
    allow = [str(c.metadata["source"]) in allowed for c in state.chunks]
    rocchio = Rocchio(2, 0.5, 0.5)
    _, expected_scores = _reference(texts, state.chunk_keys, "horse grass", rocchio, allow)
    hits = VectorRetriever(index, prf=rocchio).invoke(
        "horse grass", k=10, filter={"source": {"$in": sorted(allowed)}}
    )
    assert {str(h.chunk.metadata["source"]) for h in hits} <= allowed
    np.testing.assert_allclose([h.score for h in hits], expected_scores[: len(hits)], atol=1e-6)


def test_a_long_chunk_feeds_back_its_best_window(tmp_path: Path) -> None:
    """One chunk of two windows ("zebra ..." then "... boat wind"): the query "boat wind"
    matches the second window best, so that window is what feeds back."""
    long_text = "zebra horse grass savanna. " * 3 + "boat wind river stone. " * 3
    docs = [
        Document(id="long", text=long_text, metadata={"source": "long.txt"}),
        Document(id="oak", text="oak tree cloud", metadata={"source": "oak.txt"}),
        Document(id="boat", text="boat wind water", metadata={"source": "boat.txt"}),
    ]
    index = Index.from_documents(
        docs, tmp_path / "i", embedder=FakeEmbedder(DIM), chunk_size=500, chunk_overlap=0,
        vector_window=80, vector_window_overlap=0,
    )  # fmt: skip
    state = index.state
    row = next(r for r, c in enumerate(state.chunks) if c.doc_id == "long")
    windows, _ = split_windows([state.chunks[row].text], 80, 0)
    assert len(windows) >= 2
    fake = FakeEmbedder(DIM)
    q = _unit(fake.embed_query("boat wind river").astype(np.float64))
    vectors = _unit(fake.embed_documents(windows).astype(np.float64))
    best = vectors[int(np.argmax(vectors @ q))]
    rocchio = Rocchio(1, 0.5, 0.5)
    moved = VectorRetriever(index, prf=rocchio).feedback_query(state, "boat wind river", None)
    top = VectorRetriever(index).invoke("boat wind river", k=1)[0]
    assert top.chunk.doc_id == "long"
    np.testing.assert_allclose(moved, 0.5 * q + 0.5 * best, atol=1e-6)


def test_options_by_name_and_bad_settings(index: Index) -> None:
    retriever = retriever_for(index, "vector", prf={"depth": 2})
    assert isinstance(retriever, VectorRetriever) and retriever.prf == Rocchio(2, 0.4, 0.6)
    assert VectorRetriever(index).prf is None
    with pytest.raises(ConfigError, match="Rocchio depth must be an integer >= 1, got 0"):
        VectorRetriever(index, prf={"depth": 0})
    q = VectorRetriever(index).feedback_query(index.state, "horse", None)
    np.testing.assert_allclose(q, FakeEmbedder(DIM).embed_query("horse"))  # off: the query
