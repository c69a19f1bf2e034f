"""The on-disk index bundle: build, open, update equals fresh build, tamper detection."""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from ragtools.indexes.errors import IndexLoadError, IndexVersionError
from ragtools.indexes.index import Index
from ragtools.indexes.store.versions import current_version
from ragtools.indexes.testing import FakeEmbedder, live_segment
from ragtools.indexes.writer import IndexWriter
from ragtools.parsers import ConfigError
from tests.indexes.legacy import as_legacy


class CountingEmbedder:
    """Wraps the fake embedder and records every text the model is asked to embed."""

    def __init__(self) -> None:
        self.inner = FakeEmbedder(dim=64)
        self.seen: list[str] = []

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def _corpus(root: Path, pdf_dir: Path) -> Path:
    src = root / "docs"
    src.mkdir(parents=True)
    (src / "alpha.txt").write_text(
        "Alpha particles are helium nuclei.\n\nThey are stopped by paper.", encoding="utf-8"
    )
    (src / "beta.md").write_text(
        "---\ntitle: Beta\n---\n# Beta decay\n\n"
        "A neutron turns into a proton, emitting an electron.",
        encoding="utf-8",
    )
    (src / "gamma.html").write_text(
        "<html><head><title>Gamma</title><script>var x=1;</script></head>"
        "<body><p>Gamma rays are photons of high energy.</p></body></html>",
        encoding="utf-8",
    )
    sub = src / "pdfs"
    sub.mkdir()
    for name in ("002-trivial-libre-office-writer.pdf", "multilang.pdf", "invalid.pdf"):
        shutil.copy(pdf_dir / name, sub / name)
    (src / ".hidden.txt").write_text("never indexed", encoding="utf-8")
    return src


def _scores(index: Index, query: str) -> dict[str, tuple[float, float]]:
    n = len(index.chunks)
    kw = dict(index.keyword_search(query, n))
    vec = dict(index.vector_search(query, n))
    return {
        c.id: (round(kw.get(row, 0.0), 9), round(vec.get(row, 0.0), 6))
        for row, c in enumerate(index.chunks)
    }


@pytest.fixture
def built(tmp_path: Path, pdf_dir: Path) -> tuple[Index, Path, CountingEmbedder]:
    src = _corpus(tmp_path, pdf_dir)
    embedder = CountingEmbedder()
    index = Index.build(
        [src], tmp_path / "idx", embedder=embedder, chunk_size=200, chunk_overlap=20
    )
    return index, src, embedder


def test_build_open_and_search(built: tuple[Index, Path, CountingEmbedder]) -> None:
    index, _src, _ = built
    assert [Path(f.path).name for f in index.failures] == ["invalid.pdf"]
    sources = {Path(c.source).name for c in index.chunks}
    assert sources == {
        "alpha.txt",
        "beta.md",
        "gamma.html",
        "002-trivial-libre-office-writer.pdf",
        "multilang.pdf",
    }
    opened = Index.open(index.path, embedder=CountingEmbedder())
    assert [c.id for c in opened.chunks] == [c.id for c in index.chunks]
    row, _ = opened.keyword_search("neutron proton", 1)[0]
    assert opened.chunks[row].source.endswith("beta.md")
    row, _ = opened.vector_search("photons of high energy", 1)[0]
    assert opened.chunks[row].source.endswith("gamma.html")
    info = opened.info()
    assert info["counts"]["chunks"] == len(index.chunks)
    assert info["counts"]["failures"] == 1
    assert info["embedder"]["dim"] == 64


