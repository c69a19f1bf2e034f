"""Fusion against hand-computed numbers (pyserini test_fusion style)."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

from ragtools.indexes.ranking import Ranking
from ragtools.parsers.document import Chunk
from ragtools.parsers.errors import ConfigError
from ragtools.retrieval.fusion import (
    NORMALISERS,
    distribution_based_score_fusion,
    fuse,
    fuse_hits,
    fuse_rankings,
    reciprocal_rank_fusion,
    relative_score_fusion,
)
from ragtools.retrieval.hit import Hit

RUN_A = [("a", 10.0), ("b", 6.0), ("c", 2.0)]
RUN_B = [("c", 0.9), ("a", 0.5), ("d", 0.1)]


def key(chunk_id: str) -> int:
    """The hit rule's tie-break key, computed here independently: BLAKE2b-64, signed."""
    digest = hashlib.blake2b(chunk_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def by_key(*chunk_ids: str) -> list[str]:
    return sorted(chunk_ids, key=key)


def approx_run(expected: list[tuple[str, float]]) -> list[tuple[str, object]]:
    return [(cid, pytest.approx(score, rel=1e-12, abs=1e-15)) for cid, score in expected]


# --- reciprocal rank fusion -----------------------------------------------------------------


def test_rrf_two_runs_hand_computed() -> None:
    # a: 1/61 + 1/62, c: 1/63 + 1/61, b: 1/62, d: 1/63
    assert reciprocal_rank_fusion([RUN_A, RUN_B]) == approx_run(
        [
            ("a", 0.03252247488101534),
            ("c", 0.032266458495966696),
            ("b", 0.016129032258064516),
            ("d", 0.015873015873015872),
        ]
    )


def test_rrf_weights_change_the_order() -> None:
    # a: 1/61 + 3/62, c: 1/63 + 3/61, d: 3/63, b: 1/62 — c overtakes a, d overtakes b
    assert reciprocal_rank_fusion([RUN_A, RUN_B], weights=[1, 3]) == approx_run(
        [
            ("c", 0.06505334374186833),
            ("a", 0.06478053939714437),
            ("d", 0.047619047619047616),
            ("b", 0.016129032258064516),
        ]
    )


def test_rrf_weight_zero_removes_the_run() -> None:
    fused = reciprocal_rank_fusion([RUN_A, RUN_B], weights=[1, 0])
    assert fused == approx_run([("a", 1 / 61), ("b", 1 / 62), ("c", 1 / 63)])
    assert "d" not in dict(fused)


def test_rrf_k_constant_applies_and_ranks_are_one_based() -> None:
    fused = reciprocal_rank_fusion([RUN_A, RUN_B], rrf_k=0)
    assert fused[0] == ("a", pytest.approx(1 / 1 + 1 / 2))
    assert dict(fused)["d"] == pytest.approx(1 / 3)


def test_rrf_ignores_scores_and_ties_sort_by_chunk_key() -> None:
    fused = reciprocal_rank_fusion([[("z", 1.0), ("y", 0.5)], [("y", math.inf), ("z", 0.0)]])
    assert [cid for cid, _ in fused] == by_key("y", "z")
    assert fused[0][1] == fused[1][1] == pytest.approx(1 / 61 + 1 / 62)


def test_dedup_within_a_run_keeps_first_position_and_closes_ranks() -> None:
    fused = reciprocal_rank_fusion([[("a", 3.0), ("b", 2.0), ("a", 1.0), ("c", 0.5)]])
    assert fused == approx_run([("a", 1 / 61), ("b", 1 / 62), ("c", 1 / 63)])
    # score fusion keeps the first score of a duplicated id
    assert relative_score_fusion([[("a", 3.0), ("b", 1.0), ("a", 0.0)]]) == [
        ("a", 1.0),
        ("b", 0.0),
    ]


@pytest.mark.parametrize("method", ["rrf", "relative_score", "dbsf", "zscore"])
def test_empty_input_and_empty_runs(method: str) -> None:
    assert fuse(method, []) == []  # type: ignore[arg-type]
    assert fuse(method, [[], []]) == []  # type: ignore[arg-type]
    assert [cid for cid, _ in fuse(method, [[], [("x", 2.0)]])] == ["x"]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("weights", "fragment"),
    [([1.0], "1 weights for 2 runs"), ([1.0, -1.0], ">= 0"), ([0, 0], "all zero")],
)
@pytest.mark.parametrize("method", ["rrf", "relative_score", "dbsf", "zscore"])
def test_bad_weights_raise(method: str, weights: list[float], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        fuse(method, [RUN_A, RUN_B], weights=weights)  # type: ignore[arg-type]


def test_nan_weight_and_bad_rrf_k_and_method_raise() -> None:
    with pytest.raises(ConfigError, match="finite"):
        fuse("rrf", [RUN_A], weights=[math.nan])
    with pytest.raises(ConfigError, match="rrf_k"):
        reciprocal_rank_fusion([RUN_A], rrf_k=-1)
    with pytest.raises(ConfigError, match="unknown fusion method 'borda'"):
        fuse("borda", [RUN_A])  # type: ignore[arg-type]


# --- relative score (min-max) ---------------------------------------------------------------


def test_relative_score_hand_computed() -> None:
    # A -> a 1, b 0.5, c 0;  B -> c 1, a 0.5, d 0
    assert relative_score_fusion([RUN_A, RUN_B]) == [
        ("a", 1.5),
        ("c", 1.0),
        ("b", 0.5),
        ("d", 0.0),
    ]


def test_relative_score_weights() -> None:
    # a: 1 + 3*0.5 = 2.5, c: 0 + 3*1 = 3, b: 0.5, d: 0
    assert relative_score_fusion([RUN_A, RUN_B], weights=[1, 3]) == [
        ("c", 3.0),
        ("a", 2.5),
        ("b", 0.5),
        ("d", 0.0),
    ]
    assert relative_score_fusion([RUN_A, RUN_B], weights=[0, 1]) == [
        ("c", 1.0),
        ("a", 0.5),
        ("d", 0.0),
    ]


def test_relative_score_all_equal_and_one_element_runs_normalise_to_one() -> None:
    assert relative_score_fusion([[("x", 5.0), ("y", 5.0)], [("z", -2.0)]]) == [
        (cid, 1.0) for cid in by_key("x", "y", "z")
    ]


def test_score_fusion_rejects_non_finite_scores() -> None:
    with pytest.raises(ConfigError, match="finite scores"):
        relative_score_fusion([[("a", math.nan)]])
    with pytest.raises(ConfigError, match="finite scores"):
        distribution_based_score_fusion([[("a", 1.0), ("b", -math.inf)]])


# --- distribution-based score fusion --------------------------------------------------------


def test_dbsf_hand_computed() -> None:
    # A = 3, 2, 1: mean 2, population std sqrt(2/3); (s - mean) / (6 std) + 0.5
    # B = 10, 0: mean 5, std 5, bounds -10..20 -> b 20/30, d 10/30
    fused = distribution_based_score_fusion(
        [[("a", 3.0), ("b", 2.0), ("c", 1.0)], [("b", 10.0), ("d", 0.0)]]
    )
    assert fused == approx_run(
        [
            ("b", 0.5 + 0.6666666666666666),
            ("a", 0.7041241452319316),
            ("d", 0.3333333333333333),
            ("c", 0.29587585476806844),
        ]
    )


def test_dbsf_clips_outliers_to_one() -> None:
    # 100 among ten zeros lies beyond mean + 3 std (9.09 + 3 * 28.75 = 95.3): clipped to 1.0
    run = [("top", 100.0)] + [(f"z{i}", 0.0) for i in range(10)]
    fused = dict(distribution_based_score_fusion([run]))
    mean = 100 / 11
    std = math.sqrt((100 - mean) ** 2 / 11 + 10 * mean**2 / 11)
    assert fused["top"] == 1.0
    assert fused["z0"] == pytest.approx((0 - (mean - 3 * std)) / (6 * std))


def test_dbsf_zero_spread_maps_to_half_and_weights_apply() -> None:
    assert distribution_based_score_fusion([[("x", 4.0), ("y", 4.0)], [("z", 1.0)]]) == [
        (cid, 0.5) for cid in by_key("x", "y", "z")
    ]
    fused = distribution_based_score_fusion(
        [[("a", 2.0), ("b", 1.0)], [("b", 1.0)]], weights=[1, 4]
    )
    # a: 1/6 + 0.5 = 2/3; b: 1/3 + 4 * 0.5 = 7/3
    assert fused == approx_run([("b", 7 / 3), ("a", 2 / 3)])


# --- z-score fusion -------------------------------------------------------------------------


def test_zscore_hand_computed() -> None:
    # A = 3, 2, 1: mean 2, population std sqrt(2/3): a +1.2247, b 0, c -1.2247
    # B = 10, 0: mean 5, std 5: b +1, d -1; a missing from B and d from A get 0 (the mean)
    runs = [[("a", 3.0), ("b", 2.0), ("c", 1.0)], [("b", 10.0), ("d", 0.0)]]
    z = 1 / math.sqrt(2 / 3)
    assert fuse("zscore", runs) == approx_run([("a", z), ("b", 1.0), ("d", -1.0), ("c", -z)])
    # weights multiply; unlike DBSF nothing is clipped, so a far outlier keeps its lead
    assert fuse("zscore", runs, weights=[1, 2]) == approx_run(
        [("b", 2.0), ("a", z), ("c", -z), ("d", -2.0)]
    )
    run = [("top", 100.0), ("next", 90.0)] + [(f"z{i}", 0.0) for i in range(40)]
    fused = dict(fuse("zscore", [run]))
    assert fused["top"] > fused["next"]  # DBSF clips both to 1.0
    assert dict(distribution_based_score_fusion([run]))["top"] == 1.0
    assert dict(distribution_based_score_fusion([run]))["next"] == 1.0


def test_zscore_zero_spread_maps_to_the_mean() -> None:
    assert fuse("zscore", [[("x", 4.0), ("y", 4.0)], [("z", 1.0)]]) == [
        (cid, 0.0) for cid in by_key("x", "y", "z")
    ]


def test_zscore_equals_ranx_zmuv_weighted_sum() -> None:
    ranx = pytest.importorskip("ranx")  # in the dev extra
    rng = np.random.default_rng(7)
    runs: list[dict[str, dict[str, float]]] = [{}, {}]
    for q in range(20):
        for i, run in enumerate(runs):
            docs = rng.choice(60, size=int(rng.integers(2, 40)), replace=False)
            scores = rng.gamma(2.0, 3.0 if i == 0 else 0.1, size=len(docs))
            run[f"q{q}"] = {f"d{d}": float(s) for d, s in zip(docs, scores, strict=True)}
    params = {"weights": (0.7, 0.3)}
    theirs = ranx.fuse(
        [ranx.Run(run, name=f"r{i}") for i, run in enumerate(runs)],
        norm="zmuv",
        method="wsum",
        params=params,
    ).to_dict()
    for qid in runs[0]:
        ours = fuse(
            "zscore",
            [sorted(run[qid].items(), key=lambda p: -p[1]) for run in runs],
            weights=params["weights"],
        )
        assert dict(ours) == pytest.approx(theirs[qid], rel=1e-9, abs=1e-12)


def test_fuse_dispatches_to_each_method() -> None:
    runs = [RUN_A, RUN_B]
    assert fuse("rrf", runs, rrf_k=10) == reciprocal_rank_fusion(runs, rrf_k=10)
    assert fuse("relative_score", runs) == relative_score_fusion(runs)
    assert fuse("dbsf", runs, weights=[2, 1]) == distribution_based_score_fusion(
        runs, weights=[2, 1]
    )
    z = NORMALISERS["zscore"](np.array([10.0, 6.0, 2.0]), 60)
    assert z.tolist() == pytest.approx([math.sqrt(1.5), 0.0, -math.sqrt(1.5)])


# --- hits -----------------------------------------------------------------------------------


def _hit(chunk: Chunk, score: float, rank: int, stage: str | None) -> Hit:
    scores = {stage: score} if stage else {}
    return Hit(chunk=chunk, score=score, rank=rank, scores=scores, stage=stage or "custom")


def test_fuse_hits_keeps_stage_scores_and_dedups_by_id_not_text() -> None:
    same_a = Chunk(doc_id="d1", text="same text")
    same_b = Chunk(doc_id="d2", text="same text")
    other = Chunk(doc_id="d3", text="other")
    assert same_a.id != same_b.id
    keyword = [_hit(same_a, 9.0, 1, "bm25"), _hit(other, 4.0, 2, "bm25")]
    vector = [_hit(same_b, 0.8, 1, "vector"), _hit(same_a, 0.7, 2, "vector")]
    fused = fuse_hits("rrf", [keyword, vector])
    assert [h.chunk_id for h in fused] == [same_a.id, same_b.id, other.id]
    assert [h.rank for h in fused] == [1, 2, 3]
    top = fused[0]
    assert top.score == pytest.approx(1 / 61 + 1 / 62)
    assert top.scores == {"bm25": 9.0, "vector": 0.7, "fused": top.score}
    assert fused[1].scores["fused"] == pytest.approx(1 / 61)


def test_fuse_hits_k_zero_weight_and_unlabelled_scores() -> None:
    one = Chunk(doc_id="d1", text="one")
    two = Chunk(doc_id="d2", text="two")
    first = [_hit(one, 3.0, 1, None), _hit(two, 1.0, 2, None)]
    second = [_hit(two, 0.9, 1, "vector")]
    fused = fuse_hits("relative_score", [first, second], weights=[1, 0])
    assert [h.chunk_id for h in fused] == [one.id, two.id]
    assert fused[1].scores == {"custom": 1.0, "fused": 0.0}  # no "vector": its list weighs 0
    assert fused[0].scores == {"custom": 3.0, "fused": 1.0}  # the score under its stage
    assert {hit.stage for hit in fused} == {"fused"}
    assert len(fuse_hits("rrf", [first, second], k=1)) == 1
    with pytest.raises(ConfigError, match="k must be"):
        fuse_hits("rrf", [first], k=0)


def test_fuse_rankings_composes_normalisation_with_a_weighted_sum() -> None:
    bm25 = Ranking(np.array([7, 3, 5]), np.array([12.0, 8.0, 2.0]))
    vector = Ranking(np.array([5, 9]), np.array([0.9, 0.5]))
    fused = fuse_rankings("relative_score", [bm25, vector], weights=[0.6, 0.4])
    # min-max: bm25 7 -> 1, 3 -> 0.6, 5 -> 0; vector 5 -> 1, 9 -> 0; then 0.6 * a + 0.4 * b
    assert fused.rows.tolist() == [7, 5, 3, 9]
    assert fused.scores.tolist() == pytest.approx([0.6, 0.4, 0.36, 0.0])
    rrf = fuse_rankings("rrf", [bm25, vector], rrf_k=1)
    assert dict(rrf.pairs()) == pytest.approx({7: 1 / 2, 3: 1 / 3, 5: 1 / 4 + 1 / 2, 9: 1 / 3})
    assert rrf.rows.tolist() == [5, 7, 3, 9]  # 3 and 9 tie: by key ascending
    normalised = NORMALISERS["dbsf"](np.array([3.0, 1.0]), 60)
    assert normalised.tolist() == pytest.approx([(3 - (2 - 3)) / 6, (1 - (2 - 3)) / 6])


def test_fuse_rankings_errors() -> None:
    run = Ranking(np.array([1, 2]), np.array([1.0, math.inf]))
    with pytest.raises(ConfigError, match="finite"):
        fuse_rankings("relative_score", [run])
    with pytest.raises(ConfigError, match="unknown fusion"):
        fuse_rankings("max", [run])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="rrf_k"):
        fuse_rankings("rrf", [run], rrf_k=-1)
    with pytest.raises(ConfigError, match="weights"):
        fuse_rankings("rrf", [run], weights=[1.0, 2.0])
    assert fuse_rankings("rrf", [Ranking.empty()]).rows.tolist() == []
