"""No test asserts a wall-clock bound that a busy or slow machine can miss (DESIGN.md §7, docs/testing.md
"Time in tests").

An AST scan of every module under ``tests/`` lists each *timed assertion*: an ordering comparison
(``<``, ``<=``, ``>``, ``>=``) between a value read from a clock and a constant, where

- a clock is ``time.monotonic()``, ``time.time()``, ``time.perf_counter()`` (and their ``_ns`` forms, also
  imported bare), any ``<x>.time()`` with no argument (``loop.time()``,
  ``asyncio.get_running_loop().time()``), ``datetime.now()`` / ``datetime.utcnow()``, or a call of a test
  helper that returns a clock reading or a difference of two;
- a value read from a clock is a clock call, a name assigned from one in the same function or an enclosing
  one, or a parameter some call in the module passes one to (``started = time.monotonic()`` … ``elapsed =
  time.monotonic() - started`` … ``assert elapsed < 8``; ``deadline = time.monotonic() + 8`` … ``assert
  time.monotonic() < deadline``), through arithmetic, its methods (``.total_seconds()``,
  ``.replace(microsecond=0)``), ``float()``, ``round()``, ``max()``/``min()``;
- the comparison counts when, written as ``left - right``, it has a clock term and a term that is not a clock
  (a literal, a constant's name, a product's record): a comparison of clock readings alone (``first < then``:
  an order of events, ``quiet < total / 2``: a ratio of two durations measured in one window) is no bound;
- it is an assertion when it is in the test of an ``assert``, or in the test of an ``if`` whose body fails
  (``pytest.fail``, ``raise``; the comparison is then negated), or a clock-derived limit handed to a call
  (``until("Ready", REPORTED - (time.monotonic() - faulted), ready)``: the wait fails when the limit runs
  out; a time handed to a call counts when it is a duration, two clock readings or more, and a constant,
  not when it is a point in time made from one reading: ``set_started(pod, datetime.now(UTC) +
  timedelta(seconds=1))``).

Not timed assertions:

- a polling limit: any comparison in a ``while`` loop's condition or in an ``assert``/``if``-fail inside a
  ``while`` loop's body (``while time.monotonic() < deadline:``, ``while True: … assert time.monotonic() <
  deadline, "never Ready"``). The failure says the condition never held; its limit must be generous, and
  that is for review, not for this scan;
- a lower bound on a duration (``assert time.monotonic() - started > 0.2``, ``assert loop.time() - start >=
  0.01``, ``assert -0.5 < late``): a slow machine only makes the duration longer, so it always meets one. The
  scan ignores ``>`` and ``>=`` with the measured side on the left (``<``/``<=`` with it on the right); the
  measured side is the one with a clock reading where the other has none, else the one of clock readings
  alone;
- a figure printed (``print(f"{time.monotonic() - t:.1f} s")``): figures of speed belong in ``bench/``.

Every timed assertion must be in ``ALLOWED`` (``"path::function": "reason"``), and an entry there may only be
a comparison against the product's own recorded time (a condition's ``lastTransitionTime``, the server's
``password_last_changed``, the Lease's ``renewTime``, the general log's timestamps) or against the machine's
slowness measured in the same window, with its reason. An entry that no longer matches anything fails too.
"""

from __future__ import annotations

import ast
import functools
import textwrap
from dataclasses import dataclass

from tests.conftest import REPO

TESTS = REPO / "tests"

