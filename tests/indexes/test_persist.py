"""Shared on-disk primitives: .npy loading is serialised across threads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragtools.indexes.store import persist


@pytest.mark.parametrize("mmap", [False, True])
def test_npy_headers_are_parsed_under_one_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mmap: bool
) -> None:
    """np.load parses headers with ast.literal_eval, which CPython < 3.11.8 cannot run on
    several threads at once (SystemError: AST constructor recursion depth mismatch)."""
    persist.save_npy(tmp_path / "a.npy", np.arange(5, dtype=np.int64))
    real_load = np.load
    held: list[bool] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        held.append(persist._NPY_LOAD_LOCK.locked())
        return real_load(*args, **kwargs)

    monkeypatch.setattr(np, "load", spy)
    loaded = persist.load_npy(tmp_path / "a.npy", mmap=mmap)
    assert held == [True]
    assert loaded.tolist() == [0, 1, 2, 3, 4]
    assert not persist._NPY_LOAD_LOCK.locked()
