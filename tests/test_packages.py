"""Package surface: exported names, lazy heavy imports and tool layer (the import direction
is tests/test_import_graph.py's)."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ragtools import indexes, parsers, retrieval

ROOT = Path(__file__).resolve().parent.parent


def test_exports_resolve() -> None:
    for package in (parsers, indexes, retrieval):
        for name in package.__all__:
            assert getattr(package, name) is not None, f"{package.__name__}.{name}"


def test_top_level_exports_snapshot() -> None:
    assert sorted(indexes.__all__) == [
        "BM25Index", "CachedEmbedder", "Embedder", "EmbeddingCache", "Index", "IndexSettings",
        "IndexState", "IndexWriter", "Ranking", "SentenceTransformerEmbedder", "Tokenizer",
        "UpdateReport", "VectorIndex", "WindowedVectorIndex",
    ]  # fmt: skip
    assert {"create_retriever_tool", "HybridRetriever", "Hit", "fuse", "Index"} <= set(
        retrieval.__all__
    )


def _imports(package: str) -> set[str]:
    found: set[str] = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(_ours(node.module))
            elif isinstance(node, ast.Import):
                found.update(_ours(alias.name) for alias in node.names)
    return found


def _ours(module: str) -> str:
    """``ragtools.indexes.keyword.bm25`` -> ``indexes``; any other module -> its top-level name."""
    parts = module.split(".")
    return parts[1] if parts[0] == "ragtools" and len(parts) > 1 else parts[0]


def test_importing_the_packages_loads_no_heavy_library() -> None:
    code = (
        "import sys, ragtools.parsers, ragtools.indexes, ragtools.retrieval\n"
        "import ragtools.retrieval.tools, ragtools.retrieval.evaluation\n"
        "heavy = {'torch', 'sentence_transformers', 'faiss', 'transformers'} & set(sys.modules)\n"
        "print(sorted(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _loaded_after(code: str) -> list[str]:
    """Our modules loaded by running ``code`` in a fresh interpreter."""
    code += "\nimport sys\nprint(' '.join(sorted(m for m in sys.modules if 'ragtools' in m)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


@pytest.mark.parametrize(
    "module",
    ["ragtools.retrieval", "ragtools.retrieval.cli", "ragtools.retrieval.integrations",
     "ragtools.retrieval.integrations.mcp", "ragtools.retrieval.evaluation"],
)  # fmt: skip
def test_importing_retrieval_loads_no_tool_module(module: str) -> None:
    loaded = _loaded_after(f"import {module}")
    assert module in loaded
    assert [m for m in loaded if m.startswith("ragtools.retrieval.tools")] == []


def test_the_tool_names_load_the_tool_layer_on_first_access() -> None:
    loaded = _loaded_after(
        "import ragtools.retrieval as r\n"
        "from ragtools.retrieval import create_retriever_tool, RetrieverInput\n"
        "from ragtools.retrieval.tools import retriever_tool\n"
        "assert create_retriever_tool is retriever_tool.create_retriever_tool\n"
        "assert RetrieverInput is r.RetrieverInput is retriever_tool.RetrieverInput\n"
        "assert {'create_retriever_tool', 'RetrieverInput', 'Hit'} <= set(dir(r))"
    )
    assert "ragtools.retrieval.tools.retriever_tool" in loaded
    assert "ragtools.retrieval.tools.qwen" in loaded  # the package registers Qwen's tools


def test_retrieval_exports_snapshot() -> None:
    """The lazy names are still exported: ``__all__`` is unchanged and each name resolves."""
    assert retrieval.__all__ == [
        "BaseRetriever", "CrossEncoderReranker", "Expansion", "Filter", "FrontPageRetriever",
        "Hit", "HybridRetriever", "Index", "IndexRetriever", "KeywordRetriever", "MMRReranker",
        "RankedChunks", "Ranker", "Reranker", "Retriever", "RetrieverInput", "VectorRetriever",
        "compile_filter", "create_retriever_tool", "distribution_based_score_fusion",
        "filter_mask", "fuse", "fuse_hits", "fuse_rankings", "reciprocal_rank_fusion",
        "relative_score_fusion", "retriever_for",
    ]  # fmt: skip
    assert set(retrieval.__all__) <= set(dir(retrieval))
    with pytest.raises(AttributeError, match="create_retriever_tools"):
        retrieval.create_retriever_tools  # noqa: B018 (a typo is an AttributeError)


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


def test_internal_imports_use_the_namespace() -> None:
    for package in ("parsers", "indexes", "retrieval"):
        bare = _bare_imports(package)
        assert not bare, f"{package} imports {sorted(bare)} without the ragtools. prefix"


def _bare_imports(package: str) -> set[str]:
    found: set[str] = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            found.update(n for n in names if n.split(".")[0] in {"parsers", "indexes", "retrieval"})
    return found


def test_a_users_own_packages_do_not_shadow_ours(tmp_path: Path) -> None:
    """A script beside its own parsers/, indexes/ and retrieval/ still gets ragtools'."""
    for name in ("parsers", "indexes", "retrieval"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("MINE = True\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("Ferns reproduce by spores.\n", encoding="utf-8")
    (tmp_path / "main.py").write_text(
        "import parsers\n"
        "from ragtools.retrieval import Index, KeywordRetriever\n"
        "assert parsers.MINE\n"
        "index = Index.build(['notes.md'], 'idx', vector=False, show_progress=False)\n"
        "print(KeywordRetriever(index).invoke('spores')[0].chunk.text.strip())\n",
        encoding="utf-8",
    )
    out = subprocess.run(
        [sys.executable, "main.py"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Ferns reproduce by spores."


@pytest.mark.slow
def test_the_wheel_installs_only_the_ragtools_namespace(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("ragtools-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
    assert tops == {"ragtools", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1]
                    + ".dist-info"}  # fmt: skip
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert "ragtools/__init__.py" not in names  # an implicit namespace
    assert {"ragtools/parsers/__init__.py", "ragtools/indexes/keyword/bm25.py"} <= names


def test_private_modules_declare_no_public_names() -> None:
    """A private module (``_name.py``) is imported by its package, not by users: an
    ``__all__`` there would advertise names that are not part of the public surface."""
    for package in ("parsers", "indexes", "retrieval"):
        for path in (ROOT / package).rglob("_*.py"):
            if path.name == "__init__.py":
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            targets = [
                target.id
                for node in tree.body
                if isinstance(node, ast.Assign)
                for target in node.targets
                if isinstance(target, ast.Name)
            ]
            assert "__all__" not in targets, path
