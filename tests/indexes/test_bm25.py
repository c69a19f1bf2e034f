"""BM25Index scores against rank-bm25 / bm25s / hand formulas, and its search semantics."""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from pathlib import Path

import bm25s
import numpy as np
import pytest
import rank_bm25
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtools.indexes.errors import IndexStateError
from ragtools.indexes.keyword.bm25 import VARIANT_DEFAULTS, BM25Index, TokenRows
from ragtools.indexes.ranking import Ranking
from ragtools.indexes.text.tokenize import Tokenizer
from ragtools.parsers.document import Chunk
from ragtools.parsers.errors import ConfigError

RANK_BM25 = {
    "okapi": rank_bm25.BM25Okapi,
    "bm25l": rank_bm25.BM25L,
    "bm25plus": rank_bm25.BM25Plus,
}
WORDS = list("abcdefgh")
corpora = st.lists(st.lists(st.sampled_from(WORDS), max_size=12), min_size=1, max_size=9).filter(
    lambda corpus: any(corpus)
)
queries = st.lists(st.sampled_from([*WORDS, "zz"]), max_size=6)


def build(corpus: list[list[str]], **params: object) -> BM25Index:
    index = BM25Index(**params)  # type: ignore[arg-type]
    index.add(corpus)
    return index


def brute_force(
    index: BM25Index, corpus: list[list[str]], query: list[str], k: int
) -> list[tuple[int, float]]:
    """Oracle: every row holding a query term, by (-score, row), from get_scores."""
    scores = index.get_scores(query)
    matching = [row for row, doc in enumerate(corpus) if set(doc) & set(query)]
    ranked = sorted(matching, key=lambda row: (-scores[row], row))[:k]
    return [(row, float(scores[row])) for row in ranked]


def as_pairs(result: Ranking) -> list[tuple[int, float]]:
    assert isinstance(result, Ranking)
    assert result.rows.dtype == np.int64 and result.scores.dtype == np.float64
    return result.pairs()


# ----------------------------------------------------------------------------- oracles


@pytest.fixture(scope="module")
def scifact(scifact_dir: Path) -> tuple[list[list[str]], list[list[str]]]:
    tokenizer = Tokenizer()
    with open(scifact_dir / "corpus.jsonl", encoding="utf-8") as handle:
        docs = [json.loads(line) for line in handle]
    corpus = tokenizer.tokenize_many(f"{d['title']} {d['text']}" for d in docs)
    with open(scifact_dir / "queries.jsonl", encoding="utf-8") as handle:
        query_tokens = [tokenizer(json.loads(line)["text"]) for line in handle]
    return corpus, query_tokens


@pytest.mark.parametrize("variant", sorted(RANK_BM25))
def test_scifact_scores_equal_rank_bm25(
    scifact: tuple[list[list[str]], list[list[str]]], variant: str
) -> None:
    corpus, query_tokens = scifact
    ours = build(corpus, variant=variant)
    reference = RANK_BM25[variant](corpus)
    for query in query_tokens[:12]:
        np.testing.assert_allclose(ours.get_scores(query), reference.get_scores(query), rtol=1e-6)


def test_scifact_lucene_equals_bm25s_times_k1_plus_1(
    scifact: tuple[list[list[str]], list[list[str]]],
) -> None:
    corpus, query_tokens = scifact
    ours = build(corpus, variant="lucene", k1=1.2, b=0.75)
    reference = bm25s.BM25(method="lucene", k1=1.2, b=0.75, dtype="float64")
    reference.index(corpus, show_progress=False)
    for query in query_tokens[:12]:
        expected = (1.2 + 1) * reference.get_scores(query)
        np.testing.assert_allclose(ours.get_scores(query), expected, rtol=1e-6)


def test_scifact_batch_equals_single_queries(
    scifact: tuple[list[list[str]], list[list[str]]],
) -> None:
    corpus, query_tokens = scifact
    index = build(corpus)
    subset = query_tokens[:150]
    singles = [index.search(q, 10) for q in subset]
    for threads in (None, 2):
        batch = index.search_batch(subset, 10, n_threads=threads)
        for one, other in zip(singles, batch, strict=True):
            np.testing.assert_array_equal(one.rows, other.rows)
            np.testing.assert_array_equal(one.scores, other.scores)
    allow = np.arange(index.n_rows) % 3 == 0
    batch = index.search_batch(subset[:20], 5, allow=allow)
    for query, result in zip(subset[:20], batch, strict=True):
        assert as_pairs(result) == as_pairs(index.search(query, 5, allow=allow))


