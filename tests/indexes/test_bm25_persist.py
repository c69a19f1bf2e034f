"""BM25Index save/load: round trips, memory mapping, and damaged files named in errors."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragtools.indexes.errors import IndexLoadError, IndexVersionError
from ragtools.indexes.keyword.bm25 import BM25Index
from ragtools.indexes.store.persist import write_manifest
from ragtools.indexes.text.tokenize import Tokenizer
from ragtools.parsers.errors import ConfigError

TEXTS = [
    "Cells divide by mitosis.",
    "Running cells need energy.",
    "Mitochondria produce energy for cells.",
    "大熊猫生活在四川。",
    "Energy drinks are not for cells.",
]
QUERIES = ["cell energy", "mitosis", "熊猫", "drinks cells", "nothing matches"]


def results(index: BM25Index) -> list[tuple[list[int], list[float]]]:
    return [(r.tolist(), s.tolist()) for r, s in index.search_batch(QUERIES, k=10)]


def reseal_params(directory: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Edit a saved index's params and write its manifest again, sealed with a valid checksum
    (as an older version, or a bad writer, would have produced it)."""
    manifest = json.loads((directory / "bm25.json").read_text())
    data = {key: manifest[key] for key in ("params", "n_rows", "n_live", "n_terms")}
    edit(data["params"])
    write_manifest(
        directory,
        "bm25.json",
        fmt="bm25",
        version=1,
        files=manifest["files"],
        data=data,
        sealed=True,
    )


@pytest.fixture
def index() -> BM25Index:
    built = BM25Index(
        Tokenizer(stopwords="lucene", min_length=1), variant="bm25plus", k1=1.2, b=0.6
    )
    built.add(TEXTS)
    built.delete([1])
    return built


@pytest.mark.parametrize("mmap", [False, True])
def test_round_trip_keeps_settings_rows_and_scores(
    index: BM25Index, tmp_path: Path, mmap: bool
) -> None:
    manifest = index.save(tmp_path / "new" / "bm25")
    assert manifest == tmp_path / "new" / "bm25" / "bm25.json"
    loaded = BM25Index.load(tmp_path / "new" / "bm25", mmap=mmap)
    assert loaded.params == index.params
    assert loaded.tokenizer == index.tokenizer
    assert (loaded.n_rows, len(loaded)) == (index.n_rows, len(index))
    assert loaded.deleted.tolist() == index.deleted.tolist()
    assert results(loaded) == results(index)
    for query in QUERIES:
        np.testing.assert_array_equal(loaded.get_scores(query), index.get_scores(query))
    # The loaded index stays mutable, even when its arrays are read-only memory maps.
    for target in (index, loaded):
        assert target.add(["Energy for new cells"]).tolist() == [5]
        target.delete([0])
    assert results(loaded) == results(index)


def test_from_arrays_rebuilds_the_index_from_its_arrays(index: BM25Index) -> None:
    """``arrays()`` and ``from_arrays`` round-trip in memory, as ``save``/``load`` on disk:
    same rows, deletions and scores, and a mutable result."""
    settings = {**index.weight_params, "k3": index.k3}
    copy = BM25Index.from_arrays(
        index.corpus().vocab.terms, index.arrays(), tokenizer=index.tokenizer, **settings
    )
    assert copy.params == index.params
    assert copy.deleted.tolist() == index.deleted.tolist()
    assert results(copy) == results(index)
    for query in QUERIES:
        np.testing.assert_array_equal(copy.get_scores(query), index.get_scores(query))
    for target in (index, copy):
        target.add(["Energy for new cells"])
    assert results(copy) == results(index)


def test_from_arrays_refuses_bad_settings(index: BM25Index) -> None:
    with pytest.raises(ConfigError, match="variant"):
        BM25Index.from_arrays(index.corpus().vocab.terms, index.arrays(), variant="bm99")


def test_saving_over_the_memory_mapped_source(index: BM25Index, tmp_path: Path) -> None:
    index.save(tmp_path)
    mapped = BM25Index.load(tmp_path, mmap=True)
    mapped.add(["more energy for cells"])
    mapped.save(tmp_path)  # rewrites the files its own arrays are mapped from
    assert results(mapped) == results(BM25Index.load(tmp_path, mmap=True))
    assert results(mapped) != results(index)


def test_files_are_json_and_plain_npy(index: BM25Index, tmp_path: Path) -> None:
    index.save(tmp_path)
    manifest = json.loads((tmp_path / "bm25.json").read_text())
    assert manifest["format"] == "bm25" and manifest["format_version"] == 1
    assert manifest["params"] == index.params
    assert (manifest["n_rows"], manifest["n_live"]) == (5, 4)
    for name in manifest["files"]:
        if name.endswith(".npy"):
            np.load(tmp_path / name, allow_pickle=False)
    assert isinstance(json.loads((tmp_path / "vocab.json").read_text()), list)


def test_saving_twice_and_loading_an_unsearched_index(tmp_path: Path) -> None:
    fresh = BM25Index()
    fresh.add(TEXTS)
    fresh.save(tmp_path)
    fresh.save(tmp_path)
    assert results(BM25Index.load(tmp_path)) == results(fresh)


@pytest.mark.parametrize("name", ["weights.npy", "docs.npy", "vocab.json", "deleted.npy"])
def test_tampered_file_is_named(index: BM25Index, tmp_path: Path, name: str) -> None:
    index.save(tmp_path)
    path = tmp_path / name
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(IndexLoadError, match="checksum") as excinfo:
        BM25Index.load(tmp_path)
    assert excinfo.value.path == str(path)


