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
        "BM25Index", "CachedEmbedder", "DimensionMismatchError", "Embedder", "EmbeddingCache",
        "Index", "IndexLoadError", "IndexSettings", "IndexState", "IndexStateError",
        "IndexVersionError", "IndexWriter", "Ranking", "SentenceTransformerEmbedder",
        "Tokenizer", "UpdateReport", "VectorIndex", "WindowedVectorIndex",
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
        "RankedChunks", "Ranker", "Reranker", "Retriever", "RetrieverInput", "ToolInputError",
        "VectorRetriever",
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


def _readme_block(language: str, after: str) -> str:
    """The first fenced ``language`` block of the README after the line ``after``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    rest = text[text.index(after) :]
    start = rest.index(f"```{language}\n") + len(f"```{language}\n")
    return rest[start : rest.index("```\n", start)]


@pytest.mark.slow
@pytest.mark.timeout(2400)  # installs PyTorch and the rest into a new venv, then builds
def test_the_wheel_with_the_core_only_runs_the_readme_quickstart(tmp_path: Path) -> None:
    """#36: ``pip install ragtools`` as a user does it: the built wheel in a new venv (no
    system site-packages, no extra), then the README's tour and its Python example."""
    import os
    import shutil

    # Built from a copy of the sources: setuptools reuses a checkout's build/ folder and
    # copies only files newer than what it holds there, so a stale build/ would be shipped.
    source = tmp_path / "source"
    shutil.copytree(
        ROOT, source, ignore=shutil.ignore_patterns(".*", "build", "*.egg-info", "__pycache__")
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "dist"), str(source)],
        check=True, capture_output=True,
    )  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("ragtools-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    # torch's CPU build first, as scripts/setup.sh does, so no CUDA wheels come in
    subprocess.run([*pip, "torch==2.13.0"], check=True, capture_output=True)
    subprocess.run([*pip, f"ragtools[core] @ {wheel.as_uri()}"], check=True, capture_output=True)
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=freeze"],
        check=True, capture_output=True, text=True,
    ).stdout.lower()  # fmt: skip
    for extra_only in ("mcp==", "langchain-core==", "pytest==", "python-docx==", "ray=="):
        assert extra_only not in listed, extra_only

    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(ROOT / "README.md", work)
    shutil.copytree(ROOT / "parsers", work / "parsers", ignore=shutil.ignore_patterns("__py*"))
    tour = _readme_block("bash", "## A five-minute tour").splitlines()
    serve = [line for line in tour if line.startswith("rag serve")]
    steps = [line for line in tour if not line.startswith(("source ", "rag serve"))]
    env = {
        **os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VIRTUAL_ENV": str(venv),
    }  # fmt: skip
    env.pop("PYTHONPATH", None)
    script = "set -euo pipefail\n" + "\n".join(steps)
    ran = subprocess.run(
        ["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=900
    )
    assert ran.returncode == 0, ran.stderr
    assert "built my-index" in ran.stdout and "rolled back" in ran.stdout
    assert len((work / "answers.jsonl").read_text().splitlines()) == 2
    # rag serve needs the mcp extra: the core says which one to install
    served = subprocess.run(
        ["bash", "-c", serve[0]], cwd=work, env=env, capture_output=True, text=True, timeout=300
    )
    assert served.returncode == 2 and "ragtools[mcp]" in served.stderr, served.stderr
    example = _readme_block("python", "## A five-minute tour")
    shown = subprocess.run(
        [str(venv / "bin" / "python"), "-c", example], cwd=work, env=env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "hits from {'README.md'}" in shown.stdout and "[1] README.md" in shown.stdout


def test_what_the_readme_commands_write_is_ignored_by_git() -> None:
    """Every folder or file the README's commands write at the repository root (``--out X``,
    ``> file``) is in ``.gitignore``, so following the README leaves ``git status`` clean."""
    import re

    import pathspec

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = "\n".join(re.findall(r"```bash\n(.*?)```", readme, re.S))
    written = set(re.findall(r"--out (\S+)", commands)) | set(re.findall(r" > (\S+)", commands))
    assert {"my-index", "eval-out", "compare-out", "pdf-index", "answers.jsonl"} <= written
    ignore = pathspec.GitIgnoreSpec.from_lines((ROOT / ".gitignore").read_text().splitlines())
    for name in written:
        probe = name.rstrip("/") + ("" if "." in name else "/x")  # a folder's file, or the file
        assert ignore.match_file(probe), name
