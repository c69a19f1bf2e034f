"""Rerankers: a tiny random cross-encoder built on disk (no download), MMR with a fake embedder."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from ragtools.indexes.errors import DimensionMismatchError
from ragtools.parsers.document import Chunk
from ragtools.parsers.errors import ConfigError, MissingDependencyError
from ragtools.retrieval.hit import Hit
from ragtools.retrieval.rerank import CrossEncoderReranker, MMRReranker, Reranker

WORDS = [
    *("the", "a", "of", "cat", "dog", "sat", "on", "mat", "fish", "swam", "in", "sea"),
    *("bm25", "ranks", "text", "vector", "search"),
]
TEXTS = [
    "the cat sat on the mat",
    "a dog swam in the sea",
    "fish swam in the sea",
    "bm25 ranks text",
    "vector search of text",
    "the dog sat on a cat",
]


def make_hits(texts: Sequence[str], stage: str = "bm25") -> list[Hit]:
    hits = []
    for rank, text in enumerate(texts, start=1):
        chunk = Chunk(doc_id=f"doc-{rank}", text=text)
        score = 10.0 - rank
        hits.append(Hit(chunk=chunk, score=score, rank=rank, scores={stage: score}, stage=stage))
    return hits


# --- cross-encoder --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised 2-layer BERT with one output, saved like a hub model."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    root = tmp_path_factory.mktemp("tiny-cross-encoder")
    vocab = root / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    # positional: the vocab path is `vocab_file` in transformers 4 and `vocab` in 5
    tokenizer = BertTokenizerFast(str(vocab), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=5 + len(WORDS),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=1,
        initializer_range=0.2,  # spread the random scores so the order is clear
    )
    BertForSequenceClassification(config).save_pretrained(root)
    tokenizer.save_pretrained(root)
    return root


def reference_scores(model_dir: Path, query: str, texts: Sequence[str]) -> list[float]:
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(model_dir), local_files_only=True, device="cpu")
    return [float(s) for s in model.predict([(query, t) for t in texts], batch_size=2)]


def test_cross_encoder_reorders_like_the_model_and_keeps_prior_scores(
    tiny_cross_encoder: Path,
) -> None:
    query = "the cat sat"
    expected = reference_scores(tiny_cross_encoder, query, TEXTS)
    assert np.diff(np.sort(expected)).min() > 1e-4  # distinct, so the order is defined
    # feed the hits worst first, so a correct reranker must reverse them
    ascending = [TEXTS[i] for i in np.argsort(expected)]
    hits = make_hits(ascending)
    reranker = CrossEncoderReranker(tiny_cross_encoder, batch_size=2, device="cpu")
    assert isinstance(reranker, Reranker)
    reranked = reranker.rerank(query, hits)
    by_text = dict(zip(TEXTS, expected, strict=True))
    assert [h.chunk.text for h in reranked] == ascending[::-1]
    assert [h.rank for h in reranked] == list(range(1, len(TEXTS) + 1))
    for hit in reranked:
        before = next(h for h in hits if h.chunk_id == hit.chunk_id)
        assert hit.score == pytest.approx(by_text[hit.chunk.text], abs=1e-6)
        assert hit.scores == {"bm25": before.score, "rerank": hit.score}
    top2 = reranker.rerank(query, hits, k=2)
    assert [h.chunk_id for h in top2] == [h.chunk_id for h in reranked[:2]]


def test_cross_encoder_top_n_and_model_id(tiny_cross_encoder: Path) -> None:
    reranker = CrossEncoderReranker(str(tiny_cross_encoder), top_n=3)
    assert reranker.model_id == str(tiny_cross_encoder)
    reranker.warm_up()
    assert len(reranker.rerank("dog", make_hits(TEXTS))) == 3
    assert len(reranker.rerank("dog", make_hits(TEXTS), k=5)) == 5


def test_cross_encoder_missing_model_is_a_config_error(tmp_path: Path) -> None:
    reranker = CrossEncoderReranker(tmp_path / "no-such-model")  # constructing is free
    assert reranker.rerank("q", []) == []  # nothing to score: the model is not even loaded
    with pytest.raises(ConfigError, match="could not load cross-encoder"):
        reranker.rerank("q", make_hits(["text"]))


def test_cross_encoder_missing_dependency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(MissingDependencyError, match="sentence-transformers"):
        CrossEncoderReranker("any-model").warm_up()


class FakeScorer:
    """Scores a pair by how many query words the text contains; records the calls."""

    def __init__(self, shape: tuple[int, ...] | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.shape = shape

    def predict(self, pairs: list[tuple[str, str]], **kwargs: Any) -> npt.NDArray[np.float64]:
        self.calls.append({"n": len(pairs), **kwargs})
        scores = np.array([float(len(set(q.split()) & set(t.split()))) for q, t in pairs])
        return scores.reshape(self.shape) if self.shape else scores


def test_injected_scorer_ties_dedup_and_prior_keys() -> None:
    scorer = FakeScorer()
    reranker = CrossEncoderReranker(scorer, batch_size=7)
    chunks = [Chunk(doc_id="d", text=t) for t in ["x y", "x", "y", "z"]]
    hits = [
        Hit(chunk=chunks[3], score=0.9, rank=1, scores={"fused": 0.9, "bm25": 3.0}, stage="fused"),
        Hit(chunk=chunks[1], score=0.8, rank=2, scores={}, stage="prior"),  # only its own stage
        Hit(chunk=chunks[2], score=0.7, rank=3, scores={"fused": 0.7}, stage="fused"),
        Hit(chunk=chunks[0], score=0.6, rank=4, scores={"fused": 0.6}, stage="fused"),
        Hit(
            chunk=chunks[3], score=0.5, rank=5, scores={"fused": 0.5}, stage="fused"
        ),  # duplicate id
    ]
    out = reranker.rerank("x y", hits)
    assert scorer.calls == [{"n": 4, "batch_size": 7, "show_progress_bar": False}]
    tied = sorted([chunks[1].id, chunks[2].id])  # both score 1: ordered by chunk id
    assert [h.chunk_id for h in out] == [chunks[0].id, *tied, chunks[3].id]
    assert [h.score for h in out] == [2.0, 1.0, 1.0, 0.0]
    assert out[-1].scores == {"fused": 0.9, "bm25": 3.0, "rerank": 0.0}
    assert next(h for h in out if h.chunk_id == chunks[1].id).scores == {
        "prior": 0.8,
        "rerank": 1.0,
    }
    # reranking again keeps the first rerank score instead of overwriting it
    again = CrossEncoderReranker(FakeScorer()).rerank("z", out)
    assert again[0].chunk_id == chunks[3].id
    assert again[0].scores == {
        "fused": 0.9,
        "bm25": 3.0,
        "rerank_prior": 0.0,
        "rerank": 1.0,
    }


def test_cross_encoder_argument_and_shape_errors() -> None:
    with pytest.raises(ConfigError, match="top_n"):
        CrossEncoderReranker(FakeScorer(), top_n=0)
    with pytest.raises(ConfigError, match="batch_size"):
        CrossEncoderReranker(FakeScorer(), batch_size=0)
    with pytest.raises(ConfigError, match="k must be"):
        CrossEncoderReranker(FakeScorer()).rerank("q", make_hits(["a"]), k=0)
    column = CrossEncoderReranker(FakeScorer(shape=(-1, 1))).rerank("a", make_hits(["a", "b"]))
    assert [h.score for h in column] == [1.0, 0.0]
    with pytest.raises(ConfigError, match="num_labels=1"):
        CrossEncoderReranker(FakeScorer(shape=(1, -1))).rerank("a", make_hits(["a", "b"]))


# --- maximal marginal relevance -------------------------------------------------------------

VOCAB = ["apple", "banana", "cherry", "date"]


class CountEmbedder:
    """Deterministic bag-of-words counts over VOCAB (deliberately not normalised)."""

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.array([self._vector(t) for t in texts], dtype=np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return np.array(self._vector(text), dtype=np.float32)

    @staticmethod
    def _vector(text: str) -> list[float]:
        words = text.split()
        return [float(words.count(w)) for w in VOCAB]


def test_mmr_demotes_a_near_duplicate() -> None:
    # cosines: q=(1,1,1,0)/√3; d1=(1,1,0,0)/√2, d2=(2,1,0,0)/√5 (near duplicate of d1),
    # d3=(0,0,1,1)/√2. rel: d1 2/√6, d2 3/√15, d3 1/√6; sim(d1,d2)=3/√10, sim(d1,d3)=0.
    hits = make_hits(["apple banana", "apple banana apple", "cherry date"])
    reranker = MMRReranker(CountEmbedder(), lambda_mult=0.5)
    assert isinstance(reranker, Reranker)
    out = reranker.rerank("apple banana cherry", hits)
    assert [h.chunk.text for h in out] == ["apple banana", "cherry date", "apple banana apple"]
    assert [h.score for h in out] == pytest.approx(
        [
            0.5 * 2 / math.sqrt(6),
            0.5 * 1 / math.sqrt(6),
            0.5 * 3 / math.sqrt(15) - 0.5 * 3 / math.sqrt(10),
        ],
        rel=1e-6,
    )
    assert [h.rank for h in out] == [1, 2, 3]
    assert out[2].scores == {"bm25": hits[1].score, "mmr": out[2].score}
    # λ = 1 is relevance only: the near duplicate stays second
    relevance = MMRReranker(CountEmbedder(), lambda_mult=1.0).rerank("apple banana cherry", hits)
    assert [h.chunk.text for h in relevance] == [
        "apple banana",
        "apple banana apple",
        "cherry date",
    ]
    assert len(reranker.rerank("apple", hits, k=2)) == 2
    assert len(MMRReranker(CountEmbedder(), top_n=1).rerank("apple", hits)) == 1


def test_mmr_same_text_different_ids_both_kept_ties_by_chunk_id() -> None:
    chunks = [Chunk(doc_id=f"d{i}", text="apple") for i in range(3)]
    hits = [Hit(chunk=c, score=1.0, rank=i + 1, stage="bm25") for i, c in enumerate(chunks)]
    out = MMRReranker(CountEmbedder(), lambda_mult=1.0).rerank("apple", hits[::-1])
    assert [h.chunk_id for h in out] == sorted(c.id for c in chunks)
    assert all(h.scores == {"bm25": 1.0, "mmr": 1.0} and h.stage == "mmr" for h in out)
    assert MMRReranker(CountEmbedder()).rerank("apple", []) == []


def test_mmr_argument_and_shape_errors() -> None:
    with pytest.raises(ConfigError, match="lambda_mult"):
        MMRReranker(CountEmbedder(), lambda_mult=1.5)
    with pytest.raises(ConfigError, match="lambda_mult"):
        MMRReranker(CountEmbedder(), lambda_mult=math.nan)

    class WrongDim(CountEmbedder):
        def embed_query(self, text: str) -> npt.NDArray[np.float32]:
            return np.ones(3, dtype=np.float32)

    with pytest.raises(DimensionMismatchError, match="query vector of size 3"):
        MMRReranker(WrongDim()).rerank("apple", make_hits(["apple"]))
