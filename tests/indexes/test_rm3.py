"""RM3 expansion against hand-computed weights, and weighted BM25 queries."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from ragtools.indexes.keyword.bm25 import BM25Index
from ragtools.indexes.keyword.rm3 import RM3
from ragtools.parsers.errors import ConfigError

DF = {"apple": 2, "pie": 3, "crust": 2, "oven": 1, "common": 9, "z": 1}
DOC1 = ["apple", "apple", "pie", "crust", "common"]
DOC2 = ["pie", "crust", "crust", "oven", "common", "z"]


def _doc_freq(calls: list[list[str]]):  # type: ignore[no-untyped-def]
    def doc_freq(terms: Sequence[str]) -> tuple[np.ndarray, int]:
        calls.append(list(terms))
        return np.array([DF[t] for t in terms], np.int64), 30

    return doc_freq


def test_rm3_equals_the_hand_computed_expansion() -> None:
    """N = 30, so terms in more than 3 rows ("common", df 9) are dropped; "z" is too short.
    doc1 keeps {apple 2, pie 1, crust 1}, pruned to 2 terms: apple 2 and, of the tie at 1,
    crust (term order): norm 3. doc2 keeps {crust 2, pie 1, oven 1} -> crust 2, oven 1:
    norm 3. rm = apple 2/3*2 = 4/3, crust 1/3*2 + 2/3*1 = 4/3, oven 1/3*1 = 1/3; pruned to
    2: apple, crust; normalised: 1/2 each. Query model: apple 1/2, pie 1/2. Interpolated
    at 0.5: apple 1/2, pie 1/4, crust 1/4."""
    calls: list[list[str]] = []
    rm3 = RM3(fb_docs=2, fb_terms=2, original_query_weight=0.5)
    weights = rm3.expand(["apple", "pie"], [DOC1, DOC2], [2.0, 1.0], _doc_freq(calls))
    assert weights == pytest.approx({"apple": 0.5, "crust": 0.25, "pie": 0.25}, abs=1e-15)
    assert calls == [["apple", "common", "crust", "oven", "pie"]]  # one lookup, eligible only


def test_rm3_reads_only_fb_docs_rows() -> None:
    """fb_docs=1: doc1 alone: rm = apple 2/3, crust 1/3; at weight 0.5: apple 1/4 + 1/3,
    pie 1/4, crust 1/6."""
    rm3 = RM3(fb_docs=1, fb_terms=2, original_query_weight=0.5)
    weights = rm3.expand(["apple", "pie"], [DOC1, DOC2], [2.0, 1.0], _doc_freq([]))
    assert weights == pytest.approx({"apple": 0.25 + 1 / 3, "pie": 0.25, "crust": 1 / 6})
    assert sum(weights.values()) == pytest.approx(1.0)


def test_rm3_weights_of_repeated_query_terms_and_no_feedback() -> None:
    rm3 = RM3(original_query_weight=0.3)
    assert rm3.expand(["apple", "apple", "pie"], [], [], _doc_freq([])) == pytest.approx(
        {"apple": 2 / 3, "pie": 1 / 3}
    )
    only_query = RM3(original_query_weight=1.0).expand(
        ["apple"], [DOC1, DOC2], [2.0, 1.0], _doc_freq([])
    )
    assert only_query["apple"] == 1.0
    assert set(only_query.values()) - {1.0} == {0.0}  # feedback terms carry no weight


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"fb_docs": 0}, "fb_docs"),
        ({"fb_terms": 2.5}, "fb_terms"),
        ({"original_query_weight": 1.5}, "original_query_weight"),
        ({"max_df_ratio": float("nan")}, "max_df_ratio"),
        ({"fb_doc": 3}, "fb_doc"),
    ],
)
def test_rm3_refuses_bad_settings_naming_them(settings: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        RM3.of(settings)


def test_rm3_of_accepts_the_usual_forms() -> None:
    assert RM3.of(None) is None and RM3.of(False) is None
    assert RM3.of(True) == RM3(10, 10, 0.5, 0.1)
    assert RM3.of({"fb_terms": 5}) == RM3(fb_terms=5)
    with pytest.raises(ConfigError, match="rm3 must be"):
        RM3.of("yes")  # type: ignore[arg-type]


TEXTS = ["apple pie with crust", "apple juice", "oven baked crust", "pie pie pie", "unrelated"]


@pytest.mark.parametrize("variant", ["okapi", "lucene", "bm25plus", None])
def test_a_weighted_query_scores_the_weighted_sum_of_its_terms(variant: str | None) -> None:
    index = BM25Index(variant=variant)  # type: ignore[arg-type]
    index.add(TEXTS)
    weights = {"appl": 0.5, "crust": 0.25, "pie": 0.25, "unknown": 3.0, "juic": 0.0}
    expected = sum(w * index.get_scores([t]) for t, w in weights.items() if t != "juic")
    assert np.allclose(index.get_scores(weights), expected, rtol=1e-12)
    found = index.search(weights, k=5)
    matched = [
        r
        for r in range(len(TEXTS))
        if any(t in index.tokenizer(TEXTS[r]) for t in ("appl", "crust", "pie"))
    ]
    assert sorted(found.rows.tolist()) == matched  # a term of weight 0 matches nothing
    assert np.allclose(found.scores, expected[found.rows], rtol=1e-12)


def test_weights_one_are_the_plain_query() -> None:
    index = BM25Index(k3=float("inf"))
    index.add(TEXTS)
    plain, weighted = index.search("apple crust", k=5), index.search({"appl": 1, "crust": 1}, k=5)
    assert plain.rows.tolist() == weighted.rows.tolist()
    assert np.array_equal(plain.scores, weighted.scores)


@pytest.mark.parametrize("bad", [-1.0, float("inf"), float("nan")])
def test_a_bad_weight_is_refused_naming_the_term(bad: float) -> None:
    index = BM25Index()
    index.add(TEXTS)
    with pytest.raises(ConfigError, match="'appl' has weight"):
        index.search({"appl": bad}, k=3)


def test_document_frequencies_count_live_rows() -> None:
    index = BM25Index()
    index.add(TEXTS)
    assert index.document_frequencies(["pie", "crust", "nothing"]).tolist() == [2, 2, 0]
    index.delete([0])
    assert index.document_frequencies(["pie", "crust", "appl"]).tolist() == [1, 1, 1]
