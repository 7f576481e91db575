"""The start check's early reads: the servers are read while the DatabaseUsers still list, once this process
leads (a leader task started before the caches sync), and the first turns take those reads."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

import pytest
from kubernetes_asyncio import client

from dbuser_operator import app
from dbuser_operator.controllers.databaseuser import start_check
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.mysql.bookkeeping.inventory import AccountState
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.settings import Settings
from tests.unit.controllers.databaseuser.test_start_check import KEY, Handle, Setup, setup

UNUSED = "MySQLServer/team-a/unused"
DOWN = "MySQLServer/team-a/down"


class ServerCache:
    """A server resources' informer that syncs when the test says."""

    def __init__(self) -> None:
        self.synced = asyncio.Event()

    async def wait_for_sync(self) -> None:
        await self.synced.wait()


class Resolver:
    """The server resources: their keys and their resolution by key (``DOWN`` refuses)."""

    def __init__(self, keys: list[str]) -> None:
        self.informers = {"MySQLServer": ServerCache()}
        self._keys = keys
        self.resolved: list[str] = []

    def keys(self) -> list[str]:
        return list(self._keys)

    async def resolve_key(self, key: str, *, deleting: bool = False) -> tuple[None, Handle]:
        self.resolved.append(key)
        if key == DOWN:
            raise ConditionError("ServerNotReady", "MySQLServer team-a/down is not ready")
        return None, Handle()


@dataclass
class Early:
    """A start check with server resources, its users' cache still empty (listing)."""

    running: Setup
    resolver: Resolver
    reads: list[int]  # the number of DatabaseUsers cached when each inventory was read
    obj: dict[str, Any]

    def listed(self) -> None:
        """The users' cache has synced: it holds the resource."""
        self.running.users.objects[KEY] = self.obj

    def servers_synced(self) -> None:
        self.resolver.informers["MySQLServer"].synced.set()


def early(monkeypatch: pytest.MonkeyPatch, keys: list[str], *, fails: bool = False) -> Early:
    """The server resources ``keys`` (``DOWN`` does not resolve); the default server's read ``fails``."""
    running = setup(monkeypatch, fails=fails)
    obj = running.users.objects.pop(KEY)
    real: Callable[..., Awaitable[dict[tuple[str, str], AccountState]]]
    real = getattr(start_check, "inventory")  # noqa: B009 - setup's stand-in, not exported
    reads: list[int] = []

    async def inventory(*args: Any) -> dict[tuple[str, str], AccountState]:
        reads.append(len(running.users.objects))
        return await real(*args)

    monkeypatch.setattr(start_check, "inventory", inventory)
    resolver = Resolver(keys)
    running.check.servers = cast(ServerResolver, resolver)
    return Early(running, resolver, reads, obj)


async def test_the_servers_are_read_before_the_users_are_listed_and_the_first_turn_reads_none_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    case = early(monkeypatch, ["", UNUSED])
    check = case.running.check
    reading = asyncio.create_task(check.read_early())
    await asyncio.sleep(0)
    assert case.resolver.resolved == []  # the server resources' cache has not synced yet
    case.servers_synced()
    await reading
    assert sorted(case.resolver.resolved) == sorted(["", UNUSED])
    assert case.reads == [0, 0]  # both read with no DatabaseUser cached
    case.listed()
    assert not await case.running.turn()  # found converged from the early read
    assert check.skipped == 1
    assert case.reads == [0, 0]  # nothing read again at the first turn


async def test_a_first_turn_waits_for_the_early_reads_under_way(monkeypatch: pytest.MonkeyPatch) -> None:
    case = early(monkeypatch, [""])
    reading = asyncio.create_task(case.running.check.read_early())
    await asyncio.sleep(0)
    case.listed()
    turn = asyncio.create_task(case.running.turn())
    await asyncio.sleep(0)
    assert not turn.done()  # it waits for the early read, and does not start one of its own
    case.servers_synced()
    assert not await turn
    await reading
    assert case.reads == [1]


async def test_a_server_whose_early_read_failed_is_read_again_at_the_first_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    case = early(monkeypatch, ["", DOWN], fails=True)
    case.servers_synced()
    await case.running.check.read_early()
    case.listed()
    assert await case.running.turn()  # failed again: not read, reconciled
    assert case.running.check.skipped == 0
    assert case.reads == [0, 1]  # DOWN did not resolve; "" failed early and once more at the first turn


async def test_the_early_reads_go_two_servers_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    case = early(monkeypatch, [f"MySQLServer/team-a/s{index}" for index in range(5)])
    reading, most = 0, 0
    resolve = case.resolver.resolve_key

    async def counted(key: str, *, deleting: bool = False) -> tuple[None, Handle]:
        nonlocal reading, most
        reading += 1
        most = max(most, reading)
        await asyncio.sleep(0)
        reading -= 1
        return await resolve(key)

    monkeypatch.setattr(case.resolver, "resolve_key", counted)
    case.servers_synced()
    await case.running.check.read_early()
    assert len(case.reads) == 5
    assert most == start_check.EARLY_READS_AT_ONCE == 2


async def test_a_server_named_but_not_read_early_is_read_at_the_first_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    case = early(monkeypatch, [UNUSED])  # the default server was not known early
    case.servers_synced()
    await case.running.check.read_early()
    case.listed()
    assert not await case.running.turn()
    assert case.reads == [0, 1]  # UNUSED early; the default server at the first turn


async def test_after_a_first_turn_the_early_read_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    case = early(monkeypatch, [""])
    case.listed()
    assert not await case.running.turn()
    case.servers_synced()
    await case.running.check.read_early()
    assert case.resolver.resolved == []
    assert case.reads == [1]


async def test_the_operator_starts_the_early_reads_before_the_caches_have_synced() -> None:
    settings = Settings(kubeconfig=None, metrics_bind_address="127.0.0.1:0")
    async with client.ApiClient() as api:  # never used: building the manager sends nothing
        manager = app.build_manager(settings, KubeClient(api), None, server_resources=False)
    assert [runnable.name for runnable in manager.early_leader_runnables] == ["first pass server reads"]
    assert "first pass server reads" not in [runnable.name for runnable in manager.leader_runnables]


async def test_an_early_read_that_is_cancelled_leaves_the_reads_to_the_first_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    case = early(monkeypatch, [""])
    reading = asyncio.create_task(case.running.check.read_early())
    await asyncio.sleep(0)
    reading.cancel()  # leadership lost, or the manager stops, while the server cache lists
    await asyncio.gather(reading, return_exceptions=True)
    case.listed()
    assert not await case.running.turn()
    assert case.reads == [1]
