"""The periodic drift check holds one server's reads at a time: what it read of a server (its inventory, its
accounts) is released before the next server is read, and an access report keeps a bounded number of
entries however many accounts its server has. Counted in objects alive, not in bytes."""

from __future__ import annotations

import gc
import weakref
from typing import Any, TypeVar, cast

import pytest

from dbuser_operator.api.v1alpha1.access_report import MAX_ENTRIES, AccessEntry, AccessSummary
from dbuser_operator.controllers.databaseuser import drift
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.controllers.servers import access
from dbuser_operator.controllers.servers.access_status import AccessStatus
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.mysql.bookkeeping.access import ServerAccount, ServerAccounts
from dbuser_operator.mysql.bookkeeping.inventory import AccountState, Inventory
from dbuser_operator.mysql.bookkeeping.ownership import Owner
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.informer import Informer
from tests.unit.controllers.databaseuser.test_drift_check import Handle, drift_logs

SERVERS = 6
ACCOUNTS = 3 * MAX_ENTRIES  # per server: more than a report shows
T = TypeVar("T")


class Reads:
    """Stands in for the server reads: each server's inventory and accounts, remembered by weak reference
    only, with what else was alive whenever one was read."""

    def __init__(self) -> None:
        self.reads: list[tuple[str, weakref.ref[Any]]] = []
        self.alive_at_read: list[set[str]] = []  # the servers whose reads were alive at each read

    def _read(self, server: str, value: T) -> T:
        gc.collect()
        self.alive_at_read.append({name for name, ref in self.reads if ref() is not None})
        self.reads.append((server, weakref.ref(value)))
        return value

    async def accounts(self, db: Any, server: Any, schema: str) -> ServerAccounts:
        names = [(f"{schema}-user-{i}", "%") for i in range(ACCOUNTS)]
        return self._read(schema, ServerAccounts({key: ServerAccount(*key) for key in names}, {}))

    async def inventory(self, db: Any, schema: str, server: Any = None) -> Inventory:
        owned = {
            (f"{schema}-user-{i}", "%"): AccountState(
                Owner(f"uid-{schema}-{i}", "team", f"user-{i}"), True, None, None, frozenset()
            )
            for i in range(ACCOUNTS)
        }
        rows = {key: [(1, "shop", "*", "SELECT", "NO", None)] for key in owned}
        return self._read(schema, Inventory(owned, rows))


class Published:
    """Stands in for AccessStatus: every server resource is served; reports are kept."""

    def __init__(self) -> None:
        self.reports: dict[str, AccessSummary] = {}

    def serves(self, server: str) -> bool:
        return True

    async def publish(self, server: str, report: AccessSummary) -> bool:
        self.reports[server] = report
        return True


def server_handle(schema: str) -> ServerHandle:
    handle = Handle()
    handle.schema = schema  # the reads' stand-ins tell the servers apart by it
    return cast(ServerHandle, handle)


async def test_a_server_read_is_released_before_the_next_server_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads, published = Reads(), Published()
    monkeypatch.setattr(drift, "read_accounts", reads.accounts)
    monkeypatch.setattr(drift, "read_inventory", reads.inventory)
    drift_logs(monkeypatch)  # every account is an orphan here: logged once each, not shown
    servers = {f"MySQLServer/team/s{i}": server_handle(f"s{i}") for i in range(SERVERS)}
    users = Informer(cast(KubeClient, None), DATABASE_USERS)
    check = drift.DriftCheck(
        lambda: servers, users, cast(Any, None), 1.0, access=cast(AccessStatus, published)
    )

    report = await check.check()

    # Two reads per server (its accounts, then its inventory); at each, only that server's are alive.
    schemas = [f"s{i}" for i in range(SERVERS) for _ in range(2)]
    assert [name for name, _ in reads.reads] == schemas
    assert reads.alive_at_read == [set() if i % 2 == 0 else {schemas[i]} for i in range(len(schemas))]
    gc.collect()
    assert [name for name, ref in reads.reads if ref() is not None] == []  # the report holds none of them
    assert sorted(published.reports) == sorted(servers)
    for summary in published.reports.values():  # every account counted, a bounded number shown
        assert (summary.accounts, summary.orphaned, len(summary.entries)) == (ACCOUNTS, ACCOUNTS, MAX_ENTRIES)
        assert summary.truncated
    assert len(report.orphans) == SERVERS * ACCOUNTS


def test_a_report_makes_entries_only_for_the_accounts_it_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []

    def counted(**fields: Any) -> Any:
        made.append(fields["user"])
        return AccessEntry(**fields)

    monkeypatch.setattr(access, "AccessEntry", counted)
    names = [(f"user-{i:04d}", "%") for i in range(ACCOUNTS)]
    found = ServerAccounts({key: ServerAccount(*key) for key in names}, {})
    summary = access.build(found, Inventory({}, {}), access.DriftFound({}))
    assert summary.accounts == ACCOUNTS
    assert made == [f"user-{i:04d}" for i in range(MAX_ENTRIES)]  # the first in the order of attention
    assert [item.user for item in summary.entries] == made
