"""Embedders: FakeEmbedder, SentenceTransformerEmbedder (with a stub and the real model)."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from ragtools.indexes.dense import model_dir
from ragtools.indexes.dense.embed import DEFAULT_MODEL_ID, Embedder, SentenceTransformerEmbedder
from ragtools.indexes.testing import FakeEmbedder
from ragtools.parsers.errors import ConfigError, MissingDependencyError

# ----------------------------------------------------------------------------- FakeEmbedder


def test_fake_embedder_is_deterministic_normalised_and_counts() -> None:
    emb = FakeEmbedder(dim=32)
    assert isinstance(emb, Embedder)
    vecs = emb.embed_documents(["Red apple", "red APPLE", "", "blue sky"])
    assert vecs.shape == (4, 32) and vecs.dtype == np.float32
    np.testing.assert_array_equal(vecs[0], vecs[1])  # case-insensitive bag of words
    np.testing.assert_allclose(np.linalg.norm(vecs[[0, 3]], axis=1), 1.0, rtol=1e-6)
    assert not vecs[2].any()  # no words: zero vector
    np.testing.assert_array_equal(emb.embed_query("red apple"), vecs[0])
    np.testing.assert_array_equal(FakeEmbedder(dim=32).embed_documents(["red apple"])[0], vecs[0])
    assert (emb.calls, emb.texts_embedded, emb.query_calls) == (1, 4, 1)
    assert emb.embed_documents([]).shape == (0, 32)
    assert emb.model_id == "fake-keyword-hash-32" != FakeEmbedder(dim=8).model_id


def test_fake_embedder_shared_words_are_similar() -> None:
    emb = FakeEmbedder(dim=256)
    a, b, c = emb.embed_documents(["cats chase mice", "mice fear cats", "stock market news"])
    assert a @ b > 0.5 > a @ c
    with pytest.raises(ConfigError, match="single str"):
        emb.embed_documents("not a list")
    with pytest.raises(ConfigError, match="dim must be a positive integer"):
        FakeEmbedder(dim=0)


# ------------------------------------------------------------------ stubbed sentence-transformers


class StubModel:
    """Stands in for a SentenceTransformer: records calls, returns FakeEmbedder vectors."""

    def __init__(self, dim: int = 8) -> None:
        self.fake = FakeEmbedder(dim)
        self.calls: list[tuple[str, list[str], dict[str, Any]]] = []

    def get_sentence_embedding_dimension(self) -> int:
        return self.fake.dim

    def _run(self, name: str, texts: list[str], kwargs: dict[str, Any]) -> np.ndarray:
        self.calls.append((name, list(texts), kwargs))
        prompt = kwargs.get("prompt") or ""
        return self.fake.embed_documents([prompt + t for t in texts]).astype(np.float64)

    def encode(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        return self._run("encode", texts, kwargs)

    def encode_query(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        return self._run("encode_query", texts, kwargs)

    def encode_document(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        return self._run("encode_document", texts, kwargs)


def test_prebuilt_model_object_is_used_as_is() -> None:
    stub = StubModel()
    emb = SentenceTransformerEmbedder(stub, batch_size=7, model_id="stub/model")
    assert emb.loaded and emb.model_id == "stub/model" and emb.dim == 8
    out = emb.embed_documents(("alpha beta", "gamma"))  # any sequence
    assert out.dtype == np.float32 and out.shape == (2, 8) and out.flags.c_contiguous
    name, texts, kwargs = stub.calls[-1]
    assert name == "encode_document" and texts == ["alpha beta", "gamma"]
    assert kwargs["batch_size"] == 7 and kwargs["normalize_embeddings"] is True
    assert kwargs["show_progress_bar"] is False  # not a terminal under pytest
    query = emb.embed_query("alpha beta")
    assert query.shape == (8,) and stub.calls[-1][0] == "encode_query"
    np.testing.assert_allclose(query, out[0])
    assert emb.embed_documents([]).shape == (0, 8)
    assert emb.cache_id == "stub/model"


def test_explicit_prompts_are_passed_and_change_cache_id() -> None:
    stub = StubModel()
    emb = SentenceTransformerEmbedder(
        stub, query_prompt="query: ", document_prompt="passage: ", model_id="stub"
    )
    emb.embed_documents(["x"])
    assert stub.calls[-1][0] == "encode" and stub.calls[-1][2]["prompt"] == "passage: "
    emb.embed_query("x")
    assert stub.calls[-1][2]["prompt"] == "query: "
    assert emb.cache_id != emb.model_id == "stub"
    plain = SentenceTransformerEmbedder(stub, normalize=False, model_id="stub")
    assert plain.cache_id not in (emb.cache_id, "stub")


def test_prebuilt_model_without_id_is_named_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    emb = SentenceTransformerEmbedder(StubModel())
    assert emb.model_id.endswith("StubModel")
    assert "pass model_id=" in caplog.text


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"model": 42}, "model must be None"),
        ({"model": ""}, "empty string"),
        ({"batch_size": 0}, "batch_size must be a positive integer"),
        ({"query_prompt": 3}, "query_prompt must be a str"),
    ],
)
def test_constructor_validates(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        SentenceTransformerEmbedder(**kwargs)


def test_bad_texts_are_rejected() -> None:
    emb = SentenceTransformerEmbedder(StubModel(), model_id="stub")
    with pytest.raises(ConfigError, match="single str"):
        emb.embed_documents("oops")
    with pytest.raises(ConfigError, match=r"texts\[1\] must be a str"):
        emb.embed_documents(["ok", None])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="query must be a str"):
        emb.embed_query(["list"])  # type: ignore[arg-type]


def test_constructor_is_lazy_and_missing_dependency_is_clear(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    monkeypatch.setattr(model_dir, "_MODELS", {})  # no model an earlier test of this process loaded
    emb = SentenceTransformerEmbedder(onnx=False)  # nothing imported or loaded yet
    assert not emb.loaded and emb.model_id == DEFAULT_MODEL_ID
    with pytest.raises(MissingDependencyError, match="pip install sentence-transformers"):
        emb.embed_documents(["text"])


@pytest.mark.slow  # imports the sentence-transformers stack (seconds)
def test_unknown_local_model_is_a_config_error(tmp_path: Any) -> None:
    (tmp_path / "model").mkdir()  # a directory that is not a model
    emb = SentenceTransformerEmbedder(tmp_path / "model")
    assert emb.model_id == str(tmp_path / "model")
    with pytest.raises(ConfigError, match="could not load embedding model"):
        _ = emb.dim


# ----------------------------------------------------------------------------- the real model


@pytest.fixture(scope="module")
def real() -> Iterator[tuple[SentenceTransformerEmbedder, list[tuple[object, ...]]]]:
    """The bundled default model, loaded with HF_HUB_OFFLINE=1 and every socket blocked."""
    attempts: list[tuple[object, ...]] = []

    def no_network(self: socket.socket, *args: object) -> None:
        attempts.append(args)
        raise OSError("network disabled in this test")

    def no_dns(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise OSError("network disabled in this test")

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setattr(socket.socket, "connect", no_network)
        mp.setattr(socket, "getaddrinfo", no_dns)
        emb = SentenceTransformerEmbedder()
        assert emb.dim == 384
        yield emb, attempts


@pytest.mark.slow
def test_real_model_loads_offline_and_ranks_paraphrases(real) -> None:
    emb, attempts = real
    assert attempts == [], "the default model must load without any network access"
    assert emb.model_id == DEFAULT_MODEL_ID
    vecs = emb.embed_documents(
        [
            "A man is playing a guitar.",
            "Someone plays an acoustic guitar on stage.",
            "The stock market fell sharply on Monday.",
        ]
    )
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)
    assert vecs[0] @ vecs[1] > 0.5 > vecs[0] @ vecs[2]
    query = emb.embed_query("A man is playing a guitar.")
    np.testing.assert_allclose(query, vecs[0], atol=1e-5)  # MiniLM has no query prompt
    assert emb.embed_documents([]).shape == (0, 384)


@pytest.mark.slow
def test_real_model_matches_sentence_transformers_encode(real) -> None:
    emb, _ = real
    texts = ["short", "a somewhat longer sentence about protein folding " * 3, "données"]
    direct = emb.model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    np.testing.assert_allclose(emb.embed_documents(texts), direct, atol=1e-5)


@pytest.mark.slow
def test_default_model_needs_no_offline_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without HF_HUB_OFFLINE the bundled model still loads without a single connection."""
    attempts: list[object] = []

    def record(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise OSError("network disabled in this test")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(socket.socket, "connect", record)
    monkeypatch.setattr(socket, "getaddrinfo", record)
    emb = SentenceTransformerEmbedder()
    assert emb.embed_query("offline").shape == (384,)
    assert attempts == []


@pytest.mark.slow
def test_the_default_model_runs_in_onnx_and_equals_torch(real) -> None:
    """Queries and documents go through ONNX Runtime and give the model's own vectors."""
    emb, attempts = real
    assert emb.uses_onnx
    queries = ["cells", "Vitamin D deficiency is associated with multiple sclerosis."]
    direct = emb.model.encode_query(queries, normalize_embeddings=True, convert_to_numpy=True)
    fast = np.stack([emb.embed_query(q) for q in queries])
    np.testing.assert_allclose(fast, direct, atol=1e-5)
    assert fast.dtype == np.float32 and fast.flags.c_contiguous
    assert attempts == []


@pytest.mark.slow
def test_onnx_can_be_disabled_and_prompts_still_apply(real) -> None:
    emb, _ = real
    model = emb.model
    expected = emb.embed_query("protein folding")
    plain = SentenceTransformerEmbedder(onnx=False)
    np.testing.assert_allclose(plain.embed_query("protein folding"), expected, atol=1e-5)
    assert not plain.uses_onnx and plain.model is model  # one torch model per process
    prompted = SentenceTransformerEmbedder(query_prompt="query: ", document_prompt="passage: ")
    reference = model.encode_query(
        ["protein folding"], prompt="query: ", normalize_embeddings=True, convert_to_numpy=True
    )[0]
    np.testing.assert_allclose(prompted.embed_query("protein folding"), reference, atol=1e-5)
    reference = model.encode(
        ["protein folding"], prompt="passage: ", normalize_embeddings=True, convert_to_numpy=True
    )
    np.testing.assert_allclose(prompted.embed_documents(["protein folding"]), reference, atol=1e-5)
    assert prompted.uses_onnx
