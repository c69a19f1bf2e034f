"""Exact under any history (#33, "Exact"): random sequences of changes, then a fresh build.

Hypothesis draws a sequence of steps: a file added, edited or removed (each followed by
``index.update()``), chunks added with ``IndexWriter.add``, documents deleted with
``IndexWriter.delete``, a force-merge (``IndexWriter.merge``), and a rollback to a kept
version. After every step the keyword, vector and hybrid hits of a few queries (chunk ids,
order, scores: bit for bit) equal those of a fresh build of what the index should hold, with
the same number of shards. At the end the reopened index still equals it, and its BM25 scores
equal rank-bm25's over the same chunks.

What the index should hold is kept by a small model (:class:`Model`), one per version, so a
rollback brings back the model of that version:

* the text of every file as the index last read it, so an update re-reads exactly the files
  whose text differs on disk;
* the files whose document was deleted with ``IndexWriter.delete``: they stay out until their
  text changes (an update reads only changed files, as ``git`` and Lucene-style writers do);
* the chunks ``IndexWriter.add`` added, in order: no file owns them, so updates keep them.

The fresh build is ``Index.build`` of those files into a new folder (the same relative paths,
so the same document and chunk ids), then one ``IndexWriter.add`` of those chunks. Texts come
from a six-seed vocabulary, so files often share texts and scores tie: ties must order the
same way in an updated index and in a fresh build.
"""

from __future__ import annotations

import copy
import os
import random
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
import rank_bm25
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ragtools.indexes import Index, IndexWriter, Tokenizer
from ragtools.indexes import index as index_module
from ragtools.indexes.settings import keyword_text
from ragtools.indexes.store.versions import current_version, list_versions, switch_version
from ragtools.parsers import Chunk
from tests.indexes.test_lifecycle import (
    SETTINGS,
    assert_same_results,
    build,
    fresh,
    manual_chunks,
    placed_shards,
    reopen,
    write_tree,
)

VOCABULARY = [
    *("bees", "honey", "hive", "queen", "pollen", "flowers", "tides", "moon", "ocean", "waves"),
    *("lava", "ash", "quarks", "gluons", "photons", "light", "comets", "ice", "dust", "sun"),
]
QUERIES = ("bees hive", "ocean tides moon", "quarks gluons light", "ash", "zebra")
BASE = "base.txt"
"""A file no step removes or deletes, so the index never becomes empty."""


def text_of(seed: int) -> str:
    """A few sentences of vocabulary words, the same for the same seed (about 40 to 250
    characters, so one to four chunks of 80)."""
    rng = random.Random(seed)
    sentences = [
        " ".join(rng.choices(VOCABULARY, k=rng.randint(3, 8))) for _ in range(seed % 4 + 1)
    ]
    return ". ".join(sentences).capitalize() + "."


# ----------------------------------------------------------------------------- steps

Step = tuple[Any, ...]
SEEDS = st.integers(0, 5)
PICKS = st.integers(0, 30)
FILE_STEPS = [
    st.tuples(st.just("new"), SEEDS),
    st.tuples(st.just("edit"), PICKS, SEEDS),
    st.tuples(st.just("remove"), PICKS),
    st.tuples(st.just("rollback"), PICKS),
]
WRITER_STEPS = [
    st.tuples(st.just("add"), SEEDS),
    st.tuples(st.just("delete"), PICKS),
    st.tuples(st.just("merge")),
]


def histories(steps: Sequence[st.SearchStrategy[Step]], size: int) -> st.SearchStrategy[Any]:
    return st.lists(st.one_of(*steps), min_size=1, max_size=size)


@dataclass
class Model:
    """What one version of the index should hold (see the module docstring)."""

    files: dict[str, str]
    deleted: set[str] = field(default_factory=set)
    added: list[list[Chunk]] = field(default_factory=list)

    def indexed_files(self) -> dict[str, str]:
        return {name: text for name, text in self.files.items() if name not in self.deleted}

    def added_chunks(self) -> list[Chunk]:
        return [chunk for chunks in self.added for chunk in chunks]


