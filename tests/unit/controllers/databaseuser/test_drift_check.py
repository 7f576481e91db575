"""The drift check's bookkeeping of orphans: logged once when found, not once a period."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from dbuser_operator.controllers.databaseuser import drift
from dbuser_operator.controllers.kit.resources import DATABASE_USERS, DATABASES
from dbuser_operator.controllers.servers.access_status import AccessStatus
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.mysql.bookkeeping import ownership as mysql_ownership
from dbuser_operator.mysql.bookkeeping.access import ServerAccount, ServerAccounts
from dbuser_operator.mysql.bookkeeping.inventory import AccountState, Inventory
from dbuser_operator.mysql.bookkeeping.ownership import Owner
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey
from dbuser_operator.runtime.workqueue import RateLimitingQueue


class Handle:
    """The part of a ServerHandle the check uses."""

    name = ""
    db = None
    schema = "dbuser_operator"

    async def ensure_schema(self) -> None:
        """Nothing to create."""

    async def server(self) -> ServerInfo:
        return ServerInfo(flavour="mysql", version=(9, 7, 4))

    async def ensure_book(self, book: object) -> None:
        """Nothing to create."""


class Recorder:
    """Stands in for the module's logger (structlog's capture is bypassed by loggers that earlier tests
    configured and cached): every call, as capture_logs would give it."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def _record(self, event: str, **values: Any) -> None:
        self.entries.append({"event": event, **values})

    info = warning = debug = error = exception = _record


def drift_logs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The drift module's log calls from now on."""
    recorder = Recorder()
    monkeypatch.setattr(drift, "log", recorder)
    return recorder.entries


def orphan(user: str) -> AccountState:
    return AccountState(Owner(f"uid-{user}", "gone", user), True, None, None, frozenset())


async def checks(monkeypatch: pytest.MonkeyPatch, rounds: list[list[str]]) -> list[str]:
    """Run one check per round, each finding the round's orphans; the accounts logged as orphans."""
    found: dict[tuple[str, str], AccountState] = {}

    async def inventory(*_: Any) -> dict[tuple[str, str], AccountState]:
        return found

    monkeypatch.setattr(drift, "inventory", inventory)
    users = Informer(cast(KubeClient, None), DATABASE_USERS)
    queue = cast(RateLimitingQueue[ObjectKey], None)
    check = drift.DriftCheck(lambda: {"": cast(ServerHandle, Handle())}, users, queue, 1.0)
    logs = drift_logs(monkeypatch)
    for accounts in rounds:
        found = {(user, "%"): orphan(user) for user in accounts}
        report = await check.check()
        assert sorted(report.orphans) == sorted((user, "%") for user in accounts)  # every check reports
    return [entry["account"] for entry in logs if entry["event"].startswith("orphaned account")]


async def test_an_orphan_is_logged_once_however_many_checks_find_it(monkeypatch: pytest.MonkeyPatch) -> None:
    logged = await checks(monkeypatch, [["a"], ["a", "b"], ["a", "b"], ["b"]])
    assert logged == ["'a'@'%'", "'b'@'%'"]


async def test_an_orphan_found_again_after_it_was_gone_is_logged_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    logged = await checks(monkeypatch, [["a"], [], ["a"]])
    assert logged == ["'a'@'%'", "'a'@'%'"]


def a_database(name: str, namespace: str = "team-a") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "1"}}


