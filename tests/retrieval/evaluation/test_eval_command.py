"""``rag eval`` then ``rag compare`` on a small BEIR fixture, through the real console script:
per-query files, a run of the requested depth, provenance, --verify, and the comparison."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtools.retrieval.evaluation import per_query, read_per_query, read_trec_run
from tests.retrieval.evaluation.test_beir import write_dataset
from tests.retrieval.test_cli import rag

CORPUS = [
    {"_id": "d1", "title": "Bees", "text": "Honey bees dance to tell the hive where flowers are."},
    {"_id": "d2", "title": "Tides", "text": "The moon's gravity raises ocean tides twice a day."},
    {"_id": "d3", "title": "Volcanoes", "text": "Magma rises through the crust and erupts."},
    {"_id": "d4", "title": "Glaciers", "text": "Glaciers carve valleys as the ice moves slowly."},
    {"_id": "d5", "title": "Comets", "text": "A comet's tail points away from the sun."},
    {"_id": "d6", "title": "Ants", "text": "Ants follow pheromone trails to find food."},
    {"_id": "d7", "title": "Coral", "text": "Coral reefs bleach when the ocean warms."},
]
QUERIES = [
    {"_id": "q1", "text": "how do bees communicate about flowers"},
    {"_id": "q2", "text": "what causes tides in the ocean"},
    {"_id": "q3", "text": "eruption of magma"},
    {"_id": "q4", "text": "insects finding food"},
    {"_id": "q5", "text": "warm ocean damages reefs"},
]
QRELS = {
    "test": (
        b"query-id\tcorpus-id\tscore\n"
        b"q1\td1\t2\nq2\td2\t1\nq3\td3\t1\nq4\td6\t1\nq4\td1\t1\nq5\td7\t1\n"
    )
}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("data") / "tinybeir"
    return write_dataset(root, corpus=CORPUS, queries=QUERIES, qrels=QRELS)


def expected_file(path: Path, report: dict, *, shift: float = 0.0) -> Path:
    """Expected figures taken from a report (``shift`` moves the first one)."""
    figures = []
    for name, entry in report["results"].items():
        for metric in ("nDCG@10", "RR@10"):
            figures.append(
                {"dataset": report["dataset"], "split": "test", "retriever": name,
                 "metric": metric, "value": entry[metric], "tolerance": 0.001}
            )  # fmt: skip
    figures[0]["value"] += shift
    path.write_text(json.dumps({"figures": figures}))
    return path


def test_eval_writes_per_query_files_runs_provenance_and_verifies(
    dataset: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    proc = rag("eval", "--dataset", str(dataset), "--retrievers", "bm25,front_page",
               "--out", str(out), "--depth", "5")  # fmt: skip
    assert "| keyword |" in proc.stdout  # bm25 is the alias of keyword
    report = json.loads((out / "report.json").read_text())
    assert list(report["results"]) == ["keyword", "front_page"]
    assert report["depth"] == 5
    keyword = report["results"]["keyword"]
    assert {"nDCG@5", "R@5", "AP@5", "RR@5", "P@5", "nDCG@1"} <= set(keyword)
    assert not [key for key in keyword if key.endswith(("@10", "@100", "@1000"))]
    assert set(keyword["ci95"]) == set()  # no required metric is as shallow as 5

    front = read_trec_run(out / "runs" / "front_page.trec")  # every document is a candidate
    assert {len(docs) for docs in front.values()} == {5}
    run = read_trec_run(out / "runs" / "keyword.trec")  # documents sharing a query term
    assert 1 <= max(len(docs) for docs in run.values()) <= 5
    rows = read_per_query(out / "runs" / "keyword.per_query.jsonl")
    qrels = {"q1": {"d1": 2}, "q2": {"d2": 1}, "q3": {"d3": 1}, "q4": {"d6": 1, "d1": 1},
             "q5": {"d7": 1}}  # fmt: skip
    assert rows == per_query(qrels, run, [1, 3, 5])
    first_line = (out / "runs" / "keyword.per_query.jsonl").read_text().splitlines()[0]
    assert first_line.startswith('{"query_id": "q1", "nDCG@1":')

    provenance = report["provenance"]
    assert provenance["ragtools_version"]
    assert provenance["git"] is None or len(provenance["git"]["commit"]) == 40
    assert set(provenance["dataset"]["files"]) == {
        "corpus.jsonl",
        "queries.jsonl",
        "qrels/test.tsv",
    }
    assert provenance["dataset"]["num_queries"] == 5
    assert provenance["settings"]["depth"] == 5
    assert provenance["index"]["settings"]["chunk_size"] == 12000
    assert provenance["index"]["bm25"]["variant"]
    assert provenance["machine"]["cores"] >= 1 and provenance["python"].count(".") == 2
    assert provenance["libraries"]["numpy"] and provenance["libraries"]["scipy"]
    assert set(provenance["seconds"]) == {"index", "retrieve", "score"}
    assert set(provenance["seconds"]["retrieve"]) == {"keyword", "front_page"}

    good = expected_file(tmp_path / "good.json", {**report, "results": {
        name: {**entry, "nDCG@10": entry["nDCG@5"], "RR@10": entry["RR@5"]}
        for name, entry in report["results"].items()}})  # fmt: skip
    # The report has no @10 metric at depth 5, so those figures cannot be checked:
    proc = rag("eval", "--dataset", str(dataset), "--retrievers", "keyword,front_page",
               "--out", str(out), "--depth", "5", "--verify", str(good), check=False)  # fmt: skip
    assert proc.returncode == 1 and "the report has no nDCG@10" in proc.stderr


def test_eval_verify_passes_then_names_the_drift(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    rag("eval", "--dataset", str(dataset), "--retrievers", "keyword", "--out", str(out))
    report = json.loads((out / "report.json").read_text())
    assert report["depth"] == 1000 and "R@1000" in report["results"]["keyword"]

    good = expected_file(tmp_path / "good.json", report)
    proc = rag("eval", "--dataset", str(dataset), "--retrievers", "keyword", "--out", str(out),
               "--verify", str(good))  # fmt: skip
    assert "verify: every figure" in proc.stdout

    drifted = expected_file(tmp_path / "drifted.json", report, shift=0.01)
    proc = rag("eval", "--dataset", str(dataset), "--retrievers", "keyword", "--out", str(out),
               "--verify", str(drifted), check=False)  # fmt: skip
    assert proc.returncode == 1
    value = report["results"]["keyword"]["nDCG@10"]
    assert (
        f"rag: verify: tinybeir/test keyword nDCG@10 drifted: {value:.4f}, expected "
        f"{value + 0.01:.4f} ± 0.001 (off by -0.0100)" in proc.stderr
    )
    assert "1 figure(s) of" in proc.stderr

    proc = rag("eval", "--dataset", str(dataset), "--out", str(out), "--verify",
               str(tmp_path / "none.yaml"), check=False)  # fmt: skip
    assert proc.returncode == 2 and "none.yaml" in proc.stderr


def test_compare_command_reads_reports_and_runs(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    rag("eval", "--dataset", str(dataset), "--retrievers", "keyword,front_page", "--out", str(out))
    proc = rag("compare", str(out / "report.json"), "--baseline", "front_page",
               "--out", str(tmp_path / "cmp"), "--permutations", "500")  # fmt: skip
    assert "| nDCG@10 | front_page (baseline) |" in proc.stdout
    assert "| nDCG@10 | keyword |" in proc.stdout
    written = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert written["baseline"] == "front_page" and written["num_queries"] == 5
    assert (tmp_path / "cmp" / "compare.png").read_bytes()[:4] == b"\x89PNG"

    runs = [str(out / "runs" / f"{name}.trec") for name in ("keyword", "front_page")]
    options = ["--test", "t", "--baseline", "front_page", "--metrics", "ndcg@10,RR@10,R@100,AP@100"]
    rag("compare", *runs, "--dataset", str(dataset), *options, "--out", str(tmp_path / "cmp2"))
    from_runs = json.loads((tmp_path / "cmp2" / "compare.json").read_text())
    keyed = {(r["metric"], r["system"]): r for r in written["rows"]}
    assert len(from_runs["rows"]) == len(written["rows"]) == 4
    for row in from_runs["rows"]:  # the same per-query scores, from the runs instead
        assert row["p_t"] == pytest.approx(keyed[(row["metric"], row["system"])]["p_t"])
        assert row["p_randomization"] is None

    proc = rag("compare", runs[0], "--out", str(tmp_path / "x"), check=False)
    assert proc.returncode == 2 and "pass --dataset" in proc.stderr


@pytest.mark.slow
def test_eval_then_compare_with_the_three_retrievers(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    rag("eval", "--dataset", str(dataset), "--out", str(out))
    report = json.loads((out / "report.json").read_text())
    assert list(report["results"]) == ["keyword", "vector", "hybrid"]
    for name in report["results"]:
        assert (out / "runs" / f"{name}.per_query.jsonl").is_file()
        low, high = report["results"][name]["ci95"]["nDCG@10"]
        assert low <= report["results"][name]["nDCG@10"] <= high
    model = report["provenance"]["model"]
    assert model["model_id"].endswith("all-MiniLM-L6-v2") and len(model["weights_sha256"]) == 64
    proc = rag("compare", str(out), "--baseline", "bm25", "--out", str(tmp_path / "cmp"))
    assert "| nDCG@10 | keyword (baseline) |" in proc.stdout
    assert "| nDCG@10 | hybrid |" in proc.stdout
    assert (tmp_path / "cmp" / "compare.png").is_file()
