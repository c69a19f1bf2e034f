"""The import graph of ``ragtools``: no module-level cycle, and the parts layered one way.

The graph is read from the source with :mod:`ast` (nothing is imported). A module-level
import is one Python runs when the module is imported: at the top level, or inside a
module-level ``if``/``try``/``with`` or class body, but not inside a function and not under
``if TYPE_CHECKING:``. Importing ``a.b.c`` also runs the ``__init__`` of ``a.b``, so that is an
edge too, except to the importer's own packages, which Python has always begun importing
first (a package's ``__init__`` importing its submodules is no cycle).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("parsers", "indexes", "retrieval")

LAYERS = {
    "parsers": 0,
    "indexes": 1,
    "retrieval": 2,
    "retrieval.tools": 3,
    "retrieval.evaluation": 3,
    "retrieval.integrations": 4,
    "retrieval.cli": 5,
    "retrieval.__init__": 6,
}
"""Each part imports only parts of a lower rank, even inside functions: the retrieval core
(retrievers, fusion, filters) knows no tool, the tool layer no framework adapter, and only
the command line reaches the adapters (``rag serve``) and the evaluation (``rag eval``).
``ragtools.retrieval``'s ``__init__`` names the main classes of every part, so it is on top
(its tool names load lazily, but are imported for type checkers)."""


def _module_names() -> dict[str, Path]:
    names: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            names[".".join(["ragtools", *parts])] = path
    return names


MODULES = _module_names()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements Python runs on import, nested blocks included, functions excluded."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _module_level(node.orelse)
            continue
        yield node
        for field in ("body", "orelse", "finalbody"):
            yield from _module_level(getattr(node, field, []))
        for handler in getattr(node, "handlers", []):
            yield from _module_level(handler.body)


def _imported(node: ast.stmt) -> list[str]:
    """Dotted names of the modules an import statement may run (ours or not)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        assert node.level == 0 and node.module, ast.unparse(node)  # absolute imports only
        # ``from a.b import c`` runs a.b.c when c is a submodule, else only a.b
        return [f"{node.module}.{alias.name}" for alias in node.names]
    return []


def _targets(importer: str, dotted: str) -> set[str]:
    """Our modules that importing ``dotted`` from ``importer`` runs (see the module doc)."""
    parts = dotted.split(".")
    prefixes = {".".join(parts[:end]) for end in range(2, len(parts) + 1)}
    return {
        t for t in prefixes & MODULES.keys() if not (importer == t or importer.startswith(t + "."))
    }


def _graph(statements: str) -> dict[str, set[str]]:
    """Module -> the modules it imports: ``"module-level"`` or ``"all"`` import statements."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nodes = _module_level(tree.body) if statements == "module-level" else ast.walk(tree)
        graph[name] = {
            target
            for node in nodes
            if isinstance(node, ast.stmt)
            for dotted in _imported(node)
            for target in _targets(name, dotted)
        }
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, ..., a]``, or ``None`` (depth-first search)."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path, on_path = [start], {start}
        stack = [iter(sorted(graph[start]))]
        while stack:
            target = next(stack[-1], None)
            if target is None:
                finished = path.pop()
                on_path.remove(finished)
                done.add(finished)
                stack.pop()
                continue
            if target in on_path:
                return [*path[path.index(target) :], target]
            if target not in done:
                path.append(target)
                on_path.add(target)
                stack.append(iter(sorted(graph[target])))
    return None


def _layer(module: str) -> str:
    if module == "ragtools.retrieval":
        return "retrieval.__init__"
    parts = module.split(".")[1:]
    if parts[0] == "retrieval" and len(parts) > 1:
        if parts[1] in ("tools", "evaluation", "integrations"):
            return f"retrieval.{parts[1]}"
        if parts[1] == "cli" or parts[1].startswith("_cli"):
            return "retrieval.cli"
    return parts[0]


def test_module_level_imports_are_those_python_runs() -> None:
    source = (
        "import a\n"
        "if TYPE_CHECKING:\n    import b\nelse:\n    import c\n"
        "try:\n    import d\nexcept ImportError:\n    from e import f\n"
        "class K:\n    import g\n"
        "def h():\n    import i\n"
    )
    statements = _module_level(ast.parse(source).body)
    assert [name for node in statements for name in _imported(node)] == ["a", "c", "d", "e.f", "g"]
    # ``from ragtools.parsers.errors import ConfigError`` runs the package and the module,
    assert _targets("ragtools.indexes.keyword.bm25", "ragtools.parsers.errors.ConfigError") == {
        "ragtools.parsers",
        "ragtools.parsers.errors",
    }
    # but the importer's own package has begun importing already.
    assert _targets("ragtools.retrieval.hybrid", "ragtools.retrieval.fusion.fuse") == {
        "ragtools.retrieval.fusion"
    }


def test_find_cycle_reports_the_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None  # a diamond


def test_no_module_level_import_cycle() -> None:
    cycle = find_cycle(_graph("module-level"))
    assert cycle is None, "module-level import cycle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize("statements", ["module-level", "all"])
def test_the_parts_import_each_other_one_way(statements: str) -> None:
    """retrieval -> indexes -> parsers, and inside retrieval: cli -> integrations -> tools ->
    core; type-only and in-function imports count too (``"all"``)."""
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in _graph(statements).items()
        for target in targets
        if LAYERS[_layer(module)] <= LAYERS[_layer(target)] and _layer(module) != _layer(target)
    )
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)
