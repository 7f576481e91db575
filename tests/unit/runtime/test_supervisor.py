"""The supervisor's rules: restart with backoff or stop, what the probes say meanwhile, when it calms."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any, cast

import pytest

from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.errors import Forbidden
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.manager import _informer_names
from dbuser_operator.runtime.resources import SECRETS, Resource
from dbuser_operator.runtime.supervisor import Policy, Runnable, RunnableFailed, Supervisor
from tests.support.kube import eventually
from tests.support.logs import captured_logs


class Clock:
    """A settable monotonic clock, so that 'has run for a while' needs no waiting."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def supervisor(clock: Clock | None = None, **options: Any) -> Supervisor:
    settings: dict[str, Any] = {"initial_backoff": 0.01, "max_backoff": 0.04, "stable_after": 30.0}
    return Supervisor(clock=clock or Clock(), **{**settings, **options})


async def test_a_runnable_that_raises_is_logged_named_by_readyz_and_restarted() -> None:
    sup = supervisor(initial_backoff=0.3, max_backoff=0.3)
    runs = 0
    recovered = asyncio.Event()

    async def flaky() -> None:
        nonlocal runs
        runs += 1
        if runs == 1:
            raise KeyError("resourceVersion")
        recovered.set()
        await asyncio.Event().wait()

    with captured_logs() as logs:
        task = asyncio.create_task(sup.supervise(Runnable("informer widgets", flaky)))
        await eventually(lambda: sup.not_ready() is not None)
        reason = sup.not_ready()
        assert reason is not None
        assert "informer widgets (KeyError, restarting)" in reason
        await asyncio.wait_for(recovered.wait(), 5)
    assert runs == 2
    failed = logs.entries("runnable failed")
    assert len(failed) == 1
    assert failed[0]["runnable"] == "informer widgets"
    assert "KeyError" in json.dumps(failed[0]["exception"])  # the traceback
    assert logs.entries("restarting runnable")
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_readiness_returns_when_the_restarted_runnable_is_ready_or_has_run_long_enough() -> None:
    clock = Clock()
    sup = supervisor(clock)
    ready = False
    runs = 0

    async def once_broken() -> None:
        nonlocal runs
        runs += 1
        if runs == 1:
            raise RuntimeError("boom")
        await asyncio.Event().wait()

    with_check = asyncio.create_task(sup.supervise(Runnable("cache", once_broken, ready=lambda: ready)))
    await eventually(lambda: runs == 2)
    assert "cache (RuntimeError, recovering)" in (sup.not_ready() or "")
    ready = True
    assert sup.not_ready() is None

    runs = 0
    sup_without = supervisor(clock)
    without_check = asyncio.create_task(sup_without.supervise(Runnable("task", once_broken)))
    await eventually(lambda: runs == 2)
    assert "task (RuntimeError, recovering)" in (sup_without.not_ready() or "")
    clock.now += 29
    assert sup_without.not_ready() is not None
    clock.now += 1
    assert sup_without.not_ready() is None
    for task in (with_check, without_check):
        task.cancel()
    await asyncio.gather(with_check, without_check, return_exceptions=True)


async def test_returning_when_it_should_run_forever_is_a_failure_but_a_finite_runnable_may() -> None:
    sup = supervisor()
    runs = {"forever": 0, "once": 0}

    async def forever() -> None:
        runs["forever"] += 1
        if runs["forever"] > 1:
            await asyncio.Event().wait()

    async def once() -> None:
        runs["once"] += 1

    with captured_logs() as logs:
        task = asyncio.create_task(sup.supervise(Runnable("forever", forever)))
        await asyncio.wait_for(sup.supervise(Runnable("once", once, finite=True)), 5)
        await eventually(lambda: runs["forever"] == 2)
    assert runs["once"] == 1
    assert sup.failures("once") == 0
    assert sup.failures("forever") == 1
    assert [entry["runnable"] for entry in logs.entries("runnable returned unexpectedly")] == ["forever"]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_exit_policy_raises_the_error_or_runnable_failed() -> None:
    sup = supervisor()

    async def denied() -> None:
        raise Forbidden(403, "Forbidden")

    async def returns() -> None:
        return None

    with captured_logs() as logs:
        with pytest.raises(Forbidden):
            await asyncio.wait_for(sup.supervise(Runnable("elector", denied, Policy.EXIT)), 5)
        with pytest.raises(RunnableFailed, match="controller x: returned unexpectedly"):
            await asyncio.wait_for(sup.supervise(Runnable("controller x", returns, Policy.EXIT)), 5)
    assert len(logs.entries("stopping the manager")) == 2
    assert "elector (Forbidden: 403 Forbidden" in (sup.not_ready() or "")


