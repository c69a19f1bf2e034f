"""Rocchio vector feedback against hand-computed query vectors, and its refusals."""

from __future__ import annotations

import numpy as np
import pytest

from ragtools.indexes.dense.prf import Rocchio
from ragtools.parsers.errors import ConfigError


def test_rocchio_equals_the_hand_computed_query() -> None:
    """q = (3, 4) -> unit (0.6, 0.8). Feedback (1, 0) and (0, 2) -> units (1, 0), (0, 1),
    mean (0.5, 0.5). alpha 0.4, beta 0.6: (0.24 + 0.3, 0.32 + 0.3) = (0.54, 0.62)."""
    out = Rocchio(depth=2, alpha=0.4, beta=0.6).expand([3.0, 4.0], [[1.0, 0.0], [0.0, 2.0]])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [0.54, 0.62], rtol=1e-7)


def test_average_prf_is_rocchio_with_weights_by_count() -> None:
    """Pyserini's Average PRF over 3 passages: the mean of the query and the 3 vectors,
    i.e. alpha 1/4, beta 3/4. Units (1,0,0), (0,1,0), (0,0,1), (1,0,0): mean (1/2, 1/4, 1/4)."""
    feedback = [[0.0, 5.0, 0.0], [0.0, 0.0, 0.5], [2.0, 0.0, 0.0]]
    out = Rocchio(depth=3, alpha=0.25, beta=0.75).expand([7.0, 0.0, 0.0], feedback)
    np.testing.assert_allclose(out, [0.5, 0.25, 0.25], rtol=1e-7)


def test_nothing_to_feed_back_keeps_the_query() -> None:
    rocchio = Rocchio()
    np.testing.assert_array_equal(rocchio.expand([3.0, 4.0], np.zeros((0, 2))), [3.0, 4.0])
    np.testing.assert_array_equal(rocchio.expand([0.0, 0.0], [[1.0, 0.0]]), [0.0, 0.0])
    # a zero feedback vector stays zero (the vector half normalises so) and still counts
    np.testing.assert_allclose(
        Rocchio(2, 0.5, 0.5).expand([1.0, 0.0], [[0.0, 0.0], [0.0, 4.0]]), [0.5, 0.25]
    )


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"depth": 0}, "depth"),
        ({"depth": 2.0}, "depth"),
        ({"depth": True}, "depth"),
        ({"alpha": -0.1}, "alpha"),
        ({"beta": float("nan")}, "beta"),
        ({"alpha": "1"}, "alpha"),
        ({"alpha": 0.0, "beta": 0.0}, "both be 0"),
    ],
)
def test_bad_settings_are_refused_by_name(kwargs: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        Rocchio(**kwargs)  # type: ignore[arg-type]


def test_of_reads_retriever_arguments() -> None:
    assert Rocchio.of(None) is None and Rocchio.of(False) is None
    assert Rocchio.of(True) == Rocchio(5, 0.4, 0.6)
    assert Rocchio.of({"depth": 3}) == Rocchio(3, 0.4, 0.6)
    assert Rocchio(3, 0.5, 0.5).to_dict() == {"depth": 3, "alpha": 0.5, "beta": 0.5}
    with pytest.raises(ConfigError, match=r"unknown Rocchio setting\(s\) \['k'\]"):
        Rocchio.of({"k": 3})
    with pytest.raises(ConfigError, match=r"prf must be True, False, None, .* got 'rocchio'"):
        Rocchio.of("rocchio")  # type: ignore[arg-type]


def test_bad_vectors_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"shape \(n, 2\)"):
        Rocchio().expand([1.0, 0.0], [[1.0, 0.0, 0.0]])
    with pytest.raises(ConfigError, match="feedback vector is not finite"):
        Rocchio().expand([1.0, 0.0], [[np.inf, 0.0]])
