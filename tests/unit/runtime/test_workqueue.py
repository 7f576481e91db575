"""The work queue: client-go's dedup / processing / delayed-add / back-off semantics, shutdown, metrics."""

from __future__ import annotations

import asyncio
import random
import tracemalloc
import uuid
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import ObjectKey
from dbuser_operator.runtime.workqueue import (
    ExponentialFailureRateLimiter,
    QueueShutDownError,
    RateLimitingQueue,
)

SOON = 1.0  # bound for anything that should happen at once; only reached when a test fails


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def new_queue(
    rate_limiter: ExponentialFailureRateLimiter[str] | None = None, clock: FakeClock | None = None
) -> RateLimitingQueue[str]:
    """A queue under a fresh name, so that its metric series start from zero."""
    name = f"test-{uuid.uuid4().hex[:8]}"
    if clock is None:
        return RateLimitingQueue(name, rate_limiter)
    return RateLimitingQueue(name, rate_limiter, clock=clock)


def sample(metric: str, queue: RateLimitingQueue[str]) -> float | None:
    return REGISTRY.get_sample_value(metric, {"name": queue.name, "controller": queue.name})


async def get_soon(queue: RateLimitingQueue[str]) -> str:
    return await asyncio.wait_for(queue.get(), SOON)


# --- dedup, processing, order ---------------------------------------------------------------------------


async def test_a_queued_key_is_queued_only_once_and_order_is_fifo() -> None:
    queue = new_queue()
    for key in ["a", "b", "a", "c", "b", "a"]:
        queue.add(key)

    assert len(queue) == 3
    assert [await get_soon(queue) for _ in range(3)] == ["a", "b", "c"]
    assert len(queue) == 0


async def test_namespaces_take_turns_so_a_flood_delays_only_its_own_namespace() -> None:
    """40 keys of one namespace, then one of another: the quiet key is handed out second, not 41st."""
    queue: RateLimitingQueue[ObjectKey] = RateLimitingQueue(f"test-{uuid.uuid4().hex[:8]}")
    flood = [ObjectKey("noisy", f"u{i}") for i in range(40)]
    for key in flood:
        queue.add(key)
    quiet = ObjectKey("quiet", "app")
    queue.add(quiet)

    handed_out = [await asyncio.wait_for(queue.get(), SOON) for _ in range(len(flood) + 1)]
    assert handed_out[:2] == [flood[0], quiet]
    assert handed_out[2:] == flood[1:]  # FIFO within a namespace
    assert len(queue) == 0


async def test_a_key_requeued_on_done_joins_its_namespace_turn() -> None:
    """A key of a busy namespace re-added while processing queues behind its namespace's keys; other
    namespaces keep their turns."""
    queue: RateLimitingQueue[ObjectKey] = RateLimitingQueue(f"test-{uuid.uuid4().hex[:8]}")
    a1, a2, b1, b2 = ObjectKey("a", "1"), ObjectKey("a", "2"), ObjectKey("b", "1"), ObjectKey("b", "2")
    for key in (a1, a2, b1, b2):
        queue.add(key)
    first = await asyncio.wait_for(queue.get(), SOON)
    assert first == a1
    queue.add(a1)  # while processing: back on done
    queue.done(a1)
    assert [await asyncio.wait_for(queue.get(), SOON) for _ in range(4)] == [b1, a2, b2, a1]


async def test_a_key_added_while_processing_waits_for_done_then_is_queued_again() -> None:
    queue = new_queue()
    queue.add("a")
    assert await get_soon(queue) == "a"

    queue.add("a")
    queue.add("a")
    assert len(queue) == 0  # dirty, not handed to a second worker
    second_getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0.002)
    assert not second_getter.done()

    queue.done("a")
    assert await asyncio.wait_for(second_getter, SOON) == "a"
    queue.done("a")
    assert len(queue) == 0  # once, although added twice


async def test_done_without_a_new_add_does_not_requeue_and_unknown_done_is_ignored() -> None:
    queue = new_queue()
    queue.add("a")
    assert await get_soon(queue) == "a"
    queue.done("a")
    queue.done("a")
    queue.done("never-added")
    assert len(queue) == 0
    queue.add("a")
    assert len(queue) == 1


async def test_get_waits_for_an_add() -> None:
    queue = new_queue()
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0.002)
    assert not getter.done()
    queue.add("a")
    assert await asyncio.wait_for(getter, SOON) == "a"


