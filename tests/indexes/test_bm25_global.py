"""Segments scored with collection statistics equal one BM25 index bit for bit, and rank-bm25.

"One index" is scored in the canonical term order too (:mod:`indexes._bm25_global`), which is
what makes the equality independent of how the rows were split or in which order they came.
"""

from __future__ import annotations

import numpy as np
import pytest
import rank_bm25

from ragtools.indexes._bm25_global import GlobalStats, ShardCounts, with_global_stats
from ragtools.indexes._bm25_math import Vocabulary
from ragtools.indexes.bm25 import BM25Index
from ragtools.parsers.errors import IndexLoadError, IndexStateError

RANK_BM25 = {"okapi": rank_bm25.BM25Okapi, "bm25l": rank_bm25.BM25L, "bm25plus": rank_bm25.BM25Plus}

WORDS = [f"greek{i}" for i in range(15)]


def corpus(n: int, seed: int) -> list[list[str]]:
    """Token lists with a Zipf-like vocabulary: common terms (Okapi floors some idfs) and
    rare ones, rows of varied length, and a few duplicated rows (exact ties)."""
    rng = np.random.default_rng(seed)
    vocab = WORDS + [f"w{i}" for i in range(300)]
    p = 1.0 / np.arange(1, len(vocab) + 1)
    p /= p.sum()
    rows = [list(rng.choice(vocab, size=int(rng.integers(1, 30)), p=p)) for _ in range(n)]
    return rows + rows[:5]


def sharded(rows: list[list[str]], n_shards: int, **params: object):
    """Split rows over shards by a hash-like rule; return (shards, their global rows)."""
    assignment = np.array([(i * 7919 + 13) % n_shards for i in range(len(rows))])
    local = []
    for s in range(n_shards):
        global_rows = np.flatnonzero(assignment == s)
        index = BM25Index(**params)  # type: ignore[arg-type]
        index.add([rows[i] for i in global_rows])
        local.append((index, global_rows))
    stats = GlobalStats.merge([ShardCounts.of(index) for index, _ in local])
    vocab = Vocabulary(stats.terms)
    first = local[0][0]
    idf = stats.idf(variant=first.variant, epsilon=first.epsilon)
    return [(with_global_stats(index, stats, vocab, idf), g) for index, g in local], stats


def canonical(index: BM25Index) -> BM25Index:
    """``index`` scored with its own statistics in the canonical term order."""
    stats = GlobalStats.merge([ShardCounts.of(index)])
    idf = stats.idf(variant=index.variant, epsilon=index.epsilon)
    return with_global_stats(index, stats, Vocabulary(stats.terms), idf)


QUERIES = [
    ["greek0"],
    ["greek0", "greek1", "w3"],
    ["w250", "w7", "w7", "greek2"],
    ["w299", "w298", "unknown"],
    ["greek8", "greek9", "greek10", "greek11", "greek12", "w1", "w2"],
]


@pytest.mark.parametrize("variant", ["okapi", "bm25l", "bm25plus", "lucene", None])
@pytest.mark.parametrize("n_shards", [1, 2, 3, 4])
def test_shard_scores_equal_one_index_bit_for_bit(variant: str | None, n_shards: int) -> None:
    rows = corpus(300, seed=n_shards)
    plain = BM25Index(variant=variant)  # type: ignore[arg-type]
    plain.add(rows)
    single = canonical(plain)
    shards, stats = sharded(rows, n_shards, variant=variant)
    assert stats.terms == sorted(plain.corpus().vocab.terms)  # the canonical order
    assert (stats.n_live, stats.total_len) == (len(single), single.corpus().total_len)
    for query in QUERIES:
        whole = single.get_scores(query)
        for shard, global_rows in shards:
            np.testing.assert_array_equal(shard.get_scores(query), whole[global_rows])
        merged_rows = np.concatenate([g[shard.search(query, k=400).rows] for shard, g in shards])
        merged_scores = np.concatenate([shard.search(query, k=400).scores for shard, _ in shards])
        expected = single.search(query, k=400)
        order = np.lexsort((merged_rows, -merged_scores))
        np.testing.assert_array_equal(merged_rows[order], expected.rows)
        np.testing.assert_array_equal(merged_scores[order], expected.scores)


@pytest.mark.parametrize("variant", ["okapi", "bm25l", "bm25plus"])
def test_shard_scores_equal_rank_bm25(variant: str) -> None:
    rows = corpus(200, seed=7)
    reference = RANK_BM25[variant](rows)
    shards, _ = sharded(rows, 3, variant=variant)
    for query in QUERIES:
        expected = reference.get_scores(query)
        for shard, global_rows in shards:
            np.testing.assert_allclose(shard.get_scores(query), expected[global_rows], rtol=1e-9)


def test_filters_and_k_apply_per_shard() -> None:
    rows = corpus(120, seed=3)
    plain = BM25Index()
    plain.add(rows)
    single = canonical(plain)
    shards, _ = sharded(rows, 2)
    allowed = np.arange(len(rows)) % 3 == 0
    expected = single.search(["greek0", "w5"], k=5, allow=allowed)
    got = [
        (int(g[r]), s)
        for shard, g in shards
        for r, s in shard.search(["greek0", "w5"], k=5, allow=allowed[g]).pairs()
    ]
    got.sort(key=lambda pair: (-pair[1], pair[0]))
    assert got[:5] == expected.pairs()


def test_a_shard_scored_globally_is_read_only() -> None:
    shards, _ = sharded(corpus(20, seed=1), 2)
    with pytest.raises(IndexStateError, match="update the index instead"):
        shards[0][0].add(["new row"])
    with pytest.raises(IndexStateError):
        shards[0][0].delete([0])


def test_canonical_scores_equal_the_plain_index_up_to_the_order_of_additions() -> None:
    rows = corpus(200, seed=5)
    for variant in ("okapi", "bm25l", "bm25plus", "lucene"):
        plain = BM25Index(variant=variant)  # type: ignore[arg-type]
        plain.add(rows)
        for query in QUERIES:
            np.testing.assert_allclose(
                canonical(plain).get_scores(query), plain.get_scores(query), rtol=1e-12
            )


def test_a_shard_with_terms_unknown_to_the_statistics_is_refused() -> None:
    rows = corpus(40, seed=4)
    index = BM25Index()
    index.add(rows)
    stats = GlobalStats.merge([ShardCounts.of(index)])
    other = BM25Index()
    other.add([["never", "seen"]])
    vocab = Vocabulary(stats.terms)
    idf = stats.idf(variant=other.variant, epsilon=other.epsilon)
    with pytest.raises(IndexLoadError, match=r"shard-7.*'never'"):
        with_global_stats(other, stats, vocab, idf, where="shard-7")
