"""Hostile arguments: deep filters and undecodable bytes end in one line, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.filters import MAX_FILTER_DEPTH, compile_filter

RAG = Path(sys.executable).with_name("rag")
CAFE = b"caf\xe9.txt"  # a Latin-1 file name: not UTF-8


def rag(*args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run(
        [os.fsencode(RAG), *args], capture_output=True, env=env, timeout=600, check=False
    )


def _nested_not(depth: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"page": 1}
    for _ in range(depth):
        spec = {"$not": spec}
    return spec


def test_filter_nesting_past_the_limit_is_a_config_error() -> None:
    compile_filter(_nested_not(MAX_FILTER_DEPTH - 1))  # within the limit: fine
    with pytest.raises(ConfigError, match=f"nested more than {MAX_FILTER_DEPTH} levels"):
        compile_filter(_nested_not(5_000))


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    docs = root / "docs"
    docs.mkdir()
    (docs / "bees.txt").write_text("Honey bees dance to point at flowers.", encoding="utf-8")
    (docs / os.fsdecode(CAFE)).write_text("Espresso is brewed under pressure.", encoding="utf-8")
    out = root / "index"
    proc = rag("build", str(docs), "--out", str(out), "--no-vector")
    assert proc.returncode == 0, proc.stderr
    assert b"2 chunks from 2 files (0 skipped, 0 failed)" in proc.stdout
    return out


def test_a_filter_nested_330_deep_is_one_line(index: Path) -> None:
    spec = json.dumps(_nested_not(330))
    proc = rag("search", str(index), "bees", "--mode", "keyword", "--filter", spec)
    lines = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1
    # JSON5's recursive parser gives up first; either way one line naming the nesting limit
    assert lines[0] == "rag: error: --filter is nested too deep (at most 32 levels)"


def test_an_undecodable_query_byte_is_replaced(index: Path) -> None:
    proc = rag("search", str(index), b"bees \xff", "--json")  # hybrid mode, the default
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["chunk"]["metadata"]["source"].endswith("bees.txt")


def test_a_source_name_that_is_not_utf8_is_printed(index: Path) -> None:
    proc = rag("search", str(index), "espresso", "--mode", "keyword", "--json")
    assert proc.returncode == 0, proc.stderr
    source = json.loads(proc.stdout)[0]["chunk"]["metadata"]["source"]
    assert os.fsencode(source).endswith(CAFE)  # the escape reads back to the same name
    proc = rag("search", str(index), "espresso", "--mode", "keyword")
    assert proc.returncode == 0 and b"caf\\udce9.txt" in proc.stdout


def test_an_mcp_result_naming_a_source_that_is_not_utf8_serialises(index: Path) -> None:
    pytest.importorskip("mcp")
    from ragtools.indexes.bundle import Index
    from ragtools.retrieval.integrations.mcp import _result
    from ragtools.retrieval.keyword import KeywordRetriever
    from ragtools.retrieval.tools.retriever_tool import format_hits

    hits = KeywordRetriever(Index.open(index), k=1).invoke("espresso")
    assert os.fsencode(hits[0].chunk.source).endswith(CAFE)
    result = _result(format_hits(hits), {"hits": [h.model_dump(mode="json") for h in hits]})
    wire = json.loads(result.model_dump_json(by_alias=True, exclude_none=True))
    assert wire["content"][0]["text"].count("caf\\udce9.txt") == 1
    assert wire["structuredContent"]["hits"][0]["chunk"]["metadata"]["source"].endswith(
        "caf\\udce9.txt"
    )


def test_an_undecodable_filter_byte_is_replaced(index: Path) -> None:
    spec = b'{"source": "caf\xe9.txt"}'  # the bytes of the Latin-1 name, as a shell passes them
    proc = rag("search", str(index), "espresso", "--mode", "keyword", "--json", "--filter", spec)
    assert proc.returncode == 0 and proc.stderr == b""
    # replaced by U+FFFD, so it names no stored source (those keep their escapes) and matches none
    assert json.loads(proc.stdout) == []
