"""The default precision follows the CPU; an index keeps the precision it was built with."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragtools.indexes.dense import precision
from ragtools.indexes.dense.embed import SentenceTransformerEmbedder
from ragtools.indexes.index import Index
from ragtools.indexes.settings import IndexSettings
from ragtools.parsers import Document

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
flags\t\t: fpu sse2 avx2 {extra}
bogomips\t: 4000.00

processor\t: 1
flags\t\t: fpu sse2 avx2 {extra}
"""


@pytest.mark.parametrize(
    ("extra", "fast", "bf16"),
    [
        ("avx512f avx512_vnni", True, False),
        ("avx_vnni", True, False),
        ("amx_tile amx_int8 amx_bf16", True, True),
        ("avx512f avx512_vnni avx512_bf16", True, False),  # bf16 dot products, no AMX tiles
        ("avx512f avx512bw", False, False),  # AVX-512 without VNNI: int8 is emulated
        ("", False, False),
    ],
)
def test_fast_int8_and_bf16_are_read_from_the_cpu_flags(
    tmp_path: Path, extra: str, fast: bool, bf16: bool
) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(CPUINFO.format(extra=extra), encoding="ascii")
    flags = precision.cpu_flags(cpuinfo)
    assert {"fpu", "sse2", "avx2"} <= flags
    assert bool(flags & precision.FAST_INT8_FLAGS) is fast
    assert bool(flags & precision.FAST_BF16_FLAGS) is bf16


def test_an_unreadable_cpuinfo_falls_back_to_numpy(tmp_path: Path) -> None:
    flags = precision.cpu_flags(tmp_path / "missing")
    assert flags <= {"avx512_vnni"}  # numpy's probe knows this one flag only


def test_this_machine_gets_the_precision_its_cpu_allows() -> None:
    flags = precision.cpu_flags()
    expected = "int8" if flags & precision.FAST_INT8_FLAGS else "fp32"
    expected = "bf16" if flags & precision.FAST_BF16_FLAGS else expected
    assert precision.default_precision() == expected == IndexSettings().precision


def _cpu(monkeypatch: pytest.MonkeyPatch, fastest: str) -> None:
    """Make this process believe its CPU's fastest precision is ``fastest``."""
    monkeypatch.setattr(precision, "fast_bf16", lambda: fastest == "bf16")
    monkeypatch.setattr(precision, "fast_int8", lambda: fastest in ("bf16", "int8"))


@pytest.mark.parametrize("expected", ["bf16", "int8", "fp32"])
def test_new_settings_default_to_the_cpu_precision(
    monkeypatch: pytest.MonkeyPatch, expected: str
) -> None:
    _cpu(monkeypatch, expected)
    assert IndexSettings().precision == expected
    assert IndexSettings(precision="fp32").precision == "fp32"  # --precision fp32 always wins
    # a manifest records its precision; one written before the setting existed was fp32
    assert IndexSettings.recorded({"precision": "int8"}).precision == "int8"
    assert IndexSettings.recorded({"chunk_size": 500}).precision == "fp32"


def _documents() -> list[Document]:
    return [
        Document(id="bees", text="Bees dance to tell the hive where the flowers are."),
        Document(id="tides", text="The moon's gravity raises the tides twice a day."),
        Document(id="lava", text="Lava cools into basalt when it reaches the sea."),
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("built_with", "opened_on"), [("bf16", "fp32"), ("int8", "fp32"), ("fp32", "int8")]
)
def test_an_index_answers_in_its_precision_where_int8_is_not_fast(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, built_with: str, opened_on: str
) -> None:
    _cpu(monkeypatch, built_with)
    Index.from_documents(_documents(), tmp_path / "index", vector_window=0)
    manifest = Index.open(tmp_path / "index").manifest
    assert manifest["settings"]["precision"] == built_with  # the default of the build machine
    # the index now moves to a machine whose CPU says the opposite
    _cpu(monkeypatch, opened_on)
    assert IndexSettings().precision == opened_on
    reopened = Index.open(tmp_path / "index")
    assert reopened.settings.precision == built_with
    # longer than SHORT_TOKENS, so int8 and bf16 embed it with their own model
    query = "what makes the level of the sea rise and fall twice a day along the coasts, " * 3
    expected = SentenceTransformerEmbedder(precision=built_with).embed_query(query)
    np.testing.assert_array_equal(reopened.embedder.embed_query(query), expected)
    moved = SentenceTransformerEmbedder(precision=opened_on).embed_query(query)
    assert not np.allclose(moved, expected, atol=1e-5)  # the precisions really differ
    rows = reopened.vector_search(query, 1)
    assert reopened.chunks[rows[0][0]].doc_id == "tides"
