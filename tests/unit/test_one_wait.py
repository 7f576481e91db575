"""The tests wait in one way: :func:`tests.integration.operator.support.wait.eventually` (docs/testing.md
"Time in tests").

A hand-written polling loop — a ``for`` or ``while`` whose body sleeps and leaves early (``break``,
``return``) once something holds, or a ``while <condition>:`` whose body sleeps (``while not ready():
sleep(0.1)``, with or without a deadline asserted inside) — is the same wait written again, each time with
its own limit, its own failure text (or none: a ``for _ in range(50)`` that runs out falls through to an
assertion that says less), and its own idea of a deadline (a loop that counts sleeps waits longer on a busy
machine than it says). An AST scan of every module under ``tests/`` finds each such loop; the only ones
allowed are in ``ALLOWED``, each with why it is not a wait. An entry that no longer matches anything fails
too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO

TESTS = REPO / "tests"

ALLOWED: dict[str, str] = {
    "tests/integration/operator/support/wait.py::eventually": "the one wait itself",
    "tests/unit/runtime/test_workqueue.py::worker": "a queue's worker: takes keys until the queue shuts down",
    "tests/integration/operator/support/rotation.py::client": (
        "a load generator: an application's logins, paced, until the test stops it"
    ),
    "tests/integration/operator/support/rotation.py::refresh": (
        "a load generator: the kubelet refreshing a mounted Secret, paced, until the test stops it"
    ),
    "tests/integration/operator/workload/test_signer_rotation.py::run": (
        "a load generator: an application's certificate logins, paced, until the test stops it"
    ),
}

NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _own_nodes(statements: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of ``statements``, not descending into nested functions or classes."""
    pending: list[ast.AST] = [statement for statement in statements if not isinstance(statement, NESTED)]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, NESTED))


def _sleeps(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
    return name == "sleep"


def _forever(loop: ast.For | ast.AsyncFor | ast.While) -> bool:
    """Whether ``loop`` is a ``while True:`` (any other ``while`` waits for its condition)."""
    return isinstance(loop, ast.While) and isinstance(loop.test, ast.Constant) and bool(loop.test.value)


def is_polling_loop(loop: ast.For | ast.AsyncFor | ast.While) -> bool:
    """Whether ``loop`` sleeps and leaves early, or sleeps until its ``while`` condition stops holding: a
    wait written by hand."""
    nodes = list(_own_nodes(loop.body))
    if not any(_sleeps(node) for node in nodes):
        return False
    conditional = isinstance(loop, ast.While) and not _forever(loop)
    return conditional or any(isinstance(node, (ast.Break, ast.Return)) for node in nodes)


def polling_loops(path: Path) -> Iterator[str]:
    """``path::function`` for each hand-written polling loop in the module."""
    relative = path.relative_to(REPO).as_posix()
    tree = ast.parse(path.read_text(), filename=str(path))
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in _own_nodes(function.body):
            if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and is_polling_loop(node):
                yield f"{relative}::{function.name}"


def all_polling_loops() -> set[str]:
    return {found for path in sorted(TESTS.rglob("*.py")) for found in polling_loops(path)}


def test_no_test_waits_by_a_loop_of_its_own() -> None:
    unexplained = sorted(all_polling_loops() - ALLOWED.keys())
    assert not unexplained, (
        "wait with tests.integration.operator.support.wait.eventually (or a helper built on it), "
        f"not a loop of your own: {unexplained}"
    )


def test_every_allowed_loop_still_exists() -> None:
    assert not sorted(ALLOWED.keys() - all_polling_loops())


def scan(source: str) -> list[str]:
    tree = ast.parse(source)
    return [
        function.name
        for function in ast.walk(tree)
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in _own_nodes(function.body)
        if isinstance(node, (ast.For, ast.While)) and is_polling_loop(node)
    ]


def test_the_scan_finds_the_shapes_a_wait_takes() -> None:
    source = """
async def counted():
    for _ in range(50):
        if ready():
            break
        await asyncio.sleep(0.1)

async def deadline():
    while time.monotonic() < deadline:
        if ready():
            return 1
        time.sleep(0.1)

async def paced():
    for n in range(3):
        await asyncio.sleep(1)
        do(n)

async def helper_inside():
    for n in range(3):
        async def check():
            return True
        await asyncio.sleep(1)

async def conditional():
    while not ready():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)

def conditional_sync():
    while pid_file.read_text() == "":
        time.sleep(0.05)

async def forever():
    while True:
        await asyncio.sleep(1)
        do()

async def conditional_without_sleep():
    while pending:
        do(pending.pop())
"""
    assert scan(source) == ["counted", "deadline", "conditional", "conditional_sync"]
