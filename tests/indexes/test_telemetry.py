"""ONNX Runtime's telemetry stays off: no file appears under the cache's ``Microsoft`` folder."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

QUERY = """
import sys
from ragtools.indexes.index import Index
from ragtools.parsers import Document
docs = [Document(text="Honey bees dance to point at flowers."), Document(text="Tides rise.")]
index = Index.from_documents(docs, sys.argv[1])
assert index.vector_search("why do bees dance", 1)[0][0] == 0
print("onnxruntime" in sys.modules)
"""


def run_with_empty_home(
    tmp_path: Path, code: str, *args: str, drop: tuple[str, ...] = ()
) -> tuple[Path, str]:
    """``code`` run in a fresh interpreter whose home folder is new and empty, without the
    environment variables ``drop`` (opt-outs a test must not inherit): that home, and what
    the process printed."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), HF_HUB_OFFLINE="1")
    env["TRANSFORMERS_OFFLINE"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return home, proc.stdout.strip()


def test_a_vector_query_leaves_no_telemetry_files(tmp_path: Path) -> None:
    home, printed = run_with_empty_home(
        tmp_path, QUERY, str(tmp_path / "index"), drop=("ORT_DISABLE_TELEMETRY",)
    )
    assert printed == "True"  # the query went through ONNX Runtime
    assert not (home / ".cache" / "Microsoft").exists()


OPENVINO = """
import sys
from ragtools.indexes.dense.onnx_export import openvino_runtime
ov = openvino_runtime()
ov.Core().available_devices  # the runtime works
from openvino.tools.ovc import telemetry_utils
print(telemetry_utils.tm.__name__)
"""


def test_openvino_is_imported_without_its_usage_event(tmp_path: Path) -> None:
    """``import openvino`` sends a Google Analytics event and writes ``~/intel`` unless the
    user opted out; through :func:`openvino_runtime` its own no-op stub is used instead."""
    # OpenVINO's telemetry stays off in CI on its own: the child must not look like CI
    home, printed = run_with_empty_home(tmp_path, OPENVINO, drop=("CI", "TF_BUILD", "JENKINS_URL"))
    # openvino_telemetry is installed (openvino depends on it), so the stub is the guard's doing
    assert importlib.metadata.version("openvino-telemetry")
    assert printed == "openvino.tools.ovc.telemetry_stub"
    assert not (home / "intel").exists()
