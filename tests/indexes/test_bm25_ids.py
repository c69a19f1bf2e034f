"""The forked token → id mapper gives the same ids (up to renumbering) and the same scores."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from itertools import chain

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from ragtools.indexes import _bm25_ids
from ragtools.indexes._bm25_ids import map_token_ids
from ragtools.indexes._bm25_math import Vocabulary
from ragtools.indexes.bm25 import BM25Index

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _corpus(n_docs: int, seed: int = 0) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(300)] + ["é", "细胞", "a b"]
    return [
        [words[int(i)] for i in rng.zipf(1.3, int(rng.integers(0, 30))) % len(words)]
        for _ in range(n_docs)
    ]


def _lengths(corpus: list[list[str]]) -> np.ndarray:
    return np.fromiter(map(len, corpus), dtype=np.int64, count=len(corpus))


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count forks; pretend this process has one thread (other tests may leave idle pools)."""
    calls: list[int] = []
    real_fork = os.fork

    def counting_fork() -> int:
        calls.append(1)
        return real_fork()

    monkeypatch.setattr(os, "fork", counting_fork)
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    return calls


def test_forked_mapping_gives_every_token_its_own_term(forks: list[int]) -> None:
    corpus = _corpus(500)
    vocab = Vocabulary()
    ids = map_token_ids(corpus, _lengths(corpus), vocab, workers=2, min_tokens=1)
    assert forks == [1]
    flat = [token for doc in corpus for token in doc]
    assert [vocab.terms[i] for i in ids.tolist()] == flat
    assert sorted(vocab.terms) == sorted(set(flat))
    assert [vocab[t] for t in vocab.terms] == list(range(len(vocab.terms)))


def test_forked_mapping_extends_an_existing_vocabulary(forks: list[int]) -> None:
    vocab = Vocabulary(["w1", "zzz"])
    corpus = _corpus(200, seed=3)
    ids = map_token_ids(corpus, _lengths(corpus), vocab, workers=2, min_tokens=1)
    assert vocab["w1"] == 0 and vocab["zzz"] == 1
    assert [vocab.terms[i] for i in ids.tolist()] == [t for doc in corpus for t in doc]


def test_a_failing_child_falls_back_to_this_process(forks: list[int]) -> None:
    # Non-string tokens cannot travel back as JSON: the child exits non-zero.
    corpus: list[list[object]] = [["a", "b"], ["c"], [("x", 1), "a"], [("x", 1)]]
    vocab = Vocabulary()
    ids = map_token_ids(corpus, _lengths(corpus), vocab, workers=2, min_tokens=1)  # type: ignore[arg-type]
    assert [vocab.terms[i] for i in ids.tolist()] == ["a", "b", "c", ("x", 1), "a", ("x", 1)]
    assert forks == [1]


def test_small_batches_and_one_worker_stay_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork() -> int:
        raise AssertionError("forked")

    monkeypatch.setattr(os, "fork", no_fork)
    corpus = _corpus(50)
    map_token_ids(corpus, _lengths(corpus), Vocabulary(), workers=2)  # below the threshold
    map_token_ids(corpus, _lengths(corpus), Vocabulary(), workers=1, min_tokens=1)


@pytest.mark.parametrize("variant", ["okapi", "bm25plus"])
def test_scores_with_the_forked_path_equal_rank_bm25(
    monkeypatch: pytest.MonkeyPatch, forks: list[int], variant: str
) -> None:
    monkeypatch.setattr(_bm25_ids, "MIN_PARALLEL_TOKENS", 1)
    corpus = [doc or ["w0"] for doc in _corpus(400, seed=7)]
    index = BM25Index(variant=variant)  # type: ignore[arg-type]
    index.add(corpus[:250])
    index.add(corpus[250:])
    query = ["w1", "w2", "w1", "w40", "nope"]
    if variant == "okapi":
        expected = BM25Okapi(corpus).get_scores(query)
        assert np.allclose(index.get_scores(query), expected, rtol=1e-6)
    assert len(forks) == 2
    fresh = BM25Index(variant=variant)  # type: ignore[arg-type]
    monkeypatch.setattr(_bm25_ids, "MIN_PARALLEL_TOKENS", 10**9)
    fresh.add(corpus)
    assert np.allclose(index.get_scores(query), fresh.get_scores(query), rtol=1e-12)