class History:
    """One index under test, the files on disk, and the model of every version it wrote."""

    def __init__(self, root: Path, shards: int | None) -> None:
        self.root, self.shards = root, shards
        self.disk = {BASE: text_of(0), "f0.txt": text_of(1), "f1.txt": text_of(1)}
        self.src = write_tree(root / "src", self.disk)
        self.index = build(self.src, root / "idx", shards)
        self.model = Model(dict(self.disk))
        self.models = {self.version(): copy.deepcopy(self.model)}
        self.counter = 0
        self.expected: Index | None = None  # the fresh build of the model, made by check()

    def version(self) -> str:
        return current_version(self.index.path).name

    def fresh(self) -> Index:
        self.counter += 1
        where = self.root / f"fresh-{self.counter}"
        return fresh(where, self.model.indexed_files(), self.shards, self.model.added_chunks())

    def apply(self, step: Step) -> None:
        kind = step[0]
        if kind in {"new", "edit", "remove"}:
            self.change_files(step)
        elif kind == "add":
            self.counter += 1
            chunks = manual_chunks(f"added-{self.counter}", text_of(step[1]))
            IndexWriter(self.index).add(chunks)
            self.model.added.append(chunks)
        elif kind == "delete":
            self.delete(step[1])
        elif kind == "merge":
            IndexWriter(self.index).merge()
        else:
            self.rollback(step[1])
        self.models[self.version()] = copy.deepcopy(self.model)

    def change_files(self, step: Step) -> None:
        names = sorted(self.disk)
        if step[0] == "new":
            self.counter += 1
            self.disk[f"n{self.counter}.txt"] = text_of(step[1])
        elif step[0] == "edit":
            self.disk[names[step[1] % len(names)]] = text_of(step[2]) + f" Edit {step[2]}."
        else:
            others = [name for name in names if name != BASE]
            if others:
                gone = others[step[1] % len(others)]
                del self.disk[gone]
                (self.src / gone).unlink()
        write_tree(self.src, self.disk)
        before = self.model.files
        report = self.index.update()
        paths = {name: str(self.src.resolve() / name) for name in {*before, *self.disk}}
        assert sorted(report.added) == sorted(paths[n] for n in self.disk if n not in before)
        changed = [n for n in self.disk if n in before and before[n] != self.disk[n]]
        assert sorted(report.changed) == sorted(paths[n] for n in changed)
        assert sorted(report.removed) == sorted(paths[n] for n in before if n not in self.disk)
        self.model.deleted -= {*changed, *(n for n in before if n not in self.disk)}
        self.model.files = dict(self.disk)

    def delete(self, pick: int) -> None:
        """Delete one document: a file's (it stays out until its text changes) or an added one."""
        assert self.expected is not None
        by_file = {c.source: c.doc_id for c in self.expected.chunks}
        files = sorted(set(self.model.indexed_files()) - {BASE})
        choices = [("file", name) for name in files] + [
            ("added", str(n)) for n in range(len(self.model.added))
        ]
        if not choices:
            return
        what, name = choices[pick % len(choices)]
        if what == "file":
            doc_id = by_file[name]
            count = sum(1 for c in self.expected.chunks if c.doc_id == doc_id)
        else:
            chunks = self.model.added[int(name)]
            doc_id, count = chunks[0].doc_id, len(chunks)
        assert IndexWriter(self.index).delete([doc_id]) == count
        if what == "file":
            self.model.deleted.add(name)
        else:
            del self.model.added[int(name)]

    def rollback(self, pick: int) -> None:
        live = self.version()
        kept = [p.name for p in list_versions(self.index.path) if p.name in self.models]
        others = [name for name in kept if name != live]
        if not others:
            return
        target = others[pick % len(others)]
        self.index.close()
        switch_version(self.index.path, target)
        self.index = reopen(self.index.path)
        self.model = copy.deepcopy(self.models[target])

    def check(self) -> Index:
        """The index equals a fresh build of the model (kept for the next step)."""
        if self.expected is not None:
            self.expected.close()
            shutil.rmtree(self.expected.path.parent)
        self.expected = self.fresh()
        assert_same_results(self.index, self.expected, QUERIES)
        assert placed_shards(self.index) == (self.shards or 1)
        return self.expected


