"""Ray on a local cluster: a Ray build equals a local build, Ray actors serve what threads do."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray

from ragtools.indexes.index import Index
from ragtools.indexes.ray_build import embed_resources
from ragtools.indexes.ray_shards import serve_on_ray
from ragtools.indexes.testing import FakeEmbedder
from ragtools.parsers.errors import MissingDependencyError
from tests.indexes.test_shards import FILTERS, QUERIES, hits_of, settings, write_corpus


@pytest.fixture(scope="module")
def local_cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus"), 30, seed=5)


def _segment_manifests(index: Index) -> list[dict[str, object]]:
    """Each segment's files (SHA-256), counts and halves, in shard order."""
    out = []
    for segment in sorted(index.segments, key=lambda s: s.shard):
        manifest = json.loads((index.path / segment.path / "manifest.json").read_text("utf-8"))
        out.append({k: manifest[k] for k in ("files", "counts", "bm25", "embedder")})
    return out


def test_ray_build_equals_local_build(
    local_cluster: None, corpus: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = FakeEmbedder(dim=32)
    options = {"shards": 3, "embedder": embedder, **settings()}
    local = Index.build([corpus], tmp_path / "local", **options)
    with caplog.at_level(logging.INFO, logger="ragtools.indexes.ray_build"):
        on_ray = Index.build([corpus], tmp_path / "ray", engine="ray", **options)
    assert "with Ray Data" in caplog.text  # parsed in tasks, embedded in the actor pool
    assert local.n_shards == on_ray.n_shards == 3
    assert [c.id for c in on_ray.chunks] == [c.id for c in local.chunks]
    # Every segment file has the same SHA-256: chunks, BM25 arrays and the faiss vectors.
    assert _segment_manifests(on_ray) == _segment_manifests(local)
    for query in QUERIES:
        for mode in ("keyword", "vector", "hybrid"):
            assert hits_of(on_ray, query, mode, None) == hits_of(local, query, mode, None)


def test_ray_actors_serve_what_threads_serve(
    local_cluster: None, corpus: Path, tmp_path: Path
) -> None:
    embedder = FakeEmbedder(dim=32)
    Index.build([corpus], tmp_path / "idx", shards=4, embedder=embedder, **settings())
    single = Index.build([corpus], tmp_path / "one", embedder=embedder, **settings())
    threads = Index.open(tmp_path / "idx", embedder=embedder)
    actors = Index.open(tmp_path / "idx", embedder=embedder)
    search = serve_on_ray(actors)
    try:
        assert len(search.actors) == len({s.shard for s in actors.segments})
        for query in QUERIES:
            for flt in FILTERS:
                for mode in ("keyword", "vector", "hybrid"):
                    expected = hits_of(threads, query, mode, flt)
                    assert hits_of(actors, query, mode, flt) == expected
                    assert expected == hits_of(single, query, mode, flt)
    finally:
        search.close()


def test_ray_documents_build_equals_local_build(local_cluster: None, tmp_path: Path) -> None:
    from tests.indexes.test_shards_streaming import document

    docs = [document(i) for i in range(40)]
    local = Index.from_documents(docs, tmp_path / "local", shards=3, vector=False)
    on_ray = Index.from_documents(
        iter(docs), tmp_path / "ray", shards=3, vector=False, engine="ray"
    )
    assert [c.id for c in on_ray.chunks] == [c.id for c in local.chunks]
    assert _segment_manifests(on_ray) == _segment_manifests(local)


class _Cluster:
    def __init__(self, resources: dict[str, float]) -> None:
        self.resources = resources

    def cluster_resources(self) -> dict[str, float]:
        return self.resources


def test_the_embedding_pool_asks_for_gpus_when_the_cluster_has_them() -> None:
    assert embed_resources(_Cluster({"CPU": 16.0, "GPU": 4.0})) == {"num_gpus": 1, "concurrency": 4}
    assert embed_resources(_Cluster({"CPU": 8.0})) == {"num_cpus": 1, "concurrency": 7}
    assert embed_resources(_Cluster({"CPU": 1.0})) == {"num_cpus": 1, "concurrency": 1}


def test_without_ray_the_extra_is_named(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    with pytest.raises(MissingDependencyError, match=r"ragtools\[ray\]"):
        Index.build([corpus], tmp_path / "x", shards=2, engine="ray", vector=False)
    index = Index.build([corpus], tmp_path / "y", shards=2, vector=False)  # in-process
    assert hits_of(index, "alpha particles", "keyword", None)
