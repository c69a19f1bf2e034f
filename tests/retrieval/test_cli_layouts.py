"""``rag build``, ``update``, ``search``, ``versions``, ``rollback`` and ``info`` behave the same
on one index and on shards (#33, "Two layouts, one suite"), run in this process through
:func:`ragtools.retrieval.cli.main`.

The first two tests are the regression tests of the first defect #33 names: with ``--shards``
the second of two identical ``rag build --exclude`` commands failed with "built
differently", and ``rag update`` then indexed the excluded file.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragtools.retrieval.cli import main


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str


Rag = Callable[..., Run]


@pytest.fixture
def rag(capsys: pytest.CaptureFixture[str]) -> Iterator[Rag]:
    """``rag ARGS...`` in this process; the logging set-up and environment switches each run
    makes (:func:`ragtools.retrieval._cli_output.configure`) are undone afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    loggers = {name: logging.getLogger(name).level for name in ("ragtools", "py.warnings", "faiss")}
    environment = dict(os.environ)

    def run(*args: str) -> Run:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return Run(code, out, err)

    try:
        yield run
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        for name, value in loggers.items():
            logging.getLogger(name).setLevel(value)
        logging.captureWarnings(False)
        os.environ.clear()
        os.environ.update(environment)


def shard_options(shards: int | None) -> list[str]:
    return [] if shards is None else ["--shards", str(shards)]


def keyword_sources(rag: Rag, index: Path, query: str) -> list[str]:
    found = rag("search", str(index), query, "--mode", "keyword", "--json", "-k", "10")
    assert found.code == 0, found.stderr
    return [Path(hit["chunk"]["metadata"]["source"]).name for hit in json.loads(found.stdout)]


@pytest.fixture
def src(tmp_path: Path) -> Path:
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "a.txt").write_text("Honey bees dance in the hive.", encoding="utf-8")
    (folder / "b.md").write_text("# Bees\n\nExcluded notes about bees and wasps.", encoding="utf-8")
    (folder / "c.txt").write_text("The moon raises the ocean tides.", encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    "shards",
    [None, 2, 3],
)
def test_the_same_build_command_twice_updates_in_place(
    rag: Rag, src: Path, tmp_path: Path, shards: int | None
) -> None:
    out = tmp_path / "X"
    command = ["build", str(src), "--out", str(out), "--exclude", "*.md", "--no-vector"]
    command += shard_options(shards)
    first = rag(*command)
    assert first.code == 0, first.stderr
    assert first.stdout.startswith(f"built {out}: 2 chunks from 2 files")
    again = rag(*command)
    assert again.code == 0, again.stderr
    assert "built differently" not in again.stderr
    assert again.stdout.startswith(f"{out} is up to date: 2 unchanged")
    updated = rag("update", str(out))
    assert updated.code == 0, updated.stderr
    assert updated.stdout.startswith(f"{out} is up to date: 2 unchanged")
    assert "b.md" not in keyword_sources(rag, out, "bees wasps")
    info = json.loads(rag("info", str(out), "--json").stdout)
    assert info["selection"]["exclude"] == ["*.md"]
    assert info["counts"]["chunks"] == 2
    assert info["counts"].get("shards", 1) == (shards or 1)


@pytest.mark.parametrize(
    "shards",
    [None, 2, 3],
)
def test_rag_update_keeps_excluded_files_out(
    rag: Rag, src: Path, tmp_path: Path, shards: int | None
) -> None:
    out = tmp_path / "X"
    command = ["build", str(src), "--out", str(out), "--exclude", "*.md", "--no-vector"]
    assert rag(*command, *shard_options(shards)).code == 0
    (src / "d.md").write_text("More excluded wasps.", encoding="utf-8")
    (src / "e.txt").write_text("Included wasps.", encoding="utf-8")
    updated = rag("update", str(out))
    assert updated.code == 0, updated.stderr
    assert updated.stdout.splitlines() == [
        f"updated {out}: 1 added, 0 changed, 0 removed, 2 unchanged (2 skipped, 0 failed)",
        f"  added   {src.resolve() / 'e.txt'}",
    ]
    root = src.resolve()
    assert sorted(updated.stderr.splitlines()) == [
        f"skipped {root / 'b.md'}: excluded by pattern",
        f"skipped {root / 'd.md'}: excluded by pattern",
    ]
    assert keyword_sources(rag, out, "bees wasps") == ["e.txt", "a.txt"]


@pytest.mark.parametrize("shards", [None, 3])
def test_update_versions_rollback_and_info(
    rag: Rag, src: Path, tmp_path: Path, shards: int | None
) -> None:
    out = tmp_path / "X"
    assert (
        rag("build", str(src), "--out", str(out), "--no-vector", *shard_options(shards)).code == 0
    )
    old = rag("search", str(out), "moon tides", "--mode", "keyword", "--json")
    (src / "c.txt").unlink()
    (src / "a.txt").write_text("Honey bees dance; wasps do not.", encoding="utf-8")
    updated = rag("update", str(out))
    assert updated.stdout.startswith(f"updated {out}: 0 added, 1 changed, 1 removed, 1 unchanged")
    assert "c.txt" not in keyword_sources(rag, out, "moon tides")
    listing = rag("versions", str(out)).stdout.splitlines()
    assert listing[0].startswith("  v-000001  ") and "3 files, 3 chunks" in listing[0]
    assert listing[1].startswith("* v-000002  ") and "2 files, 2 chunks" in listing[1]
    back = rag("rollback", str(out))
    assert back.stdout.strip() == f"rolled back {out}: v-000001 is live (was v-000002)"
    assert rag("search", str(out), "moon tides", "--mode", "keyword", "--json").stdout == old.stdout
    info = json.loads(rag("info", str(out), "--json").stdout)
    assert info["counts"]["chunks"] == 3
    assert info["counts"].get("shards", 1) == (shards or 1)
    missing = rag("rollback", str(out), "v-000009")
    assert missing.code == 2 and "no version 'v-000009'" in missing.stderr
