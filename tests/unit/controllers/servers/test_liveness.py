"""The servers' liveness loop: what a probe's outcome changes (the Database's mark, the metric, requeues)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, cast

from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.controllers.servers.liveness import Liveness, server_label
from dbuser_operator.controllers.servers.registry import ServerRegistry
from dbuser_operator.mysql.errors import DatabaseUnavailableError
from dbuser_operator.runtime.metrics import REGISTRY
from tests.integration.operator.support.wait import eventually


class FakeProbe:
    def __init__(self, outcomes: list[bool]) -> None:
        self.outcomes = outcomes  # True: answers; the last one repeats
        self.given = len(outcomes)
        self.calls = 0
        self.closed = 0

    async def check(self, bound: float) -> None:
        self.calls += 1
        up = self.outcomes.pop(0) if len(self.outcomes) > 1 else self.outcomes[0]
        if not up:
            raise DatabaseUnavailableError("no login within 1 s of connecting")

    def close(self) -> None:
        self.closed += 1


class FakeDatabase:
    def __init__(self) -> None:
        self.marks: list[str | None] = []

    def mark_unreachable(self, cause: str) -> None:
        self.marks.append(cause)

    def mark_reachable(self) -> None:
        self.marks.append(None)


class FakeHandle:
    def __init__(self, outcomes: list[bool]) -> None:
        self.probe = FakeProbe(outcomes)
        self.db = FakeDatabase()
        self.doubted = asyncio.Event()
        self.returns = 0  # how often it was told the server answers again after an outage

    def returned(self) -> None:
        self.returns += 1


class FakeRegistry:
    def __init__(self, handles: dict[str, FakeHandle]) -> None:
        self.found = handles

    def handles(self) -> dict[str, ServerHandle]:
        return cast(dict[str, ServerHandle], self.found)


async def run_until(liveness: Liveness, probe: FakeProbe) -> None:
    """Run the loop until ``probe`` has given its every outcome and a few more."""
    task = asyncio.create_task(liveness.run())
    try:
        await eventually(
            lambda: len(probe.outcomes) <= 1 and probe.calls >= probe.given + 3,
            interval=0.01,
            message="the probe loop never got through its outcomes",
        )
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def liveness_of(
    handles: dict[str, FakeHandle], requeues: list[tuple[str, bool]], period: float = 0.01
) -> Liveness:
    """A liveness loop over ``handles`` that records its requeues, ``(key, with_dependents)``, in
    ``requeues``; a probe every ``period`` seconds while a server answers, at once while it does not."""
    return Liveness(
        cast(ServerRegistry, FakeRegistry(handles)),
        lambda key, with_dependents: requeues.append((key, with_dependents)),
        period=period,
        unhealthy_period=0.01,
        rescan=0.01,
    )


def up_metric(key: str) -> Any:
    return REGISTRY.get_sample_value("dbuser_operator_mysql_server_up", {"server": server_label(key)})


async def test_a_server_that_goes_down_and_comes_back_is_marked_and_requeued_at_each_change() -> None:
    key = "MySQLServer/ns/flaky-unit"
    handle = FakeHandle([True, False, False, False, True])
    changes: list[tuple[str, bool]] = []
    liveness = liveness_of({key: handle}, changes)
    await run_until(liveness, handle.probe)
    # up at first (nothing to requeue), down once (two failed probes in a row, then a third), back up once
    assert changes == [(key, False), (key, True)]
    assert handle.db.marks[0] is None
    assert handle.db.marks[1:3] == ["no login within 1 s of connecting"] * 2  # the latest cause each time
    assert handle.db.marks[3] is None
    assert up_metric(key) == 1
    assert handle.returns == 1  # what it knew of the server is asked anew, once, at the return
    assert handle.probe.closed == 1  # closed when the loop stopped


async def test_a_server_down_from_the_start_is_reported_and_a_gone_one_is_no_longer_probed() -> None:
    handles = {"": FakeHandle([False])}
    changes: list[tuple[str, bool]] = []
    liveness = liveness_of(handles, changes)
    task = asyncio.create_task(liveness.run())
    await eventually(lambda: changes == [("", False)], interval=0.01)
    assert up_metric("") == 0  # the default server's label is "default"
    gone = handles.pop("")
    await eventually(lambda: gone.probe.closed == 1, interval=0.01)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_one_late_answer_is_not_an_outage() -> None:
    """A single failed probe (this process may have stalled, not the server) is probed again at once."""
    key = "MySQLServer/ns/blip-unit"
    handle = FakeHandle([True, False, True])
    changes: list[tuple[str, bool]] = []
    liveness = liveness_of({key: handle}, changes)
    await run_until(liveness, handle.probe)
    assert changes == []
    assert handle.db.marks == [None]
    assert up_metric(key) == 1


@contextlib.asynccontextmanager
async def probed_hourly(key: str, handle: FakeHandle) -> AsyncIterator[list[tuple[str, bool]]]:
    """The liveness loop of ``handle`` alone, probing it once an hour, until the block ends; the requeues
    it asks for, ``(key, with_dependents)``, once its first probe has been made."""
    requeues: list[tuple[str, bool]] = []
    task = asyncio.create_task(liveness_of({key: handle}, requeues, period=3600).run())
    try:
        await eventually(lambda: handle.probe.calls == 1, interval=0.01)
        yield requeues
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_doubted_server_is_probed_at_once_and_its_answer_requeues_the_server_resource() -> None:
    """A health check found the server unreachable (``doubt``) while the probe, due much later, saw nothing:
    the probe looks at once; the server answers (the outage was short), so the server resource is
    requeued (its status says Ready=False), not the resources on it; one doubt, one requeue."""
    key = "MySQLServer/ns/doubted-unit"
    handle = FakeHandle([True])
    async with probed_hourly(key, handle) as requeues:
        handle.doubted.set()
        await eventually(lambda: requeues == [(key, False)], interval=0.01)
        assert handle.probe.calls == 2
        assert not handle.doubted.is_set()
        assert up_metric(key) == 1  # the health check may have set 0
        await asyncio.sleep(0.05)
        assert requeues == [(key, False)]  # nothing more until the next doubt
        assert handle.probe.calls == 2


async def test_a_doubted_server_that_is_down_is_confirmed_down_at_once_and_its_return_requeues_all() -> None:
    key = "MySQLServer/ns/doubted-down-unit"
    handle = FakeHandle([True, False, False, False, True])
    async with probed_hourly(key, handle) as requeues:
        handle.doubted.set()
        await eventually(lambda: requeues == [(key, False), (key, True)], interval=0.01)
        assert handle.db.marks[1:3] == ["no login within 1 s of connecting"] * 2
