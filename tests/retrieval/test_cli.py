"""The real ``rag`` console script, run in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragtools.indexes.bm25 import BM25Index
from ragtools.indexes.bundle import Index
from ragtools.parsers import Chunk

RAG = Path(sys.executable).with_name("rag")


def rag(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run(
        [str(RAG), *args], capture_output=True, text=True, env=env, timeout=600, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"rag {args} failed ({proc.returncode}): {proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs")
    (root / "bees.txt").write_text(
        "Honey bees communicate the direction of flowers with a waggle dance.", encoding="utf-8"
    )
    (root / "tides.md").write_text(
        "# Tides\n\nThe moon's gravity raises tides in the oceans twice a day.", encoding="utf-8"
    )
    (root / "broken.pdf").write_bytes(b"%PDF-1.4\n% nothing else\n")
    return root


@pytest.fixture(scope="module")
def keyword_index(docs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kw") / "index"
    proc = rag("build", str(docs), "--out", str(out), "--no-vector")
    assert "2 chunks from 3 files (0 skipped, 1 failed)" in proc.stdout
    assert "broken.pdf" in proc.stderr
    return out


def test_keyword_search_json(keyword_index: Path) -> None:
    proc = rag("search", str(keyword_index), "why do tides happen", "--mode", "keyword", "--json")
    hits = json.loads(proc.stdout)
    assert hits[0]["chunk"]["metadata"]["source"].endswith("tides.md")
    assert hits[0]["rank"] == 1 and "bm25" in hits[0]["scores"]


def test_search_with_filter_and_text_output(keyword_index: Path) -> None:
    spec = json.dumps({"source": {"$nin": [str(Path("x"))]}})
    proc = rag("search", str(keyword_index), "bees dance", "--mode", "keyword", "--filter", spec)
    assert "bees.txt" in proc.stdout.splitlines()[0]


def test_hybrid_on_a_keyword_only_index_falls_back(keyword_index: Path) -> None:
    proc = rag("search", str(keyword_index), "moon gravity", "--json")
    assert json.loads(proc.stdout)[0]["chunk"]["metadata"]["source"].endswith("tides.md")


def test_info(keyword_index: Path) -> None:
    info = json.loads(rag("info", str(keyword_index), "--json").stdout)
    assert info["counts"]["chunks"] == 2
    assert info["format"] == "ragtools-index"
    assert info["settings"]["vector"] is False
    assert info["settings"]["bm25"] == {}  # the defaults, which info spells out:
    assert info["bm25"] == BM25Index().params


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("search", "/no/such/index", "q"), "/no/such/index"),
        (("info", "/no/such/index"), "/no/such/index"),
        (("build", "/no/such/docs", "--out", "/tmp/never-built"), "/no/such/docs"),
    ],
)
def test_errors_are_one_line_and_exit_2(args: tuple[str, ...], needle: str) -> None:
    proc = rag(*args, check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and lines[0].startswith("rag: error:")


def test_messages_name_flags_not_python_arguments(pdf_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "locked.pdf").write_bytes((pdf_dir / "libreoffice-writer-password.pdf").read_bytes())
    (folder / "notes.txt").write_text("Notes on encrypted papers.", encoding="utf-8")
    proc = rag("build", str(folder), "--out", str(tmp_path / "index"), "--no-vector")
    failed = [line for line in proc.stderr.splitlines() if "locked.pdf" in line]
    assert len(failed) == 1 and "pass --password PASSWORD" in failed[0], proc.stderr
    assert "password=" not in proc.stderr


def test_bad_filter_and_bad_option(keyword_index: Path) -> None:
    proc = rag("search", str(keyword_index), "q", "--filter", "{nope", check=False)
    assert proc.returncode == 2 and "--filter is not valid JSON" in proc.stderr
    proc = rag("search", str(keyword_index), "q", "--filter", '{"page": {"$near": 1}}', check=False)
    assert proc.returncode == 2 and "$near" in proc.stderr
    proc = rag("search", str(keyword_index), "q", "--mode", "psychic", check=False)
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


def test_verbose_adds_a_traceback() -> None:
    proc = rag("--verbose", "info", "/no/such/index", check=False)
    assert proc.returncode == 2 and "Traceback" in proc.stderr


def test_damaged_index_is_reported(keyword_index: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(keyword_index, copy)
    version = (copy / "CURRENT").read_text().strip()
    store = copy / "versions" / version / "chunks.jsonl"
    store.write_text(store.read_text() + "tampered\n")
    proc = rag("search", str(copy), "bees", "--mode", "keyword", check=False)
    assert proc.returncode == 2 and "chunks.jsonl" in proc.stderr and "checksum" in proc.stderr


@pytest.mark.slow
def test_build_and_hybrid_search_with_the_default_model(docs: Path, tmp_path: Path) -> None:
    out = tmp_path / "index"
    rag("build", str(docs), "--out", str(out), "--chunk-size", "400", "--chunk-overlap", "40")
    hits = json.loads(rag("search", str(out), "insects that dance", "--json", "-k", "2").stdout)
    assert hits[0]["chunk"]["metadata"]["source"].endswith("bees.txt")
    assert {"fused", "vector"} <= set(hits[0]["scores"])
    info = json.loads(rag("info", str(out), "--json").stdout)
    assert info["embedder"]["model_id"].endswith("all-MiniLM-L6-v2")
    assert info["embedder"]["dim"] == 384


def test_eval_and_build_index_the_same_beir_text(tmp_path: Path) -> None:
    """``rag eval`` and ``rag build corpus.jsonl`` read a BEIR corpus through one loader: the
    same chunk ids, texts (NFKC, whitespace) and metadata (the title the boost reads)."""
    data = tmp_path / "tiny"
    (data / "qrels").mkdir(parents=True)
    corpus = [
        {
            "_id": "d1",
            "title": "The \ufb01sh  title",
            "text": "Scienti\ufb01c\u00a0text\r\n\r\n\r\nend\t.",
        },
        {
            "_id": "d2",
            "title": "",
            "text": "  \uff21\uff22 full-width bees  ",
            "metadata": {"y": 1},
        },
        {"_id": "d3", "title": "Tides", "text": "The moon\u2019s gravity raises tides."},
    ]
    lines = [json.dumps(record) for record in corpus]
    (data / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    query = {"_id": "q1", "text": "scientific fish"}
    (data / "queries.jsonl").write_text(json.dumps(query) + "\n", encoding="utf-8")
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    out = tmp_path / "eval-out"
    rag("eval", "--dataset", str(data), "--retrievers", "bm25", "--out", str(out))
    built = tmp_path / "built"
    options = ("--no-vector", "--chunk-size", "12000", "--chunk-overlap", "0")
    rag("build", str(data / "corpus.jsonl"), "--out", str(built), *options)

    evaluated, indexed = Index.open(out / "index").chunks, Index.open(built).chunks
    assert (
        [c.text for c in evaluated]
        == [c.text for c in indexed]
        == [
            "The fish  title\n\nScientific text\n\nend\t.",  # NFKC, layout kept
            "AB full-width bees",
            "Tides\n\nThe moon\u2019s gravity raises tides.",
        ]
    )
    file_keys = {"source", "path", "file_type", "mtime", "size"}  # the loader's, about the file

    def described(chunk: Chunk) -> tuple[str, str, dict[str, object]]:
        kept = {k: v for k, v in chunk.metadata.items() if k not in file_keys}
        return chunk.id, chunk.doc_id, kept

    assert [described(c) for c in evaluated] == [described(c) for c in indexed]
    assert indexed[0].metadata["source"] == "corpus.jsonl"  # a single file: its name
    assert [c.doc_id for c in evaluated] == ["d1", "d2", "d3"]
    assert evaluated[0].metadata["title"] == "The fish  title"


def test_search_accepts_the_eval_names_and_their_aliases(keyword_index: Path) -> None:
    """rag search --mode and rag eval --retrievers share names; bm25 is keyword's alias."""
    keyword = rag("search", str(keyword_index), "tides", "--mode", "keyword", "--json").stdout
    assert rag("search", str(keyword_index), "tides", "--mode", "bm25", "--json").stdout == keyword


def test_serve_runs_blas_single_threaded_once_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    from threadpoolctl import threadpool_info, threadpool_limits

    from ragtools.retrieval import cli
    from ragtools.retrieval.integrations import mcp

    seen: list[int] = []

    def fake_serve(paths: list[str], *, on_ready: object, **options: object) -> None:
        assert callable(on_ready)
        on_ready()
        seen.extend(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")

    monkeypatch.setattr(mcp, "serve", fake_serve)
    with threadpool_limits(limits=None):  # gives this process its BLAS threads back after
        assert cli.main(["serve", "some-index"]) == 0
    assert seen and set(seen) == {1}