async def test_a_getter_cancelled_after_its_wake_up_passes_the_item_on() -> None:
    queue = new_queue()
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)  # both wait

    queue.add("a")  # wakes the first
    first.cancel()
    assert await asyncio.wait_for(second, SOON) == "a"
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_a_getter_cancelled_while_waiting_does_not_swallow_a_later_add() -> None:
    queue = new_queue()
    cancelled = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled

    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add("a")
    assert await asyncio.wait_for(getter, SOON) == "a"


# --- delayed adds ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("delay", [0.0, -1.0])
async def test_a_delay_of_zero_or_less_adds_at_once(delay: float) -> None:
    queue = new_queue()
    queue.add_after("a", delay)
    assert len(queue) == 1


async def test_add_after_adds_once_the_delay_has_passed_without_a_task() -> None:
    queue = new_queue()
    loop = asyncio.get_running_loop()
    tasks_before = len(asyncio.all_tasks())
    start = loop.time()

    queue.add_after("a", 0.01)
    assert len(asyncio.all_tasks()) == tasks_before  # a loop timer, not a background task
    assert len(queue) == 0

    assert await get_soon(queue) == "a"
    assert loop.time() - start >= 0.01


async def test_add_after_keeps_the_earliest_time_a_later_one_does_not_delay() -> None:
    queue = new_queue()
    queue.add_after("a", 0.005)
    queue.add_after("a", 60)
    assert await get_soon(queue) == "a"
    queue.done("a")


async def test_add_after_a_shorter_delay_brings_the_key_forward_and_delivers_it_once() -> None:
    queue = new_queue()
    queue.add_after("a", 60)
    queue.add_after("a", 0.02)
    queue.add_after("a", 0.005)
    assert await get_soon(queue) == "a"
    queue.done("a")

    await asyncio.sleep(0.03)  # the superseded 20 ms entry must not add it again
    assert len(queue) == 0


async def test_delayed_keys_come_in_order_of_their_ready_times() -> None:
    queue = new_queue()
    loop = asyncio.get_running_loop()
    # The three delays count from one instant, so that a machine that stalls between the calls cannot
    # reorder their ready times (the queue reads the loop's clock at each add).
    with mock.patch.object(loop, "time", return_value=loop.time()):
        queue.add_after("late", 0.015)
        queue.add_after("early", 0.005)
        queue.add_after("middle", 0.01)
    assert [await get_soon(queue) for _ in range(3)] == ["early", "middle", "late"]


async def test_a_delayed_add_of_a_queued_key_does_not_duplicate_it() -> None:
    queue = new_queue()
    queue.add("a")
    queue.add_after("a", 0.002)
    await asyncio.sleep(0.01)
    assert len(queue) == 1


# --- rate limiting --------------------------------------------------------------------------------------


def test_the_rate_limiter_doubles_from_5_ms_to_a_1000_s_cap_per_key() -> None:
    limiter = ExponentialFailureRateLimiter[str]()
    delays = [limiter.when("a") for _ in range(20)]

    assert delays[:4] == pytest.approx([0.005, 0.01, 0.02, 0.04])
    assert delays[17] == pytest.approx(0.005 * 2**17)  # 655 s, still under the cap
    assert delays[18:] == [1000.0, 1000.0]
    assert limiter.num_requeues("a") == 20
    assert limiter.when("b") == pytest.approx(0.005)  # per key


def test_the_rate_limiter_forget_resets_the_count() -> None:
    limiter = ExponentialFailureRateLimiter[str]()
    for _ in range(5):
        limiter.when("a")
    limiter.forget("a")
    limiter.forget("never-failed")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == pytest.approx(0.005)


def test_the_rate_limiter_stays_at_the_cap_after_very_many_failures() -> None:
    limiter = ExponentialFailureRateLimiter[str](base_delay=1.0, max_delay=30.0)
    for _ in range(2000):  # 2.0**2000 overflows a float
        delay = limiter.when("a")
    assert delay == 30.0


def test_the_rate_limiter_refuses_negative_delays() -> None:
    with pytest.raises(ValueError, match="negative"):
        ExponentialFailureRateLimiter[str](base_delay=-1.0)


@given(
    base=st.floats(min_value=1e-6, max_value=10.0),
    cap=st.floats(min_value=0.0, max_value=1e4),
    failures=st.integers(min_value=1, max_value=80),
)
def test_the_rate_limiter_is_base_times_two_to_the_failures_capped(
    base: float, cap: float, failures: int
) -> None:
    limiter = ExponentialFailureRateLimiter[str](base_delay=base, max_delay=cap)
    delays = [limiter.when("k") for _ in range(failures)]
    assert delays == pytest.approx([min(base * 2**n, cap) for n in range(failures)])
    assert delays == sorted(delays)


