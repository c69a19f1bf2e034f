"""eval/measure_defaults.py's machinery: fixed halves, the memoised ranker (a shallower ask
is the prefix of the deep ranking, as a direct ask would give), and its table."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ragtools.indexes.index import Index
from ragtools.indexes.testing import FakeEmbedder
from ragtools.parsers import Document
from ragtools.retrieval.hybrid import HybridRetriever
from ragtools.retrieval.keyword import KeywordRetriever
from ragtools.retrieval.vector import VectorRetriever
from tests.eval.scripts import load_script


def test_halves_are_fixed_disjoint_and_cover_every_query() -> None:
    script = load_script("measure_defaults")
    qids = [str(i) for i in range(101)]
    first, second = script.halves(qids)
    assert (first, second) == script.halves(list(reversed(qids)))  # order of input ignored
    assert len(first) == 50 and len(second) == 51
    assert set(first).isdisjoint(second) and set(first) | set(second) == set(qids)


def test_memo_answers_like_the_retriever_and_fuses_alike(tmp_path: Path) -> None:
    script = load_script("measure_defaults")
    words = ["zebra", "horse", "grass", "savanna", "water", "boat", "wind", "oak"]
    docs = [
        Document(id=f"d{i}", text=" ".join(words[(i + j) % 8] for j in range(1 + i % 3)))
        for i in range(30)
    ]
    index = Index.from_documents(
        docs, tmp_path / "i", embedder=FakeEmbedder(32), chunk_size=200, chunk_overlap=0
    )
    keyword = KeywordRetriever(index)
    memo = script.Memo(keyword)
    for k in (1, 5, 30):
        got, want = memo.rank("horse grass", k, None), keyword.rank("horse grass", k, None)
        np.testing.assert_array_equal(got.ranking.rows, want.ranking.rows)
        np.testing.assert_array_equal(got.ranking.scores, want.ranking.scores)
    assert list(memo.seen) == ["horse grass"]  # ranked once
    plain = HybridRetriever([keyword, VectorRetriever(index)], weights=[0.6, 0.4])
    memoised = HybridRetriever(
        [script.Memo(keyword), script.Memo(VectorRetriever(index))], weights=[0.6, 0.4]
    )
    for query in ("horse grass", "boat wind oak"):
        a, b = plain.invoke(query, k=10), memoised.invoke(query, k=10)
        assert [(h.chunk.id, h.score) for h in a] == [(h.chunk.id, h.score) for h in b]


def test_table_has_a_row_per_fold_set_and_fixed_point() -> None:
    script = load_script("measure_defaults")
    row = {"baseline_mean": 0.5, "mean": 0.52, "delta": 0.02, "p_t": 0.3}
    rows = {"nDCG@10": row | {"p_randomization": 0.25, "wins": 3, "ties": 5, "losses": 1}}
    out = {
        "families": {
            "e": {
                "folds": {"A->B": {"chosen": "z", "held_out": rows}},
                "chosen_on_train": "z",
                "train": rows,
                "other": {"Markdown docs": rows},
            }
        },
        "literature": {"e": {"setting": "z", "A": rows, "B": rows, "other": {}}},
    }
    lines = script.table(out).splitlines()
    assert len(lines) == 2 + 3 + 2
    assert lines[2] == (
        "| e | SciFact train, fold A->B held out (9) | z | 0.5000 | 0.5200 | +0.0200 | 0.3 "
        "| 0.25 | 3/5/1 |"
    )
    assert lines[-1].startswith("| e (fixed) | SciFact train, half B (9) | z |")