async def test_orphaned_databases_are_counted_per_server_and_namespace_and_logged_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recorded = {
        "kept": Owner("uid-kept", "team-a", "kept"),
        "gone": Owner("uid-gone", "team-a", "gone"),
        "other": Owner("uid-other", "team-b", "other"),
        "replaced": Owner("uid-old", "team-a", "kept-too"),  # the resource was recreated: another UID
    }
    owned_calls: list[str] = []

    async def owned(_db: object, schema: str, book: object) -> dict[tuple[str, ...], Owner]:
        assert book is mysql_ownership.DATABASES
        owned_calls.append(schema)
        return {(name,): owner for name, owner in recorded.items()}

    async def no_accounts(*_: Any) -> dict[tuple[str, str], AccountState]:
        return {}

    monkeypatch.setattr(drift, "inventory", no_accounts)
    monkeypatch.setattr(mysql_ownership, "owned", owned)
    users = Informer(cast(KubeClient, None), DATABASE_USERS)
    dbs = Informer(cast(KubeClient, None), DATABASES)
    queue = cast(RateLimitingQueue[ObjectKey], None)
    check = drift.DriftCheck(lambda: {"": cast(ServerHandle, Handle())}, users, queue, 1.0, databases=dbs)

    await check.check()  # the cache has not listed yet: nothing counted, nothing read
    assert check.orphaned_databases_by_server == {}
    assert owned_calls == []

    dbs._synced.set()
    dbs.store.put(a_database("kept"))
    logs = drift_logs(monkeypatch)
    first = await check.check()
    second = await check.check()
    assert first.orphaned_databases == second.orphaned_databases == ["gone", "other", "replaced"]
    assert check.orphaned_databases_by_server == {("default", "team-a"): 2, ("default", "team-b"): 1}
    assert owned_calls == ["dbuser_operator", "dbuser_operator"]  # one read per server per check
    logged = [entry["database"] for entry in logs if entry["event"].startswith("orphaned database")]
    assert logged == ["gone", "other", "replaced"]  # once, not once a check


async def test_without_the_databases_cache_no_database_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_accounts(*_: Any) -> dict[tuple[str, str], AccountState]:
        return {}

    async def owned(*_: Any) -> dict[tuple[str, ...], Owner]:
        raise AssertionError("read without a cache to compare with")

    monkeypatch.setattr(drift, "inventory", no_accounts)
    monkeypatch.setattr(mysql_ownership, "owned", owned)
    users = Informer(cast(KubeClient, None), DATABASE_USERS)
    check = drift.DriftCheck(lambda: {"": cast(ServerHandle, Handle())}, users, cast(Any, None), 1.0)
    report = await check.check()
    assert report.orphaned_databases == []


class FailingAccess:
    """An AccessStatus whose every report fails to publish."""

    def __init__(self) -> None:
        self.published: list[str] = []

    def serves(self, server: str) -> bool:
        return True

    async def publish(self, server: str, report: object) -> bool:
        self.published.append(server)
        raise RuntimeError("the API server is having a bad day")


async def test_a_failing_access_report_neither_stops_nor_delays_a_repair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def no_accounts(*_: Any) -> Inventory:
        return Inventory({}, {})

    async def every_account(*_: Any) -> ServerAccounts:
        return ServerAccounts({("dba", "%"): ServerAccount("dba", "%")}, {})

    monkeypatch.setattr(drift, "read_inventory", no_accounts)
    monkeypatch.setattr(drift, "read_accounts", every_account)
    users = Informer(cast(KubeClient, None), DATABASE_USERS)
    access = FailingAccess()
    check = drift.DriftCheck(
        lambda: {"MySQLServer/a/main": cast(ServerHandle, Handle())},
        users,
        cast(Any, None),
        1.0,
        access=cast(AccessStatus, access),
    )
    logs = drift_logs(monkeypatch)
    report = await check.check()  # returns: the report's failure is logged, not raised
    assert access.published == ["MySQLServer/a/main"]
    assert [entry["server"] for entry in logs if entry["event"].startswith("access report failed")] == [
        "MySQLServer/a/main"
    ]
    summary = report.access[0][1]  # built when its server was checked, published after the repairs
    assert (summary.accounts, [entry.user for entry in summary.entries]) == (1, ["dba"])


async def test_every_pass_that_ends_is_observed_failed_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    passes: list[int] = []
    third = asyncio.Event()

    async def check() -> None:
        passes.append(len(passes))
        if len(passes) == 2:
            raise MySQLError("server down")  # logged; the pass is over all the same
        if len(passes) == 3:
            third.set()
            await asyncio.Event().wait()  # cancelled in the middle: that pass never ends

    drift_logs(monkeypatch)
    observed = drift.CHECK_SECONDS.labels("unit_test")
    before = sample(observed)
    task = asyncio.create_task(drift.check_periodically(0.001, check, "unit test check"))
    await third.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sample(observed) == before + 2


def sample(histogram: Any) -> float:
    """How many observations a histogram's child holds."""
    return float(next(s.value for m in histogram.collect() for s in m.samples if s.name.endswith("_count")))