@settings(max_examples=150, deadline=None)
@given(
    corpus=corpora,
    query=queries,
    variant=st.sampled_from(sorted(RANK_BM25)),
    k1=st.sampled_from([0.5, 1.2, 1.5, 2.0]),  # rank-bm25 divides 0 by 0 when k1 == 0
    b=st.sampled_from([0.0, 0.3, 0.75, 1.0]),
    epsilon=st.sampled_from([0.0, 0.25, 1.0]),
)
def test_random_corpora_equal_rank_bm25(
    corpus: list[list[str]], query: list[str], variant: str, k1: float, b: float, epsilon: float
) -> None:
    params: dict[str, float] = {"k1": k1, "b": b}
    if variant == "okapi":
        params["epsilon"] = epsilon
    with np.errstate(divide="ignore", invalid="ignore"):
        # rank-bm25's BM25L and BM25+ divide 0 by 0 for an empty document when b == 1.
        expected = RANK_BM25[variant](corpus, **params).get_scores(query)
    ours = build(corpus, variant=variant, **params).get_scores(query)
    undefined = ~np.isfinite(expected)
    assert all(not corpus[row] for row in np.flatnonzero(undefined))
    # Such a document matches no term: BM25L gives 0, BM25+ delta * idf per query term.
    df = Counter(term for doc in corpus for term in set(doc))
    n = len(corpus)
    empty_score = sum(math.log((n + 1) / df[t]) for t in query if t in df)
    np.testing.assert_allclose(ours[undefined], empty_score if variant == "bm25plus" else 0.0)
    np.testing.assert_allclose(ours[~undefined], expected[~undefined], rtol=1e-6)


@settings(max_examples=150, deadline=None)
@given(
    corpus=corpora,
    query=queries,
    variant=st.sampled_from(sorted(RANK_BM25)),
    k3=st.sampled_from([0.0, 0.5, 1.0, 7.0, math.inf]),
)
def test_k3_saturates_repeated_query_terms(
    corpus: list[list[str]], query: list[str], variant: str, k3: float
) -> None:
    """Robertson's k3: a term said n times counts n (k3 + 1) / (k3 + n) times rank-bm25's
    score for the term alone (n times when k3 is inf, once when k3 is 0)."""
    ours = build(corpus, variant=variant, k3=k3).get_scores(query)
    reference = RANK_BM25[variant](corpus)
    expected = np.zeros(len(corpus))
    with np.errstate(divide="ignore", invalid="ignore"):
        for term, n in Counter(query).items():
            weight = n if k3 == math.inf else n * (k3 + 1) / (k3 + n)
            expected += weight * reference.get_scores([term])
    defined = np.isfinite(expected)  # rank-bm25 divides 0 by 0 for an empty document
    np.testing.assert_allclose(ours[defined], expected[defined], rtol=1e-6, atol=1e-12)
    if k3 == 0.0:
        unique = list(dict.fromkeys(query))
        np.testing.assert_allclose(
            ours[defined], reference.get_scores(unique)[defined], rtol=1e-6, atol=1e-12
        )


def lucene_by_hand(corpus: list[list[str]], query: list[str], k1: float, b: float) -> list[float]:
    n = len(corpus)
    avgdl = sum(map(len, corpus)) / n
    df = Counter(term for doc in corpus for term in set(doc))
    scores = []
    for doc in corpus:
        tf = Counter(doc)
        total = 0.0
        for term in query:
            if tf[term]:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                norm = tf[term] + k1 * (1 - b + b * len(doc) / avgdl)
                total += idf * tf[term] * (k1 + 1) / norm
        scores.append(total)
    return scores


@settings(max_examples=100, deadline=None)
@given(
    corpus=corpora,
    query=queries,
    k1=st.sampled_from([0.0, 0.9, 1.5]),
    b=st.sampled_from([0.0, 0.4, 1.0]),
)
def test_random_corpora_lucene_equals_hand_formula(
    corpus: list[list[str]], query: list[str], k1: float, b: float
) -> None:
    ours = build(corpus, variant="lucene", k1=k1, b=b)
    np.testing.assert_allclose(
        ours.get_scores(query), lucene_by_hand(corpus, query, k1, b), rtol=1e-6, atol=1e-12
    )


