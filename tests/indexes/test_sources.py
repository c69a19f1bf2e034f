"""Index builds record their source selection; updates select the same files with it."""

from __future__ import annotations

from pathlib import Path

from ragtools.indexes.bundle import Index
from ragtools.indexes.testing import FakeEmbedder
from ragtools.parsers import Selection


def test_update_reuses_the_recorded_selection_and_keeps_skips_apart(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "drafts").mkdir(parents=True)
    (docs / "a.md").write_text("# A\n\nAlpha text.")
    (docs / "drafts" / "d.md").write_text("# D\n\nDraft text.")
    (docs / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 4)
    rules = Selection(exclude=("drafts/",))
    index = Index.build([docs], tmp_path / "i", embedder=FakeEmbedder(), selection=rules)
    root = docs.resolve()
    assert index.selection == rules
    assert [c.metadata["path"] for c in index.chunks] == [str(root / "a.md")]
    assert index.failures == []
    assert index.skipped == [
        (str(root / "drafts"), "excluded by pattern"),
        (str(root / "pic.png"), "image (png): not text, and no parser reads it"),
    ]
    assert index.manifest["counts"]["files"] == 1 and index.manifest["counts"]["skipped"] == 2
    (docs / "drafts" / "e.md").write_text("# E\n\nAnother draft.")
    (docs / "b.md").write_text("# B\n\nBeta text.")
    reopened = Index.open(tmp_path / "i", embedder=FakeEmbedder())
    report = reopened.update()
    assert report.added == [str(root / "b.md")] and report.changed == report.removed == []
    assert report.unchanged == 2  # a.md, and pic.png: skipped, not parsed again
    assert report.skipped == index.skipped
    assert reopened.skipped == index.skipped and reopened.selection == rules