# ----------------------------------------------------------------- grouping tokens by object


def _fresh(corpus: list[list[str]]) -> list[list[str]]:
    """The same tokens, each in a string object of its own (as a tokenizer makes them)."""
    return [["".join(list(token)) for token in doc] for doc in corpus]


def _lookup_ids(corpus: list[list[str]], vocab: Vocabulary) -> np.ndarray:
    return map_token_ids(corpus, _lengths(corpus), vocab, workers=1, identity=False)


def _spy(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Record the calls of one of the module's functions (it still runs)."""
    calls: list[int] = []
    real = getattr(_bm25_ids, name)

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(_bm25_ids, name, spy)
    return calls


@pytest.fixture
def near_addresses(monkeypatch: pytest.MonkeyPatch) -> Callable[[list[list[str]]], None]:
    """Give the objects of the corpora registered with the returned function addresses
    16 bytes apart, as a vocabulary's strings allocated together have: a long test session
    scatters small objects over a wider range than the address table may cover. Register
    before forking, so that parent and child agree."""
    slots: dict[int, int] = {}

    def register(corpus: list[list[str]]) -> None:
        for token in chain.from_iterable(corpus):
            slots.setdefault(id(token), len(slots))

    def near(token_lists, count):  # type: ignore[no-untyped-def]
        tokens = chain.from_iterable(token_lists)
        return np.fromiter((16 * slots[id(t)] for t in tokens), dtype=np.int64, count=count)

    monkeypatch.setattr(_bm25_ids, "_addresses", near)
    monkeypatch.setattr(_bm25_ids, "_read_list_items", near)  # the forked reader, likewise
    return register


@pytest.mark.parametrize("workers", [1, 2])
def test_identity_path_gives_the_lookup_ids_and_term_order(
    monkeypatch: pytest.MonkeyPatch,
    forks: list[int],
    near_addresses: Callable[[list[list[str]]], None],
    workers: int,
) -> None:
    monkeypatch.setattr(_bm25_ids, "_BLOCK", 97)  # many blocks; two gathering threads
    shared = _corpus(300, seed=5)
    mixed = shared[:100] + _fresh(shared[100:200]) + shared[200:]  # equal strings, new objects
    near_addresses(shared + mixed)
    start = ["w7", "zzz", "细胞"]
    wants = []
    for corpus in (shared, mixed):
        vocab = Vocabulary(start)
        wants.append((_lookup_ids(corpus, vocab), vocab.terms))
    lookups = _spy(monkeypatch, "_ids_by_lookup")
    for corpus, (want_ids, want_terms) in zip((shared, mixed), wants, strict=True):
        vocab = Vocabulary(start)
        got = map_token_ids(
            corpus, _lengths(corpus), vocab, workers=workers, min_tokens=1, identity=True
        )
        np.testing.assert_array_equal(got, want_ids)
        assert got.dtype == np.int32
        assert vocab.terms == want_terms  # new terms numbered by first occurrence
    assert lookups == []  # no fallback to dict probes
    assert len(forks) == (4 if workers == 2 else 0)  # two list-reading children per batch


def test_identity_path_survives_a_failing_child(
    monkeypatch: pytest.MonkeyPatch,
    forks: list[int],
    near_addresses: Callable[[list[list[str]]], None],
) -> None:
    parent = os.getpid()
    real = _bm25_ids._addresses

    def failing_in_child(token_lists, count):  # type: ignore[no-untyped-def]
        if os.getpid() != parent:
            raise RuntimeError("child fails")
        return real(token_lists, count)

    monkeypatch.setattr(_bm25_ids, "_addresses", failing_in_child)
    monkeypatch.setattr(_bm25_ids, "_read_list_items", failing_in_child)
    corpus = _corpus(200, seed=9)
    near_addresses(corpus)
    want = _lookup_ids(corpus, Vocabulary())
    lookups = _spy(monkeypatch, "_ids_by_lookup")
    got = map_token_ids(
        corpus, _lengths(corpus), Vocabulary(), workers=2, min_tokens=1, identity=True
    )
    np.testing.assert_array_equal(got, want)
    # the two list readers failed, then the half reader: the parent read everything itself
    assert forks == [1, 1, 1] and lookups == []


def test_addresses_spread_too_wide_fall_back_to_lookups(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_bm25_ids, "_MIN_TABLE", 0)  # at most one slot per token
    corpus = [["a", "".join(["b", "c"])], [str(10**30)[:5], "a"]]  # interned and heap strings
    vocab = Vocabulary()
    with caplog.at_level("DEBUG", logger="ragtools.indexes._bm25_ids"):
        ids = map_token_ids(corpus, _lengths(corpus), vocab, workers=1, identity=True)
    assert "dict probes" in caplog.text
    assert [vocab.terms[i] for i in ids.tolist()] == ["a", "bc", "10000", "a"]


def test_the_sample_chooses_identity_only_when_objects_repeat(
    monkeypatch: pytest.MonkeyPatch, near_addresses: Callable[[list[list[str]]], None]
) -> None:
    monkeypatch.setattr(_bm25_ids, "MIN_IDENTITY_TOKENS", 1)
    monkeypatch.setattr(_bm25_ids, "_SAMPLE_TOKENS", 500)
    shared = _corpus(300, seed=2)
    fresh = _fresh(shared)
    near_addresses(shared + fresh)
    want = _lookup_ids(shared, Vocabulary())
    identity = _spy(monkeypatch, "_ids_by_identity")
    for corpus, expected_calls in ((shared, 1), (fresh, 1)):
        got = map_token_ids(corpus, _lengths(corpus), Vocabulary(), workers=1)
        np.testing.assert_array_equal(got, want)
        assert len(identity) == expected_calls


def test_scores_with_the_identity_path_equal_rank_bm25(
    monkeypatch: pytest.MonkeyPatch, near_addresses: Callable[[list[list[str]]], None]
) -> None:
    monkeypatch.setattr(_bm25_ids, "MIN_IDENTITY_TOKENS", 1)
    monkeypatch.setattr(_bm25_ids, "_SAMPLE_TOKENS", 100)
    corpus = [doc or ["w0"] for doc in _corpus(400, seed=11)]
    near_addresses(corpus)
    identity = _spy(monkeypatch, "_ids_by_identity")
    lookups = _spy(monkeypatch, "_ids_by_lookup")
    index = BM25Index(variant="okapi")
    index.add(corpus[:150])
    index.add(corpus[150:])
    query = ["w1", "w2", "w1", "w40", "nope", "细胞"]
    np.testing.assert_allclose(
        index.get_scores(query), BM25Okapi(corpus).get_scores(query), rtol=1e-6
    )
    assert (len(identity), lookups) == (2, [])  # both batches went by identity


def test_real_addresses_give_the_lookup_ids_whichever_path_is_taken() -> None:
    """Unpatched: the identity path, or its fallback when this session's objects are
    scattered wider than the table may cover, gives the lookup ids."""
    shared = _corpus(300, seed=4)
    want_vocab, got_vocab = Vocabulary(), Vocabulary()
    want = _lookup_ids(shared, want_vocab)
    got = map_token_ids(shared, _lengths(shared), got_vocab, workers=1, identity=True)
    np.testing.assert_array_equal(got, want)
    assert got_vocab.terms == want_vocab.terms


def test_list_reader_copies_every_tokens_address() -> None:
    assert _bm25_ids._LIST_LAYOUT is not None  # CPython: the layout check passed
    corpus = [["a", "b"], [], _fresh([["a"] * 5])[0], ["é", "细胞"] * 3]
    count = sum(map(len, corpus))
    got = _bm25_ids._read_list_items(corpus, count)
    assert got.tolist() == [id(token) for doc in corpus for token in doc]
    with pytest.raises(TypeError, match="must be lists"):
        _bm25_ids._read_list_items([("a", "b")], 2)  # type: ignore[list-item]
    with pytest.raises(RuntimeError, match=f"expected {count + 1}"):
        _bm25_ids._read_list_items(corpus, count + 1)


def test_forked_list_reader_gives_the_addresses(forks: list[int]) -> None:
    corpus = _corpus(400, seed=12)
    ends = np.cumsum(_lengths(corpus))
    got = _bm25_ids._all_addresses(corpus, ends, True)
    assert got.tolist() == [id(token) for doc in corpus for token in doc]
    assert forks == [1, 1]  # two children read half of the lists each
