"""A cancellation swallowed on the way (as Python 3.11's ``asyncio.wait_for`` can) still stops the loops
that run until cancelled: one ``cancel()`` is enough, as at shutdown."""

from __future__ import annotations

import asyncio

import pytest

from dbuser_operator.controllers.resync import check_periodically
from dbuser_operator.runtime.cancellation import stop_if_cancelled
from dbuser_operator.runtime.supervisor import Policy, Runnable, Supervisor


async def swallow_cancellation(entered: asyncio.Event) -> None:
    """Wait, and return normally when cancelled without ``uncancel()``: what 3.11's ``wait_for`` does when
    the cancellation meets its awaitable's completion (CPython gh-86296)."""
    entered.set()
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        return


async def test_stop_if_cancelled_raises_only_after_a_cancellation_request() -> None:
    stop_if_cancelled()  # nothing asked: goes on
    entered = asyncio.Event()

    async def body() -> str:
        await swallow_cancellation(entered)
        stop_if_cancelled()
        return "went on"

    task = asyncio.create_task(body())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)


async def test_a_periodic_check_that_swallows_the_cancellation_stops_at_its_next_turn() -> None:
    entered = asyncio.Event()
    checks = 0

    async def check() -> None:
        nonlocal checks
        checks += 1
        await swallow_cancellation(entered)

    task = asyncio.create_task(check_periodically(0.01, check, "test check"))
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert checks == 1


@pytest.mark.parametrize("policy", [Policy.RESTART, Policy.EXIT])
async def test_a_runnable_that_swallows_the_cancellation_is_not_restarted_or_reported(policy: Policy) -> None:
    supervisor = Supervisor(initial_backoff=0.01, max_backoff=0.01)
    entered = asyncio.Event()
    runs = 0

    async def runnable() -> None:
        nonlocal runs
        runs += 1
        await swallow_cancellation(entered)

    task = asyncio.create_task(supervisor.supervise(Runnable("role drift check", runnable, policy)))
    await entered.wait()
    task.cancel()  # not stopping(): a leader task cancelled as the lease is lost
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert runs == 1
    assert supervisor.failures("role drift check") == 0
