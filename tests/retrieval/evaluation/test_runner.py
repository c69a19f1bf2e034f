"""Running a retriever: chunk-to-document scoring, fetch sizes, latency, TREC run files."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import pytest
import pytrec_eval

import ragtools.retrieval.evaluation.runner as runner_module
from ragtools.parsers.document import Chunk
from ragtools.parsers.errors import ConfigError, ParseError
from ragtools.retrieval.evaluation import (
    BeirDataset,
    RunResult,
    evaluate_run,
    latency_summary,
    read_trec_run,
    run_retriever,
    write_trec_run,
)
from ragtools.retrieval.hit import Hit


class FakeClock:
    """A perf_counter that only moves when the fake retriever says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class FakeRetriever:
    """Returns fixed chunk hits per query, best first, and advances a fake clock per call."""

    def __init__(self, results: dict[str, list[tuple[str, float]]], clock: FakeClock) -> None:
        # results: query -> [(chunk label "DOC#n", score)], in any order
        self.results = results
        self.clock = clock
        self.calls: list[tuple[str, int | None]] = []
        self.batches: list[int] = []
        self.cost_ms: dict[str, float] = {}

    def _hits(self, query: str, k: int | None) -> list[Hit]:
        ranked = sorted(self.results.get(query, []), key=lambda item: -item[1])[:k]
        return [
            Hit(
                chunk=Chunk(doc_id=label.split("#")[0], text=label, metadata={"source": label[0]}),
                score=score,
                rank=rank,
                stage="fake",
            )
            for rank, (label, score) in enumerate(ranked, start=1)
        ]

    def invoke(self, query: str, *, k: int | None = None, filter: object = None) -> list[Hit]:
        self.calls.append((query, k))
        self.clock.now += self.cost_ms.get(query, 1.0) / 1000.0
        return self._hits(query, k)

    def batch(
        self, queries: Sequence[str], *, k: int | None = None, filter: object = None
    ) -> list[list[Hit]]:
        self.batches.append(len(queries))
        self.clock.now += 0.5 / 1000.0 * len(queries)
        return [self._hits(q, k) for q in queries]


CHUNKED = {
    "alpha": [("A#1", 0.9), ("A#2", 0.85), ("B#1", 0.8), ("C#1", 0.7), ("C#2", 0.6), ("D#1", 0.5)],
    "beta": [("E#1", 2.0), ("F#1", 1.0), ("E#2", 1.5)],
    "empty": [],
}


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(runner_module, "time", SimpleNamespace(perf_counter=fake))
    return fake


def dataset(queries: dict[str, str]) -> BeirDataset:
    qrels = {qid: {"A": 1} for qid in queries}
    return BeirDataset(name="fake", split="test", corpus={}, queries=queries, qrels=qrels)


def test_document_score_is_its_best_chunk_and_refetches_when_short(clock: FakeClock) -> None:
    retriever = FakeRetriever(CHUNKED, clock)
    result = run_retriever(retriever, {"q1": "alpha"}, k=2, overfetch=1.0, warmup=0)
    # fetch 2 chunks -> only document A, so ask again for 4: A .9, A .85, B .8, C .7
    assert retriever.calls == [("alpha", 2), ("alpha", 4)]
    assert result.run == {"q1": {"A": 0.9, "B": 0.8}}
    assert result.refetches == 1
    assert result.latencies_ms == pytest.approx([2.0])  # both calls are charged to the query


def test_default_overfetch_asks_for_twice_k_chunks(clock: FakeClock) -> None:
    retriever = FakeRetriever(CHUNKED, clock)
    result = run_retriever(retriever, dataset({"q1": "alpha", "q2": "beta"}), k=3, warmup=0)
    assert retriever.calls == [("alpha", 6), ("beta", 6)]
    assert result.run == {"q1": {"A": 0.9, "B": 0.8, "C": 0.7}, "q2": {"E": 2.0, "F": 1.0}}
    assert list(result.run["q1"]) == ["A", "B", "C"]  # best first
    assert result.refetches == 0
    assert result.query_ids == ["q1", "q2"] and result.k == 3


