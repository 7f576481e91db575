"""A controller's first pass: over once every key queued at its start has been reconciled once, whatever
the result; keys added later do not hold it up. Its metrics and its one log line say so."""

from __future__ import annotations

import asyncio
import itertools

from dbuser_operator.runtime.controller import Controller, ReconcileError, Result
from dbuser_operator.runtime.first_pass import FirstPass
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import ObjectKey
from tests.support.kube import eventually
from tests.support.logs import captured_logs
from tests.unit.runtime.test_controller import key, running

_names = itertools.count()


def metric(name: str, controller: str) -> float | None:
    return REGISTRY.get_sample_value(name, {"controller": controller})


async def test_the_first_pass_ends_when_every_key_queued_at_the_start_was_reconciled_once() -> None:
    name = f"first-pass-{next(_names)}"
    release = asyncio.Event()
    seen: list[ObjectKey] = []

    async def reconcile(k: ObjectKey) -> Result:
        seen.append(k)
        if k == key(2):
            await release.wait()
        if k == key(1):
            raise ReconcileError("the server is down")  # a look too: it counts, and is retried
        return Result(requeue_after=3600.0) if k == key(0) else Result()

    controller = Controller(name, reconcile, max_concurrent_reconciles=2)
    for n in range(3):
        controller.queue.add(key(n))
    with captured_logs() as logs:
        async with running(controller):
            await eventually(lambda: key(1) in seen and key(0) in seen)
            controller.queue.add(key(7))  # a new object: not part of the first pass
            await eventually(lambda: key(7) in seen)
            assert not controller.first_pass.done
            assert metric("dbuser_operator_first_pass_remaining", name) == 1.0  # key 2, still running
            assert metric("dbuser_operator_first_pass_seconds", name) is None
            release.set()
            await eventually(lambda: controller.first_pass.done)
    assert metric("dbuser_operator_first_pass_remaining", name) == 0.0
    assert (metric("dbuser_operator_first_pass_seconds", name) or -1.0) >= 0.0
    done = logs.entries("first pass done: every resource checked once")
    assert [(entry["controller"], entry["resources"]) for entry in done] == [(name, 3)]


async def test_a_controller_that_starts_with_nothing_queued_has_its_first_pass_over_at_once() -> None:
    name = f"first-pass-{next(_names)}"

    async def reconcile(k: ObjectKey) -> Result:
        return Result()

    controller = Controller(name, reconcile)
    async with running(controller):
        assert controller.first_pass.done
    assert metric("dbuser_operator_first_pass_remaining", name) == 0.0


def test_a_key_reconciled_again_or_unknown_changes_nothing() -> None:
    ticks = iter([10.0, 12.5])
    tracker = FirstPass(f"first-pass-{next(_names)}", clock=lambda: next(ticks))
    tracker.start([key(0), key(1)])
    tracker.reconciled(key(5))  # not queued at the start
    tracker.reconciled(key(0))
    tracker.reconciled(key(0))
    assert not tracker.done
    tracker.reconciled(key(1))
    assert tracker.seconds == 2.5
    tracker.reconciled(key(1))  # after the end: nothing
    assert tracker.seconds == 2.5
