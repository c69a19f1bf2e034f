"""Shared fixtures: paths to the shared reference data and a tiny checked-in corpus."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


def _shared(sub: str) -> Path:
    path = SHARED / sub
    if not path.exists():
        msg = f"reference data {path} is missing: clone the project next to ../shared"
        raise FileNotFoundError(msg)
    return path


@pytest.fixture(scope="session")
def pdf_dir() -> Path:
    """../shared/pdfs: real PDFs with the behaviour expected in their README."""
    return _shared("pdfs")


@pytest.fixture(scope="session")
def scifact_dir() -> Path:
    """../shared/data/scifact: BEIR SciFact."""
    return _shared("data/scifact")


@pytest.fixture(scope="session", autouse=True)
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Exported ONNX models go to one folder per test session (``RAGTOOLS_CACHE_DIR``, which
    subprocesses inherit), never to the user's cache."""
    with pytest.MonkeyPatch.context() as mp:
        path = tmp_path_factory.mktemp("ragtools-cache")
        mp.setenv("RAGTOOLS_CACHE_DIR", str(path))
        yield path
