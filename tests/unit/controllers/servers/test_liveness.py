"""The servers' liveness loop: what a probe's outcome changes (the Database's mark, the metric, requeues)."""

from __future__ import annotations

import asyncio
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


def up_metric(key: str) -> Any:
    return REGISTRY.get_sample_value("dbuser_operator_mysql_server_up", {"server": server_label(key)})


async def test_a_server_that_goes_down_and_comes_back_is_marked_and_requeued_at_each_change() -> None:
    key = "MySQLServer/ns/flaky-unit"
    handle = FakeHandle([True, False, False, False, True])
    changes: list[tuple[str, bool]] = []
    liveness = Liveness(
        cast(ServerRegistry, FakeRegistry({key: handle})),
        lambda k, up: changes.append((k, up)),
        period=0.01,
        unhealthy_period=0.01,
        rescan=0.01,
    )
    await run_until(liveness, handle.probe)
    # up at first (nothing to requeue), down once (two failed probes in a row, then a third), back up once
    assert changes == [(key, False), (key, True)]
    assert handle.db.marks[0] is None
    assert handle.db.marks[1:3] == ["no login within 1 s of connecting"] * 2  # the latest cause each time
    assert handle.db.marks[3] is None
    assert up_metric(key) == 1
    assert handle.probe.closed == 1  # closed when the loop stopped


async def test_a_server_down_from_the_start_is_reported_and_a_gone_one_is_no_longer_probed() -> None:
    handles = {"": FakeHandle([False])}
    changes: list[tuple[str, bool]] = []
    registry = FakeRegistry(handles)
    liveness = Liveness(
        cast(ServerRegistry, registry),
        lambda k, up: changes.append((k, up)),
        period=0.01,
        unhealthy_period=0.01,
        rescan=0.01,
    )
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
    liveness = Liveness(
        cast(ServerRegistry, FakeRegistry({key: handle})),
        lambda k, up: changes.append((k, up)),
        period=0.01,
        unhealthy_period=0.01,
        rescan=0.01,
    )
    await run_until(liveness, handle.probe)
    assert changes == []
    assert handle.db.marks == [None]
    assert up_metric(key) == 1