RECORD, SLOWNESS = "record: ", "slowness: "  # what an entry compares against: the only two kinds allowed
BOUNDED_WAITS = "tests/integration/mysql/test_bounded_waits.py::"
DATABASE = "tests/integration/mysql/test_database.py::"
LOCK_POLICY = "tests/integration/operator/databaseuser/test_lock_policy.py::"
OUTAGE = "tests/integration/operator/servers/test_outage.py::"
LAG = "the event loop's lag measured over the same window"
ELECTION = "tests/integration/runtime/test_leader_election.py::"
LATENESS = "twice the event loop's worst lateness measured over the same window"
SLOWEST = f"{LATENESS} + the slowest API request of the window, per request"
ALLOWED: dict[str, str] = {
    BOUNDED_WAITS + "test_a_server_that_never_greets_fails_the_login_within_the_connect_timeout": (
        f"{SLOWNESS}connect_timeout + the idle machine's work + {LAG}"
    ),
    BOUNDED_WAITS + "test_a_server_that_stops_answering_fails_the_statement_within_the_read_timeout": (
        f"{SLOWNESS}read_timeout + the idle machine's work + {LAG}"
    ),
    BOUNDED_WAITS + "test_marked_unreachable_the_calls_in_flight_and_later_fail_at_once": (
        f"{SLOWNESS}at once: the idle machine's work + {LAG}"
    ),
    BOUNDED_WAITS + "test_a_probe_is_bounded_and_uses_a_connection_of_its_own": (
        f"{SLOWNESS}two probe bounds + the idle machine's work + {LAG}"
    ),
    BOUNDED_WAITS
    + "test_a_refused_probe_fails_at_once": f"{SLOWNESS}at once: the idle machine's work + {LAG}",
    DATABASE + "test_a_statement_timeout": f"{SLOWNESS}statement_timeout + the idle machine's work + {LAG}",
    DATABASE + "test_an_outage_fails_fast_and_the_same_database_recovers": (
        f"{SLOWNESS}connect_timeout + the idle machine's work + {LAG}"
    ),
    DATABASE + "test_calls_waiting_for_a_connection_fail_fast_when_the_busy_ones_break": (
        f"{SLOWNESS}connect_timeout + the idle machine's work + {LAG}"
    ),
    DATABASE + "test_calls_waiting_for_a_connection_go_on_when_one_breaks": (
        f"{SLOWNESS}the busy statement's SLEEP(1) + the idle machine's work + {LAG}"
    ),
    OUTAGE
    + "all_reported": f"{RECORD}each user's Ready=False lastTransitionTime - the fault <= REPORTED + {LAG}",
    OUTAGE + "all_converged": (
        f"{RECORD}each user's Ready=True lastTransitionTime - the network's return <= CONVERGED + {LAG}"
    ),
    OUTAGE + "test_an_outage_of_a_mysqlserver_is_reported_on_it_and_its_users_and_converges": (
        f"{RECORD}the MySQLServer's Ready=False lastTransitionTime - the fault <= REPORTED + {LAG}"
    ),
    LOCK_POLICY + "test_expires_at_locks_on_time_without_a_drift_check": (
        f"{RECORD}the general log's time of ACCOUNT LOCK - expiresAt < 3 s + {LAG}"
    ),
    ELECTION + "test_crashed_leader_is_replaced_after_the_lease_duration": (
        f"{RECORD}the takeover - the crashed leader's renewed_at <= lease + two candidate polls + {SLOWEST}"
    ),
    ELECTION + "test_a_stale_lease_is_judged_by_the_local_clock": (
        f"{SLOWNESS}the takeover of a stale Lease <= lease + a candidate poll + {SLOWEST}"
    ),
    ELECTION + "test_released_lease_is_taken_over_within_a_retry_period": (
        f"{SLOWNESS}the takeover after a release <= a candidate poll + {SLOWEST}"
    ),
    ELECTION + "test_paused_leader_steps_down_within_the_renew_deadline": (
        f"{RECORD}the step-down - the leader's renewed_at <= the renew deadline + {LATENESS}; the takeover "
        f"<= lease + two candidate polls + {SLOWEST}"
    ),
    ELECTION + "test_run_cancels_the_work_on_loss_and_releases_on_cancellation": (
        f"{RECORD}the loss noticed - the leader's renewed_at <= a retry period + {SLOWEST}"
    ),
    "tests/integration/runtime/test_informer.py::test_a_stalled_watch_is_detected_and_reopened": (
        f"{SLOWNESS}the inactivity timeout + 5 s for a list and a watch + {LAG}"
    ),
}

CLOCK_FUNCTIONS = frozenset(
    {"monotonic", "time", "perf_counter", "monotonic_ns", "time_ns", "perf_counter_ns"},
)
CLOCK_MODULE_FUNCTIONS = frozenset({"monotonic", "perf_counter", "monotonic_ns", "perf_counter_ns"})
ORDERINGS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
NEGATED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.GtE,
    ast.LtE: ast.Gt,
    ast.Gt: ast.LtE,
    ast.GtE: ast.Lt,
}
PASS_THROUGH_CALLS = frozenset({"float", "int", "round", "abs", "max", "min", "timedelta"})
HARMLESS_CALLS = frozenset({"print", "sleep", "format", "debug", "info", "warning", "append"})
CLOCK, OTHER = "clock", "other"
Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.Module


@dataclass(frozen=True)
class Finding:
    path: str
    function: str
    line: int
    source: str

    @property
    def key(self) -> str:
        return f"{self.path}::{self.function}"

    def __str__(self) -> str:
        return f"{self.path}:{self.line} ({self.function}): {self.source}"


