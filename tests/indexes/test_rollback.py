"""Rollback: an earlier kept version becomes live again by the same pointer switch."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtools.indexes.errors import IndexLoadError
from ragtools.indexes.index import Index
from ragtools.indexes.store.versions import (
    current_version,
    list_versions,
    switch_version,
    write_version,
)
from ragtools.indexes.testing import FakeEmbedder
from ragtools.indexes.writer import IndexWriter
from ragtools.parsers import ConfigError, Document, split


def _writer(text: str):
    def write(directory: Path) -> None:
        (directory / "data.txt").write_text(text, encoding="utf-8")

    return write


def test_switch_makes_an_old_version_live_and_the_next_write_follows_the_newest(
    tmp_path: Path,
) -> None:
    root = tmp_path / "idx"
    first, second = (write_version(root, _writer(t), keep=3) for t in ("one", "two"))
    assert list_versions(root) == [first, second]
    assert switch_version(root, first.name) == first
    assert current_version(root) == first
    third = write_version(root, _writer("three"), keep=2)
    assert third.name == "v-000003" and current_version(root) == third
    assert list_versions(root) == [second, third]  # the newest two, the live one among them


def test_switch_to_an_unknown_version_is_a_config_error(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    write_version(root, _writer("one"))
    with pytest.raises(ConfigError, match="no version 'v-000007'; kept versions: v-000001"):
        switch_version(root, "v-000007")
    with pytest.raises(IndexLoadError):
        list_versions(tmp_path / "not-an-index")


def test_an_index_rolled_back_opens_the_old_chunks(tmp_path: Path) -> None:
    docs = [Document(text="Honey bees dance.", metadata={"source": "a.txt"})]
    index = Index.from_documents(docs, tmp_path / "i", embedder=FakeEmbedder(), keep_versions=3)
    first = current_version(index.path).name
    more = Document(text="Volcanoes erupt lava.", metadata={"source": "b.txt"})
    IndexWriter(index).add(split([more]))
    assert len(Index.open(index.path, embedder=FakeEmbedder())) == 2
    switch_version(index.path, first)
    reopened = Index.open(index.path, embedder=FakeEmbedder())
    assert [c.text for c in reopened.chunks] == ["Honey bees dance."]
    assert reopened.settings.keep_versions == 3
