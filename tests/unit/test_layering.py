"""The three layers stay apart: the runtime knows no MySQL and no DatabaseUser; MySQL knows no Kubernetes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "operator" / "dbuser_operator"


def imported_modules(folder: Path) -> set[str]:
    modules: set[str] = set()
    for source in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                modules.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                modules.add(node.module)
    return modules


@pytest.mark.parametrize(
    ("layer", "forbidden"),
    [
        (
            "runtime",
            (
                "dbuser_operator.mysql",
                "dbuser_operator.api",
                "dbuser_operator.controllers",
                "aiomysql",
                "pymysql",
            ),
        ),
        (
            "mysql",
            (
                "dbuser_operator.runtime",
                "dbuser_operator.api",
                "dbuser_operator.controllers",
                "kubernetes_asyncio",
            ),
        ),
    ],
)
def test_layer_imports_nothing_from_above_or_beside(layer: str, forbidden: tuple[str, ...]) -> None:
    folder = PACKAGE / layer
    if not folder.exists():
        pytest.fail(f"{folder} is missing")
    modules = imported_modules(folder)
    assert modules, "the layer imports something: the scan works"
    offending = sorted(m for m in modules if m.startswith(forbidden))
    assert offending == []


def module_name(source: Path) -> str:
    parts = source.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Each module of the package → the package's modules it imports (``from x import y`` counts as an
    import of ``x.y`` where that is a module, else of ``x``); imports only for the type checker included."""
    sources = {module_name(source): source for source in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, source in sources.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names if alias.name in sources)
            elif isinstance(node, ast.ImportFrom) and node.module and node.module in sources:
                for alias in node.names:
                    child = f"{node.module}.{alias.name}"
                    edges.add(child if child in sources else node.module)
        graph[name] = edges - {name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (the modules in order, the first repeated at the end), or None."""
    done: set[str] = set()
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return None
        path.append(module)
        for imported in sorted(graph.get(module, ())):
            cycle = visit(imported)
            if cycle:
                return cycle
        path.pop()
        done.add(module)
        return None

    for module in sorted(graph):
        cycle = visit(module)
        if cycle:
            return cycle
    return None


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 100, "the scan finds the package's modules"
    assert find_cycle(graph) is None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


CONTROLLERS = "dbuser_operator.controllers"
KINDS = (f"{CONTROLLERS}.databaseuser", f"{CONTROLLERS}.databaserole")


@pytest.mark.parametrize(
    ("folder", "forbidden"),
    [
        ("controllers/kit", KINDS),  # the frame every kind shares knows none of them
        ("controllers/servers", KINDS),
        ("controllers/policy", KINDS),
        ("controllers/databaserole", (f"{CONTROLLERS}.databaseuser",)),
        ("controllers/databaseuser", (f"{CONTROLLERS}.databaserole",)),
        ("api", ("dbuser_operator.controllers", "dbuser_operator.runtime")),
    ],
)
def test_kinds_stay_apart(folder: str, forbidden: tuple[str, ...]) -> None:
    modules = imported_modules(PACKAGE / folder)
    assert modules, "the folder imports something: the scan works"
    assert sorted(m for m in modules if m.startswith(forbidden)) == []
