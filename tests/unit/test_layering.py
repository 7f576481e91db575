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
