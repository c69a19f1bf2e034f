"""Metrics against pytrec_eval (the trec_eval reference) and hand-computed numbers."""

from __future__ import annotations

import math
import random

import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.evaluation import evaluate_run, load_beir, per_query, trec_order
from ragtools.retrieval.evaluation.metrics import canonical_metric, metric_cutoff

DOC_IDS = ["a", "b", "c", "B", "aa", "ab", "d1", "d10", "d2", "z", "é", "文", "D-9"]
QUERY_IDS = ["q1", "q2", "q3", "q4"]

# Few distinct values make ties frequent; near-1.0 values collapse to ties in float32 only.
SCORES = st.one_of(
    st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.0, -1.0]),
    st.floats(min_value=1 - 1e-6, max_value=1 + 1e-6),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
)
RUNS = st.dictionaries(
    st.sampled_from([*QUERY_IDS, "unjudged"]),
    st.dictionaries(st.sampled_from(DOC_IDS), SCORES, max_size=13),
    max_size=5,
)
K_VALUES = st.lists(st.one_of(st.integers(1, 14), st.just(1000)), min_size=1, max_size=4)


def qrels_strategy(relevance: st.SearchStrategy[int]) -> st.SearchStrategy[dict]:
    return st.dictionaries(
        st.sampled_from(QUERY_IDS),
        st.dictionaries(st.sampled_from(DOC_IDS), relevance, max_size=8),
        min_size=1,
        max_size=4,
    )


def oracle(qrels: dict, run: dict, ks: list[int]) -> dict[str, dict[str, float]]:
    """pytrec_eval per query, keyed like ours; RR@k from the uncut recip_rank."""
    cut = ",".join(str(k) for k in sorted(set(ks)))
    measures = {f"ndcg_cut.{cut}", f"recall.{cut}", f"map_cut.{cut}", f"P.{cut}", "recip_rank"}
    raw = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    out = {}
    for qid, values in raw.items():
        row = {}
        for k in set(ks):
            row[f"nDCG@{k}"] = values[f"ndcg_cut_{k}"]
            row[f"R@{k}"] = values[f"recall_{k}"]
            row[f"AP@{k}"] = values[f"map_cut_{k}"]
            row[f"P@{k}"] = values[f"P_{k}"]
            rr = values["recip_rank"]  # 1 / rank of the first relevant document
            row[f"RR@{k}"] = rr if rr * k >= 1 - 1e-9 else 0.0
        out[qid] = row
    return out


def assert_rows_equal(ours: dict, expected: dict) -> None:
    assert set(ours) == set(expected)
    for qid, row in expected.items():
        for key, value in row.items():
            assert math.isclose(ours[qid][key], value, rel_tol=1e-9, abs_tol=1e-12), (
                qid,
                key,
                ours[qid][key],
                value,
            )


def check_against_pytrec_eval(qrels: dict, run: dict, ks: list[int]) -> None:
    expected = oracle(qrels, run, ks)
    assert_rows_equal(per_query(qrels, run, ks, missing="skip"), expected)
    if expected:  # BEIR's average: the mean over pytrec_eval's queries
        averaged = evaluate_run(qrels, run, ks, missing="skip")
        for key, value in averaged.items():
            mean = math.fsum(row[key] for row in expected.values()) / len(expected)
            assert math.isclose(value, mean, rel_tol=1e-9, abs_tol=1e-12), key
    judged = [qid for qid, docs in qrels.items() if docs]
    if judged:  # default: absent judged queries count 0, the mean is over all of them
        averaged = evaluate_run(qrels, run, ks)
        for key, value in averaged.items():
            total = math.fsum(row[key] for row in expected.values())
            assert math.isclose(value, total / len(judged), rel_tol=1e-9, abs_tol=1e-12)


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(qrels=qrels_strategy(st.integers(-1, 3)), run=RUNS, ks=K_VALUES)
def test_graded_qrels_match_pytrec_eval(qrels: dict, run: dict, ks: list[int]) -> None:
    check_against_pytrec_eval(qrels, run, ks)


@SETTINGS
@given(qrels=qrels_strategy(st.integers(0, 1)), run=RUNS, ks=K_VALUES)
def test_binary_qrels_match_pytrec_eval(qrels: dict, run: dict, ks: list[int]) -> None:
    check_against_pytrec_eval(qrels, run, ks)


