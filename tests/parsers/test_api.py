"""The public surface of ``parsers``: exported names and import cost."""

from __future__ import annotations

import subprocess
import sys

from ragtools import parsers


def test_exported_names() -> None:
    assert sorted(parsers.__all__) == [
        "Chunk",
        "ConfigError",
        "DimensionMismatchError",
        "Document",
        "FileError",
        "IndexLoadError",
        "IndexStateError",
        "IndexVersionError",
        "LoadResult",
        "MissingDependencyError",
        "ParseError",
        "PasswordRequiredError",
        "RetrievalError",
        "Selection",
        "ToolInputError",
        "load",
        "load_dir",
        "load_files",
        "register_parser",
        "split",
        "stable_id",
    ]
    for name in parsers.__all__:
        assert getattr(parsers, name) is not None


def test_import_is_lazy() -> None:
    """Format libraries load on first use, so ``import parsers`` stays cheap."""
    code = (
        "import sys, parsers; heavy = {'pypdf', 'bs4', 'charset_normalizer', 'docx', 'pptx',"
        " 'openpyxl', 'tqdm'}; print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