def test_update_equals_a_fresh_build(
    built: tuple[Index, Path, CountingEmbedder], tmp_path: Path
) -> None:
    index, src, embedder = built
    (src / "alpha.txt").write_text(
        "Alpha particles are helium nuclei.\n\nA sheet of paper stops them.", encoding="utf-8"
    )
    (src / "delta.txt").write_text("Delta rays are secondary electrons.", encoding="utf-8")
    (src / "gamma.html").unlink()
    embedder.seen.clear()
    report = index.update()
    assert [Path(p).name for p in report.added] == ["delta.txt"]
    assert [Path(p).name for p in report.changed] == ["alpha.txt"]
    assert [Path(p).name for p in report.removed] == ["gamma.html"]
    # only the new texts went through the model
    assert sorted(embedder.seen) == sorted(
        {c.text for c in index.chunks if Path(c.source).name in {"alpha.txt", "delta.txt"}}
        - {"Alpha particles are helium nuclei."}
    )
    fresh = Index.build(
        [src], tmp_path / "fresh", embedder=CountingEmbedder(), chunk_size=200, chunk_overlap=20
    )
    reopened = Index.open(index.path, embedder=CountingEmbedder())
    assert sorted(c.id for c in reopened.chunks) == sorted(c.id for c in fresh.chunks)
    for query in ("alpha paper", "secondary electrons", "lorem ipsum"):
        assert _scores(reopened, query) == _scores(fresh, query)


def test_add_and_delete_documents(built: tuple[Index, Path, CountingEmbedder]) -> None:
    index, _, _ = built
    from ragtools.parsers import Chunk

    extra = Chunk(doc_id="manual", text="Quarks are bound by gluons.", metadata={"source": "m"})
    writer = IndexWriter(index)
    before = current_version(index.path)
    writer.add([extra])
    added = current_version(index.path)
    assert added != before  # every change is a version of its own
    row, _ = index.keyword_search("gluons", 1)[0]
    assert index.chunks[row].id == extra.id
    assert Index.open(index.path, embedder=CountingEmbedder()).chunks[-1] == extra
    assert writer.delete(["manual"]) == 1
    assert index.keyword_search("gluons", 5) == []
    reopened = Index.open(index.path, embedder=CountingEmbedder())
    assert extra.id not in {c.id for c in reopened.chunks}


def _live(index: Index) -> Path:
    return live_segment(index.path)


@pytest.mark.parametrize("target", ["chunks.jsonl", "bm25", "vector", "manifest.json"])
@pytest.mark.parametrize("damage", ["flip", "truncate", "remove"])
def test_damaged_files_raise_a_load_error_naming_the_file(
    built: tuple[Index, Path, CountingEmbedder], target: str, damage: str
) -> None:
    index, _, _ = built
    live = _live(index)
    path = live / target
    if path.is_dir():
        path = max(
            (p for p in path.iterdir() if p.suffix != ".json"), key=lambda p: p.stat().st_size
        )
    data = path.read_bytes()
    if damage == "flip":
        middle = len(data) // 2
        path.write_bytes(data[:middle] + bytes([data[middle] ^ 0x01]) + data[middle + 1 :])
    elif damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    else:
        path.unlink()
    with pytest.raises(IndexLoadError) as caught:
        Index.open(index.path, embedder=CountingEmbedder())
    assert path.name in str(caught.value)


def test_newer_format_version_is_refused(built: tuple[Index, Path, CountingEmbedder]) -> None:
    index, _, _ = built
    manifest_path = _live(index) / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["format_version"] = 99
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(IndexVersionError, match=r"manifest\.json"):
        Index.open(index.path)


def test_nothing_is_pickled(
    built: tuple[Index, Path, CountingEmbedder], monkeypatch: pytest.MonkeyPatch
) -> None:
    index, _, _ = built
    suffixes = {p.suffix for p in index.path.rglob("*") if p.is_file()}
    assert not suffixes & {".pkl", ".pickle", ".joblib"}

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("pickle must never be used to load an index")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)
    Index.open(index.path, embedder=CountingEmbedder())


