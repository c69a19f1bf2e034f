"""Segments merged with collection statistics score as one BM25 index, bit for bit, and as
rank-bm25.

"One index" is scored in the canonical term order too (:mod:`indexes.keyword.collection`), which is
what makes the equality independent of how the rows were split, in which order they came and
which were deleted.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import rank_bm25

from ragtools.indexes.errors import IndexLoadError, IndexStateError
from ragtools.indexes.keyword.bm25 import BM25Index, Query
from ragtools.indexes.keyword.collection import (
    Collection,
    GlobalStats,
    SegmentScorer,
    combined,
    save_canonical,
    segment_counts,
)
from ragtools.indexes.ranking import Ranking

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


def canonical(rows: list[list[str]], **params: object) -> BM25Index:
    """One index over ``rows``, scored in the canonical term order."""
    index = BM25Index(**params)  # type: ignore[arg-type]
    index.add(rows)
    return combined([index], [np.zeros(len(rows), np.bool_)])[0]


def segmented(rows: list[list[str]], n: int, **params: object) -> tuple[BM25Index, np.ndarray]:
    """``rows`` split over ``n`` segments by a hash-like rule, merged: the index and the
    original row of each of its rows."""
    assignment = np.array([(i * 7919 + 13) % n for i in range(len(rows))])
    parts, order = [], []
    for s in range(n):
        mine = np.flatnonzero(assignment == s)
        index = BM25Index(**params)  # type: ignore[arg-type]
        index.add([rows[i] for i in mine])
        parts.append(index)
        order.append(mine)
    merged, _ = combined(parts, [np.zeros(len(p.deleted), np.bool_) for p in parts])
    return merged, np.concatenate(order)


QUERIES = [
    ["greek0"],
    ["greek0", "greek1", "w3"],
    ["w250", "w7", "w7", "greek2"],
    ["w299", "w298", "unknown"],
    ["greek8", "greek9", "greek10", "greek11", "greek12", "w1", "w2"],
]


@pytest.mark.parametrize("variant", ["okapi", "bm25l", "bm25plus", "lucene", None])
@pytest.mark.parametrize("n_segments", [1, 2, 3, 4])
def test_segment_scores_equal_one_index_bit_for_bit(variant: str | None, n_segments: int) -> None:
    rows = corpus(300, seed=n_segments)
    single = canonical(rows, variant=variant)
    merged, original = segmented(rows, n_segments, variant=variant)
    for query in QUERIES:
        whole = single.get_scores(query)
        np.testing.assert_array_equal(merged.get_scores(query), whole[original])
        found = merged.search(query, k=400)
        expected = single.search(query, k=400)
        assert sorted(zip(found.scores.tolist(), original[found.rows].tolist(), strict=True)) == (
            sorted(zip(expected.scores.tolist(), expected.rows.tolist(), strict=True))
        )


@pytest.mark.parametrize("variant", ["okapi", "bm25l", "bm25plus"])
def test_segment_scores_equal_rank_bm25(variant: str) -> None:
    rows = corpus(200, seed=7)
    reference = RANK_BM25[variant](rows)
    merged, original = segmented(rows, 3, variant=variant)
    for query in QUERIES:
        np.testing.assert_allclose(
            merged.get_scores(query), reference.get_scores(query)[original], rtol=1e-9
        )


def test_deleted_rows_leave_the_statistics_as_a_fresh_index_would() -> None:
    rows = corpus(150, seed=9)
    parts = [BM25Index(variant="okapi") for _ in range(3)]
    cut = [0, 50, 100, len(rows)]
    for index, start, end in zip(parts, cut, cut[1:], strict=False):
        index.add(rows[start:end])
    masks = [np.arange(len(p.deleted)) % (s + 2) == 0 for s, p in enumerate(parts)]
    merged, stats = combined(parts, masks)
    survivors = [
        r
        for s in range(3)
        for r, gone in zip(rows[cut[s] : cut[s + 1]], masks[s], strict=True)
        if not gone
    ]
    fresh = canonical(survivors, variant="okapi")
    assert stats.n_live == len(survivors) == len(merged)
    for query in QUERIES:
        np.testing.assert_array_equal(merged.get_scores(query), fresh.get_scores(query))
    assert [len(p) for p in parts] == [50, 50, len(rows) - 100]  # the inputs are unchanged


@pytest.mark.parametrize("variant", ["okapi", "bm25plus"])
def test_one_segment_with_deleted_rows_is_a_fresh_index_of_its_live_rows(variant: str) -> None:
    """One segment combined alone (a version of one segment with deletions) holds exactly
    the arrays and terms of a fresh canonical index of its live rows, rows deleted when
    it was written and by the version alike; a term only deleted rows held is gone."""
    rows = [*corpus(200, seed=12), ["only", "in", "deleted"]]
    index = BM25Index(variant=variant)  # type: ignore[arg-type]
    index.add(rows)
    index.delete(np.arange(0, len(rows), 7))  # deleted when written: no postings
    mask = np.arange(len(rows)) % 5 == 0
    mask[-1] = True
    merged, stats = combined([index], [mask])
    survivors = [r for i, r in enumerate(rows) if i % 7 and not mask[i]]
    fresh = canonical(survivors, variant=variant)
    assert merged.corpus().vocab.terms == fresh.corpus().vocab.terms == stats.terms
    assert "only" not in stats.terms
    for name, array in fresh.arrays().items():
        np.testing.assert_array_equal(merged.arrays()[name], array)


def test_the_statistics_of_one_segment_equal_those_of_its_rows_in_several() -> None:
    rows = corpus(200, seed=14)
    whole = BM25Index()
    whole.add(rows)
    parts = [BM25Index() for _ in range(3)]
    for i, part in enumerate(parts):
        part.add(rows[i::3])
    one = GlobalStats.merge([segment_counts(whole, np.zeros(len(rows), np.bool_))])
    many = GlobalStats.merge([segment_counts(p, np.zeros(p.n_rows, np.bool_)) for p in parts])
    terms = sorted({t for row in rows for t in row})
    assert one.terms == many.terms == terms
    expected = [sum(t in row for row in rows) for t in terms]
    assert one.df.tolist() == many.df.tolist() == expected
    assert (
        (one.n_live, one.total_len)
        == (many.n_live, many.total_len)
        == (
            len(rows),
            sum(map(len, rows)),
        )
    )


@pytest.mark.parametrize("variant", ["okapi", "bm25l", "bm25plus", "lucene", None])
def test_a_new_segment_is_saved_as_combining_it_alone_saves_it(
    variant: str | None, tmp_path: Path
) -> None:
    """``save_canonical`` (a build's new segment) writes the files that saving
    ``combined([index], ...)`` writes, byte for byte, without making that index."""
    index = BM25Index(variant=variant)  # type: ignore[arg-type]
    index.add(corpus(150, seed=13))
    save_canonical(index, tmp_path / "direct")
    combined([index], [np.zeros(index.n_rows, np.bool_)])[0].save(tmp_path / "combined")
    names = sorted(p.name for p in (tmp_path / "combined").iterdir())
    assert sorted(p.name for p in (tmp_path / "direct").iterdir()) == names
    for name in names:
        assert (tmp_path / "direct" / name).read_bytes() == (
            tmp_path / "combined" / name
        ).read_bytes(), name
    loaded = BM25Index.load(tmp_path / "direct")
    assert loaded.corpus().vocab.terms == sorted(loaded.corpus().vocab.terms)


def test_canonical_scores_equal_the_plain_index_up_to_the_order_of_additions() -> None:
    rows = corpus(200, seed=5)
    for variant in ("okapi", "bm25l", "bm25plus", "lucene"):
        plain = BM25Index(variant=variant)  # type: ignore[arg-type]
        plain.add(rows)
        for query in QUERIES:
            np.testing.assert_allclose(
                canonical(rows, variant=variant).get_scores(query),
                plain.get_scores(query),
                rtol=1e-12,
            )


def test_filters_and_k_apply_to_the_merged_rows() -> None:
    rows = corpus(120, seed=3)
    single = canonical(rows)
    merged, original = segmented(rows, 2)
    allowed = np.arange(len(rows)) % 3 == 0
    expected = single.search(["greek0", "w5"], k=5, allow=allowed)
    found = merged.search(["greek0", "w5"], k=5, allow=allowed[original])
    assert sorted(zip(found.scores.tolist(), original[found.rows].tolist(), strict=True)) == (
        sorted(zip(expected.scores.tolist(), expected.rows.tolist(), strict=True))
    )


def test_a_merged_index_is_read_only() -> None:
    merged, _ = segmented(corpus(20, seed=1), 2)
    with pytest.raises(IndexStateError, match="update the index instead"):
        merged.add(["new row"])
    with pytest.raises(IndexStateError):
        merged.delete([0])


def test_a_segment_with_terms_unknown_to_the_statistics_is_refused() -> None:
    rows = corpus(40, seed=4)
    index = BM25Index()
    index.add(rows)
    stats = combined([index], [np.zeros(len(rows), np.bool_)])[1]
    other = BM25Index()
    other.add([["never", "seen"]])
    with pytest.raises(IndexLoadError, match=r"segment-7.*'never'"):
        combined([other], [np.zeros(1, np.bool_)], stats, where="segment-7")


def scored_per_segment(
    rows: list[list[str]], n: int, deleted_every: int = 0, **params: object
) -> tuple[list[SegmentScorer], list[np.ndarray], list[int]]:
    """``rows`` split over ``n`` segments, each scored per query with the statistics of
    every live row: the scorers, each one's original rows, and the live rows, ascending."""
    parts, masks, order = [], [], []
    for s in range(n):
        mine = np.arange(s, len(rows), n)
        index = BM25Index(**params)  # type: ignore[arg-type]
        index.add([rows[i] for i in mine])
        mask = (mine % deleted_every == 0) if deleted_every else np.zeros(len(mine), np.bool_)
        parts.append(index)
        masks.append(mask)
        order.append(mine)
    stats = GlobalStats.merge([segment_counts(p, m) for p, m in zip(parts, masks, strict=True)])
    collection = Collection(stats, parts[0])
    scorers = [SegmentScorer(p, m, collection) for p, m in zip(parts, masks, strict=True)]
    live = sorted(i for mine, m in zip(order, masks, strict=True) for i in mine[~m].tolist())
    return scorers, order, live


@pytest.mark.parametrize("variant", ["okapi", "bm25l", "bm25plus", "lucene"])
@pytest.mark.parametrize("deleted_every", [0, 4])
def test_segments_scored_per_query_equal_one_fresh_index_bit_for_bit(
    variant: str, deleted_every: int
) -> None:
    """Each segment scored from its term frequencies with the collection's statistics (what a
    version too large to merge does) gives one fresh index's scores over the live rows: the
    same floats, the deleted rows never found."""
    rows = corpus(300, seed=11)
    scorers, order, live_ids = scored_per_segment(rows, 3, deleted_every, variant=variant)
    fresh = canonical([rows[i] for i in live_ids], variant=variant)
    for query in QUERIES:
        expected = fresh.search(query, k=len(rows))
        found = []
        for scorer, mine in zip(scorers, order, strict=True):
            ranking = scorer.search(query, len(rows), None)
            found += zip(ranking.scores.tolist(), mine[ranking.rows].tolist(), strict=True)
        assert sorted(found) == sorted(
            zip(expected.scores.tolist(), [live_ids[r] for r in expected.rows], strict=True)
        )


def test_a_segment_scored_per_query_applies_allow_and_k() -> None:
    rows = corpus(120, seed=3)
    scorers, order, _ = scored_per_segment(rows, 2)
    single = canonical(rows)
    allowed = np.arange(len(rows)) % 3 == 0
    expected = single.search(["greek0", "w5"], k=len(rows), allow=allowed)
    for scorer, mine in zip(scorers, order, strict=True):
        found = scorer.search(["greek0", "w5"], 4, allowed[mine])
        assert len(found.rows) == 4
        assert allowed[mine[found.rows]].all()
        best = [(s, r) for s, r in zip(expected.scores, expected.rows, strict=True) if r in mine]
        assert found.scores.tolist() == [s for s, _ in best[:4]]
    assert scorers[0].search(["nowhere"], 3, None).rows.size == 0


def random_queries(n: int, seed: int) -> list[Query]:
    """Queries of 1-6 terms drawn as the rows are (common terms with a rare one or two),
    some with a repeated term, and some weighted as query expansion writes them."""
    rng = np.random.default_rng(seed)
    vocab = WORDS + [f"w{i}" for i in range(300)]
    p = 1.0 / np.arange(1, len(vocab) + 1)
    p /= p.sum()
    queries: list[Query] = []
    for i in range(n):
        terms = list(rng.choice(vocab, size=int(rng.integers(1, 6)), p=p))
        terms.append(str(rng.choice(vocab[200:])))  # a rare term, as most real queries hold
        if i % 5 == 0:
            queries.append({t: float(rng.uniform(0.1, 2.0)) for t in terms})
        else:
            queries.append(terms + terms[:1] if i % 3 == 0 else terms)
    return queries


@pytest.mark.parametrize("variant", ["okapi", "bm25l", "bm25plus", "lucene"])
@pytest.mark.parametrize("deleted_every", [0, 5])
def test_pruned_per_query_scoring_equals_scoring_every_posting(
    variant: str, deleted_every: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MaxScore (``SegmentScorer``'s pruning) returns the rows and floats that weighing every
    posting returns, for every k, filter and kind of query (ties included: the corpus repeats
    rows), and it does prune: most searches weigh no posting list whole."""
    import ragtools.indexes.keyword.collection as collection_module

    rows = corpus(3000, seed=5)
    scorers, order, _ = scored_per_segment(rows, 3, deleted_every, variant=variant)
    rng = np.random.default_rng(1)
    cases = []
    for i, query in enumerate(random_queries(60, seed=2)):
        for k in (1, 3, 10):
            allow = None if i % 2 else [rng.random(len(mine)) < 0.5 for mine in order]
            cases.append((query, k, allow))
    weighed_whole: list[int] = []
    real_compute = collection_module.compute_weights

    def counting(*args: object, **kwargs: object) -> object:
        weighed_whole.append(1)
        return real_compute(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(collection_module, "compute_weights", counting)

    def search_all(query: Query, k: int, allow: list[np.ndarray] | None) -> list[Ranking]:
        masks = allow or [None] * len(scorers)
        return [s.search(query, k, m) for s, m in zip(scorers, masks, strict=True)]

    # Prune whenever it can be proved, however many postings the candidates hold (small
    # segments are otherwise weighed whole, which is faster for them).
    monkeypatch.setattr(collection_module, "PRUNE_SHARE", 1)
    pruned = [search_all(*case) for case in cases]
    searches = len(cases) * len(scorers)
    assert len(weighed_whole) < searches / 2
    monkeypatch.setattr(collection_module, "PRUNE_SHARE", 10**12)  # budget 0: weigh all
    for (query, k, allow), found in zip(cases, pruned, strict=True):
        for ranking, expected in zip(found, search_all(query, k, allow), strict=True):
            assert ranking.rows.tolist() == expected.rows.tolist(), (query, k)
            assert ranking.scores.tolist() == expected.scores.tolist(), (query, k)
