"""The reconcile contract of a controller: exclusivity, requeue_after, backoff, crashes, gate."""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from dbuser_operator.runtime.controller import Controller, ReconcileError, Reconciler, Result
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import ObjectKey
from tests.support.kube import eventually


@asynccontextmanager
async def running(controller: Controller) -> AsyncIterator[Controller]:
    task = asyncio.create_task(controller.run(drain_timeout=5))
    try:
        await eventually(lambda: controller.started)
        yield controller
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def key(n: int) -> ObjectKey:
    return ObjectKey("ns", f"obj-{n}")


def sample(name: str, controller: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, {"controller": controller, **labels}) or 0.0


async def test_a_key_is_never_reconciled_twice_at_once_under_load() -> None:
    active: set[ObjectKey] = set()
    overlaps = 0
    calls: defaultdict[ObjectKey, int] = defaultdict(int)
    concurrency = 0
    peak = 0

    async def reconcile(k: ObjectKey) -> Result:
        nonlocal overlaps, concurrency, peak
        overlaps += k in active
        active.add(k)
        concurrency += 1
        peak = max(peak, concurrency)
        await asyncio.sleep(random.uniform(0, 0.003))
        calls[k] += 1
        concurrency -= 1
        active.discard(k)
        return Result()

    controller = Controller("exclusive", reconcile, max_concurrent_reconciles=8)
    async with running(controller):
        for _ in range(30):
            for n in random.sample(range(20), 10):
                controller.queue.add(key(n))
            await asyncio.sleep(0.002)
        await eventually(lambda: len(controller.queue) == 0 and concurrency == 0)
    assert overlaps == 0
    assert peak > 1  # really concurrent
    assert set(calls) <= {key(n) for n in range(20)}
    assert sum(calls.values()) >= 20


async def test_requeue_after_comes_back_after_the_delay() -> None:
    seen: list[float] = []

    async def reconcile(k: ObjectKey) -> Result:
        seen.append(time.monotonic())
        return Result(requeue_after=0.2) if len(seen) == 1 else Result()

    controller = Controller("requeue-after", reconcile)
    async with running(controller):
        controller.queue.add(key(1))
        await eventually(lambda: len(seen) == 2)
    assert 0.19 <= seen[1] - seen[0] < 0.5
    assert sample("controller_runtime_reconcile_total", "requeue-after", result="requeue_after") == 1


async def test_errors_back_off_exponentially_and_success_forgets() -> None:
    times: list[float] = []

    async def reconcile(k: ObjectKey) -> Result:
        times.append(time.monotonic())
        if len(times) <= 5:
            raise ReconcileError("database down")
        return Result()

    controller = Controller("backoff", reconcile)
    async with running(controller):
        controller.queue.add(key(1))
        await eventually(lambda: len(times) == 6, timeout=5)
        gaps = [b - a for a, b in itertools.pairwise(times)]
        # 5, 10, 20, 40, 80 ms: each gap at least the backoff, and the backoff grows.
        for gap, expected in zip(gaps, (0.005, 0.01, 0.02, 0.04, 0.08), strict=True):
            assert gap >= expected * 0.9
        assert gaps[-1] > gaps[0]
        await eventually(lambda: controller.queue.num_requeues(key(1)) == 0)  # forgotten after the success
    assert sample("controller_runtime_reconcile_errors_total", "backoff") == 5
    assert sample("controller_runtime_reconcile_panics_total", "backoff") == 0


async def test_a_crash_in_one_reconcile_does_not_stop_the_others() -> None:
    done: set[ObjectKey] = set()

    async def reconcile(k: ObjectKey) -> Result:
        if k == key(0):
            raise ZeroDivisionError("unexpected")
        done.add(k)
        return Result()

    controller = Controller("crashy", reconcile, max_concurrent_reconciles=1)
    async with running(controller):
        for n in range(5):
            controller.queue.add(key(n))
        await eventually(lambda: done == {key(n) for n in range(1, 5)})
        await eventually(lambda: sample("controller_runtime_reconcile_panics_total", "crashy") >= 2)
        # The single worker survived the crashes and still serves new keys.
        controller.queue.add(key(9))
        await eventually(lambda: key(9) in done)


async def test_a_closed_gate_reconciles_nothing() -> None:
    calls = 0
    open_gate = False

    async def reconcile(k: ObjectKey) -> Result:
        nonlocal calls
        calls += 1
        return Result()

    controller = Controller("gated", reconcile, gate=lambda: open_gate)
    async with running(controller):
        controller.queue.add(key(1))
        await asyncio.sleep(0.1)
        assert calls == 0
        open_gate = True
        await eventually(lambda: calls == 1)


async def test_cancellation_drains_in_flight_reconciles() -> None:
    finished = asyncio.Event()

    async def slow(k: ObjectKey) -> Result:
        await asyncio.sleep(0.2)
        finished.set()
        return Result()

    reconciler: Reconciler = slow
    controller = Controller("drain", reconciler)
    task = asyncio.create_task(controller.run(drain_timeout=5))
    await eventually(lambda: controller.started)
    controller.queue.add(key(1))
    await eventually(lambda: sample("controller_runtime_active_workers", "drain") == 1)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert finished.is_set()  # the in-flight reconcile was allowed to finish
