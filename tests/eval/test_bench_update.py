"""eval/bench_update.py on 30 files: the report's fields are there and agree with each other.

No timing is asserted (the bars are the benchmark's verdict, not a test's); what is checked is
that the script ran the commands it says it ran and measured what it says it measured.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.eval.scripts import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "eval" / "bench_update.py"


def _script() -> ModuleType:
    return load_script("bench_update")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def _check_report(report: dict[str, Any], files: int, shards: int) -> None:
    assert report["files"] == files and report["shards"] == shards
    build, update = report["build"], report["update"]
    assert report["startup"]["stdout"].startswith("rag ")
    assert re.match(rf"built .*: \d+ chunks from {files} files", build["stdout"])
    assert f"0 added, 1 changed, 0 removed, {files - 1} unchanged" in update["stdout"]
    for run in (build, update):
        assert run["wall_s"] > 0
        assert run["cpu_s"] == pytest.approx(run["user_s"] + run["sys_s"])
    assert report["time_ratio"] == pytest.approx(update["wall_s"] / build["wall_s"])
    assert report["cpu_ratio"] == pytest.approx(update["cpu_s"] / build["cpu_s"])
    assert report["index_files"] > 0 and report["index_bytes"] > 0
    # the update wrote something (a changed file is indexed again), never more than is there
    assert 0 < report["update_written_files"] <= report["index_files"] * 2
    assert 0 < report["update_written_bytes"] <= report["index_bytes_after_update"]
    written = report["update_written"]
    assert len(written) == report["update_written_files"]
    assert sum(written.values()) == report["update_written_bytes"]
    assert "CURRENT" in written  # the update made a new version live
    assert report["bytes_ratio"] == pytest.approx(
        report["update_written_bytes"] / report["index_bytes"]
    )
    if Path("/proc/self/io").exists():
        assert report["update_io_write_bytes"] >= 0 and build["io"]["wchar"] > 0
        assert report["io_bytes_ratio"] == pytest.approx(
            report["update_io_write_bytes"] / report["index_bytes"]
        )
    assert report["search"] == {"word": "zorblaxite", "hits": 1, "rank": 1, "found": True}
    assert report["pass"]["time"] == (report["time_ratio"] <= 0.10)
    assert report["pass"]["search"] is True
    assert report["passed"] == all(report["pass"].values())


def test_report_is_complete_and_consistent(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    proc = _run("--files", "30", "--json", str(out))
    report = json.loads(out.read_text(encoding="utf-8"))
    _check_report(report, files=30, shards=1)
    assert "30 Markdown files" in proc.stdout and "update / build" in proc.stdout
    assert not Path(report["edited"]["path"]).exists()  # the temporary folder is gone


def test_sharded_run_keeps_its_workdir(tmp_path: Path) -> None:
    out, work = tmp_path / "report.json", tmp_path / "work"
    _run("--files", "30", "--shards", "3", "--workdir", str(work), "--keep", "--json", str(out))
    report = json.loads(out.read_text(encoding="utf-8"))
    _check_report(report, files=30, shards=3)
    edited = Path(report["edited"]["path"])
    assert edited.parent.parent == work / "src"
    assert edited.read_text(encoding="utf-8").endswith(report["edited"]["appended"] + "\n")
    assert len(list((work / "src").rglob("*.md"))) == 30
    assert (work / "idx" / "CURRENT").is_file()


def test_corpus_is_deterministic_and_sized() -> None:
    script = _script()
    first = list(script.Corpus(1_005, seed=3).files())
    assert first == list(script.Corpus(1_005, seed=3).files())
    assert first != list(script.Corpus(1_005, seed=4).files())
    assert [path for path, _ in first[999:1001]] == [
        "d0000/file-0000999.md",
        "d0001/file-0001000.md",
    ]
    for _, text in first:
        heading, body = text.split("\n\n", 1)
        assert heading.startswith("# ") and 100 <= len(body.split()) <= 300
        assert "zorblaxite" not in text
    # Zipfian (s = 1): "the", "of", "and" come about as 1 : 1/2 : 1/3
    words = " ".join(text for _, text in first).lower().replace(".", "").split()
    the, of, and_ = words.count("the"), words.count("of"), words.count("and")
    assert the > 1.7 * of and of > 1.3 * and_
