"""Manifest format 3: chunk sources relative to the source root; a format-2 index (absolute
sources, collapsed whitespace) still opens, and its next update re-parses every file."""

from __future__ import annotations

import json
from pathlib import Path

from ragtools.indexes import Index
from ragtools.indexes.sources import source_root
from ragtools.indexes.store.manifest import FORMAT_VERSION, SOURCE_ROOT, migrate
from ragtools.indexes.store.persist import _SELF, _self_digest
from ragtools.indexes.testing import FakeEmbedder
from tests.indexes.legacy import as_legacy

CODE = "Steps:\n\n    pip install ragtools\n    rag build docs/"


def _as_format_2(index: Index) -> None:
    """Rewrite the live manifest as format 2 wrote it: no source root."""
    path = as_legacy(index.path) / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    del manifest[SOURCE_ROOT]
    manifest["format_version"] = 2
    manifest[_SELF] = _self_digest(manifest)
    path.write_text(json.dumps(manifest), encoding="utf-8")


def test_source_root_of_one_or_several_sources(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "papers").mkdir()
    (tmp_path / "docs" / "a.md").write_text("a")
    assert source_root([tmp_path / "docs"]) == tmp_path / "docs"
    assert source_root([tmp_path / "docs", tmp_path / "papers"]) == tmp_path
    assert source_root([tmp_path / "docs" / "a.md"]) == tmp_path / "docs"


def test_format_2_index_opens_and_update_reparses_into_the_new_form(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "install.md").write_text(f"# Install\n\n{CODE}\n", encoding="utf-8")
    (docs / "notes.txt").write_text("Plain notes about retrieval.", encoding="utf-8")
    built = Index.build([docs], tmp_path / "idx", embedder=FakeEmbedder(dim=32))
    assert {c.source for c in built.chunks} == {"install.md", "notes.txt"}
    assert any(CODE in c.text for c in built.chunks)  # the indentation is stored
    _as_format_2(built)
    old = Index.open(tmp_path / "idx", embedder=FakeEmbedder(dim=32))
    assert old.manifest["format_version"] == FORMAT_VERSION
    assert old.manifest[SOURCE_ROOT] is None
    assert len(old.chunks) == len(built.chunks)  # it opens and holds what it held
    report = old.update()
    assert sorted(Path(p).name for p in report.changed) == ["install.md", "notes.txt"]
    assert report.unchanged == 0
    assert old.manifest[SOURCE_ROOT] == str(docs.resolve())
    again = old.update()  # now in the current form: nothing to re-parse
    assert again.unchanged == 2 and not again.changed


def test_migrate_2_to_3_sets_no_source_root() -> None:
    migrated = migrate({"format_version": 2, "settings": {}, "bm25": None})
    assert migrated["format_version"] == FORMAT_VERSION and migrated[SOURCE_ROOT] is None
