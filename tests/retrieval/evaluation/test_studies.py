"""What the eval/ scripts share: the corpus as ``rag build`` reads it, and BM25 runs scored as
pytrec_eval scores them."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import pytrec_eval

from ragtools import parsers
from ragtools.indexes.keyword.bm25 import BM25Index
from ragtools.indexes.text.tokenize import Tokenizer
from ragtools.retrieval.evaluation.studies import (
    bm25_run,
    evaluate,
    load_corpus,
    load_titles,
    run_split,
)
from tests.retrieval.evaluation.test_beir import write_dataset

QRELS = {"q1": {"a": 1, "b": 2}, "q2": {"c": 1}, "q3": {"a": 1}}
RUN = {"q1": {"b": 0.9, "x": 0.8, "a": 0.1}, "q2": {"y": 1.0, "c": 0.5}}  # q3 absent: 0


def test_evaluate_equals_pytrec_eval_with_absent_queries_as_zero() -> None:
    evaluator = pytrec_eval.RelevanceEvaluator(QRELS, {"ndcg_cut.10", "recall.100"})
    rows = evaluator.evaluate({q: RUN.get(q, {}) for q in QRELS})
    ndcg = [rows.get(q, {}).get("ndcg_cut_10", 0.0) for q in QRELS]
    recall = [rows.get(q, {}).get("recall_100", 0.0) for q in QRELS]
    mean = sum(ndcg) / 3
    got = evaluate(QRELS, RUN)
    assert got["nDCG@10"] == pytest.approx(mean, abs=1e-12)
    assert got["R@100"] == pytest.approx(sum(recall) / 3, abs=1e-12)
    se = math.sqrt(sum((v - mean) ** 2 for v in ndcg) / 3) / math.sqrt(3)
    assert got["nDCG@10_se"] == pytest.approx(se, abs=1e-12)


def test_load_corpus_is_the_parsers_documents_with_all_queries(tmp_path: Path) -> None:
    corpus = [
        {"_id": "d1", "title": "Alpha \ufb01sh", "text": "first  text"},
        {"_id": "d2", "title": "", "text": "second text"},
        {"_id": "d3", "text": "third text"},
    ]
    root = write_dataset(tmp_path, corpus=corpus)
    ids, texts, queries, qrels = load_corpus(root)
    loaded = parsers.load(root / "corpus.jsonl")
    assert ids == [d.id for d in loaded] == ["d1", "d2", "d3"]
    assert (
        texts
        == [d.text for d in loaded]
        == ["Alpha fish\n\nfirst  text", "second text", "third text"]  # NFKC, layout kept
    )
    assert list(queries) == ["q1", "q2", "q3"]  # every query, file order, judged or not
    assert qrels == {"train": {"q3": {"d3": 1}}, "test": {"q2": {"2": 1}, "q1": {"d1": 2, "d3": 0}}}
    assert load_titles(root) == ["Alpha fish", "", ""]
    assert load_corpus(root, ("test",))[3].keys() == {"test"}


def test_run_split_scores_the_bm25_run(tmp_path: Path) -> None:
    ids, texts, queries, qrels = load_corpus(write_dataset(tmp_path))
    tokenizer = Tokenizer()
    index = BM25Index(tokenizer)
    index.add(tokenizer.tokenize_many(texts))
    tokens = {qid: tokenizer(text) for qid, text in queries.items()}
    run = bm25_run(index, ["q1", "q3"], tokens, ids)
    assert next(iter(run["q1"])) == "d1"  # "alpha" is only in d1's title
    assert set(run) == {"q1", "q3"}
    assert run_split(index, tokens, qrels["test"], ids) == evaluate(
        qrels["test"], bm25_run(index, sorted(qrels["test"]), tokens, ids)
    )
