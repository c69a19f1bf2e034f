"""conftest for the extracted LangChain tests (copied in as conftest.py; replaces theirs).

Runs ``async def`` tests on a fresh event loop (LangChain uses pytest-asyncio's auto mode,
which this project does not install), registers LangChain's ``requires`` marker, and writes
every item's outcome to the JSON file named by ``RAGTOOLS_LC_OUTCOMES``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
from typing import Any

import pytest

_OUTCOMES: dict[str, str] = {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "requires(*pkgs): LangChain's optional-package marker")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    kwargs = {name: pyfuncitem.funcargs[name] for name in names}
    asyncio.run(pyfuncitem.obj(**kwargs))
    return True


def pytest_runtest_logreport(report: Any) -> None:
    nodeid = report.nodeid.split("unit_tests/", 1)[-1]
    first_problem = nodeid not in _OUTCOMES or _OUTCOMES[nodeid] == "passed"
    if (report.when == "call" or report.outcome != "passed") and first_problem:
        _OUTCOMES[nodeid] = "xfailed" if hasattr(report, "wasxfail") else report.outcome


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get("RAGTOOLS_LC_OUTCOMES")
    if target:
        with open(target, "w", encoding="utf-8") as fh:
            json.dump(_OUTCOMES, fh, indent=0, sort_keys=True)
