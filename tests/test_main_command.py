"""The README's main command, run from a clean clone exactly as a new user would."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_demo_from_a_clean_clone(tmp_path: Path) -> None:
    git = shutil.which("git")
    assert git is not None, "git is needed to clone the repository"
    clone = tmp_path / "clone"
    subprocess.run([git, "clone", "--quiet", str(ROOT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH"}}
    proc = subprocess.run(
        ["bash", "scripts/demo.sh", "--question", "How is an index saved on disk?"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=1700,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = proc.stdout
    assert (clone / ".venv" / "bin" / "rag").exists()
    assert "all-MiniLM-L6-v2" in out
    assert "content (what the model reads)" in out
    assert "README.md" in out and "(chunk " in out  # a citation
    assert "artifact (what the application keeps):" in out and "Hit objects" in out
    assert "status='success'" in out