def assert_bm25_equals_rank_bm25(index: Index, chunks: Sequence[Chunk]) -> None:
    """``index``'s keyword scores equal rank-bm25's over ``chunks`` (its live chunks), with
    the index's own variant, parameters and tokenizer, for queries without a repeated term
    (rank-bm25 has no query-term saturation ``k3``)."""
    params = index.info()["bm25"]
    assert params["variant"] == "bm25plus"
    tokenizer = Tokenizer.from_dict(params["tokenizer"])
    boost = index.settings.title_boost
    corpus = [tokenizer(keyword_text(c.text, c.metadata, boost)) for c in chunks]
    reference = rank_bm25.BM25Plus(corpus, k1=params["k1"], b=params["b"], delta=params["delta"])
    row_of = {c.id: row for row, c in enumerate(chunks)}
    for query in QUERIES:
        tokens = tokenizer(query)
        assert len(set(tokens)) == len(tokens)
        expected = reference.get_scores(tokens)
        found = index.keyword_search(query, len(chunks))
        matching = {row for row, doc in enumerate(corpus) if set(doc) & set(tokens)}
        ids = [index.chunks[row].id for row, _ in found]
        assert {row_of[i] for i in ids} == matching, query
        scores = np.array([score for _, score in found])
        np.testing.assert_allclose(scores, expected[[row_of[i] for i in ids]], rtol=1e-6)


@contextmanager
def scratch() -> Iterator[Path]:
    """A folder for one example, in memory where there is one (/dev/shm): fsyncs on a slow
    disk would make each example take seconds."""
    shm = Path("/dev/shm")
    where = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    with tempfile.TemporaryDirectory(dir=where, prefix="ragtools-history-") as folder:
        yield Path(folder)


def run(history_steps: Sequence[Step], shards: int | None) -> None:
    with scratch() as root:
        history = History(root, shards)
        expected = history.check()
        for step in history_steps:
            history.apply(step)
            expected = history.check()
        final = reopen(history.index.path)
        assert_same_results(final, expected, QUERIES)
        assert_bm25_equals_rank_bm25(final, list(expected.chunks))


QUICK = settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
LONG = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("shards", [None, 3])
@QUICK
@given(steps=histories(FILE_STEPS, 5))
@example(steps=[("edit", 1, 1), ("rollback", 0), ("new", 2), ("remove", 0), ("rollback", 1)])
def test_file_changes_and_rollbacks_equal_a_fresh_build(
    shards: int | None, steps: list[Step]
) -> None:
    run(steps, shards)


EVERY_KIND: list[Step] = [("add", 2), ("edit", 0, 3), ("delete", 0), ("merge",), ("rollback", 1)]
"""One history with a step of each kind, tried first (so a missing kind fails at once)."""


SCORING = ["merged", "per segment"]
"""How a version of several segments scores its keyword half (``indexes.index.KeywordHalf``):
merged into one index, or each segment per query, as a version over
``COMBINE_POSTINGS`` postings does (forced here by a limit of 0)."""


@contextmanager
def scoring(kind: str) -> Iterator[None]:
    """Versions opened inside score their keyword half as ``kind`` says."""
    limit = 0 if kind == "per segment" else index_module.COMBINE_POSTINGS
    with mock.patch.object(index_module, "COMBINE_POSTINGS", limit):
        yield


@pytest.mark.parametrize("kind", SCORING)
@pytest.mark.parametrize("shards", [None, 3])
@QUICK
@given(steps=histories(FILE_STEPS + WRITER_STEPS, 6))
@example(steps=EVERY_KIND)
def test_every_kind_of_change_equals_a_fresh_build(
    shards: int | None, kind: str, steps: list[Step]
) -> None:
    with scoring(kind):
        run(steps, shards)


@pytest.mark.stress
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("shards", [None, 3])
@LONG
@given(steps=histories(FILE_STEPS, 14))
def test_long_file_histories_equal_a_fresh_build(shards: int | None, steps: list[Step]) -> None:
    run(steps, shards)


@pytest.mark.stress
@pytest.mark.timeout(1800)
@pytest.mark.parametrize(("shards", "kind"), [(None, "merged"), (3, "per segment")])
@LONG
@given(steps=histories(FILE_STEPS + WRITER_STEPS, 14))
@example(steps=EVERY_KIND)
def test_long_histories_equal_a_fresh_build(
    shards: int | None, kind: str, steps: list[Step]
) -> None:
    """Long histories, each layout with one way of scoring (both are exact for both
    layouts in the quick test above; the long runs cost CI minutes)."""
    with scoring(kind):
        run(steps, shards)


def test_vocabulary_texts_repeat_and_span_several_chunks() -> None:
    """The vocabulary texts give one to four chunks of the suite's size, and repeat."""
    texts = [text_of(seed) for seed in range(6)]
    assert len(set(texts)) == 6 and text_of(3) == texts[3]
    sizes = [len(manual_chunks("x", text)) for text in texts]
    assert min(sizes) == 1 and max(sizes) >= 2 and SETTINGS["chunk_size"] == 80
