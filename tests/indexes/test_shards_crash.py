"""A sharded build or update killed at random points leaves the previous complete index."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

import pytest

from ragtools.indexes.index import Index
from ragtools.indexes.testing import FakeEmbedder
from tests.indexes.test_bundle_crash import _state, _texts, _writer

OPTIONS = {"chunk_size": 120, "chunk_overlap": 10, "shards": 3}


@pytest.mark.timeout(900)
def test_sigkill_during_sharded_builds_and_updates(tmp_path: Path) -> None:
    a = _state(tmp_path, "alpha", "apple", 6)
    b = _state(tmp_path, "beta", "banana", 9)
    idx = tmp_path / "idx"
    states = {
        _texts(Index.build([src], tmp_path / f"ref-{src.name}", vector=False, **OPTIONS))
        for src in (a, b)
    }
    Index.build([a], idx, embedder=FakeEmbedder(dim=32), **OPTIONS)
    rng = random.Random(4321)
    for _ in range(12):
        proc = _writer(idx, a, b, 1000, shards=3)
        time.sleep(rng.uniform(0.5, 4.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        index = Index.open(idx, embedder=FakeEmbedder(dim=32))
        assert index.n_shards == 3
        assert _texts(index) in states
        assert index.bm25 is not None and index.vector is not None
        assert len(index.bm25) == len(index.vector) == len(index.chunks)
        assert index.keyword_search("sentence", 3)
