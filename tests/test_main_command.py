"""The README's main command and its tour, run from a clean clone exactly as a new user would.

Both use one clone (no ``../shared`` beside it): the demo creates ``.venv`` from nothing,
then the tour runs every command of the README's tour section, in order, in that clone.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    git = shutil.which("git")
    assert git is not None, "git is needed to clone the repository"
    target = tmp_path_factory.mktemp("fresh") / "clone"
    subprocess.run([git, "clone", "--quiet", str(ROOT), str(target)], check=True)
    assert not (target.parent / "shared").exists()
    return target


def user_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH"}}


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_demo_from_a_clean_clone(clone: Path) -> None:
    proc = subprocess.run(
        ["bash", "scripts/demo.sh", "--question", "How is an index saved on disk?"],
        cwd=clone,
        env=user_env(),
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


def tour_blocks(readme: str) -> tuple[str, str]:
    """The tour section's bash block and Python block, as the README shows them."""
    section = readme.split("## A five-minute tour", 1)[1].split("\n## ", 1)[0]
    bash = re.search(r"```bash\n(.*?)```", section, re.S)
    python = re.search(r"```python\n(.*?)```", section, re.S)
    assert bash is not None and python is not None, "the tour lost a code block"
    return bash.group(1), python.group(1)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_readme_tour_runs_in_a_clean_clone(clone: Path) -> None:
    setup = subprocess.run(
        ["bash", "scripts/setup.sh"], cwd=clone, env=user_env(), capture_output=True, text=True
    )  # quick when the demo made .venv already
    assert setup.returncode == 0, setup.stderr[-4000:]
    bash, python = tour_blocks((clone / "README.md").read_text(encoding="utf-8"))
    env = {**user_env(), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-x", "-c", bash],
        cwd=clone,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-6000:]
    out, err = proc.stdout, proc.stderr
    assert re.match(r"rag \d+\.\d+", out)  # rag --version
    assert "built my-index: " in out and " 0 failed)" in out
    assert "updated my-index: 1 added, 0 changed, 0 removed" in out
    assert "rolled back my-index: v-000001 is live (was v-000002)" in out
    assert "rag: ready: serving MCP over stdio (1 index)" in err
    assert "Loading weights" not in err and "Batches" not in err
    answers = (clone / "answers.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(answers) == 2 and '"hits": [' in answers[0]
    snippet = subprocess.run(
        [str(clone / ".venv" / "bin" / "python"), "-c", python],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert snippet.returncode == 0, snippet.stderr[-4000:]
    assert "README.md" in snippet.stdout and "Hit(" in snippet.stdout
