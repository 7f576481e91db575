"""The reconcile contract of a controller: exclusivity, requeue_after, backoff, crashes, gate."""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from dbuser_operator.runtime.controller import Controller, Drain, ReconcileError, Reconciler, Result
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import ObjectKey
from dbuser_operator.runtime.workqueue import RateLimitingQueue
from tests.support.kube import eventually
from tests.support.logs import captured_logs


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


async def test_the_queue_given_is_the_one_drained_even_while_empty() -> None:
    """Others (the drift check, the Event recorder) hold the queue given: an empty one is falsy, and must
    not be swapped for a new one that nobody else sees."""
    seen: list[ObjectKey] = []

    async def reconcile(k: ObjectKey) -> Result:
        seen.append(k)
        return Result()

    queue = RateLimitingQueue[ObjectKey]("given")
    controller = Controller("given", reconcile, queue=queue)
    assert controller.queue is queue
    async with running(controller):
        queue.add(key(1))
        await eventually(lambda: seen == [key(1)])


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
    assert controller.last_drain == Drain(drained=True)


async def test_a_drain_that_times_out_cancels_and_reports_the_in_flight_reconciles() -> None:
    started: set[ObjectKey] = set()
    cancelled: set[ObjectKey] = set()
    quick_done = asyncio.Event()

    async def reconcile(k: ObjectKey) -> Result:
        started.add(k)
        try:
            await asyncio.sleep(0.05 if k == key(0) else 60)
        except asyncio.CancelledError:
            cancelled.add(k)
            raise
        quick_done.set()
        return Result()

    controller = Controller("drain-timeout", reconcile, max_concurrent_reconciles=3)
    task = asyncio.create_task(controller.run(drain_timeout=1.0))
    await eventually(lambda: controller.started)
    for n in range(3):
        controller.queue.add(key(n))
    await eventually(lambda: len(started) == 3)
    with captured_logs() as logs:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert quick_done.is_set()  # the short one finished within the timeout
    assert cancelled == {key(1), key(2)}
    assert controller.last_drain == Drain(drained=False, cancelled=(key(1), key(2)))
    (warning,) = logs.entries("controller stopped; in-flight reconciles cancelled")
    assert warning["keys"] == ["ns/obj-1", "ns/obj-2"]
    assert warning["cancelled"] == 2
    stopped = logs.entries("controller stopped")[-1]
    assert stopped["drained"] is False
    assert stopped["cancelled"] == 2


async def test_keys_queued_before_the_stop_are_drained_too_and_none_is_cancelled_after() -> None:
    finished: list[ObjectKey] = []

    async def reconcile(k: ObjectKey) -> Result:
        await asyncio.sleep(0.01)
        finished.append(k)
        return Result()

    controller = Controller("drain-queued", reconcile, max_concurrent_reconciles=2)
    task = asyncio.create_task(controller.run(drain_timeout=10))
    await eventually(lambda: controller.started)
    for n in range(10):
        controller.queue.add(key(n))
    await eventually(lambda: sample("controller_runtime_active_workers", "drain-queued") == 2)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert sorted(finished) == sorted(key(n) for n in range(10))
    assert controller.last_drain == Drain(drained=True)


async def test_a_worker_that_dies_ends_run_with_its_error() -> None:
    async def reconcile(k: ObjectKey) -> Result:
        return Result()

    def broken_gate() -> bool:
        raise RuntimeError("gate broke")

    controller = Controller("dying-worker", reconcile, gate=broken_gate)
    task = asyncio.create_task(controller.run(drain_timeout=1))
    await eventually(lambda: controller.started)
    controller.queue.add(key(1))
    async with asyncio.timeout(5):
        with pytest.raises(RuntimeError, match="gate broke"):
            await task
    assert not controller.started
