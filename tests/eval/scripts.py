"""Loading a script of ``eval/`` as a module, so tests call its functions directly."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

EVAL = Path(__file__).resolve().parents[2] / "eval"


def load_script(name: str) -> ModuleType:
    """``eval/<name>.py`` as a module (its ``main`` is not run)."""
    spec = importlib.util.spec_from_file_location(name, EVAL / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