async def test_add_rate_limited_backs_off_counts_and_forget_resets() -> None:
    queue = new_queue()
    loop = asyncio.get_running_loop()

    start = loop.time()
    queue.add_rate_limited("a")  # 5 ms
    assert len(queue) == 0
    assert await get_soon(queue) == "a"
    queue.done("a")
    queue.add_rate_limited("a")  # 10 ms
    assert await get_soon(queue) == "a"
    queue.done("a")

    assert loop.time() - start >= 0.015
    assert queue.num_requeues("a") == 2
    assert sample("workqueue_retries_total", queue) == 2
    queue.forget("a")
    assert queue.num_requeues("a") == 0


# --- shutdown -------------------------------------------------------------------------------------------


async def test_shutdown_releases_waiting_getters_and_ignores_adds() -> None:
    queue = new_queue()
    getters = [asyncio.create_task(queue.get()) for _ in range(3)]
    await asyncio.sleep(0)

    queue.shutdown()
    results = await asyncio.wait_for(asyncio.gather(*getters, return_exceptions=True), SOON)
    assert all(isinstance(result, QueueShutDownError) for result in results)
    assert queue.shutting_down

    queue.add("a")
    queue.add_after("b", 0.001)
    queue.add_rate_limited("c")
    assert len(queue) == 0
    assert queue.num_requeues("c") == 0
    with pytest.raises(QueueShutDownError):
        await get_soon(queue)


async def test_shutdown_still_hands_out_what_is_queued_then_raises() -> None:
    queue = new_queue()
    queue.add("a")
    queue.add("b")
    queue.shutdown()
    assert [await get_soon(queue), await get_soon(queue)] == ["a", "b"]
    with pytest.raises(QueueShutDownError):
        await get_soon(queue)


async def test_shutdown_drops_delayed_keys() -> None:
    queue = new_queue()
    queue.add_after("a", 0.005)
    queue.shutdown()
    await asyncio.sleep(0.015)
    assert len(queue) == 0
    with pytest.raises(QueueShutDownError):
        await get_soon(queue)


async def test_shutdown_with_drain_waits_for_done() -> None:
    queue = new_queue()
    queue.add("a")
    queue.add("b")
    first, second = await get_soon(queue), await get_soon(queue)

    drain = asyncio.create_task(queue.shutdown_with_drain(timeout=SOON))
    await asyncio.sleep(0.002)
    assert queue.shutting_down
    assert not drain.done()
    queue.done(first)
    await asyncio.sleep(0.002)
    assert not drain.done()
    queue.done(second)
    assert await asyncio.wait_for(drain, SOON) is True


async def test_shutdown_with_drain_returns_false_when_the_timeout_expires() -> None:
    queue = new_queue()
    queue.add("a")
    await get_soon(queue)
    assert await queue.shutdown_with_drain(timeout=0.005) is False


async def test_shutdown_with_drain_waits_for_keys_still_queued_and_names_those_in_flight() -> None:
    queue = new_queue()
    queue.add("a")
    queue.add("b")
    first = await get_soon(queue)
    queue.done(first)  # nothing is processing, but "b" is still queued: not drained yet
    assert list(queue.processing) == []
    assert await queue.shutdown_with_drain(timeout=0.01) is False
    second = await get_soon(queue)
    assert queue.processing == ("b",)
    drain = asyncio.create_task(queue.shutdown_with_drain(timeout=SOON))
    await asyncio.sleep(0.002)
    assert not drain.done()
    queue.done(second)
    assert await asyncio.wait_for(drain, SOON) is True
    assert not queue.processing


async def test_shutdown_with_drain_of_an_idle_queue_returns_at_once() -> None:
    queue = new_queue()
    assert await asyncio.wait_for(queue.shutdown_with_drain(), SOON) is True


# --- metrics --------------------------------------------------------------------------------------------


async def test_metrics_follow_adds_gets_and_dones() -> None:
    clock = FakeClock()
    queue = new_queue(clock=clock)
    assert sample("workqueue_depth", queue) == 0

    queue.add("a")
    queue.add("b")
    queue.add("a")
    assert sample("workqueue_depth", queue) == 2
    assert sample("workqueue_adds_total", queue) == 2

    clock.now += 3
    assert await get_soon(queue) == "a"
    assert sample("workqueue_depth", queue) == 1
    assert sample("workqueue_queue_duration_seconds_count", queue) == 1
    assert sample("workqueue_queue_duration_seconds_sum", queue) == pytest.approx(3)

    queue.add("a")  # dirty while processing: counted, as in client-go
    assert sample("workqueue_depth", queue) == 2
    assert sample("workqueue_adds_total", queue) == 3

    clock.now += 2
    queue.done("a")
    assert sample("workqueue_work_duration_seconds_count", queue) == 1
    assert sample("workqueue_work_duration_seconds_sum", queue) == pytest.approx(2)

    assert [await get_soon(queue), await get_soon(queue)] == ["b", "a"]
    assert sample("workqueue_depth", queue) == 0
    # b waited 5 s; a was re-added at +3 and handed out at +5.
    assert sample("workqueue_queue_duration_seconds_sum", queue) == pytest.approx(3 + 5 + 2)

    queue.add_rate_limited("c")
    assert sample("workqueue_retries_total", queue) == 1


