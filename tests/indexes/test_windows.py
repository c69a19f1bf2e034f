"""Vector windows: long chunks get several vectors and score by their best window."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragtools.indexes.dense.windows import split_windows
from ragtools.indexes.errors import IndexLoadError
from ragtools.indexes.index import Index
from ragtools.indexes.testing import FakeEmbedder, live_segment
from ragtools.indexes.writer import IndexWriter
from ragtools.parsers import ConfigError

WORDS = [f"w{i}" for i in range(400)]


def _long_text(seed: int, n_words: int) -> str:
    rng = np.random.default_rng(seed)
    return " ".join(rng.choice(WORDS, size=n_words).tolist()) + "."


def test_split_windows_keeps_short_texts_whole_and_cuts_long_ones() -> None:
    texts = ["short one", _long_text(1, 300), "", _long_text(2, 50)]
    windows, owners = split_windows(texts, 200, 50)
    assert windows[0] == "short one"
    assert owners.tolist() == sorted(owners.tolist())
    assert set(owners.tolist()) == {0, 1, 2, 3}
    for i, text in enumerate(texts):
        mine = [w for w, o in zip(windows, owners, strict=True) if o == i]
        assert all(len(w) <= 200 for w in mine)
        assert all(w in text for w in mine)
        if len(text) > 200:
            assert len(mine) >= len(text) // 200
            assert text.startswith(mine[0]) and text.endswith(mine[-1])
        else:
            assert mine == [text]
    whole, identity = split_windows(texts, 0, 0)
    assert whole == texts and identity.tolist() == [0, 1, 2, 3]


def _docs(root: Path) -> Path:
    src = root / "docs"
    src.mkdir()
    for i in range(6):
        (src / f"d{i}.txt").write_text(_long_text(i, 120 + 40 * i), encoding="utf-8")
    (src / "tail.txt").write_text(
        _long_text(99, 300) + " Zanzibar quokka marmalade at the very end.", encoding="utf-8"
    )
    return src


def _build(root: Path, src: Path, name: str = "idx", **options: object) -> Index:
    return Index.build(
        [src],
        root / name,
        embedder=FakeEmbedder(dim=256),
        chunk_size=5000,
        chunk_overlap=0,
        vector_window=300,
        vector_window_overlap=60,
        **options,
    )


def _brute_force(index: Index, query: str) -> dict[int, float]:
    """Each live chunk's best window score, computed directly."""
    embedder = FakeEmbedder(dim=256)
    q = embedder.embed_query(query)
    best: dict[int, float] = {}
    for row, chunk in enumerate(index.chunks):
        windows, _ = split_windows([chunk.text], 300, 60)
        best[row] = float(np.max(embedder.embed_documents(windows) @ q))
    return best


def test_a_chunk_scores_its_best_window(tmp_path: Path) -> None:
    index = _build(tmp_path, _docs(tmp_path))
    assert len(index.vector or []) > len(index.chunks)  # long chunks have several windows
    query = "zanzibar quokka marmalade"
    found = index.vector_search(query, len(index.chunks))
    expected = _brute_force(index, query)
    assert sorted(row for row, _ in found) == sorted(expected)
    for row, score in found:
        assert score == pytest.approx(expected[row], abs=1e-5)
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
    top = index.chunks[found[0][0]]
    assert top.source.endswith("tail.txt")
    # With one truncated vector per chunk the tail would be invisible; here it ranks first
    # even though the words are far beyond the first window.
    assert top.text.index("Zanzibar") > 300


