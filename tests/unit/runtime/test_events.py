"""The background writers of the event recorder, against a slow stand-in for the API server's Events."""

from __future__ import annotations

import asyncio
import random
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, cast

import pytest

from dbuser_operator.runtime import events
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.conditions import format_time
from dbuser_operator.runtime.errors import NotFound, Unavailable
from dbuser_operator.runtime.events import DEFAULT_WRITERS, EventRecorder, ObjectReference
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import Resource
from tests.support.kube import eventually


class SlowEvents:
    """Creates and patches Events in memory, each write taking up to ``delay`` seconds."""

    def __init__(self, delay: float = 0.001, *, jitter: bool = False) -> None:
        self.delay = delay
        self.jitter = jitter
        self.events: dict[str, dict[str, Any]] = {}
        self.writes: defaultdict[str, list[tuple[str, int]]] = defaultdict(list)  # by object: (reason, count)
        self.writing: set[str] = set()
        self.overlaps = 0  # writes about an object while another one about it was under way
        self.concurrency = 0
        self.peak = 0

    @asynccontextmanager
    async def _writing(self, involved: str) -> AsyncIterator[None]:
        self.overlaps += involved in self.writing
        self.writing.add(involved)
        self.concurrency += 1
        self.peak = max(self.peak, self.concurrency)
        try:
            await asyncio.sleep(random.uniform(0, self.delay) if self.jitter else self.delay)
            yield
        finally:
            self.concurrency -= 1
            self.writing.discard(involved)

    async def create(
        self, resource: Resource, body: Mapping[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        event = dict(body)
        async with self._writing(event["involvedObject"]["name"]):
            self.events[event["metadata"]["name"]] = event
            self.writes[event["involvedObject"]["name"]].append((event["reason"], 1))
        return event

    async def patch(
        self,
        resource: Resource,
        name: str,
        body: Mapping[str, Any],
        patch_type: PatchType,
        namespace: str | None = None,
    ) -> dict[str, Any]:
        if name not in self.events:
            raise NotFound(404, "Not Found")
        event = self.events[name]
        async with self._writing(event["involvedObject"]["name"]):
            event.update(body)
            self.writes[event["involvedObject"]["name"]].append((event["reason"], event["count"]))
        return event


class Log:
    """Stands in for the module's logger: keeps the events it is told of."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []

    def warning(self, event: str, **fields: Any) -> None:
        self.lines.append((event, fields))

    def error(self, event: str, **fields: Any) -> None:
        self.lines.append((event, fields))

    def count(self, event: str) -> int:
        return sum(1 for line, _ in self.lines if line == event)


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> Log:
    log = Log()
    monkeypatch.setattr(events, "_log", log)
    return log


def recorder_for(sink: SlowEvents, **options: Any) -> EventRecorder:
    return EventRecorder(cast(KubeClient, sink), "test", **options)


def user(n: int) -> dict[str, Any]:
    return {
        "apiVersion": "dbuser-operator.dev/v1alpha1",
        "kind": "DatabaseUser",
        "metadata": {"name": f"user-{n}", "namespace": "ns", "uid": f"uid-{n}", "resourceVersion": "7"},
        "spec": {"user": f"user{n}"},
    }


def recorder_tasks() -> set[asyncio.Task[Any]]:
    return {task for task in asyncio.all_tasks() if task.get_name().startswith("event recorder")}


def writers_of(recorder: EventRecorder) -> set[asyncio.Task[None]]:
    """The recorder's own writer tasks still running (the session's loop may run other recorders)."""
    return {writer for writer in recorder._writers if writer is not None and not writer.done()}


async def test_a_burst_of_events_about_distinct_objects_is_all_written(log: Log) -> None:
    sink = SlowEvents(delay=0.001)
    recorder = recorder_for(sink)

    for n in range(3000):
        recorder.emit(user(n), "Normal", "AccountReady", f"created account user{n}")
    await recorder.flush()

    assert log.count("event dropped: too many waiting") == 0
    assert len(sink.events) == 3000
    assert sink.peak == DEFAULT_WRITERS  # written concurrently, by every writer
    await recorder.close()


async def test_events_about_one_object_stay_in_order_and_aggregate(log: Log) -> None:
    sink = SlowEvents(delay=0.002, jitter=True)
    recorder = recorder_for(sink, writers=4)
    reasons = ["A", "B", "A", "A", "C", "B"]

    for reason in reasons:
        for n in range(40):
            recorder.emit(user(n), "Normal", reason, f"{reason} happened")
    await recorder.flush()

    assert sink.overlaps == 0
    seen: Counter[str] = Counter()
    expected = []
    for reason in reasons:
        seen[reason] += 1
        expected.append((reason, seen[reason]))
    assert all(sink.writes[f"user-{n}"] == expected for n in range(40))
    final = Counter(
        (event["involvedObject"]["name"], event["reason"], event["count"]) for event in sink.events.values()
    )
    assert final == Counter({(f"user-{n}", reason, seen[reason]): 1 for n in range(40) for reason in seen})
    assert log.lines == []
    await recorder.close()


async def test_the_event_describes_the_object_as_it_was_when_emitted() -> None:
    sink = SlowEvents()
    recorder = recorder_for(sink)
    obj = user(1)

    recorder.emit(obj, "Warning", "Failed", "boom")
    obj["metadata"]["resourceVersion"] = "8"  # a later change, which must not leak into the queued event
    await recorder.flush()

    (event,) = sink.events.values()
    assert event["involvedObject"] == {
        "apiVersion": "dbuser-operator.dev/v1alpha1",
        "kind": "DatabaseUser",
        "name": "user-1",
        "namespace": "ns",
        "uid": "uid-1",
        "resourceVersion": "7",
    }
    assert ObjectReference.of(obj).resource_version == "8"
    await recorder.close()


async def test_past_the_limit_events_are_dropped_and_logged(log: Log) -> None:
    sink = SlowEvents()
    recorder = recorder_for(sink, writers=2, pending_limit=10)

    for n in range(15):
        recorder.emit(user(n), "Normal", "AccountReady", "ready")
    await recorder.flush()

    assert len(sink.events) == 10
    assert log.count("event dropped: too many waiting") == 5
    await recorder.close()


async def test_close_writes_what_is_pending_then_stops_the_writers() -> None:
    sink = SlowEvents()
    recorder = recorder_for(sink)
    before = recorder_tasks()
    for n in range(100):
        recorder.emit(user(n), "Normal", "AccountReady", "ready")

    await recorder.close()

    assert len(sink.events) == 100
    assert recorder_tasks() - before == set()


async def test_close_gives_up_on_a_stuck_api_server_in_time(log: Log) -> None:
    recorder = recorder_for(SlowEvents(delay=3600))
    before = recorder_tasks()
    for n in range(20):
        recorder.emit(user(n), "Normal", "AccountReady", "ready")

    async with asyncio.timeout(5):
        await recorder.close(timeout=0.1)

    assert log.count("events not recorded at shutdown") == 1
    assert recorder_tasks() - before == set()


def test_there_is_at_least_one_writer() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        recorder_for(SlowEvents(), writers=0)


async def test_under_a_manager_run_owns_the_writers_and_ends_with_a_writers_error(log: Log) -> None:
    sink = SlowEvents()
    recorder = recorder_for(sink, writers=2)
    running = asyncio.create_task(recorder.run())
    await asyncio.sleep(0)
    assert len(writers_of(recorder)) == 4  # started by run(), not by emit(): 2 for Normal, 2 for Warning
    recorder.emit(user(1), "Normal", "AccountReady", "ready")
    await recorder.flush()
    assert len(sink.events) == 1

    def broken(*_: object) -> None:
        raise RuntimeError("writer bug")

    for queue in recorder._queues:  # a bug in a writer's own loop, not in writing one event
        queue.task_done = broken  # type: ignore[method-assign]
    recorder.emit(user(2), "Normal", "AccountReady", "ready")
    with pytest.raises(RuntimeError, match="writer bug"):
        await asyncio.wait_for(running, 5)

    for queue in recorder._queues:
        del queue.task_done  # the instance attribute: back to the class's method
    restarted = asyncio.create_task(recorder.run())  # what the supervisor does next
    recorder.emit(user(3), "Normal", "AccountReady", "ready")
    await eventually(lambda: "user-3" in {event["involvedObject"]["name"] for event in sink.events.values()})
    writers = writers_of(recorder)
    assert writers
    await recorder.close(timeout=0.1)  # user-2's write was never marked done: the flush times out
    await asyncio.wait_for(restarted, 5)  # closed: run() returns
    assert all(writer.done() for writer in writers)


async def test_without_a_manager_a_writer_that_dies_is_logged_and_replaced(log: Log) -> None:
    sink = SlowEvents()
    recorder = recorder_for(sink, writers=1)
    queue, _warnings = recorder._queues  # the Normal events' writer, and the Warnings'

    def broken(*_: object) -> None:
        raise RuntimeError("writer bug")

    queue.task_done = broken  # type: ignore[method-assign]
    recorder.emit(user(1), "Normal", "AccountReady", "ready")
    await eventually(lambda: log.count("event writer failed") == 1)
    (_, fields), *_ = [line for line in log.lines if line[0] == "event writer failed"]
    assert isinstance(fields["exc_info"], RuntimeError)
    del queue.task_done
    recorder.emit(user(2), "Normal", "AccountReady", "ready")  # a new writer is started
    await eventually(lambda: "user-2" in {event["involvedObject"]["name"] for event in sink.events.values()})
    await recorder.close(timeout=0.1)


async def test_closing_without_flush_drops_what_waits_and_writes_nothing_more(log: Log) -> None:
    sink = SlowEvents(delay=0.05)
    recorder = recorder_for(sink, writers=2)
    for n in range(50):
        recorder.emit(user(n), "Normal", "AccountReady", "ready")
    await asyncio.sleep(0.01)  # the writers have each taken one and are writing it
    writers = writers_of(recorder)
    assert len(writers) == 2

    await recorder.close(flush=False)  # the lease is lost: nothing more may be written

    assert recorder.pending == 0
    assert log.count("events dropped: the leader lease is lost") == 1
    await asyncio.sleep(0.1)
    assert len(sink.events) == 0  # the writes under way were cancelled, the waiting ones dropped
    assert all(writer.done() for writer in writers)


async def test_events_yield_to_queued_work_and_keep_the_time_they_were_emitted() -> None:
    sink = SlowEvents()
    busy = True
    recorder = recorder_for(sink, yield_to=lambda: busy)
    before = format_time()
    recorder.emit(user(1), "Normal", "AccountCreated", "created")
    after = format_time()
    await asyncio.sleep(1.1)  # the write is a whole second later at least
    assert sink.events == {}  # held while work waits
    assert recorder.pending == 0  # taken by its writer, which holds it

    busy = False
    await eventually(lambda: len(sink.events) == 1)
    (event,) = sink.events.values()
    assert event["firstTimestamp"] in {before, after}  # when it was emitted, not written
    await recorder.close()


async def test_an_event_yields_at_most_max_delay() -> None:
    sink = SlowEvents()
    recorder = recorder_for(sink, yield_to=lambda: True, max_delay=0.3)
    started = asyncio.get_running_loop().time()
    recorder.emit(user(1), "Normal", "AccountCreated", "created")
    await recorder.flush()
    assert len(sink.events) == 1
    assert asyncio.get_running_loop().time() - started >= 0.3
    await recorder.close()


async def test_close_writes_held_events_at_once() -> None:
    sink = SlowEvents()
    recorder = recorder_for(sink, yield_to=lambda: True, max_delay=3600)
    for n in range(50):
        recorder.emit(user(n), "Normal", "AccountCreated", "created")
    await asyncio.sleep(0.2)
    assert sink.events == {}

    await recorder.close(timeout=5)

    assert len(sink.events) == 50


async def test_warnings_never_wait() -> None:
    sink = SlowEvents()
    recorder = recorder_for(sink, yield_to=lambda: True, max_delay=3600)
    recorder.emit(user(1), "Warning", "ServerNotReady", "the server is down")
    await eventually(lambda: len(sink.events) == 1)
    await recorder.close(flush=False)


async def test_a_warning_never_waits_behind_a_held_normal_event() -> None:
    """Normal events wait for queued work; a Warning about the same object (or one its writer serves)
    is written at once all the same."""
    sink = SlowEvents()
    recorder = recorder_for(sink, writers=1, yield_to=lambda: True, max_delay=3600)
    recorder.emit(user(1), "Normal", "AccountReady", "ready")  # held
    recorder.emit(user(1), "Warning", "PasswordRestored", "set back")
    recorder.emit(user(2), "Warning", "ServerNotReady", "down")
    await eventually(lambda: len(sink.events) == 2)
    assert {event["type"] for event in sink.events.values()} == {"Warning"}
    await recorder.close(flush=False)


def dropped(type_: str, reason: str) -> float:
    """``dbuser_operator_events_dropped_total`` for ``type_`` and ``reason`` (0 before any)."""
    labels = {"type": type_, "reason": reason}
    return REGISTRY.get_sample_value("dbuser_operator_events_dropped_total", labels) or 0.0


async def test_held_normal_events_that_fill_the_queue_never_crowd_out_a_warning(log: Log) -> None:
    """Under a backlog Normal events wait (``yield_to``) and may fill the queue, and further ones are
    dropped; a Warning is still queued and written: the limit is per type. Every drop is counted."""
    sink = SlowEvents()
    busy = True
    recorder = recorder_for(sink, writers=1, pending_limit=3, yield_to=lambda: busy, max_delay=3600)
    before = dropped("Normal", "queue_full"), dropped("Warning", "queue_full")
    for n in range(6):  # the writer holds the first, 3 wait, 2 are dropped
        recorder.emit(user(n), "Normal", "AccountReady", "ready")
        await asyncio.sleep(0)
    recorder.emit(user(9), "Warning", "ServerNotReady", "the server is down")
    await eventually(lambda: len(sink.events) == 1)
    assert [event["type"] for event in sink.events.values()] == ["Warning"]
    assert log.count("event dropped: too many waiting") == 2
    assert dropped("Normal", "queue_full") - before[0] == 2
    assert dropped("Warning", "queue_full") - before[1] == 0

    busy = False
    await recorder.flush()
    assert len(sink.events) == 5  # the Warning and the 4 Normal events that were not dropped
    await recorder.close()


class FailingEvents(SlowEvents):
    """An API server that refuses every Event."""

    async def create(
        self, resource: Resource, body: Mapping[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        raise Unavailable(503, "Service Unavailable")


async def test_events_never_written_are_counted_by_why(log: Log) -> None:
    before = dropped("Warning", "write_failed"), dropped("Normal", "lease_lost")
    failing = recorder_for(FailingEvents())
    failing.emit(user(1), "Warning", "ServerNotReady", "down")
    await failing.flush()
    assert log.count("event not recorded") == 1
    assert dropped("Warning", "write_failed") - before[0] == 1
    await failing.close()

    held = recorder_for(SlowEvents(), writers=1, yield_to=lambda: True, max_delay=3600)
    for n in range(3):  # the writer holds one, two wait
        held.emit(user(n), "Normal", "AccountReady", "ready")
        await asyncio.sleep(0)
    await held.close(flush=False)  # the lease is lost
    assert dropped("Normal", "lease_lost") - before[1] == 2
