"""``rag tune``: finds planted best weights, writes them as a version, refuses bad input."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ragtools.indexes.errors import IndexStateError
from ragtools.indexes.index import Index
from ragtools.indexes.settings import FusionSettings
from ragtools.indexes.testing import FakeEmbedder
from ragtools.indexes.writer import IndexWriter
from ragtools.parsers import ConfigError, Document
from ragtools.retrieval.evaluation.tune import FEW_QUERIES, tune_fusion
from ragtools.retrieval.hybrid import DEFAULT_WEIGHTS, HybridRetriever

FILLER = ["amber", "basil", "cedar", "delta", "ember", "fjord", "grove", "heron"]
N_DOCS = 40


def _words(i: int) -> list[str]:
    return random.Random(i).sample(FILLER, 4)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Index, Path]:
    """Query ``i`` names document ``i``'s rare code word and the common words of another
    document: BM25 (idf) finds ``i``, the bag-of-words vectors the other one. So the planted
    best weights are on the keyword side, where the default 0.6 / 0.4 is not enough."""
    root = tmp_path_factory.mktemp("tune")
    docs = [
        Document(
            id=f"d{i}", text=f"code{i}x " + " ".join(_words(i)), metadata={"source": f"{i}.txt"}
        )
        for i in range(N_DOCS)
    ]
    index = Index.from_documents(docs, root / "index", embedder=FakeEmbedder(dim=64))
    data = root / "data"
    (data / "qrels").mkdir(parents=True)
    with (data / "queries.jsonl").open("w") as f:
        for i in range(N_DOCS):
            other = (i + 7) % N_DOCS
            text = f"code{i}x " + " ".join(_words(other) * 2)
            f.write(json.dumps({"_id": f"q{i}", "text": text}) + "\n")
    for split, ids in (("train", range(30)), ("test", range(30, N_DOCS))):
        lines = ["query-id\tcorpus-id\tscore"] + [f"q{i}\td{i}\t1" for i in ids]
        (data / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    return index, data


def test_tune_finds_the_planted_best_weights_and_warns(planted: tuple[Index, Path]) -> None:
    index, data = planted
    result = tune_fusion(index, data, depths=(100,))
    best = max(entry["nDCG@10"] for entry in result.grid)
    assert result.train["chosen"]["nDCG@10"] == pytest.approx(best)
    assert best == pytest.approx(1.0)  # the keyword half alone finds every planted document
    assert result.train["default"]["nDCG@10"] < best - 0.05  # what the default weights miss
    assert result.chosen.weights[0] >= 0.8 > result.chosen.weights[1]
    assert result.default.weights == DEFAULT_WEIGHTS
    assert len(result.warnings) == 1 and f"judge {FEW_QUERIES}" in result.warnings[0]
    provenance = result.chosen.provenance
    assert provenance["queries"] == 30 and provenance["split"] == "train"
    assert result.test is not None and result.test.num_queries == 10
    test_rows = {r.metric: r for r in result.test.rows}
    assert test_rows["nDCG@10"].mean > test_rows["nDCG@10"].baseline_mean


def test_tuned_fusion_is_a_new_version_the_hybrid_uses(
    planted: tuple[Index, Path], tmp_path: Path
) -> None:
    index, _ = planted
    fusion = FusionSettings(method="rrf", weights=(0.9, 0.1), candidate_k=100)
    before = len(index.chunks)
    IndexWriter(index).set_search_settings(fusion=fusion)
    assert index.settings.fusion == fusion and len(index.chunks) == before
    with Index.open(index.path, embedder=FakeEmbedder(dim=64)) as reopened:
        assert reopened.settings.fusion == fusion
        hybrid = HybridRetriever.from_index(reopened)
        assert hybrid.fusion == "rrf" and hybrid.weights == [0.9, 0.1]
        assert hybrid.candidate_k == 100
        assert HybridRetriever.from_index(reopened, weights=None).weights is None
    with pytest.raises(ConfigError, match="only \\['fusion'\\]"):
        IndexWriter(index).set_search_settings(chunk_size=5)
    IndexWriter(index).set_search_settings(fusion=None)
    assert HybridRetriever.from_index(index).weights == list(DEFAULT_WEIGHTS)


def _dataset(root: Path, qrels: list[str], n_queries: int = 12) -> Path:
    (root / "qrels").mkdir(parents=True)
    with (root / "queries.jsonl").open("w") as f:
        for i in range(n_queries):
            f.write(json.dumps({"_id": f"q{i}", "text": f"code{i}x"}) + "\n")
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(qrels))
    return root


def test_qrels_naming_unknown_documents_are_refused(
    planted: tuple[Index, Path], tmp_path: Path
) -> None:
    index, _ = planted
    data = _dataset(tmp_path, [f"q{i}\td{i}\t1" for i in range(11)] + ["q11\tnope-17\t1"])
    with pytest.raises(ConfigError, match=r"1 document\(s\) the index does not hold.*nope-17"):
        tune_fusion(index, data)


def test_judging_by_source_path_works(planted: tuple[Index, Path], tmp_path: Path) -> None:
    index, _ = planted
    data = _dataset(tmp_path, [f"q{i}\t{i}.txt\t1" for i in range(12)])
    result = tune_fusion(index, data, depths=(100,))
    assert result.train["chosen"]["nDCG@10"] == pytest.approx(1.0)


def test_too_few_queries_are_refused(planted: tuple[Index, Path], tmp_path: Path) -> None:
    index, _ = planted
    data = _dataset(tmp_path, [f"q{i}\td{i}\t1" for i in range(5)])
    with pytest.raises(ConfigError, match=r"5 judged queries.*at least 10"):
        tune_fusion(index, data)


def test_unknown_query_ids_are_refused(planted: tuple[Index, Path], tmp_path: Path) -> None:
    index, _ = planted
    data = _dataset(tmp_path, [f"q{i}\td{i}\t1" for i in range(12)] + ["q99\td1\t1"])
    with pytest.raises(ConfigError, match=r"queries\.jsonl lacks: q99"):
        tune_fusion(index, data)


def test_an_index_without_a_half_is_refused(tmp_path: Path) -> None:
    docs = [Document(id="a", text="some words", metadata={"source": "a.txt"})]
    keyword_only = Index.from_documents(docs, tmp_path / "k", vector=False)
    data = _dataset(tmp_path / "d", [f"q{i}\ta\t1" for i in range(12)])
    with pytest.raises(IndexStateError, match="no vector half \\(built with --no-vector\\)"):
        tune_fusion(keyword_only, data)
    vector_only = Index.from_documents(
        docs, tmp_path / "v", keyword=False, embedder=FakeEmbedder(dim=8)
    )
    with pytest.raises(IndexStateError, match="no keyword half"):
        tune_fusion(vector_only, data)
