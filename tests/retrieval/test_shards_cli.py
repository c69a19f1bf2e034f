"""``rag build --shards``, ``rag search``, ``rag info``, ``rag eval --shards`` and the retriever
tool on a sharded index give what they give on one index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtools.indexes.index import Index
from ragtools.indexes.testing import FakeEmbedder
from ragtools.retrieval import create_retriever_tool
from ragtools.retrieval.hybrid import HybridRetriever
from tests.retrieval.test_cli import rag

WORDS = [
    "bees",
    "dance",
    "flowers",
    "moon",
    "tides",
    "gravity",
    "ocean",
    "waves",
    "honey",
    "hive",
    "queen",
    "sun",
    "light",
]


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs")
    for i in range(24):
        words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(5 + i % 6)]
        (root / f"note-{i:02d}.txt").write_text(" ".join(words) + ".", encoding="utf-8")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4\n% nothing else\n")
    return root


def test_build_search_and_info_on_shards(docs: Path, tmp_path: Path) -> None:
    one, many = tmp_path / "one", tmp_path / "many"
    rag("build", str(docs), "--out", str(one), "--no-vector")
    proc = rag("build", str(docs), "--out", str(many), "--no-vector", "--shards", "3")
    assert "24 chunks from 25 files in 3 shards (0 skipped, 1 failed)" in proc.stdout
    for query in ("bees dance", "moon gravity tides", "queen"):
        for flt in ("{}", '{"source": {"$ne": "x"}}'):
            args = (query, "--mode", "keyword", "--json", "-k", "7", "--filter", flt)
            expected = json.loads(rag("search", str(one), *args).stdout)
            assert json.loads(rag("search", str(many), *args).stdout) == expected
    info = json.loads(rag("info", str(many), "--json").stdout)
    segments = info["segments"]
    assert sum(s["rows"] - s["deleted"] for s in segments) == 24
    assert {s["shard"] for s in segments} <= {0, 1, 2}
    assert info["counts"]["shards"] == 3 and info["counts"]["segments"] == len(segments)
    assert info["counts"]["documents"] == 24 and info["counts"]["vectors"] == 0
    printed = {line[:10].strip(): line[10:] for line in rag("info", str(many)).stdout.splitlines()}
    alone = {line[:10].strip(): line[10:] for line in rag("info", str(one)).stdout.splitlines()}
    assert printed["chunks"] == alone["chunks"] == "24 from 24 documents"
    assert printed["vectors"] == alone["vectors"] == "0"


def test_ray_without_shards_is_refused(docs: Path, tmp_path: Path) -> None:
    proc = rag("build", str(docs), "--out", str(tmp_path / "x"), "--ray", check=False)
    assert proc.returncode == 2 and "--shards" in proc.stderr


def test_eval_on_shards_equals_eval_on_one_index(tmp_path: Path, scifact_dir: Path) -> None:
    common = ("--dataset", str(scifact_dir), "--split", "train", "--retrievers", "bm25")
    common += ("--max-queries", "80")
    rag("eval", *common, "--out", str(tmp_path / "one"))
    rag("eval", *common, "--out", str(tmp_path / "many"), "--shards", "3")
    assert Index.open(tmp_path / "many" / "index").n_shards == 3
    one = json.loads((tmp_path / "one" / "report.json").read_text("utf-8"))
    many = json.loads((tmp_path / "many" / "report.json").read_text("utf-8"))
    metrics = {k: v for k, v in one["results"]["keyword"].items() if k != "latency_ms"}
    assert metrics and metrics == {
        k: v for k, v in many["results"]["keyword"].items() if k != "latency_ms"
    }
    runs = [(tmp_path / d / "runs" / "keyword.trec").read_text("utf-8") for d in ("one", "many")]
    assert runs[0] == runs[1]


def test_retriever_tool_on_shards(docs: Path, tmp_path: Path) -> None:
    embedder = FakeEmbedder(dim=16)
    one = Index.build([docs], tmp_path / "one", embedder=embedder)
    many = Index.build([docs], tmp_path / "many", embedder=embedder, shards=4)
    results = []
    for index in (one, many):
        tool = create_retriever_tool(HybridRetriever.from_index(index, k=5), "notes", "Notes.")
        content, hits = tool.run_with_artifact({"query": "honey bees"})
        results.append((content, [(h.chunk_id, h.score) for h in hits]))
    assert results[0] == results[1] and results[0][1]
