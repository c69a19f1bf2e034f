"""Shared fixtures: paths to the shared reference data and a tiny checked-in corpus."""

from __future__ import annotations

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