def test_exhausted_retriever_stops_and_warns(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    retriever = FakeRetriever(CHUNKED, clock)
    with caplog.at_level(logging.WARNING, logger="ragtools.retrieval.evaluation.runner"):
        result = run_retriever(retriever, {"q2": "beta", "q3": "empty"}, k=5, warmup=0)
    assert retriever.calls == [("beta", 10), ("empty", 10)]  # fewer hits than asked: no retry
    assert result.run == {"q2": {"E": 2.0, "F": 1.0}, "q3": {}}
    assert "2 of 2 queries returned fewer than k=5 documents" in caplog.text


def test_refetching_is_capped(clock: FakeClock) -> None:
    one_doc = {"many": [(f"A#{i}", 1.0 - i / 1000) for i in range(500)]}
    retriever = FakeRetriever(one_doc, clock)
    result = run_retriever(retriever, {"q": "many"}, k=2, warmup=0)
    assert [k for _, k in retriever.calls] == [4, 8, 16, 32, 64, 128]  # cap: k * 64
    assert result.run == {"q": {"A": 1.0}}


def test_ties_at_the_cut_follow_trec_eval_order(clock: FakeClock) -> None:
    tied = {"t": [("a#1", 1.0), ("c#1", 1.0), ("b#1", 1.0)]}
    result = run_retriever(FakeRetriever(tied, clock), {"q": "t"}, k=2, warmup=0)
    assert result.run == {"q": {"c": 1.0, "b": 1.0}}


def test_custom_doc_key(clock: FakeClock) -> None:
    retriever = FakeRetriever(CHUNKED, clock)
    result = run_retriever(
        retriever,
        {"q": "alpha"},
        k=2,
        warmup=0,
        doc_key=lambda hit: str(hit.chunk.metadata["source"]).lower(),
    )
    assert result.run == {"q": {"a": 0.9, "b": 0.8}}


def test_latency_is_per_query_and_warmup_is_not_timed(clock: FakeClock) -> None:
    retriever = FakeRetriever(CHUNKED, clock)
    retriever.cost_ms = {"alpha": 3.0, "beta": 7.0}
    result = run_retriever(retriever, {"q1": "alpha", "q2": "beta"}, k=1, warmup=2)
    assert retriever.calls[:2] == [("alpha", 2), ("alpha", 2)]  # warm-up calls
    assert len(retriever.calls) == 4
    assert result.latencies_ms == pytest.approx([3.0, 7.0])
    assert result.latency_summary() == pytest.approx({"p50": 5.0, "p95": 6.8, "mean": 5.0})
    assert result.queries_per_second is None and retriever.batches == []


def test_throughput_uses_batches_and_keeps_invoke_latency(clock: FakeClock) -> None:
    retriever = FakeRetriever(CHUNKED, clock)
    queries = {f"q{i}": "beta" for i in range(5)}
    result = run_retriever(retriever, queries, k=1, warmup=0, batch_size=2, throughput=True)
    assert retriever.batches == [2, 2, 1]
    assert result.queries_per_second == pytest.approx(5 / 0.0025)
    assert result.latencies_ms == pytest.approx([1.0] * 5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 0}, "k must be >= 1"),
        ({"batch_size": 0}, "batch_size must be >= 1"),
        ({"overfetch": 0.5}, "overfetch must be >= 1.0"),
        ({"warmup": -1}, "warmup must be >= 0"),
    ],
)
def test_bad_arguments_raise(clock: FakeClock, kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        run_retriever(FakeRetriever(CHUNKED, clock), {"q": "alpha"}, **kwargs)


def test_latency_summary_by_hand() -> None:
    assert latency_summary([4.0, 1.0, 3.0, 2.0]) == pytest.approx(
        {"p50": 2.5, "p95": 3.85, "mean": 2.5}
    )
    assert latency_summary([7.0]) == {"p50": 7.0, "p95": 7.0, "mean": 7.0}
    with pytest.raises(ConfigError, match="no latencies"):
        latency_summary([])


def test_trec_run_round_trip_and_pytrec_eval_reads_it(tmp_path: Path) -> None:
    run = {"q1": {"a": 1.0, "c": 1.0, "b": 2.5, "d": 0.1 + 0.2}, "q2": {}, "q3": {"x": -1.0}}
    path = write_trec_run(run, tmp_path / "runs" / "bm25.trec", tag="bm25")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines == [
        "q1 Q0 b 1 2.5 bm25",
        "q1 Q0 c 2 1.0 bm25",
        "q1 Q0 a 3 1.0 bm25",
        "q1 Q0 d 4 0.30000000000000004 bm25",
        "q3 Q0 x 1 -1.0 bm25",
    ]
    assert read_trec_run(path) == {"q1": run["q1"], "q3": run["q3"]}
    with path.open(encoding="utf-8") as handle:
        parsed = pytrec_eval.parse_run(handle)
    qrels = {"q1": {"c": 1, "a": 2}, "q3": {"x": 1}}
    ours = evaluate_run(qrels, run, [1, 3])
    raw = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.1,3"}).evaluate(parsed)
    expected = sum(values["ndcg_cut_3"] for values in raw.values()) / 2
    assert ours["nDCG@3"] == pytest.approx(expected)
    assert not list(tmp_path.glob("runs/.*"))  # no temporary file left behind


def test_trec_run_rejects_whitespace_and_bad_lines(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="document id 'a b'"):
        write_trec_run({"q": {"a b": 1.0}}, tmp_path / "x.trec")
    with pytest.raises(ConfigError, match="tag 'my run'"):
        write_trec_run({"q": {"a": 1.0}}, tmp_path / "x.trec", tag="my run")
    bad = tmp_path / "bad.trec"
    bad.write_text("q Q0 a 1 1.0 t\nq Q0 b 2 high t\n", encoding="utf-8")
    with pytest.raises(ParseError, match=r"bad\.trec: line 2: expected"):
        read_trec_run(bad)
    bad.write_text("q Q0 a 1 1.0 t\nq Q0 a 2 0.5 t\n", encoding="utf-8")
    with pytest.raises(ParseError, match="line 2: document 'a' appears twice"):
        read_trec_run(bad)
    with pytest.raises(ParseError, match="cannot read the run file"):
        read_trec_run(tmp_path / "missing.trec")


def test_run_result_is_frozen() -> None:
    result = RunResult(run={}, latencies_ms=[1.0])
    with pytest.raises(AttributeError):
        result.k = 5  # type: ignore[misc]