@settings(max_examples=150, deadline=None)
@given(
    corpus=corpora,
    query=queries,
    variant=st.sampled_from(sorted(VARIANT_DEFAULTS)),
    k=st.integers(1, 12),
    k3=st.sampled_from([math.inf, 0.0, 1.2]),
)
def test_search_and_batch_equal_brute_force(
    corpus: list[list[str]], query: list[str], variant: str, k: int, k3: float
) -> None:
    index = build(corpus, variant=variant, k3=k3)
    expected = brute_force(index, corpus, query, k)
    assert as_pairs(index.search(query, k)) == expected
    batch = index.search_batch([query, query, query, query, []], k)
    assert [as_pairs(r) for r in batch] == [expected] * 4 + [[]]


@settings(max_examples=150, deadline=None)
@given(
    corpus=st.lists(st.lists(st.sampled_from(WORDS), max_size=8), min_size=1, max_size=60).filter(
        any
    ),
    query=queries,
    variant=st.sampled_from(sorted(VARIANT_DEFAULTS)),
    k=st.integers(1, 12),
    data=st.data(),
)
def test_search_under_a_mask_equals_brute_force(
    corpus: list[list[str]], query: list[str], variant: str, k: int, data: st.DataObject
) -> None:
    """Corpora where one term holds k rows or more, so the search ranks only the rows that
    reach the floor that term's rows give: still exactly the oracle's k best allowed rows."""
    index = build(corpus, variant=variant)
    flags = data.draw(st.lists(st.booleans(), min_size=len(corpus), max_size=len(corpus)))
    mask = np.array(flags, dtype=np.bool_)
    oracle = brute_force(index, corpus, query, len(corpus))
    assert as_pairs(index.search(query, k)) == oracle[:k]
    expected = [(row, score) for row, score in oracle if mask[row]][:k]
    assert as_pairs(index.search(query, k, allow=mask)) == expected


# ------------------------------------------------------------------- add and delete


@settings(max_examples=100, deadline=None)
@given(
    first=corpora,
    second=st.lists(st.lists(st.sampled_from(WORDS), max_size=10), max_size=6),
    data=st.data(),
    query=queries,
    variant=st.sampled_from(sorted(VARIANT_DEFAULTS)),
)
def test_add_and_delete_equal_a_fresh_build(
    first: list[list[str]],
    second: list[list[str]],
    data: st.DataObject,
    query: list[str],
    variant: str,
) -> None:
    corpus = first + second
    index = build(first, variant=variant)
    index.search(query or ["a"], 3)  # forces a merge before the second add
    index.add(second)
    dead = data.draw(st.sets(st.integers(0, len(corpus) - 1), max_size=len(corpus) - 1))
    index.delete(sorted(dead))
    live = [row for row in range(len(corpus)) if row not in dead]
    survivors = [corpus[row] for row in live]
    assert index.n_rows == len(corpus) and len(index) == len(live)
    assert index.deleted.tolist() == [row in dead for row in range(len(corpus))]
    scores = index.get_scores(query)
    assert np.all(np.isneginf(scores[sorted(dead)]))
    if not any(survivors):
        return
    fresh = build(survivors, variant=variant)
    np.testing.assert_allclose(scores[live], fresh.get_scores(query), rtol=1e-9, atol=1e-12)
    if variant in RANK_BM25:
        reference = RANK_BM25[variant](survivors).get_scores(query)
        np.testing.assert_allclose(scores[live], reference, rtol=1e-6)
    fresh_rows, fresh_scores = fresh.search(query, 5)
    rows, found = index.search(query, 5)
    assert rows.tolist() == [live[r] for r in fresh_rows]
    np.testing.assert_allclose(found, fresh_scores, rtol=1e-9, atol=1e-12)


def test_delete_is_idempotent_and_checks_ids() -> None:
    index = build([["a"], ["a", "b"], ["b"]])
    index.delete([1])
    index.delete(np.array([1]))
    assert len(index) == 2 and index.n_rows == 3
    with pytest.raises(ConfigError, match="outside"):
        index.delete([3])
    with pytest.raises(ConfigError, match="integer row ids"):
        index.delete([0.5])
    with pytest.raises(ValueError, match="read-only"):
        index.deleted[0] = True


def test_deleting_every_row_then_adding_again() -> None:
    index = build([["a"], ["b"]])
    index.delete([0, 1])
    with pytest.raises(IndexStateError, match="no live rows"):
        index.search("a")
    assert index.add([["a", "c"]]).tolist() == [2]
    assert as_pairs(index.search(["a"]))[0][0] == 2


# -------------------------------------------------------------- search semantics


