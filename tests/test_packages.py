"""Package surface: exported names, import direction, lazy heavy imports."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import indexes
import parsers
import retrieval

ROOT = Path(__file__).resolve().parent.parent


def test_exports_resolve() -> None:
    for package in (parsers, indexes, retrieval):
        for name in package.__all__:
            assert getattr(package, name) is not None, f"{package.__name__}.{name}"


def test_top_level_exports_snapshot() -> None:
    assert sorted(indexes.__all__) == [
        "BM25Index", "CachedEmbedder", "Embedder", "EmbeddingCache", "Index", "IndexSettings",
        "SentenceTransformerEmbedder", "Tokenizer", "UpdateReport", "VectorIndex",
    ]  # fmt: skip
    assert {"create_retriever_tool", "HybridRetriever", "Hit", "fuse"} <= set(retrieval.__all__)


def _imports(package: str) -> set[str]:
    found: set[str] = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
    return found


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [("parsers", {"indexes", "retrieval"}), ("indexes", {"retrieval"})],
)
def test_imports_flow_one_way(package: str, forbidden: set[str]) -> None:
    assert not _imports(package) & forbidden


def test_importing_the_packages_loads_no_heavy_library() -> None:
    code = (
        "import sys, parsers, indexes, retrieval, retrieval.tools, retrieval.evaluation\n"
        "heavy = {'torch', 'sentence_transformers', 'faiss', 'transformers'} & set(sys.modules)\n"
        "print(sorted(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_missing_faiss_names_the_dependency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "faiss", None)
    with pytest.raises(parsers.MissingDependencyError, match="faiss"):
        indexes.VectorIndex(8)


def test_no_pickle_in_the_code() -> None:
    for package in ("parsers", "indexes", "retrieval"):
        assert "pickle" not in _imports(package)
        for path in (ROOT / package).rglob("*.py"):
            # the needle is split so this test itself is not a hit for pickle scanners
            assert "allow_pickle=" + "True" not in path.read_text(encoding="utf-8"), path
