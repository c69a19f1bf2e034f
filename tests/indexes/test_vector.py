"""VectorIndex search, delete and filters, checked against a numpy brute force."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from ragtools.indexes.dense.vector import VectorIndex
from ragtools.indexes.errors import DimensionMismatchError
from ragtools.indexes.keyword.bm25 import BM25Index
from ragtools.indexes.ranking import Ranking
from ragtools.indexes.testing import FakeEmbedder
from ragtools.parsers.errors import ConfigError

DIM = 24


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def brute(
    rows: np.ndarray, vectors: np.ndarray, query: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosine top-k with numpy: the oracle."""
    sims = unit(vectors) @ unit(query)
    order = np.argsort(-sims, kind="stable")[:k]
    return rows[order], sims[order]


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((1001, DIM)).astype(np.float32) * 3.0  # not normalised
    rows = rng.permutation(5000)[:1001].astype(np.int64) * 2 + 5  # sparse, unordered
    queries = rng.standard_normal((33, DIM)).astype(np.float32)
    return rows, vectors, queries


def build(kind: str, rows: np.ndarray, vectors: np.ndarray, **kw: object) -> VectorIndex:
    index = VectorIndex(DIM, kind, **kw)  # type: ignore[arg-type]
    index.add(rows[:500], vectors[:500])  # two batches: incremental add
    index.add(rows[500:], vectors[500:])
    return index


@pytest.mark.parametrize("n_queries", [1, 7, 33])
@pytest.mark.parametrize("k", [1, 10, 97])
def test_flat_equals_numpy_brute_force(data, n_queries: int, k: int) -> None:
    rows, vectors, queries = data
    index = build("flat", rows, vectors)
    assert index.n_rows == rows.max() + 1
    everything = np.ones(index.n_rows, dtype=bool)  # a filter: the allowed rows gathered first
    for allow in (None, everything):
        results = index.search_batch(queries[:n_queries], k, allow=allow)
        assert len(results) == n_queries
        for query, result in zip(queries[:n_queries], results, strict=True):
            assert isinstance(result, Ranking)
            got_rows, got_scores = result
            want_rows, want_scores = brute(rows, vectors, query, k)
            assert got_rows.dtype == np.int64 and got_scores.dtype == np.float64
            np.testing.assert_array_equal(got_rows, want_rows)
            np.testing.assert_allclose(got_scores, want_scores, rtol=1e-5, atol=1e-6)


