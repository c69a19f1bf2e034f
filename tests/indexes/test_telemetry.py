"""ONNX Runtime's telemetry stays off: no file appears under the cache's ``Microsoft`` folder."""

from __future__ import annotations

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


def test_a_vector_query_leaves_no_telemetry_files(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), HF_HUB_OFFLINE="1")
    env["TRANSFORMERS_OFFLINE"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", QUERY, str(tmp_path / "index")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"  # the query went through ONNX Runtime
    assert not (home / ".cache" / "Microsoft").exists()
