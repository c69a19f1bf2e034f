"""Sources people can use: relative to the build root, filterable by folder, type and the
path as typed, and never an absolute path in what a model reads (issue 18)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragtools.indexes.store.manifest import SOURCE_ROOT
from ragtools.indexes.testing import FakeEmbedder
from ragtools.parsers import ConfigError
from ragtools.retrieval import HybridRetriever, Index, KeywordRetriever, create_retriever_tool
from ragtools.retrieval.source_paths import resolve_source_paths

GUIDE = """# Guide

## Install

### From source

Clone the repository and install the retrieval package from source with pip.
"""


@pytest.fixture
def tree(tmp_path: Path, pdf_dir: Path) -> Path:
    root = tmp_path / "project"
    (root / "docs").mkdir(parents=True)
    (root / "papers").mkdir()
    (root / "docs" / "a.md").write_text("Retrieval notes about the package.\n", encoding="utf-8")
    (root / "docs" / "guide.md").write_text(GUIDE, encoding="utf-8")
    shutil.copy(pdf_dir / "002-trivial-libre-office-writer.pdf", root / "papers" / "lorem.pdf")
    return root


def _sources(hits: list) -> set[str]:
    return {hit.chunk.source for hit in hits}


def test_sources_relative_to_the_roots_and_filters(tree: Path, tmp_path: Path) -> None:
    index = Index.build(
        [tree / "docs", tree / "papers"], tmp_path / "idx", embedder=FakeEmbedder(dim=64)
    )
    assert {c.source for c in index.chunks} == {"docs/a.md", "docs/guide.md", "papers/lorem.pdf"}
    assert index.manifest[SOURCE_ROOT] == str(tree.resolve())
    for chunk in index.chunks:
        assert chunk.metadata["path"] == str((tree / chunk.source).resolve())
    retriever = HybridRetriever.from_index(index, k=10)
    query = "retrieval package lorem ipsum"
    assert _sources(retriever.invoke(query, filter={"source": {"$prefix": "docs/"}})) == {
        "docs/a.md",
        "docs/guide.md",
    }
    assert _sources(retriever.invoke(query, filter={"file_type": "pdf"})) == {"papers/lorem.pdf"}
    assert _sources(retriever.invoke(query, filter={"source": {"$glob": "*/*.md"}})) == {
        "docs/a.md",
        "docs/guide.md",
    }
    # gitignore wildcards, as the build's include/exclude: * stays within one folder
    assert _sources(retriever.invoke(query, filter={"source": {"$glob": "*.md"}})) == {
        "docs/a.md",
        "docs/guide.md",
    }
    assert retriever.invoke(query, filter={"source": {"$glob": "/*.md"}}) == []
    assert retriever.invoke(query, filter={"source": {"$glob": "d*/g*/*.md"}}) == []
    assert _sources(retriever.invoke(query, filter={"source": {"$glob": "**/g?ide.md"}})) == {
        "docs/guide.md"
    }
    hits = retriever.invoke(query, filter={"headings": {"$contains": "From source"}})
    assert _sources(hits) == {"docs/guide.md"}


def test_readme_filter_matches_the_path_as_typed(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree)
    index = Index.build(["docs/"], tmp_path / "idx", embedder=FakeEmbedder(dim=64))
    assert {c.source for c in index.chunks} == {"a.md", "guide.md"}  # relative to docs/
    retriever = KeywordRetriever.from_index(index, k=5)
    query = "retrieval package"
    # the README's filter, typed from the project directory
    hits = retriever.invoke(query, filter={"source": {"$in": ["docs/a.md"]}})
    assert _sources(hits) == {"a.md"}
    assert _sources(retriever.invoke(query, filter={"source": "a.md"})) == {"a.md"}
    absolute = str((tree / "docs" / "guide.md").resolve())
    assert _sources(retriever.invoke(query, filter={"source": absolute})) == {"guide.md"}
    assert _sources(retriever.invoke(query, filter={"source": {"$prefix": "docs/"}})) == {
        "a.md",
        "guide.md",
    }
    assert retriever.invoke(query, filter={"source": "docs/missing.md"}) == []


def test_resolve_source_paths_leaves_other_fields_and_unknown_paths(tmp_path: Path) -> None:
    spec = {"$or": [{"source": "nope/x.md"}, {"page": {"$gte": 2}}], "title": "docs/a.md"}
    assert resolve_source_paths(spec, str(tmp_path)) == spec
    assert resolve_source_paths(spec, None) is spec
    inside = str(tmp_path / "sub" / "x.md")
    assert resolve_source_paths({"source": {"$ne": inside}}, str(tmp_path)) == {
        "source": {"$ne": "sub/x.md"}
    }


def test_text_operators_reject_non_strings(tree: Path, tmp_path: Path) -> None:
    index = Index.build([tree / "docs"], tmp_path / "idx", embedder=FakeEmbedder(dim=64))
    retriever = KeywordRetriever.from_index(index, k=5)
    for op in ("$prefix", "$glob", "$contains"):
        with pytest.raises(ConfigError, match=rf"filter\.source\.\{op}: \{op} takes a string"):
            retriever.invoke("x", filter={"source": {op: 3}})


def test_tool_content_cites_without_absolute_paths(tree: Path, tmp_path: Path) -> None:
    index = Index.build(
        [tree / "docs", tree / "papers"], tmp_path / "idx", embedder=FakeEmbedder(dim=64)
    )
    tool = create_retriever_tool(
        HybridRetriever.from_index(index, k=10), "search_docs", "Search the project documents."
    )
    message = tool.invoke(
        {"name": "search_docs", "args": {"query": "install from source lorem"}, "id": "c1",
         "type": "tool_call"}
    )  # fmt: skip
    content = message.content
    assert str(tmp_path) not in content and str(tree.resolve()) not in content
    assert "/tmp" not in content and str(Path.home()) + "/" not in content
    headers = [line for line in content.splitlines() if line.startswith("[")]
    assert any(
        h.startswith("[") and "] docs/guide.md › Guide › Install › From source (chunk " in h
        for h in headers
    )
    assert any("] papers/lorem.pdf, page 1 (chunk " in h for h in headers)
    # the application still has the absolute path
    paths = {hit.chunk.metadata["path"] for hit in message.artifact}
    assert str((tree / "papers" / "lorem.pdf").resolve()) in paths
    json.dumps(content)  # plain text