@SETTINGS
@given(
    run=st.dictionaries(st.sampled_from(DOC_IDS), SCORES, min_size=1, max_size=13),
    relevant=st.sampled_from(DOC_IDS),
)
def test_trec_order_matches_pytrec_eval_rank(run: dict, relevant: str) -> None:
    # With one relevant document, recip_rank reveals the rank trec_eval gives it.
    raw = pytrec_eval.RelevanceEvaluator({"q": {relevant: 1}}, {"recip_rank"}).evaluate({"q": run})
    order = [doc_id for doc_id, _ in trec_order(run)]
    expected = 1.0 / (order.index(relevant) + 1) if relevant in order else 0.0
    assert math.isclose(raw["q"]["recip_rank"], expected)


def test_scifact_qrels_with_a_synthetic_run_match_pytrec_eval(scifact_dir) -> None:
    dataset = load_beir(scifact_dir, "test")
    rng = random.Random(7)
    doc_ids = list(dataset.corpus)
    run = {}
    for qid, judged in dataset.qrels.items():
        candidates = set(rng.sample(doc_ids, 120)) | {d for d in judged if rng.random() < 0.7}
        # Rounded scores give many ties, as BM25 scores on short queries do.
        run[qid] = {doc_id: round(rng.random() * 5, 1) for doc_id in candidates}
    ks = [1, 3, 5, 10, 100, 1000]
    expected = oracle(dict(dataset.qrels), run, ks)
    assert len(expected) == 300
    assert_rows_equal(per_query(dataset.qrels, run, ks), expected)


def test_ties_break_by_descending_doc_id() -> None:
    scores = {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0, "e": 2.0}
    assert [d for d, _ in trec_order(scores)] == ["e", "d", "c", "b", "a"]
    qrels = {"q": {"c": 2, "a": 1}}
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}}  # ranked d, c, b, a
    result = evaluate_run(qrels, run, [1, 2, 4])
    assert result["RR@1"] == 0.0
    assert result["RR@2"] == 0.5
    ideal = 2 + 1 / math.log2(3)
    assert math.isclose(result["nDCG@2"], (2 / math.log2(3)) / ideal)
    assert math.isclose(result["nDCG@4"], (2 / math.log2(3) + 1 / math.log2(5)) / ideal)
    assert result["AP@4"] == pytest.approx((1 / 2 + 2 / 4) / 2)


def test_scores_are_compared_in_float32_like_trec_eval() -> None:
    # 1 + 1e-9 == 1.0 in float32: a tie, so "b" (higher doc id) ranks first.
    assert [d for d, _ in trec_order({"a": 1 + 1e-9, "b": 1.0})] == ["b", "a"]
    assert [d for d, _ in trec_order({"a": 1 + 1e-6, "b": 1.0})] == ["a", "b"]
    assert trec_order({"a": 1 + 1e-9})[0][1] == 1 + 1e-9  # the score itself is kept
    result = evaluate_run({"q": {"a": 1}}, {"q": {"a": 1 + 1e-9, "b": 1.0}}, [1])
    assert result["RR@1"] == 0.0


def test_ndcg_uses_linear_gains_not_exponential() -> None:
    qrels = {"q": {"x": 1, "y": 3}}
    result = evaluate_run(qrels, {"q": {"x": 2.0, "y": 1.0}}, [2])
    linear = (1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3))
    exponential = (1 + 7 / math.log2(3)) / (7 + 1 / math.log2(3))
    assert math.isclose(result["nDCG@2"], linear)
    assert not math.isclose(result["nDCG@2"], exponential)


def test_mrr_is_cut_at_k_and_precision_divides_by_k() -> None:
    run = {"q": {"n1": 3.0, "n2": 2.0, "r": 1.0}}
    result = evaluate_run({"q": {"r": 1, "other": 1}}, run, [1, 2, 3, 10])
    assert [result[f"RR@{k}"] for k in (1, 2, 3, 10)] == [0.0, 0.0, 1 / 3, 1 / 3]
    assert result["P@10"] == pytest.approx(0.1)  # 1 relevant in the top 10, 3 retrieved
    assert result["R@10"] == 0.5
    assert result["AP@10"] == pytest.approx((1 / 3) / 2)