def test_allow_returns_exactly_the_matching_allowed_rows() -> None:
    corpus = [["apple"]] * 5 + [["pear"]] * 5 + [["apple", "apple"]] * 40
    index = build(corpus)
    allow = np.zeros(len(corpus), np.bool_)
    allow[[1, 3, 4, 6, 7]] = True  # three rows with "apple", two without
    ranking = index.search(["apple"], k=10, allow=allow)
    assert ranking.rows.tolist() == [1, 3, 4] and np.all(ranking.scores == ranking.scores[0])
    assert as_pairs(index.search(["apple"], 10, allow=[7, 4, 1, 3, 6])) == as_pairs(ranking)
    assert index.search(["apple"], 2, allow=allow).rows.tolist() == [1, 3]
    index.delete([3])
    assert index.search(["apple"], 10, allow=allow).rows.tolist() == [1, 4]
    assert index.search(["apple"], 10, allow=[]).rows.tolist() == []


def test_allow_validation() -> None:
    index = build([["a"], ["b"]])
    with pytest.raises(ConfigError, match="shape"):
        index.search("a", allow=np.ones(3, np.bool_))
    with pytest.raises(ConfigError, match="outside"):
        index.search("a", allow=[5])
    with pytest.raises(ConfigError, match="outside"):
        index.search_batch(["a"], allow=[-1])


def test_ties_break_by_row_and_k_larger_than_corpus() -> None:
    index = build([["x", "y"], ["x"], ["x", "y"], ["z"], ["x", "y"]], variant="lucene")
    rows, scores = index.search(["x", "y"], k=2)
    assert rows.tolist() == [0, 2] and scores[0] == scores[1]
    rows, _ = index.search(["x", "y"], k=100)
    assert rows.tolist() == [0, 2, 4, 1]


def test_text_chunks_and_token_lists_can_be_mixed() -> None:
    index = BM25Index()
    chunk = Chunk(doc_id="d", text="Running cells")
    rows = index.add(["The cells divide", chunk, ["cell", "run"]])
    assert rows.tolist() == [0, 1, 2] and rows.dtype == np.int64
    assert index.search("cell").rows.tolist() == [0, 1, 2]
    assert index.search("running").rows.tolist() == [1, 2]
    np.testing.assert_array_equal(index.get_scores("running"), index.get_scores(["run"]))
    with pytest.raises(ConfigError, match="cannot use a int"):
        index.add([42])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="cannot use a set"):
        index.search({"q"})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'q' has weight 'high'"):
        index.search({"q": "high"})  # type: ignore[dict-item]


def test_rows_held_flat_index_as_their_token_lists() -> None:
    corpus = [["b", "a", "b"], [], ["c"], ["a", "d", "d", "d"], ["b"]]
    flat = BM25Index()
    rows = flat.add(TokenRows(["b", "a", "b", "c", "a", "d", "d", "d"], np.array([3, 0, 1, 4])))
    assert rows.tolist() == [0, 1, 2, 3]
    assert flat.add(TokenRows.of(corpus[4:])).tolist() == [4]
    lists = build(corpus)
    assert flat.corpus().vocab.terms == lists.corpus().vocab.terms == ["b", "a", "c", "d"]
    for name, array in lists.arrays().items():
        np.testing.assert_array_equal(flat.arrays()[name], array)
    with pytest.raises(ConfigError, match="add up to 3 tokens, but it holds 2"):
        BM25Index().add(TokenRows(["a", "b"], np.array([1, 2])))
    with pytest.raises(ConfigError, match="add up to 3 tokens, but it holds fewer"):
        BM25Index().add(TokenRows(iter(["a", "b"]), np.array([1, 2])))
    chained = TokenRows.of([["b", "a"], ["c"]])
    assert BM25Index().add(chained).tolist() == [0, 1]


def test_empty_index_empty_query_and_oov() -> None:
    index = BM25Index()
    assert index.add([]).tolist() == [] and len(index) == 0
    with pytest.raises(IndexStateError, match="add documents"):
        index.search("anything")
    with pytest.raises(IndexStateError):
        index.get_scores("anything")
    with pytest.raises(IndexStateError):
        index.search_batch(["anything"])
    index.add(["cats purr", "dogs bark"])
    for query in ("", "the and of", "zebra", []):
        assert as_pairs(index.search(query)) == []
        assert index.get_scores(query).tolist() == [0.0, 0.0]
    assert [as_pairs(r) for r in index.search_batch(["", "cats"])] == [
        [],
        as_pairs(index.search("cats")),
    ]


def test_index_of_only_empty_documents() -> None:
    index = build([[], []], variant="okapi")
    assert index.get_scores(["a"]).tolist() == [0.0, 0.0]
    assert as_pairs(index.search(["a"])) == []


def test_bad_k_and_threads() -> None:
    index = build([["a"]])
    for k in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match="k must be"):
            index.search("a", k=k)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="n_threads"):
        index.search_batch(["a"], n_threads=0)