async def test_backoff_grows_and_a_crash_loop_fails_healthz() -> None:
    clock = Clock()
    sup = supervisor(clock, initial_backoff=0.01, max_backoff=0.08, unhealthy_after=3)
    starts: list[float] = []
    loop = asyncio.get_running_loop()

    async def crashing() -> None:
        starts.append(loop.time())
        raise RuntimeError("always")

    task = asyncio.create_task(sup.supervise(Runnable("loop", crashing)))
    await eventually(lambda: len(starts) >= 5)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert gaps[0] >= 0.01
    assert gaps[3] >= 0.08  # 0.01 doubled three times, capped at 0.08 (jitter only adds)
    assert sup.failures("loop") >= 5
    assert "loop (" in (sup.not_healthy() or "")


async def test_a_run_that_lasted_resets_the_failure_count() -> None:
    clock = Clock()
    sup = supervisor(clock, unhealthy_after=2)
    runs = 0
    running = asyncio.Event()
    fail = asyncio.Event()

    async def sometimes() -> None:
        nonlocal runs
        runs += 1
        if runs <= 2:
            raise RuntimeError("early")
        running.set()
        await fail.wait()
        fail.clear()
        running.clear()
        raise RuntimeError("late")

    task = asyncio.create_task(sup.supervise(Runnable("svc", sometimes)))
    await asyncio.wait_for(running.wait(), 5)
    assert sup.failures("svc") == 2
    clock.now += 31  # it ran fine for a while
    fail.set()
    await eventually(lambda: runs == 4)
    assert sup.failures("svc") == 1
    assert sup.not_healthy() is None
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_ends_while_stopping_are_expected() -> None:
    sup = supervisor()
    release = asyncio.Event()

    async def ends_on_release() -> None:
        await release.wait()
        raise RuntimeError("during shutdown")

    task = asyncio.create_task(sup.supervise(Runnable("writer", ends_on_release)))
    await asyncio.sleep(0)
    sup.stopping()
    release.set()
    await asyncio.wait_for(task, 5)
    assert sup.failures("writer") == 0
    assert sup.not_ready() is None


def test_informers_of_one_resource_get_distinct_runnable_names() -> None:
    kube = cast("KubeClient", None)
    widgets = Resource("example.dev", "v1", "widgets", "Widget")
    informers = [
        Informer(kube, SECRETS),
        Informer(kube, widgets),
        Informer(kube, SECRETS, label_selector="a"),
    ]
    assert _informer_names(informers) == [
        "informer secrets",
        "informer widgets.example.dev",
        "informer secrets #2",
    ]


async def test_a_nested_runnable_that_stops_the_manager_is_logged_once_under_its_own_name() -> None:
    sup = supervisor()

    async def controller() -> None:
        raise ZeroDivisionError("worker bug")

    async def group() -> None:  # like the leader's group of controllers
        await sup.supervise(Runnable("controller users", controller, Policy.EXIT))

    with captured_logs() as logs, pytest.raises(ZeroDivisionError):
        await asyncio.wait_for(sup.supervise(Runnable("leader election", group, Policy.EXIT)), 5)
    assert [entry["runnable"] for entry in logs.entries("runnable failed")] == ["controller users"]
    assert [entry["runnable"] for entry in logs.entries("stopping the manager")] == ["controller users"]
    assert "controller users (ZeroDivisionError" in (sup.not_ready() or "")
