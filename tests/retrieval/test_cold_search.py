"""A fresh ``rag search`` in hybrid mode answers without importing torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragtools.indexes.index import Index
from ragtools.parsers import Document


@pytest.mark.slow
def test_hybrid_search_through_the_cli_never_imports_torch(tmp_path: Path) -> None:
    documents = [
        Document(text="Honey bees dance to show where flowers are.", metadata={"source": "b"}),
        Document(text="The moon's gravity raises the tides.", metadata={"source": "t"}),
    ]
    index = tmp_path / "index"
    Index.from_documents(documents, index)  # exports the model's ONNX file if needed
    probe = (
        "import json, sys\n"
        "from ragtools.retrieval.cli import main\n"
        f"code = main(['search', {str(index)!r}, 'insects that dance', '--json', '-k', '1'])\n"
        "print(json.dumps({'code': code, 'torch': 'torch' in sys.modules,"
        " 'transformers': 'transformers' in sys.modules}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    hits_line, status_line = done.stdout.strip().splitlines()[-2:]
    assert json.loads(status_line) == {"code": 0, "torch": False, "transformers": False}
    hit = json.loads(hits_line)[0]
    assert hit["chunk"]["metadata"]["source"] == "b" and "vector" in hit["scores"]
