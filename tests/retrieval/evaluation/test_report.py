"""Reports: the JSON shape, the Markdown table, the PNG chart and TREC run files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ragtools.parsers.errors import ConfigError, MissingDependencyError
from ragtools.retrieval.evaluation import (
    SCIFACT_REFERENCE,
    build_report,
    read_trec_run,
    write_report,
)

METRICS = {
    "bm25": {
        "nDCG@10": 0.68412,
        "R@100": 0.9133,
        "AP@100": 0.6401,
        "RR@10": 0.6512,
        "P@10": 0.09,
        "latency_ms": {"p50": 1.234, "p95": 2.5, "mean": 1.4},
    },
    "vector": {
        "nDCG@10": 0.6451,
        "R@100": 0.925,
        "AP@100": 0.6,
        "RR@10": 0.61,
        "latency_ms": {"p50": 4.0, "p95": 9.876},
        "queries_per_second": 250,
        "model": "all-MiniLM-L6-v2",
    },
}


def test_report_has_the_contract_shape() -> None:
    report = build_report("scifact", "test", 300, METRICS)
    assert report["dataset"] == "scifact"
    assert report["split"] == "test"
    assert report["num_queries"] == 300
    assert set(report["results"]) == {"bm25", "vector"}
    for entry in report["results"].values():
        for key in ("nDCG@10", "R@100", "AP@100", "RR@10"):
            assert isinstance(entry[key], float)
        assert isinstance(entry["latency_ms"]["p50"], float)
        assert isinstance(entry["latency_ms"]["p95"], float)
    assert report["results"]["bm25"]["nDCG@10"] == 0.68412
    assert report["results"]["bm25"]["P@10"] == 0.09  # extra metrics are kept
    assert report["results"]["vector"]["queries_per_second"] == 250.0
    assert report["results"]["vector"]["model"] == "all-MiniLM-L6-v2"
    assert report["reference"]["rows"] == [dict(row) for row in SCIFACT_REFERENCE]
    assert json.loads(json.dumps(report)) == report
    assert "reference" not in build_report("nfcorpus", "test", 323, METRICS)


@pytest.mark.parametrize(
    ("metrics", "message"),
    [
        ({"nDCG@10": 0.5, "latency_ms": {"p50": 1, "p95": 2}}, "missing R@100, AP@100"),
        ({**METRICS["bm25"], "latency_ms": {"p50": 1.0}}, "missing latency_ms p50/p95"),
        ({k: v for k, v in METRICS["bm25"].items() if k != "latency_ms"}, "missing latency_ms"),
        ({**METRICS["bm25"], "nDCG@10": float("nan")}, "nDCG@10 must be a finite number"),
        ({**METRICS["bm25"], "extra": [1, 2]}, "extra must be a finite number"),
    ],
)
def test_bad_results_raise(metrics: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_report("scifact", "test", 300, {"bm25": metrics})


def test_no_retrievers_raise() -> None:
    with pytest.raises(ConfigError, match="no retriever results"):
        build_report("scifact", "test", 300, {})


def test_write_report_files(tmp_path: Path) -> None:
    report = build_report("scifact", "test", 300, METRICS)
    runs = {"bm25": {"1": {"31715818": 12.5, "x": 3.0}}, "vector": {"1": {"x": 0.9}}}
    written = write_report(report, tmp_path / "out", runs=runs)
    out = tmp_path / "out"
    assert written == {
        "json": out / "report.json",
        "md": out / "report.md",
        "png": out / "report.png",
        "run:bm25": out / "runs" / "bm25.trec",
        "run:vector": out / "runs" / "vector.trec",
    }
    assert json.loads((out / "report.json").read_text(encoding="utf-8")) == report
    assert read_trec_run(out / "runs" / "bm25.trec") == runs["bm25"]
    assert (out / "runs" / "bm25.trec").read_text().split("\n")[0].endswith(" bm25")

    md = (out / "report.md").read_text(encoding="utf-8")
    assert "# Retrieval evaluation: scifact (test)" in md
    assert "| retriever | nDCG@10 | Recall@100 | MAP@100 | MRR@10 | p50 ms | p95 ms |" in md
    assert "| bm25 | 0.6841 | 0.9133 | 0.6401 | 0.6512 | 1.23 | 2.50 |" in md
    assert "| vector | 0.6451 | 0.9250 | 0.6000 | 0.6100 | 4.00 | 9.88 |" in md
    assert "Published reference figures (SciFact test split; not results of this run)" in md
    assert (
        "| BM25 flat, k1=0.9 b=0.4 (Pyserini regression) | 0.679 | 0.925 | "
        "pyserini 2cr/beir.yaml |" in md
    )
    assert "| BM25, Elasticsearch (BEIR paper) | 0.665 | — | Thakur et al. 2021 |" in md
    assert md.count("\n| ") == 1 + 2 + 1 + len(SCIFACT_REFERENCE)  # header, rows, ref table
    assert "do not compare them directly" not in md

    png = (out / "report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(png) > 10_000
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]  # no temp files


def test_other_dataset_has_no_reference_and_other_split_is_flagged(tmp_path: Path) -> None:
    write_report(build_report("nfcorpus", "test", 323, METRICS), tmp_path / "a")
    assert "Published reference" not in (tmp_path / "a" / "report.md").read_text()
    assert not (tmp_path / "a" / "runs").exists()
    write_report(build_report("scifact", "train", 809, METRICS), tmp_path / "b")
    md = (tmp_path / "b" / "report.md").read_text()
    assert "this report is on train, so do not compare them directly" in md


def test_unsafe_run_name_raises(tmp_path: Path) -> None:
    report = build_report("x", "test", 1, {"../evil": METRICS["bm25"]})
    with pytest.raises(ConfigError, match="cannot be a file name"):
        write_report(report, tmp_path, runs={"../evil": {"q": {"d": 1.0}}})
    assert "\\|" not in (tmp_path / "report.md").read_text()


def test_pipe_in_name_is_escaped_in_markdown(tmp_path: Path) -> None:
    write_report(build_report("x", "test", 1, {"a|b": METRICS["bm25"]}), tmp_path)
    assert "| a\\|b | 0.6841" in (tmp_path / "report.md").read_text()


def test_missing_matplotlib_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingDependencyError, match=r"ragtools\[eval\]"):
        write_report(build_report("x", "test", 1, METRICS), tmp_path)


def test_aliases_depth_intervals_and_provenance(tmp_path: Path) -> None:
    old_names = {
        "ndcg@10": 0.7,
        "recall@100": 0.9,
        "map@100": 0.6,
        "mrr@10": 0.65,
        "ci95": {"ndcg@10": [0.65, 0.75]},
        "latency_ms": {"p50": 1.0, "p95": 2.0},
    }
    report = build_report("x", "test", 2, {"keyword": old_names}, provenance={"python": "3"})
    entry = report["results"]["keyword"]
    assert {k: entry[k] for k in ("nDCG@10", "R@100", "AP@100", "RR@10")} == {
        "nDCG@10": 0.7, "R@100": 0.9, "AP@100": 0.6, "RR@10": 0.65
    }  # fmt: skip
    assert entry["ci95"] == {"nDCG@10": [0.65, 0.75]}
    assert report["provenance"] == {"python": "3"} and report["format_version"] == 2

    shallow = {"nDCG@10": 0.7, "RR@10": 0.6, "latency_ms": {"p50": 1.0, "p95": 2.0}}
    assert build_report("x", "test", 2, {"k": shallow}, depth=10)["depth"] == 10
    with pytest.raises(ConfigError, match="missing R@100, AP@100"):
        build_report("x", "test", 2, {"k": shallow}, depth=100)
    with pytest.raises(ConfigError, match=r"ci95 nDCG@10 must be \[low, high\]"):
        build_report("x", "test", 2, {"k": {**old_names, "ci95": {"nDCG@10": [1]}}})

    rows = {"q1": {"nDCG@10": 1.0}, "q2": {"nDCG@10": 0.0}}
    written = write_report(report, tmp_path, per_query={"keyword": rows})
    assert written["per_query:keyword"] == tmp_path / "runs" / "keyword.per_query.jsonl"
    lines = written["per_query:keyword"].read_text().splitlines()
    assert lines == ['{"query_id": "q1", "nDCG@10": 1.0}', '{"query_id": "q2", "nDCG@10": 0.0}']
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_files_follow_the_umask_as_index_files_do(tmp_path: Path) -> None:
    """#36: reports were written 0600 (a temporary file's mode) while indexes follow the umask."""
    import os
    import stat

    report = build_report("scifact", "test", 300, METRICS)
    runs = {"bm25": {"1": {"31715818": 12.5}}}
    old = os.umask(0o027)
    try:
        written = write_report(report, tmp_path / "out", runs=runs)
    finally:
        os.umask(old)
    modes = {key: stat.S_IMODE(path.stat().st_mode) for key, path in written.items()}
    assert modes == dict.fromkeys(written, 0o640)
