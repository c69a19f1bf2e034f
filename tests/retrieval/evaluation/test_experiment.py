"""rag eval's index reuse: the same corpus and settings reuse the index; changed BM25 defaults
rebuild it, so a report never measures an index built under other defaults."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ragtools.indexes.keyword import _math as _bm25_math
from ragtools.indexes.store.versions import current_version
from ragtools.retrieval.evaluation import load_beir
from ragtools.retrieval.evaluation.experiment import open_or_build
from tests.retrieval.evaluation.test_beir import write_dataset


def test_index_is_reused_until_the_bm25_defaults_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = load_beir(write_dataset(tmp_path / "data"))
    first = open_or_build(dataset, tmp_path / "index", vector=False)
    built = current_version(tmp_path / "index")
    assert first.bm25 is not None and first.bm25.k3 == _bm25_math.DEFAULT_PARAMS["k3"]

    again = open_or_build(dataset, tmp_path / "index", vector=False)
    assert current_version(tmp_path / "index") == built
    assert again.bm25 is not None and again.bm25.params == first.bm25.params

    monkeypatch.setitem(_bm25_math.DEFAULT_PARAMS, "k3", math.inf)
    rebuilt = open_or_build(dataset, tmp_path / "index", vector=False)
    assert current_version(tmp_path / "index") != built
    assert rebuilt.bm25 is not None and rebuilt.bm25.k3 == math.inf
