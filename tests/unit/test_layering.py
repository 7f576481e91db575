"""The three layers stay apart: the runtime knows no MySQL and no DatabaseUser; MySQL knows no Kubernetes; and
the controllers stand on floors (kit ← servers ← policy ← shared ← the kinds), as the MySQL layer does
(identifiers, errors ← session ← grants ← accounts, bookkeeping, databases), none importing a higher one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "operator" / "dbuser_operator"


def imported_modules(folder: Path) -> set[str]:
    """The modules the sources of ``folder`` (or the one source ``folder``) import."""
    modules: set[str] = set()
    for source in [folder] if folder.is_file() else folder.rglob("*.py"):
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
KIND_FOLDERS = ("database", "databaserole", "databaseuser", "mysqlserver")  # one folder per kind
KINDS = tuple(f"{CONTROLLERS}.{kind}" for kind in KIND_FOLDERS)
# What the kinds stand on, lowest first: no module of a floor imports one of a higher floor.
FLOORS: tuple[tuple[str, ...], ...] = (("kit",), ("servers",), ("policy",), ("shared",), KIND_FOLDERS)


def within(module: str, packages: tuple[str, ...]) -> bool:
    """Whether ``module`` is one of ``packages`` or inside one (``a.b`` is not inside ``a.bc``)."""
    return any(module == package or module.startswith(f"{package}.") for package in packages)


def members(package: Path) -> set[str]:
    """The names of a package's sub-packages and modules (its ``__init__`` aside)."""
    return {
        path.stem
        for path in package.iterdir()
        if (path.is_dir() and (path / "__init__.py").exists())
        or (path.suffix == ".py" and path.name != "__init__.py")
    }


def test_every_folder_of_controllers_is_a_floor() -> None:
    """A new folder (a new kind) is placed on a floor, so that the checks below cover it."""
    assert members(PACKAGE / "controllers") == {name for floor in FLOORS for name in floor}


APART: list[tuple[str, tuple[str, ...]]] = [
    # the frame every kind shares knows none of them, nor the handles, the policies or the wiring
    (
        "controllers/kit",
        (f"{CONTROLLERS}.servers", f"{CONTROLLERS}.policy", f"{CONTROLLERS}.shared", *KINDS),
    ),
    ("controllers/servers", KINDS),
    ("controllers/policy", KINDS),
    *(
        (f"controllers/{kind}", tuple(other for other in KINDS if other != f"{CONTROLLERS}.{kind}"))
        for kind in KIND_FOLDERS
    ),
    ("api", ("dbuser_operator.controllers", "dbuser_operator.runtime")),
    ("settings.py", ("dbuser_operator.controllers",)),
]


@pytest.mark.parametrize(("folder", "forbidden"), APART, ids=[folder for folder, _ in APART])
def test_kinds_stay_apart(folder: str, forbidden: tuple[str, ...]) -> None:
    modules = imported_modules(PACKAGE / folder)
    assert modules, "the folder imports something: the scan works"
    assert sorted(m for m in modules if within(m, forbidden)) == []


def test_within_tells_a_package_from_a_longer_name() -> None:
    assert within(f"{CONTROLLERS}.database.setup", (f"{CONTROLLERS}.database",))
    assert within(f"{CONTROLLERS}.database", (f"{CONTROLLERS}.database",))
    assert not within(f"{CONTROLLERS}.databaseuser.setup", (f"{CONTROLLERS}.database",))


MYSQL = "dbuser_operator.mysql"
# The MySQL layer's floors, lowest first: the quoting and the errors, talking to a server, the grants, then
# what stands on them (accounts and the bookkeeping read each other's modules, so they share a floor).
MYSQL_FLOORS: tuple[tuple[str, ...], ...] = (
    ("identifiers", "errors"),
    ("session",),
    ("grants",),
    ("accounts", "bookkeeping", "databases"),
)
FLOOR_CASES = [
    *((CONTROLLERS, FLOORS, floor) for floor in range(len(FLOORS) - 1)),
    *((MYSQL, MYSQL_FLOORS, floor) for floor in range(len(MYSQL_FLOORS) - 1)),
]


@pytest.mark.parametrize(
    ("package", "floors", "floor"),
    FLOOR_CASES,
    ids=[f"{package.rsplit('.', 1)[-1]}:{'/'.join(floors[floor])}" for package, floors, floor in FLOOR_CASES],
)
def test_no_floor_imports_a_higher_one(package: str, floors: tuple[tuple[str, ...], ...], floor: int) -> None:
    """``kit`` ← ``servers`` ← ``policy`` ← ``shared`` ← the kinds, and in ``mysql/`` ``identifiers``,
    ``errors`` ← ``session`` ← ``grants`` ← ``accounts``, ``bookkeeping``, ``databases``: each floor imports
    only from its own and lower ones (imports only for the type checker included)."""
    graph = import_graph()
    mine = tuple(f"{package}.{name}" for name in floors[floor])
    higher = tuple(f"{package}.{name}" for above in floors[floor + 1 :] for name in above)
    modules = [module for module in graph if within(module, mine)]
    assert modules, "the floor has modules: the scan works"
    upward = sorted(
        f"{module} imports {imported}"
        for module in modules
        for imported in graph[module]
        if within(imported, higher)
    )
    assert upward == []


def test_every_module_of_mysql_is_on_a_floor() -> None:
    """A new module or sub-package of ``mysql/`` is placed on a floor, so that the check above covers it."""
    assert members(PACKAGE / "mysql") == {name for floor in MYSQL_FLOORS for name in floor}


MAX_MODULE_LINES = 450


def test_no_module_is_over_450_lines() -> None:
    """A module past this is two topics: split it (a model's status into its own module, say)."""
    lengths = {
        str(source.relative_to(PACKAGE)): len(source.read_text().splitlines())
        for source in PACKAGE.rglob("*.py")
    }
    assert len(lengths) > 100, "the scan finds the package's modules"
    assert {name: lines for name, lines in lengths.items() if lines > MAX_MODULE_LINES} == {}