def test_chinese_corpus_is_searchable() -> None:
    docs = [
        "北京是中华人民共和国的首都，也是政治和文化中心。",
        "上海是中国最大的经济城市和国际金融中心。",
        "大熊猫主要生活在四川的山区，以竹子为食。",
        "The giant panda lives in the mountains of Sichuan.",
    ]
    index = BM25Index(variant="lucene")
    index.add(docs)
    assert index.search("中国的首都是哪里？").rows[0] == 0
    assert index.search("熊猫吃什么").rows[0] == 2
    assert index.search("金融").rows.tolist() == [1]
    assert index.search("panda").rows.tolist() == [3]


# ------------------------------------------------------------------ configuration


def test_params_defaults_and_validation() -> None:
    tuned = BM25Index().params
    chosen = ("bm25plus", 1.5, 0.7, 1.0, 1.0)
    assert (tuned["variant"], tuned["k1"], tuned["b"], tuned["delta"], tuned["k3"]) == chosen
    index = BM25Index(variant="bm25plus")
    assert index.params == {
        "variant": "bm25plus",
        "k1": 1.5,
        "b": 0.75,
        "epsilon": 0.25,
        "delta": 1.0,
        "k3": None,  # inf: rank-bm25 counts a repeated query term once per occurrence
        "tokenizer": Tokenizer().to_dict(),
    }
    assert BM25Index(variant="bm25l").delta == 0.5
    json.dumps(index.params)
    assert BM25Index(variant="okapi").k3 == math.inf
    assert BM25Index(variant="okapi", k3=0).params["k3"] == 0.0
    bad: list[dict[str, object]] = [
        {"variant": "bm26"},
        {"b": 1.5},
        {"k1": -1.0},
        {"k1": math.nan},
        {"k3": -0.5},
        {"k3": math.nan},
    ]
    for kwargs in bad:
        with pytest.raises(ConfigError, match=str(next(iter(kwargs)))):
            BM25Index(**kwargs)  # type: ignore[arg-type]


def test_okapi_warns_on_tiny_corpora(caplog: pytest.LogCaptureFixture) -> None:
    index = build([["a", "b"], ["a"], ["c"]], variant="okapi")
    with caplog.at_level(logging.WARNING, logger="ragtools.indexes.keyword.bm25"):
        index.search(["a"])
    assert "more than half" in caplog.text
    assert "BM25Index(variant='okapi'" in repr(index)


def test_small_counting_and_weight_chunks_give_the_same_scores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Indexing counts tokens and computes weights in chunks: tiny chunks change nothing."""
    rng = np.random.default_rng(0)
    corpus = [[f"t{int(x)}" for x in rng.zipf(1.3, int(n)) % 50] for n in rng.integers(0, 30, 300)]
    query = ["t1", "t2", "t2", "t7", "t40"]
    expected = build(corpus, variant="bm25l").get_scores(query)
    monkeypatch.setattr("ragtools.indexes.keyword._math._WEIGHT_CHUNK", 7)
    monkeypatch.setattr("ragtools.indexes.keyword._math._BLOCK_TOKENS", 50)
    index = build(corpus, variant="bm25l")
    np.testing.assert_array_equal(index.get_scores(query), expected)
    np.testing.assert_allclose(expected, rank_bm25.BM25L(corpus).get_scores(query), rtol=1e-6)
    singles = [index.search(q, 4) for q in (query, ["t3"], ["t1", "t9"], [], ["t5", "t5"])]
    batch = index.search_batch([query, ["t3"], ["t1", "t9"], [], ["t5", "t5"]], 4)
    assert [as_pairs(r) for r in batch] == [as_pairs(r) for r in singles]


@pytest.mark.parametrize("variant", ["bm25plus", "okapi"])
def test_top_k_with_many_ties_equals_brute_force(variant: str) -> None:
    """Hundreds of rows, many tied at the k-th score: ties at the cut resolve by row."""
    rng = np.random.default_rng(1)
    corpus = [[f"t{int(x)}" for x in rng.zipf(1.5, int(n)) % 30] for n in rng.integers(1, 12, 400)]
    corpus += corpus[:50]  # duplicates make ties
    index = build(corpus, variant=variant)
    for query in (["t1"], ["t2", "t3"], ["t0", "t7", "t7"], ["t29"], ["t1", "t4", "t5", "t6"]):
        for k in (1, 3, 10, 60, 1000):
            assert as_pairs(index.search(query, k)) == brute_force(index, corpus, query, k)