def call_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def is_clock_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        owner = func.value
        if isinstance(owner, ast.Name) and owner.id == "time":
            return func.attr in CLOCK_FUNCTIONS  # time.monotonic(), time.time(), …
        if func.attr == "time" and not node.args and not node.keywords:
            return True  # loop.time(), asyncio.get_running_loop().time()
        if func.attr in ("now", "utcnow"):
            return isinstance(owner, ast.Name | ast.Attribute) and ast.unparse(owner).endswith("datetime")
        return False
    return isinstance(func, ast.Name) and func.id in CLOCK_MODULE_FUNCTIONS  # from time import monotonic


class Module:
    """One parsed module: its scopes, the names each assigns, and which functions return clock readings."""

    def __init__(self, tree: ast.Module, clock_functions: set[str]) -> None:
        self.tree = tree
        self.clock_functions = clock_functions
        self.parent: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
        self.assigned: dict[tuple[ast.AST, str], list[ast.expr]] = {}
        for node in ast.walk(tree):
            for name, value in assignments(node):
                self.assigned.setdefault((self.scope_of(node), name), []).append(value)
        self._terms: dict[tuple[ast.AST, str], tuple[str, ...]] = {}
        self.calls: dict[str, list[ast.Call]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (called := call_name(node)):
                self.calls.setdefault(called, []).append(node)

    def forget(self) -> None:
        """Drop what was worked out: ``clock_functions`` grew."""
        self._terms.clear()

    def scope_of(self, node: ast.AST) -> Scope:
        current = self.parent.get(node)
        while current is not None and not isinstance(current, Scope):
            current = self.parent.get(current)
        assert current is not None
        return current

    def qualname(self, node: ast.AST) -> str:
        names: list[str] = []
        current: ast.AST | None = node
        while current is not None:
            if isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.append(current.name)
            current = self.parent.get(current)
        return ".".join(reversed(names)) or "<module>"

    def name_terms(self, name: str, at: ast.AST) -> tuple[str, ...]:
        scope: ast.AST | None = self.scope_of(at)
        while scope is not None:
            key = (scope, name)
            if key in self.assigned:
                if key not in self._terms:
                    self._terms[key] = (OTHER,)  # a cycle (x = x + 1) reads as a constant
                    found: list[str] = []
                    for value in self.assigned[key]:
                        found.extend(self.terms(value))
                    self._terms[key] = tuple(found) if CLOCK in found else (OTHER,)
                return self._terms[key]
            if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) and name in parameters(scope):
                if key not in self._terms:
                    self._terms[key] = (OTHER,)
                    self._terms[key] = self.argument_terms(scope, name)
                return self._terms[key]
            scope = self.scope_of(scope) if not isinstance(scope, ast.Module) else None
        return (OTHER,)

    def argument_terms(self, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> tuple[str, ...]:
        """A parameter is a clock reading when a call in the module passes one (``since=faulted``)."""
        positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        if positional[:1] in (["self"], ["cls"]):
            positional = positional[1:]
        for call in self.calls.get(function.name, []):
            passed = [k.value for k in call.keywords if k.arg == name]
            if name in positional and positional.index(name) < len(call.args):
                passed.append(call.args[positional.index(name)])
            for value in passed:
                terms = self.terms(value)
                if CLOCK in terms:
                    return terms
        return (OTHER,)

    def terms(self, node: ast.AST) -> tuple[str, ...]:
        """The expression as a sum of terms, each a clock reading (or a duration scaled) or something else."""
        if is_clock_call(node):
            return (CLOCK,)
        match node:
            case ast.Name(id=name):
                return self.name_terms(name, node)
            case ast.BinOp(left=left, op=ast.Add() | ast.Sub(), right=right):
                return self.terms(left) + self.terms(right)
            case ast.BinOp(left=left, right=right):  # a scale keeps the terms; two durations make a ratio
                lt, rt = self.terms(left), self.terms(right)
                if CLOCK in lt and CLOCK in rt:
                    return (CLOCK,)
                return lt if CLOCK in lt else rt if CLOCK in rt else (OTHER,)
            case ast.UnaryOp(operand=operand):
                return self.terms(operand)
            case ast.IfExp(body=body, orelse=orelse):
                return self.terms(body) + self.terms(orelse)
            case ast.Attribute(value=value) | ast.Subscript(value=value):
                return self.terms(value)
            case ast.Await(value=value):
                return self.terms(value)
            case ast.Call(func=func, args=args):
                if call_name(node) in self.clock_functions:
                    return (CLOCK,)
                if isinstance(func, ast.Attribute) and CLOCK in (receiver := self.terms(func.value)):
                    return receiver  # .total_seconds(), .timestamp(), .replace(microsecond=0), …
                if call_name(node) in PASS_THROUGH_CALLS:
                    found = tuple(t for arg in args for t in self.terms(arg))
                    return found if CLOCK in found else (OTHER,)
                return (OTHER,)
        return (OTHER,)

    def in_while_body(self, node: ast.AST) -> bool:
        current = self.parent.get(node)
        while current is not None and not isinstance(current, Scope):
            if isinstance(current, ast.While):
                return True
            if isinstance(current, ast.For | ast.AsyncFor):
                return False
            current = self.parent.get(current)
        return False


def parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    arguments = function.args
    return {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}


def assignments(node: ast.AST) -> list[tuple[str, ast.expr]]:
    match node:
        case ast.Assign(targets=targets, value=value):
            found: list[tuple[str, ast.expr]] = []
            for target in targets:
                if isinstance(target, ast.Name):
                    found.append((target.id, value))
                elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                    for item, item_value in zip(target.elts, value.elts, strict=False):
                        if isinstance(item, ast.Name):
                            found.append((item.id, item_value))
            return found
        case ast.AnnAssign(target=ast.Name(id=name), value=value) if value is not None:
            return [(name, value)]
        case ast.AugAssign(target=ast.Name(id=name), value=value):
            return [(name, value)]
        case ast.NamedExpr(target=ast.Name(id=name), value=value):
            return [(name, value)]
    return []


def bounds(module: Module, test: ast.AST, negated: bool) -> list[ast.Compare]:
    """The comparisons of ``test`` that bound a clock reading by a constant from above, one pair each."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return bounds(module, test.operand, not negated)
    if isinstance(test, ast.BoolOp):
        return [found for value in test.values for found in bounds(module, value, negated)]
    if not isinstance(test, ast.Compare):
        return []
    found: list[ast.Compare] = []
    operands = [test.left, *test.comparators]
    for left, op, right in zip(operands, test.ops, operands[1:], strict=False):
        if not isinstance(op, ORDERINGS):
            continue
        lt, rt = module.terms(left), module.terms(right)
        if CLOCK not in lt + rt or OTHER not in lt + rt:
            continue
        kind = NEGATED[type(op)] if negated else type(op)
        # The measured side: the one with a clock where the other has none, else the one with clocks alone.
        measured_left = CLOCK not in rt or (OTHER not in lt and OTHER in rt)
        measured_right = CLOCK not in lt or (OTHER not in rt and OTHER in lt)
        lower_bound = (measured_left and kind in (ast.Gt, ast.GtE)) or (
            measured_right and kind in (ast.Lt, ast.LtE)
        )
        if not lower_bound:
            found.append(ast.Compare(left=left, ops=[op], comparators=[right]))
    return found


def fails(body: list[ast.stmt]) -> bool:
    for statement in body:
        if isinstance(statement, ast.Raise):
            return True
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            return call_name(statement.value) == "fail"
    return False


def clock_functions(trees: list[ast.Module]) -> set[str]:
    """Names of the functions whose every return is a clock reading or made from one."""
    names: set[str] = set()
    modules = [Module(tree, names) for tree in trees]
    while True:
        before = len(names)
        for module in modules:
            module.forget()
            for node in ast.walk(module.tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name not in names:
                    returned = [
                        module.terms(r.value)
                        for r in ast.walk(node)
                        if isinstance(r, ast.Return) and r.value is not None and module.scope_of(r) is node
                    ]
                    if returned and all(CLOCK in terms for terms in returned):
                        names.add(node.name)
        if len(names) == before:
            return names


def scan_tree(tree: ast.Module, path: str, known_clock_functions: set[str] | None = None) -> list[Finding]:
    module = Module(tree, clock_functions([tree]) if known_clock_functions is None else known_clock_functions)
    findings: list[Finding] = []

    def add(node: ast.AST, at: ast.AST) -> None:
        findings.append(Finding(path, module.qualname(at), at.lineno, ast.unparse(node)))  # type: ignore[attr-defined]

    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            if module.in_while_body(node):
                continue
            for compare in bounds(module, node.test, negated=False):
                add(compare, node)
        elif isinstance(node, ast.If) and fails(node.body):
            if module.in_while_body(node):
                continue
            for compare in bounds(module, node.test, negated=True):
                add(compare, node)
        elif isinstance(node, ast.Call) and call_name(node) not in HARMLESS_CALLS | PASS_THROUGH_CALLS:
            if module.in_while_body(node) or is_clock_call(node):
                continue
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                terms = module.terms(arg)  # a duration (two clock readings at least) and a constant
                if terms.count(CLOCK) >= 2 and OTHER in terms:
                    add(arg, node)
    return sorted(findings, key=lambda f: (f.path, f.line))


def scan_source(source: str, path: str = "snippet.py") -> list[Finding]:
    return scan_tree(ast.parse(textwrap.dedent(source)), path)


@functools.cache
def scan_tests() -> list[Finding]:
    sources = sorted(TESTS.rglob("*.py"))
    trees = {source: ast.parse(source.read_text()) for source in sources}
    known = clock_functions(list(trees.values()))
    findings: list[Finding] = []
    for source, tree in trees.items():
        findings.extend(scan_tree(tree, str(source.relative_to(REPO)), known))
    return findings


def test_no_timed_assertion_outside_the_allow_list() -> None:
    findings = scan_tests()
    offending = [str(f) for f in findings if f.key not in ALLOWED]
    assert offending == [], "\n".join(
        ["timed assertions (see docs/testing.md, 'Time in tests'):", *offending]
    )


def test_every_allow_list_entry_still_matches_a_timed_assertion() -> None:
    keys = {f.key for f in scan_tests()}
    assert sorted(set(ALLOWED) - keys) == []


def test_every_allow_list_entry_compares_against_a_record_or_the_measured_slowness() -> None:
    """A reason starts with what the entry compares against (a product's record or the machine's measured
    slowness) and says which; or it is the TODO of the files another change is fixing."""
    kinds = (RECORD, SLOWNESS)
    assert [key for key, reason in ALLOWED.items() if not reason.startswith(kinds)] == []
    assert [
        key for key, reason in ALLOWED.items() if reason.startswith(kinds) and len(reason.split()) < 4
    ] == []


def lines(findings: list[Finding]) -> list[int]:
    return [f.line for f in findings]


def test_the_scan_finds_a_clock_difference_against_a_constant() -> None:
    assert lines(scan_source("import time\ndef test_a(t):\n    assert time.monotonic() - t < 3\n")) == [3]


def test_the_scan_follows_assignments_in_the_function() -> None:
    source = """
        import time
        def test_a():
            started = time.monotonic()
            work()
            elapsed = time.monotonic() - started
            assert elapsed < 8
    """
    found = scan_source(source)
    assert [(f.function, f.line, f.source) for f in found] == [("test_a", 7, "elapsed < 8")]


def test_the_scan_follows_a_deadline_and_a_constant_name() -> None:
    source = """
        import asyncio
        LIMIT = 8
        async def test_a():
            deadline = asyncio.get_running_loop().time() + LIMIT
            await work()
            assert asyncio.get_running_loop().time() < deadline
            if asyncio.get_running_loop().time() > deadline:
                pytest.fail("too late")
    """
    assert lines(scan_source(source)) == [7, 8]


def test_the_scan_ignores_polling_limits() -> None:
    source = """
        import time
        def test_a():
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if ready():
                    break
            while not ready():
                assert time.monotonic() < deadline, "never ready"
                if time.monotonic() > deadline:
                    raise TimeoutError
    """
    assert scan_source(source) == []


def test_the_scan_ignores_lower_bounds_orders_and_figures() -> None:
    source = """
        import time
        def test_a(loop):
            start = loop.time()
            assert loop.time() - start > 0.2
            assert 0.01 <= loop.time() - start
            first = time.monotonic()
            then = time.monotonic()
            assert first < then
            print(f"{time.monotonic() - start:.1f} s")
    """
    assert scan_source(source) == []


def test_the_scan_finds_a_bound_in_a_for_loop_and_a_helper_returning_a_duration() -> None:
    source = """
        import time
        def took(start):
            return time.monotonic() - start
        def test_a(grace):
            for attempt in range(3):
                applied = time.monotonic()
                assert time.monotonic() - applied < grace - 0.2
            assert took(0) < 5
    """
    assert lines(scan_source(source)) == [8, 9]


def test_the_scan_finds_a_clock_derived_limit_handed_to_a_wait() -> None:
    source = """
        import time
        REPORTED = 10
        async def test_a():
            faulted = time.monotonic()
            await until("down", REPORTED - (time.monotonic() - faulted), down)
            await asyncio.sleep(REPORTED - (time.monotonic() - faulted))
            await reported(since=faulted)
        async def reported(since):
            left = REPORTED - (time.monotonic() - since)
            await until("down", left, down)
    """
    assert lines(scan_source(source)) == [6, 11]


def test_the_scan_counts_a_comparison_with_a_record_and_not_one_between_records() -> None:
    source = """
        from datetime import datetime, UTC
        def test_a(transition, changed):
            faulted = datetime.now(UTC)
            assert (transition - faulted).total_seconds() < 10
            assert (transition - changed).total_seconds() < 10
    """
    assert lines(scan_source(source)) == [5]