def test_missing_queries_count_zero_by_default_and_are_skipped_on_request() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 0}, "empty": {}}
    run = {"q1": {"a": 1.0}, "q3": {"c": 1.0}, "unjudged": {"a": 1.0}}
    rows = per_query(qrels, run, [1])
    assert list(rows) == ["q1", "q2", "q3"]  # an empty judgment dict is not a judged query
    assert rows["q2"]["nDCG@1"] == 0.0 and rows["q3"]["nDCG@1"] == 0.0
    assert evaluate_run(qrels, run, [1])["nDCG@1"] == pytest.approx(1 / 3)
    assert list(per_query(qrels, run, [1], missing="skip")) == ["q1", "q3"]
    assert evaluate_run(qrels, run, [1], missing="skip")["nDCG@1"] == pytest.approx(1 / 2)


def test_result_keys_cover_every_measure_and_k() -> None:
    result = evaluate_run({"q": {"a": 1}}, {"q": {"a": 1.0}})
    for key in ("nDCG@10", "R@100", "AP@100", "RR@10", "P@10", "nDCG@1000"):
        assert result[key] == (1.0 if not key.startswith("P@") else 1 / int(key[2:]))
    assert len(result) == 5 * 6
    assert list(evaluate_run({"q": {"a": 1}}, {"q": {}}, [10, 1, 10])) == [
        "nDCG@1",
        "nDCG@10",
        "R@1",
        "R@10",
        "AP@1",
        "AP@10",
        "RR@1",
        "RR@10",
        "P@1",
        "P@10",
    ]


@pytest.mark.parametrize("ks", [[], [0], [-1], [True], [2.5], [1, 0]])
def test_bad_k_values_raise(ks: list) -> None:
    with pytest.raises(ConfigError, match="k_values must be integers >= 1"):
        evaluate_run({"q": {"a": 1}}, {"q": {"a": 1.0}}, ks)


def test_bad_inputs_raise_config_errors() -> None:
    with pytest.raises(ConfigError, match="qrels is empty"):
        evaluate_run({}, {"q": {"a": 1.0}})
    with pytest.raises(ConfigError, match="NaN score"):
        evaluate_run({"q": {"a": 1}}, {"q": {"a": float("nan")}})
    with pytest.raises(ConfigError, match="missing must be"):
        evaluate_run({"q": {"a": 1}}, {"q": {"a": 1.0}}, missing="ignore")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="same dataset and split"):
        evaluate_run({"q": {"a": 1}}, {"other": {"a": 1.0}}, missing="skip")


def test_public_names_are_exported() -> None:
    import ragtools.retrieval.evaluation as evaluation

    assert len(evaluation.__all__) == len(set(evaluation.__all__))
    for name in evaluation.__all__:
        assert getattr(evaluation, name) is not None, name
    for name in (
        "canonical_metric",
        "compare_systems",
        "load_systems",
        "paired_t_test",
        "randomization_test",
        "bootstrap_ci",
        "holm",
        "verify_report",
        "per_query",
    ):
        assert name in evaluation.__all__, name  # fmt: skip


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("nDCG@10", "nDCG@10"),
        ("ndcg@10", "nDCG@10"),
        ("NDCG@10", "nDCG@10"),
        ("recall@100", "R@100"),
        ("R@100", "R@100"),
        ("map@100", "AP@100"),
        ("AP@100", "AP@100"),
        ("mrr@10", "RR@10"),
        ("RR@10", "RR@10"),
        ("p@10", "P@10"),
        ("precision@5", "P@5"),
        (" P@010 ", "P@10"),
    ],
)
def test_metric_names_and_their_aliases(name: str, canonical: str) -> None:
    assert canonical_metric(name) == canonical
    assert metric_cutoff(name) == int(canonical.partition("@")[2])


@pytest.mark.parametrize("name", ["ndcg", "ndcg@0", "ndcg@x", "bpref@10", "@10", ""])
def test_unknown_metric_names_raise(name: str) -> None:
    with pytest.raises(ConfigError, match="unknown metric"):
        canonical_metric(name)


def test_result_keys_are_ir_measures_names() -> None:
    result = evaluate_run({"q": {"d": 1}}, {"q": {"d": 1.0}}, [10])
    assert list(result) == ["nDCG@10", "R@10", "AP@10", "RR@10", "P@10"]
