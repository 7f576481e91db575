"""The drift check's bookkeeping of orphans: logged once when found, not once a period."""

from __future__ import annotations

from typing import Any, cast

import pytest
import structlog

from dbuser_operator.controllers.databaseuser import drift
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.mysql.inventory import AccountState
from dbuser_operator.mysql.ownership import Owner
from dbuser_operator.mysql.server import ServerInfo
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
    with structlog.testing.capture_logs() as logs:
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