def test_single_search_equals_batch(data) -> None:
    rows, vectors, queries = data
    index = build("flat", rows, vectors)
    for k in (1, 9, 2000):  # 2000 > ntotal: every row
        batch = index.search_batch(queries[:5], k)
        for query, (b_rows, b_scores) in zip(queries[:5], batch, strict=True):
            s_rows, s_scores = index.search(query, k)
            np.testing.assert_array_equal(s_rows, b_rows)
            # BLAS may sum a one-row product in another order than a five-row one
            np.testing.assert_allclose(s_scores, b_scores, rtol=1e-6, atol=1e-6)
            (one,) = index.search_batch(query[None, :], k)
            np.testing.assert_array_equal(s_rows, one.rows)
            np.testing.assert_array_equal(s_scores, one.scores)  # the same floats
            assert s_scores.dtype == np.float64 and s_rows.dtype == np.int64
            want_rows, _ = brute(rows, vectors, query, min(k, len(rows)))
            np.testing.assert_array_equal(s_rows, want_rows)
    with pytest.raises(ConfigError, match="NaN"):
        index.search(np.full(DIM, np.nan, dtype=np.float32), 3)
    with pytest.raises(ConfigError, match="k must be"):
        index.search(queries[0], 0)
    with pytest.raises(DimensionMismatchError):
        index.search(queries[0][:-1], 3)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_k_clamped_and_no_padding(kind: str, data) -> None:
    rows, vectors, queries = data
    index = VectorIndex(DIM, kind)  # type: ignore[arg-type]
    assert index.search(queries[0], 5).rows.size == 0  # empty index: empty, not an error
    index.add([], [])  # nothing to add is not an error either
    assert index.search_batch([], 5) == []
    index.add(rows[:6], vectors[:6])
    got_rows, got_scores = index.search(queries[0], 50)
    assert len(got_rows) == len(got_scores) == 6
    assert set(got_rows.tolist()) == set(rows[:6].tolist())
    assert (got_rows >= 0).all()
    assert np.all(np.diff(got_scores) <= 1e-7)  # best first


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_delete_gives_exact_k_over_remaining(kind: str, data) -> None:
    rows, vectors, queries = data
    index = build(kind, rows, vectors, nlist=4, nprobe=4)  # ivf trains at 156 vectors
    gone = rows[::3]
    assert index.delete(np.concatenate([gone, [999_999]])) == len(gone)  # unknown row ignored
    assert index.delete(gone) == 0
    assert len(index) == len(rows) - len(gone)
    keep = ~np.isin(rows, gone)
    for query in queries[:5]:
        got_rows, got_scores = index.search(query, 20)
        want_rows, want_scores = brute(rows[keep], vectors[keep], query, 20)
        assert len(got_rows) == 20
        assert not np.isin(got_rows, gone).any()
        if kind == "flat":
            np.testing.assert_array_equal(got_rows, want_rows)
            np.testing.assert_allclose(got_scores, want_scores, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
@pytest.mark.parametrize("form", ["mask", "list"])
def test_prefilter_returns_exact_k(kind: str, form: str, data) -> None:
    rows, vectors, queries = data
    index = build(kind, rows, vectors, nlist=4, nprobe=1)
    rng = np.random.default_rng(3)
    for n_allowed in (3, 12, 400):
        allowed = rng.choice(rows, size=n_allowed, replace=False)
        if form == "mask":
            allow: object = np.zeros(rows.max() + 1, dtype=bool)
            allow[allowed] = True  # type: ignore[index]
        else:
            allow = [*allowed.tolist(), 0]  # row 0 is in the row space but not in the index
        sub = np.isin(rows, allowed)
        for query in queries[:4]:
            got_rows, got_scores = index.search(query, 10, allow=allow)  # type: ignore[arg-type]
            assert len(got_rows) == min(10, n_allowed)
            assert np.isin(got_rows, allowed).all()
            assert len(set(got_rows.tolist())) == len(got_rows)
            want_rows, want_scores = brute(rows[sub], vectors[sub], query, 10)
            if kind == "flat" or n_allowed < 10:  # fewer than k allowed: all of them, exactly
                np.testing.assert_array_equal(got_rows, want_rows)
                np.testing.assert_allclose(got_scores, want_scores, rtol=1e-5, atol=1e-6)


def test_allow_outside_the_row_space_raises(data) -> None:
    """``allow`` covers ``range(n_rows)``, n_rows = 1 + the largest row ever added: a mask of
    another length or a row id outside that range is a mistake, not a filter."""
    rows, vectors, queries = data
    index = build("flat", rows, vectors)
    n_rows = int(rows.max()) + 1
    assert index.n_rows == n_rows
    for mask in (np.ones(100, dtype=bool), np.ones(n_rows + 1, dtype=bool)):
        with pytest.raises(ConfigError, match=f"shape \\({n_rows},\\)"):
            index.search_batch(queries[:3], 1000, allow=mask)
    for bad in ([n_rows], [int(rows[0]), 123_456_789], [-1]):
        with pytest.raises(ConfigError, match="outside"):
            index.search(queries[0], 5, allow=bad)
    assert index.search(queries[0], 5, allow=np.zeros(n_rows, dtype=bool)).rows.size == 0
    assert index.search(queries[0], 5, allow=[]).rows.size == 0
    absent = int(np.setdiff1d(np.arange(n_rows), rows)[0])  # in the row space, not in the index
    assert index.search(queries[0], 5, allow=[absent]).rows.size == 0
    index.delete([int(rows.max())])  # deleting the largest row keeps the row space
    assert index.n_rows == n_rows
    assert index.search(queries[0], 5, allow=[n_rows - 1]).rows.size == 0


def test_hnsw_recall_at_10_against_flat() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((20_000, 32)).astype(np.float32)
    queries = rng.standard_normal((200, 32)).astype(np.float32)
    rows = np.arange(20_000)
    flat, hnsw = VectorIndex(32), VectorIndex(32, "hnsw")
    flat.add(rows, vectors)
    hnsw.add(rows, vectors)
    exact = flat.search_batch(queries, 10)
    approx = hnsw.search_batch(queries, 10)
    recall = np.mean(
        [len(set(a.rows) & set(e.rows)) / 10 for a, e in zip(approx, exact, strict=True)]
    )
    assert recall >= 0.95, recall


def test_ivf_trains_once_it_has_enough_vectors(data) -> None:
    rows, vectors, queries = data
    index = VectorIndex(DIM, "ivf", nlist=8, nprobe=8)  # trains at 39 * 8 = 312 vectors
    index.add(rows[:300], vectors[:300])
    assert not index.trained and index.params["trained"] is False
    index.add(rows[300:], vectors[300:])
    assert index.trained and index.params["nlist"] == 8
    for query in queries[:5]:  # nprobe == nlist: IVF-Flat is exact
        np.testing.assert_array_equal(
            index.search(query, 10).rows, brute(rows, vectors, query, 10)[0]
        )


def test_hnsw_readd_deleted_row_and_compact(data) -> None:
    rows, vectors, queries = data
    index = build("hnsw", rows[:200], vectors[:200])
    target = int(rows[10])
    index.delete([target])
    assert target not in index
    index.add([target], queries[:1])  # a new vector under the same row
    assert index.search(queries[0], 1).rows.tolist() == [target]
    index.compact()
    assert len(index) == 200 and index.search(queries[0], 1).rows.tolist() == [target]
    assert index.search(vectors[11], 1).rows.tolist() == [int(rows[11])]


def test_zero_vector_scores_zero() -> None:
    index = VectorIndex(3)
    index.add([0, 1], [[0, 0, 0], [1, 0, 0]])
    query = np.array([2, 0, 0], dtype=np.float32)
    got_rows, got_scores = index.search(query, 2)
    assert got_rows.tolist() == [1, 0]
    np.testing.assert_allclose(got_scores, [1.0, 0.0], atol=1e-7)
    assert query.tolist() == [2, 0, 0]  # the caller's query is normalised in a copy
    got_rows, got_scores = index.search(np.zeros(3, dtype=np.float32), 2)  # zero query
    assert sorted(got_rows.tolist()) == [0, 1] and got_scores.tolist() == [0.0, 0.0]


def test_fake_embedder_end_to_end() -> None:
    emb = FakeEmbedder(dim=128)
    texts = ["the red apple pie", "a green apple tree", "quantum field theory", "apple pie recipe"]
    index = VectorIndex(emb.dim)
    index.add(range(len(texts)), emb.embed_documents(texts))
    got_rows, _ = index.search(emb.embed_query("apple pie"), 2)
    assert set(got_rows.tolist()) == {0, 3}


@pytest.mark.parametrize(
    ("rows", "vectors", "error", "match"),
    [
        ([0, 1], np.ones((2, DIM + 1)), DimensionMismatchError, "must have shape"),
        ([0], np.ones(DIM), DimensionMismatchError, "must have shape"),
        ([0, 0], np.ones((2, DIM)), ConfigError, "row 0 appears more than once"),
        ([0, 1, 2], np.ones((2, DIM)), ConfigError, "3 rows for 2 vectors"),
        ([-1], np.ones((1, DIM)), ConfigError, "non-negative"),
        ([0.5], np.ones((1, DIM)), ConfigError, "integers"),
        ([0], np.full((1, DIM), np.nan), ConfigError, "NaN"),
    ],
)
def test_add_rejects_bad_input(rows, vectors, error, match) -> None:
    index = VectorIndex(DIM)
    with pytest.raises(error, match=match):
        index.add(rows, vectors)
    assert len(index) == 0


def test_add_rejects_existing_row_and_bad_search_args(data) -> None:
    rows, vectors, _ = data
    index = build("flat", rows[:10], vectors[:10])
    with pytest.raises(ConfigError, match=f"row {rows[3]} is already in the index"):
        index.add([rows[3], 1], vectors[:2])
    assert len(index) == 10
    with pytest.raises(DimensionMismatchError, match=f"shape \\(n, {DIM}\\)"):
        index.search(np.ones(DIM - 1), 3)
    with pytest.raises(DimensionMismatchError):
        index.search_batch(np.ones((2, DIM + 2)), 3)
    for bad_k in (0, -1, 2.5, True):
        with pytest.raises(ConfigError, match="k must be a positive integer"):
            index.search(np.ones(DIM), bad_k)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="allow mask needs one flag per row"):
        index.search(np.ones(DIM), 3, allow=np.ones((2, 2), dtype=bool))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"kind": "annoy"}, "kind must be one of flat, hnsw, ivf"),
        ({"hnsw_m": 0}, "hnsw_m must be a positive integer"),
        ({"nlist": -3}, "nlist must be a positive integer or None"),
        ({"dim": 0}, "dim must be a positive integer"),
    ],
)
def test_constructor_validates(kwargs: dict[str, object], match: str) -> None:
    args: dict[str, object] = {"dim": 4} | kwargs
    with pytest.raises(ConfigError, match=match):
        VectorIndex(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_search_after_changes_sees_current_vectors(kind: str, data) -> None:
    """Cached views of faiss's buffers must not survive an add or delete (reallocation)."""
    rows, vectors, queries = data
    index = build(kind, rows[:10], vectors[:10])
    index.search_batch(queries, 3)
    index.add(rows[10:], vectors[10:])  # grows, so faiss reallocates its buffer
    index.delete(rows[:5])
    for query in queries[:3]:
        got_rows, got_scores = index.search(query, 3, allow=rows[:20].tolist())
        assert len(got_rows) == 3 and np.isin(got_rows, rows[5:20]).all()
        # scores belong to the rows returned (not to stale or moved vectors)
        position = {int(r): i for i, r in enumerate(rows)}
        expected = unit(vectors[[position[int(r)] for r in got_rows]]) @ unit(query)
        np.testing.assert_allclose(got_scores, expected, rtol=1e-5, atol=1e-6)
        got_rows, _ = index.search(query, 5)
        if kind == "flat":
            np.testing.assert_array_equal(got_rows, brute(rows[5:], vectors[5:], query, 5)[0])


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_exact_fallback_when_approximate_search_falls_short(
    kind: str, data, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Force faiss to come back short (all -1 padding): results must still be exact."""
    rows, vectors, queries = data
    index = build(kind, rows, vectors, nlist=4, nprobe=1)
    real_search = index._store.raw.search
    calls: list[int] = []

    def short_search(q, k, params=None):  # type: ignore[no-untyped-def]
        calls.append(getattr(params, "nprobe", 0))
        if kind == "ivf" and params.nprobe == index._store.raw.nlist:
            return real_search(q, k, params=params)  # the fallback: every list visited
        return np.full((len(q), k), -np.inf, np.float32), np.full((len(q), k), -1, np.int64)

    monkeypatch.setattr(index._store.raw, "search", short_search)
    allowed = rows[100:400]
    for allow in (None, allowed.tolist()):
        sub = np.isin(rows, allowed) if allow is not None else np.ones(len(rows), dtype=bool)
        results = index.search_batch(queries[:4], 10, allow=allow)
        for query, (got_rows, got_scores) in zip(queries[:4], results, strict=True):
            want_rows, want_scores = brute(rows[sub], vectors[sub], query, 10)
            np.testing.assert_array_equal(got_rows, want_rows)
            np.testing.assert_allclose(got_scores, want_scores, rtol=1e-5, atol=1e-6)
    assert calls  # the approximate search really ran first


REJECT = "reject"
TEN = np.arange(10)


@pytest.mark.parametrize(
    ("allow", "expected"),
    [
        pytest.param(None, set(range(10)), id="none"),
        pytest.param(TEN % 3 == 0, {0, 3, 6, 9}, id="mask"),
        pytest.param(np.zeros(10, dtype=bool), set(), id="mask-all-false"),
        pytest.param([True] * 10, set(range(10)), id="mask-as-list"),
        pytest.param(np.ones(9, dtype=bool), REJECT, id="mask-short"),
        pytest.param(np.ones(11, dtype=bool), REJECT, id="mask-long"),
        pytest.param(np.ones((2, 5), dtype=bool), REJECT, id="mask-2d"),
        pytest.param([1, 3], {1, 3}, id="ids"),
        pytest.param(np.array([3, 1, 3], dtype=np.uint8), {1, 3}, id="ids-uint8-repeated"),
        pytest.param(7, {7}, id="one-id"),
        pytest.param([9], {9}, id="last-id"),
        pytest.param([10], REJECT, id="id-n_rows"),
        pytest.param([-1], REJECT, id="id-negative"),
        pytest.param([1.0, 3.0], REJECT, id="ids-float"),
        pytest.param([[1, 3]], REJECT, id="ids-2d"),
        pytest.param(["1"], REJECT, id="ids-str"),
        pytest.param([], set(), id="empty"),
    ],
)
@pytest.mark.parametrize("deleted", [False, True])
def test_bm25_and_vector_read_allow_the_same_way(
    allow: object, expected: set[int] | str, deleted: bool
) -> None:
    """Over the same rows 0..9, both halves accept and reject exactly the same ``allow``
    values and return the same allowed rows (every row matches the query on both)."""
    rng = np.random.default_rng(5)
    bm25 = BM25Index()
    bm25.add([["shared", f"own{row}"] for row in range(10)])
    vector = VectorIndex(4)
    vector.add(TEN, rng.standard_normal((10, 4)) + 5.0)
    if deleted:  # deleting the last row keeps it in the row space of both
        bm25.delete([9])
        vector.delete([9])
    assert bm25.n_rows == vector.n_rows == 10
    given: Any = allow  # deliberately malformed values included
    searches: dict[str, Callable[[], Ranking]] = {
        "bm25": lambda: bm25.search(["shared"], 10, allow=given),
        "bm25 batch": lambda: bm25.search_batch([["shared"]], 10, allow=given)[0],
        "vector": lambda: vector.search(np.ones(4), 10, allow=given),
        "vector batch": lambda: vector.search_batch(np.ones((1, 4)), 10, allow=given)[0],
    }
    outcomes: dict[str, set[int] | str] = {}
    for name, search in searches.items():
        try:
            outcomes[name] = set(search().rows.tolist())
        except ConfigError:
            outcomes[name] = REJECT
    want = expected if isinstance(expected, str) or not deleted else expected - {9}
    assert outcomes == dict.fromkeys(searches, want)