def test_build_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        Index.build([tmp_path / "missing"], tmp_path / "idx", embedder=CountingEmbedder())
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "blank.txt").write_text("   \n", encoding="utf-8")
    with pytest.raises(ConfigError, match="no text to index"):
        Index.build([empty], tmp_path / "idx2", embedder=CountingEmbedder())
    with pytest.raises(ConfigError, match="chunk_overlap"):
        Index.build([empty], tmp_path / "idx3", chunk_size=10, chunk_overlap=10)
    assert not (tmp_path / "idx2" / "CURRENT").exists()


def test_keyword_only_index(tmp_path: Path, pdf_dir: Path) -> None:
    src = _corpus(tmp_path, pdf_dir)
    index = Index.build([src], tmp_path / "kw", vector=False)
    assert index.vector is None
    assert index.keyword_search("helium", 1)
    from ragtools.indexes.errors import IndexStateError

    with pytest.raises(IndexStateError, match="without the vector half"):
        index.vector_search("helium", 1)


def test_keyword_text_repeats_the_title_before_the_text() -> None:
    from ragtools.indexes.settings import keyword_text

    assert keyword_text("body", {"title": "Head"}, 2) == "Head\nHead\nbody"
    assert keyword_text("body", {"title": "Head"}, 0) == "body"
    assert keyword_text("body", {"title": "  "}, 3) == "body"
    assert keyword_text("body", {"title": 7}, 3) == "body"
    assert keyword_text("body", {}, 3) == "body"


def _titled_index(tmp_path: Path, boost: int) -> tuple[Index, CountingEmbedder]:
    from ragtools.parsers import Chunk

    src = tmp_path / f"src{boost}"
    src.mkdir()
    (src / "a.md").write_text("---\ntitle: Horses\n---\nzebra stripes and zebra herds")
    (src / "b.md").write_text("---\ntitle: Zebras\n---\nhorses run on open plains")
    embedder = CountingEmbedder()
    index = Index.build([src], tmp_path / f"t{boost}", embedder=embedder, title_boost=boost)
    added = Chunk(doc_id="c", text="zebra zebra zebra crossing", metadata={"title": "Zebra"})
    IndexWriter(index).add([added])  # the programmatic path weighs titles too
    return index, embedder


def test_title_boost_weighs_titles_in_the_keyword_half_only(tmp_path: Path) -> None:
    plain, plain_embedder = _titled_index(tmp_path, 0)
    boosted, boosted_embedder = _titled_index(tmp_path, 3)

    def ranking(index: Index) -> list[str]:
        hits = index.keyword_search("zebra", 3)
        return [Path(index.chunks[row].source).name for row, _ in hits]

    # Without the boost the text alone counts; three extra title copies lift b above a.
    assert ranking(plain) == ["<text>", "a.md"]
    assert ranking(boosted) == ["<text>", "b.md", "a.md"]
    # The vector half embeds the chunk text alone, whatever the boost.
    assert plain_embedder.seen == boosted_embedder.seen
    assert not any("Zebras" in text for text in boosted_embedder.seen)
    assert dict(plain.vector_search("zebra", 3)) == dict(boosted.vector_search("zebra", 3))


def test_an_index_saved_before_newer_settings_opens_without_them(
    built: tuple[Index, Path, CountingEmbedder],
) -> None:
    from ragtools.indexes.store.persist import _SELF, _self_digest

    index, _, _ = built
    manifest_path = as_legacy(index.path) / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    for newer in ("title_boost", "vector_window", "vector_window_overlap"):
        del manifest["settings"][newer]
    manifest["format_version"] = 1  # what format 1 wrote (see indexes.store.manifest)
    manifest["tokenizer"] = manifest.pop("bm25")
    del manifest["vector_owners"]
    manifest[_SELF] = _self_digest(manifest)  # resealed, as the older version wrote it
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    opened = Index.open(index.path, embedder=CountingEmbedder())
    assert opened.settings.title_boost == 0
    assert opened.settings.vector_window == 0  # one vector per chunk, as it was built
    assert opened.vector_search("photons", 2) == index.vector_search("photons", 2)
