"""EmbeddingCache and CachedEmbedder: a rebuild embeds only what changed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragtools.indexes.dense.embed import Embedder
from ragtools.indexes.dense.embed_cache import CachedEmbedder, EmbeddingCache, text_key
from ragtools.indexes.errors import DimensionMismatchError
from ragtools.indexes.testing import FakeEmbedder
from ragtools.parsers.errors import ConfigError

TEXTS = [f"document number {i} about topic {i % 7}" for i in range(100)]


def test_rebuild_after_changing_one_of_100_texts_embeds_exactly_one(tmp_path: Path) -> None:
    first = FakeEmbedder()
    cache = EmbeddingCache(tmp_path / "cache")
    built = CachedEmbedder(first, cache).embed_documents(TEXTS)
    assert first.texts_embedded == 100
    cache.save()

    changed = list(TEXTS)
    changed[42] = "a completely rewritten document"
    counting = FakeEmbedder()  # a fresh process: new cache object over the same directory
    rebuilt = CachedEmbedder(counting, EmbeddingCache(tmp_path / "cache")).embed_documents(changed)
    assert (counting.calls, counting.texts_embedded) == (1, 1)
    np.testing.assert_array_equal(np.delete(rebuilt, 42, 0), np.delete(built, 42, 0))
    np.testing.assert_array_equal(rebuilt[42], FakeEmbedder().embed_documents(changed[42:43])[0])


def test_cached_vectors_equal_direct_ones_and_duplicates_embed_once() -> None:
    counting = FakeEmbedder()
    emb = CachedEmbedder(counting)  # memory-only cache
    assert isinstance(emb, Embedder)
    texts = ["b", "a", "b", "c", "a", "b"]
    out = emb.embed_documents(texts)
    assert counting.texts_embedded == 3 and (emb.misses, emb.hits) == (3, 0)
    np.testing.assert_array_equal(out, FakeEmbedder().embed_documents(texts))
    again = emb.embed_documents(["c", "d", "a"])
    assert counting.texts_embedded == 4 and emb.hits == 2
    np.testing.assert_array_equal(again, FakeEmbedder().embed_documents(["c", "d", "a"]))
    emb.embed_documents(texts)
    assert counting.calls == 2  # everything cached: the model is not called at all
    assert emb.embed_documents([]).shape == (0, 64)
    np.testing.assert_array_equal(emb.embed_query("a"), out[1])
    assert counting.query_calls == 1
    emb.save()  # memory-only: a no-op


def test_dim_comes_from_cache_without_touching_the_model(tmp_path: Path) -> None:
    CachedEmbedder(FakeEmbedder(dim=12), EmbeddingCache(tmp_path)).embed_documents(["x"])
    assert EmbeddingCache(tmp_path).dim("fake-keyword-hash-12") is None  # nothing saved yet

    class NoDim(FakeEmbedder):
        @property
        def dim(self) -> int:
            raise AssertionError("dim should come from the cache")

    cache = EmbeddingCache(tmp_path)
    CachedEmbedder(FakeEmbedder(dim=12), cache).embed_documents(["x"])
    cache.save()
    wrapped = CachedEmbedder(NoDim(dim=12), EmbeddingCache(tmp_path))
    assert wrapped.dim == 12
    assert wrapped.embed_documents([]).shape == (0, 12)


def test_models_do_not_share_entries(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    small, large = FakeEmbedder(dim=8), FakeEmbedder(dim=16)
    assert CachedEmbedder(small, cache).embed_documents(["same"]).shape == (1, 8)
    assert CachedEmbedder(large, cache).embed_documents(["same"]).shape == (1, 16)
    assert small.texts_embedded == large.texts_embedded == 1
    cache.save()
    assert len(list(tmp_path.iterdir())) == 2
    reopened = EmbeddingCache(tmp_path)
    assert reopened.count(small.model_id) == reopened.count(large.model_id) == 1
    assert len(reopened) == 2


def test_save_is_generational_and_leaves_no_stale_files(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    emb = CachedEmbedder(FakeEmbedder(), cache)
    for batch in (TEXTS[:10], TEXTS[10:30]):
        emb.embed_documents(batch)
        cache.save()
        (shelf,) = tmp_path.iterdir()
        meta = json.loads((shelf / "shelf.json").read_text())
        assert meta["count"] == len(cache) and meta["model_id"] == "fake-keyword-hash-64"
        files = sorted(p.name for p in shelf.iterdir())
        assert files == sorted(["shelf.json", meta["keys"], meta["vectors"]])
    cache.save()  # nothing changed: nothing rewritten
    assert json.loads((shelf / "shelf.json").read_text())["keys"] == meta["keys"]
    assert EmbeddingCache(tmp_path).count(emb.model_id) == 30


@pytest.mark.parametrize("damage", ["vectors", "keys", "json"])
def test_corrupt_cache_is_ignored_with_a_warning(
    tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    cache = EmbeddingCache(tmp_path)
    CachedEmbedder(FakeEmbedder(), cache).embed_documents(TEXTS[:5])
    cache.save()
    (shelf,) = tmp_path.iterdir()
    meta = json.loads((shelf / "shelf.json").read_text())
    target = shelf / ("shelf.json" if damage == "json" else meta[damage])
    target.write_bytes(target.read_bytes()[:-7])
    counting = FakeEmbedder()
    out = CachedEmbedder(counting, EmbeddingCache(tmp_path)).embed_documents(TEXTS[:5])
    assert counting.texts_embedded == 5  # re-embedded, not served from a broken file
    np.testing.assert_array_equal(out, FakeEmbedder().embed_documents(TEXTS[:5]))
    assert "ignoring unreadable embedding cache" in caplog.text


def test_put_and_get_contract() -> None:
    cache = EmbeddingCache()
    keys = [text_key("a"), text_key("b")]
    assert text_key("a") == text_key("a") != text_key("A")
    assert len(text_key("\ud800 lone surrogate")) == 32
    found, vectors = cache.get("m", keys)
    assert not found.any() and vectors.shape[0] == 0
    cache.put("m", keys, np.eye(2, 3))
    cache.put("m", [keys[0]], [[9.0, 9.0, 9.0]])  # existing keys keep their vector
    found, vectors = cache.get("m", [keys[1], text_key("c"), keys[0]])
    assert found.tolist() == [True, False, True]
    np.testing.assert_array_equal(vectors, [[0, 1, 0], [1, 0, 0]])
    with pytest.raises(DimensionMismatchError, match="gave 4-dim vectors"):
        cache.put("m", [text_key("z")], np.ones((1, 4)))
    with pytest.raises(ConfigError, match="one vector per key"):
        cache.put("m", keys, np.ones((3, 3)))
    with pytest.raises(ConfigError, match="non-finite"):
        cache.put("m", [text_key("n")], [[np.nan, 0, 0]])
    cache.clear("m")
    assert cache.count("m") == 0


def test_wrapped_embedder_returning_wrong_shape_is_caught() -> None:
    class Broken(FakeEmbedder):
        def embed_documents(self, texts):  # type: ignore[no-untyped-def]
            return super().embed_documents(texts)[:-1]

    with pytest.raises(DimensionMismatchError, match="returned shape"):
        CachedEmbedder(Broken()).embed_documents(["a", "b"])
    with pytest.raises(ConfigError, match="single str"):
        CachedEmbedder(FakeEmbedder()).embed_documents("a")