def test_windows_give_exact_k_with_filters_and_deletes(tmp_path: Path) -> None:
    index = _build(tmp_path, _docs(tmp_path))
    n = len(index.chunks)
    for k in (1, 3, n, n + 5):
        assert len(index.vector_search("w1 w2 w3", k)) == min(k, n)
    allow = np.zeros(n, dtype=bool)
    allow[[0, 2, 5]] = True
    rows = [row for row, _ in index.vector_search("w1 w2 w3", 10, allow=allow)]
    assert sorted(rows) == [0, 2, 5]
    assert sorted(r for r, _ in index.vector_search("w1", 10, allow=[4, 1])) == [1, 4]
    long_chunk = index.chunks[3]
    assert IndexWriter(index).delete([long_chunk.doc_id]) == 1
    ids = [index.chunks[row].id for row, _ in index.vector_search("w1 w2 w3", n)]
    assert long_chunk.id not in ids and len(ids) == n - 1
    IndexWriter(index).add([long_chunk])  # the same long chunk again, on the last row
    rows = [row for row, _ in index.vector_search("w1 w2 w3", n)]
    assert n - 1 in rows and len(rows) == n and index.chunks[n - 1] == long_chunk


def test_windows_persist_and_update_equals_a_fresh_build(tmp_path: Path) -> None:
    src = _docs(tmp_path)
    index = _build(tmp_path, src)
    opened = Index.open(index.path, embedder=FakeEmbedder(dim=256))
    query = "zanzibar quokka w7"
    assert opened.vector_search(query, 5) == index.vector_search(query, 5)
    assert opened.info()["counts"]["vectors"] == len(index.vector or [])
    (src / "d1.txt").write_text(_long_text(42, 400), encoding="utf-8")
    (src / "d2.txt").unlink()
    opened.update()
    fresh = _build(tmp_path, src, name="fresh")
    assert sorted(c.id for c in opened.chunks) == sorted(c.id for c in fresh.chunks)

    def ids(index: Index) -> list[tuple[str, float]]:
        return [(index.chunks[r].id, s) for r, s in index.vector_search(query, 7)]

    assert ids(opened) == ids(fresh)


def test_old_indexes_without_windows_still_open(tmp_path: Path) -> None:
    src = _docs(tmp_path)
    index = Index.build(
        [src], tmp_path / "plain", embedder=FakeEmbedder(dim=256), chunk_size=5000,
        chunk_overlap=0, vector_window=0,
    )  # fmt: skip
    assert len(index.vector or []) == len(index.chunks)
    live = live_segment(index.path)
    assert live is not None and not (live / "vector_owners.npy").exists()
    opened = Index.open(index.path, embedder=FakeEmbedder(dim=256))
    assert opened.vector_search("w5", 3) == index.vector_search("w5", 3)


def test_a_damaged_window_map_is_named(tmp_path: Path) -> None:
    index = _build(tmp_path, _docs(tmp_path))
    live = live_segment(index.path)
    assert live is not None
    path = live / "vector_owners.npy"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(IndexLoadError, match=r"vector_owners\.npy"):
        Index.open(index.path, embedder=FakeEmbedder(dim=256))


def test_window_settings_are_validated(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="vector_window_overlap"):
        Index.build(
            [_docs(tmp_path)], tmp_path / "bad", vector_window=300, vector_window_overlap=300
        )
    with pytest.raises(ConfigError, match="vector_window"):
        Index.build([tmp_path / "docs"], tmp_path / "bad", vector_window=-1)


def test_windows_do_not_depend_on_layout() -> None:
    """Stored text keeps its indentation; the vector half sees it compacted, so the same
    words laid out differently give the same windows (and so the same vectors)."""
    from ragtools.indexes.dense.windows import split_windows
    from ragtools.parsers.normalize import compact_whitespace

    words = [f"word{i}" for i in range(400)]
    laid_out = "\n".join(("    " * (i % 3)) + "  ".join(words[i : i + 5]) for i in range(0, 400, 5))
    flat = compact_whitespace(laid_out)
    assert laid_out != flat
    windows, owners = split_windows([laid_out], 300, 60)
    flat_windows, flat_owners = split_windows([flat], 300, 60)
    assert len(windows) > 2 and windows == flat_windows
    assert owners.tolist() == flat_owners.tolist()
    assert split_windows([laid_out], 0, 0)[0] == [flat]
