"""langchain-core's own tool tests, run against ragtools (issue #34, item 1).

The pinned langchain-core source distribution is fetched from the package registry with
``pip download`` (never copied into this repository) and cached under ``.venv/`` (see
:func:`_cache_dir`). Its ``tests/unit_tests/test_tools.py`` and
``tests/unit_tests/utils/test_function_calling.py`` (with the two small helper modules they
import) are extracted to a scratch directory, their ``langchain_core.tools`` /
``langchain_core.tools.base`` / ``langchain_core.utils.function_calling`` imports are
rewritten to :mod:`ragtools_lc_shim` (``shim/``), and they run in a child pytest with the
``suite_conftest.py`` from ``shim/`` as its conftest.

``expected.txt`` lists every item with one of three verdicts: ``pass`` (applies and must
pass), ``n/a`` (tests LangChain-only machinery; the reason is on the line), ``differs``
(applies, and our default differs; the reason names the option that gives LangChain's
behaviour).
The test fails when a ``pass`` item does not pass, or when an item is unlisted, so a
new langchain-core pin is noticed. It skips only when the registry cannot be reached.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("langchain_core")

VERSION = "1.8.3"
HERE = Path(__file__).resolve().parent
_FILES = (
    "tests/__init__.py",
    "tests/unit_tests/__init__.py",
    "tests/unit_tests/test_tools.py",
    "tests/unit_tests/utils/__init__.py",
    "tests/unit_tests/utils/test_function_calling.py",
    "tests/unit_tests/fake/__init__.py",
    "tests/unit_tests/fake/callbacks.py",
    "tests/unit_tests/pydantic_utils.py",
)
_REWRITES = (
    (re.compile(r"^from langchain_core import tools$", re.M), "import ragtools_lc_shim as tools"),
    (
        re.compile(r"^from langchain_core\.tools(\.base)? import", re.M),
        "from ragtools_lc_shim import",
    ),
    (
        re.compile(r"^from langchain_core\.utils\.function_calling import", re.M),
        "from ragtools_lc_shim import",
    ),
)
Verdicts = dict[str, tuple[str, str]]


def _cache_dir() -> Path:
    """``RAGTOOLS_LC_SDIST_DIR``, else ``langchain-suite/`` inside the running virtualenv
    (``.venv/`` here), else the temporary directory when the environment is read-only."""
    override = os.environ.get("RAGTOOLS_LC_SDIST_DIR")
    for base in ([Path(override)] if override else []) + [
        Path(sys.prefix) / "langchain-suite",
        Path(tempfile.gettempdir()) / "ragtools-langchain-suite",
    ]:
        try:
            base.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(base, os.W_OK):
            return base
    pytest.skip("no writable directory to cache the langchain-core sdist in")


def _sdist() -> Path:
    """The cached sdist, downloaded on first use; skip when the registry is unreachable."""
    cache = _cache_dir()
    found = sorted(cache.glob(f"langchain_core-{VERSION}.tar.gz"))
    if found:
        return found[0]
    cmd = [sys.executable, "-m", "pip", "download", f"langchain-core=={VERSION}"]
    cmd += ["--no-binary", ":all:", "--no-deps", "--disable-pip-version-check", "-d", str(cache)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip(
            f"package registry unreachable: downloading langchain-core=={VERSION} timed out"
        )
    found = sorted(cache.glob(f"langchain_core-{VERSION}.tar.gz"))
    if done.returncode != 0 or not found:
        pytest.skip(f"package registry unreachable: {done.stderr.strip()[-300:]}")
    return found[0]


def rewrite(source: str) -> str:
    """``source`` with LangChain's tool imports pointed at :mod:`ragtools_lc_shim`."""
    for pattern, replacement in _REWRITES:
        source = pattern.sub(replacement, source)
    return source


def _extract(sdist: Path, dest: Path) -> None:
    prefix = f"langchain_core-{VERSION}/"
    with tarfile.open(sdist) as tar:
        for rel in _FILES:
            member = tar.extractfile(prefix + rel)
            text = "" if member is None else io.TextIOWrapper(member, encoding="utf-8").read()
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(rewrite(text), encoding="utf-8")
    (dest / "conftest.py").write_text(
        (HERE / "shim" / "suite_conftest.py").read_text("utf-8"), "utf-8"
    )
    (dest / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")


def run_suite(workdir: Path) -> dict[str, str]:
    """Run the two LangChain files in a child pytest; return ``{item: outcome}``."""
    _extract(_sdist(), workdir)
    outcomes = workdir / "outcomes.json"
    env = dict(os.environ, RAGTOOLS_LC_OUTCOMES=str(outcomes))
    env["PYTHONPATH"] = os.pathsep.join([str(workdir), str(HERE / "shim")])
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    cmd += ["-c", str(workdir / "pytest.ini"), "--rootdir", str(workdir)]
    cmd += ["tests/unit_tests/test_tools.py", "tests/unit_tests/utils/test_function_calling.py"]
    subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, timeout=600, check=False)
    return dict(json.loads(outcomes.read_text("utf-8")))


def load_expected(path: Path = HERE / "expected.txt") -> Verdicts:
    """``{item: (verdict, reason)}`` from ``expected.txt`` (``item  verdict  # reason``)."""
    verdicts: Verdicts = {}
    for line in path.read_text("utf-8").splitlines():
        body, _, reason = line.partition("#")
        if not body.strip():
            continue
        item, verdict = re.split(r"\s{2,}", body.strip())
        verdicts[item] = (verdict, reason.strip())
    return verdicts


def test_expected_list_is_well_formed() -> None:
    verdicts = load_expected()
    assert {v for v, _ in verdicts.values()} <= {"pass", "n/a", "differs"}
    unexplained = [item for item, (v, reason) in verdicts.items() if v != "pass" and not reason]
    assert unexplained == []
    no_option = [item for item, (v, reason) in verdicts.items() if v == "differs"]
    no_option = [item for item in no_option if "option" not in verdicts[item][1]]
    assert no_option == [], "every difference must be a documented option"


def test_langchain_tool_suite(tmp_path: Path) -> None:
    outcomes = run_suite(tmp_path)
    verdicts = load_expected()
    assert outcomes, "the LangChain suite collected nothing"
    unlisted = sorted(set(outcomes) - set(verdicts))
    assert unlisted == [], f"items missing from expected.txt: {unlisted}"
    broken = sorted(
        f"{item}: {outcomes.get(item, 'not collected')}"
        for item, (verdict, _) in verdicts.items()
        if verdict == "pass" and outcomes.get(item) not in ("passed", "xfailed")
    )
    assert broken == [], f"LangChain tests expected to pass did not: {broken}"