def test_truncated_file_is_named(index: BM25Index, tmp_path: Path) -> None:
    index.save(tmp_path)
    path = tmp_path / "indptr.npy"
    path.write_bytes(path.read_bytes()[:20])
    with pytest.raises(IndexLoadError, match=r"indptr\.npy"):
        BM25Index.load(tmp_path, mmap=True)
    with pytest.raises(IndexLoadError, match=r"indptr\.npy"):
        BM25Index.load(tmp_path, verify=False)


def test_newer_version_raises_version_error(index: BM25Index, tmp_path: Path) -> None:
    index.save(tmp_path)
    manifest = json.loads((tmp_path / "bm25.json").read_text())
    manifest["format_version"] = 99
    (tmp_path / "bm25.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexVersionError, match="newer") as excinfo:
        BM25Index.load(tmp_path)
    assert excinfo.value.path == str(tmp_path / "bm25.json")


def test_missing_directory_or_file(index: BM25Index, tmp_path: Path) -> None:
    with pytest.raises(IndexLoadError, match="missing"):
        BM25Index.load(tmp_path / "nowhere")
    index.save(tmp_path)
    (tmp_path / "tf.npy").unlink()
    with pytest.raises(IndexLoadError, match="missing") as excinfo:
        BM25Index.load(tmp_path)
    assert excinfo.value.path == str(tmp_path / "tf.npy")


def test_edited_manifest_is_named(index: BM25Index, tmp_path: Path) -> None:
    index.save(tmp_path)
    manifest = json.loads((tmp_path / "bm25.json").read_text())
    manifest["params"]["k1"] = 9.0
    (tmp_path / "bm25.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexLoadError, match="manifest is corrupt") as excinfo:
        BM25Index.load(tmp_path, verify=False)
    assert excinfo.value.path == str(tmp_path / "bm25.json")


@pytest.mark.parametrize(
    ("field", "value"),
    [("variant", "bm26"), ("tokenizer", "ab"), ("tokenizer", 5), ("tokenizer", {"colour": 1})],
)
def test_invalid_params_name_the_manifest(
    index: BM25Index, tmp_path: Path, field: str, value: object
) -> None:
    index.save(tmp_path)
    reseal_params(tmp_path, lambda params: params.update({field: value}))
    with pytest.raises(IndexLoadError, match="invalid BM25 params") as excinfo:
        BM25Index.load(tmp_path)
    assert excinfo.value.path == str(tmp_path / "bm25.json")


def test_inconsistent_arrays_are_caught_without_checksums(index: BM25Index, tmp_path: Path) -> None:
    index.save(tmp_path)
    np.save(tmp_path / "doc_len.npy", np.zeros(2, np.int32))
    with pytest.raises(IndexLoadError, match="rows") as excinfo:
        BM25Index.load(tmp_path, verify=False)
    assert excinfo.value.path == str(tmp_path / "doc_len.npy")
    np.save(tmp_path / "doc_len.npy", np.zeros(5, np.float32))
    with pytest.raises(IndexLoadError, match="int32"):
        BM25Index.load(tmp_path, verify=False)


def test_a_vocabulary_with_a_duplicate_term_is_named(index: BM25Index, tmp_path: Path) -> None:
    index.save(tmp_path)
    terms = json.loads((tmp_path / "vocab.json").read_text())
    (tmp_path / "vocab.json").write_text(json.dumps([*terms[:-1], terms[0]]))
    with pytest.raises(IndexLoadError, match="duplicate terms") as excinfo:
        BM25Index.load(tmp_path, verify=False)
    assert excinfo.value.path == str(tmp_path / "vocab.json")


@pytest.mark.parametrize("k3", [0.0, 1.5, math.inf])
def test_k3_round_trips_and_an_index_saved_before_k3_counts_repeats(
    tmp_path: Path, k3: float
) -> None:
    built = BM25Index(variant="okapi", k3=k3)
    built.add(TEXTS)
    built.save(tmp_path / "k3")
    manifest = json.loads((tmp_path / "k3" / "bm25.json").read_text())
    assert manifest["params"]["k3"] == (None if k3 == math.inf else k3)  # strict JSON
    loaded = BM25Index.load(tmp_path / "k3")
    assert loaded.k3 == k3
    query = "cells cells energy"
    np.testing.assert_array_equal(loaded.get_scores(query), built.get_scores(query))

    # A manifest written before k3 existed has no such key: repeats counted linearly then.
    reseal_params(tmp_path / "k3", lambda params: params.pop("k3"))
    assert BM25Index.load(tmp_path / "k3").k3 == math.inf


def test_an_index_saved_before_acronym_plurals_keeps_its_tokenization(tmp_path: Path) -> None:
    built = BM25Index()
    built.add(["SNPs in lncRNAs", "one SNP per lncRNA", "cells"])
    built.save(tmp_path)
    manifest = json.loads((tmp_path / "bm25.json").read_text())
    assert manifest["params"]["tokenizer"]["acronym_plurals"] is True
    assert BM25Index.load(tmp_path).tokenizer == built.tokenizer

    # A manifest written before the setting existed: its rows were tokenized without it, so
    # its queries must be too ("SNPs" stays "snps", as in those rows).
    reseal_params(tmp_path, lambda params: params["tokenizer"].pop("acronym_plurals"))
    old = BM25Index.load(tmp_path)
    assert old.tokenizer.acronym_plurals is False
    assert old.tokenizer("SNPs") == ["snps"]