# --- properties -----------------------------------------------------------------------------------------

KEYS = ["a", "b", "c", "d"]
operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.sampled_from(KEYS)),
        st.tuples(st.just("get"), st.just("")),
        st.tuples(st.just("done"), st.sampled_from(KEYS)),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(ops=operations)
async def test_random_operations_match_the_model(ops: list[tuple[str, str]]) -> None:
    """Against a plain model: FIFO without duplicates, never two handouts of one key, nothing lost."""
    queue = new_queue()
    model_queue: list[str] = []
    model_dirty: set[str] = set()
    processing: set[str] = set()
    undelivered: set[str] = set()  # added since it was last handed out

    def model_add(key: str) -> None:
        undelivered.add(key)
        if key not in model_dirty:
            model_dirty.add(key)
            if key not in processing:
                model_queue.append(key)

    async def get_checked() -> None:
        key = await get_soon(queue)
        assert key not in processing
        assert key == model_queue.pop(0)
        model_dirty.discard(key)
        processing.add(key)
        undelivered.discard(key)

    def done_checked(key: str) -> None:
        queue.done(key)
        if key in processing:
            processing.discard(key)
            if key in model_dirty:
                model_queue.append(key)

    for operation, key in ops:
        if operation == "add":
            queue.add(key)
            model_add(key)
        elif operation == "get" and model_queue:
            await get_checked()
        elif operation == "done":
            done_checked(key)
        assert len(queue) == len(model_queue)
        assert len(set(model_queue)) == len(model_queue)

    while model_queue or processing:  # drain: everything added is eventually delivered
        if model_queue:
            await get_checked()
        else:
            for key in sorted(processing):
                done_checked(key)
    assert not undelivered
    assert len(queue) == 0


async def test_many_workers_never_process_one_key_twice_at_the_same_time() -> None:
    queue = new_queue()
    rng = random.Random(20240611)
    keys = [f"key-{n}" for n in range(40)]
    active: set[str] = set()
    overlaps: list[str] = []
    undelivered: set[str] = set()
    handouts = 0
    max_parallel = 0

    def add(key: str) -> None:
        if not queue.shutting_down:
            undelivered.add(key)
        queue.add(key)

    async def worker() -> None:
        nonlocal handouts, max_parallel
        while True:
            try:
                key = await queue.get()
            except QueueShutDownError:
                return
            if key in active:
                overlaps.append(key)
            active.add(key)
            undelivered.discard(key)
            handouts += 1
            max_parallel = max(max_parallel, len(active))
            try:
                await asyncio.sleep(rng.random() * 0.001)
                if rng.random() < 0.3:
                    add(key)  # re-added while processing
                if rng.random() < 0.3:
                    add(rng.choice(keys))
                await asyncio.sleep(0)
            finally:
                active.discard(key)
                queue.done(key)

    workers = [asyncio.create_task(worker()) for _ in range(8)]
    for _ in range(5):
        for key in rng.sample(keys, len(keys)):
            add(key)
        await asyncio.sleep(0.002)

    assert await queue.shutdown_with_drain(timeout=5) is True
    await asyncio.wait_for(asyncio.gather(*workers), 5)

    assert overlaps == []
    assert not undelivered
    assert handouts >= len(keys)
    assert max_parallel > 1  # the workers did run concurrently


async def test_a_drained_queue_gives_back_the_tables_its_keys_filled() -> None:
    """A first pass queues every key at once; once they are all handed out, what the queue holds for them
    is given back (an emptied set or dict keeps its table), counted by tracemalloc."""
    queue = new_queue()
    keys = [f"u{number:05d}" for number in range(10_000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for key in keys:
            queue.add(key)
        filled = tracemalloc.get_traced_memory()[0]
        for _ in keys:
            queue.done(await get_soon(queue))
        drained = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert filled - before > 1_000_000  # the queue's own tables for 10 000 keys (the keys are the test's)
    assert drained - before < 100_000, drained - before
