"""The public surface of ``parsers``: exported names and import cost."""

from __future__ import annotations

import subprocess
import sys

from ragtools import parsers


def test_exported_names() -> None:
    assert sorted(parsers.__all__) == [
        "Chunk",
        "ConfigError",
        "Document",
        "FileError",
        "LoadResult",
        "MissingDependencyError",
        "ParseError",
        "PasswordRequiredError",
        "RetrievalError",
        "Selection",
        "load",
        "load_dir",
        "load_files",
        "register_parser",
        "split",
        "stable_id",
    ]
    for name in parsers.__all__:
        assert getattr(parsers, name) is not None


def test_errors_live_beside_the_package_that_raises_them() -> None:
    """The index and tool-input errors moved out of ``parsers`` (#33 item 5), under the one
    root; ``parsers`` keeps the errors every package raises."""
    from ragtools import indexes, retrieval
    from ragtools.indexes import errors as index_errors
    from ragtools.parsers.errors import RetrievalError
    from ragtools.retrieval import errors as retrieval_errors

    moved = {
        "IndexStateError": index_errors,
        "DimensionMismatchError": index_errors,
        "IndexLoadError": index_errors,
        "IndexVersionError": index_errors,
        "ToolInputError": retrieval_errors,
    }
    for name, module in moved.items():
        error = getattr(module, name)
        assert issubclass(error, RetrievalError)
        assert not hasattr(parsers, name)
        front = indexes if module is index_errors else retrieval
        assert getattr(front, name) is error


def test_import_is_lazy() -> None:
    """Format libraries load on first use, so ``import parsers`` stays cheap."""
    code = (
        "import sys, parsers; heavy = {'pypdf', 'bs4', 'charset_normalizer', 'docx', 'pptx',"
        " 'openpyxl', 'tqdm'}; print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
