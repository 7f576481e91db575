"""The manager: runs informers and controllers, serves probes and metrics, elects a leader, shuts down.

Like controller-runtime's manager: every replica keeps its caches warm; only the leader runs the
controllers. ``/readyz`` passes once the caches are synced and, on the leader, the controllers run.
Leader election starts with the caches' listing, not after it: the controllers and leader tasks start once
this replica leads *and* every cache has synced, but a leader task added with ``before_sync`` starts as soon
as the lease is held (the DatabaseUser first pass's server reads, overlapped with the listing).
Losing the lease — a failed renewal, or the :class:`~.fence.Fence` found stale by a side effect or
revoked because the data layer saw a newer leader — stops all reconciling at once (in-flight reconciles
are cancelled, not drained; the shutdown hooks are told the fence is closed, so unsent Events are dropped)
and ``run`` raises :class:`LeadershipLost` (the process should exit and let Kubernetes restart it).
SIGTERM (or ``stop``) shuts down gracefully: in-flight reconciles finish within ``shutdown_timeout``, the
shutdown hooks run (pending Events are written) while the lease is still held, then the lease is
released and the caches stop.

Every long-running part is a supervised runnable (``runtime.supervisor``); an unexpected end is logged
with its traceback and named by ``/readyz``, then handled by the part's rule:

| runnable | runs on | when it ends unexpectedly |
|---|---|---|
| HTTP server (probes, metrics) | every replica | cannot bind, or fails: the manager stops |
| informer (per watched resource) | every replica | restarted with backoff; it lists again meanwhile |
| ``add_runnable`` parts | as added | their policy (the event recorder: restart) |
| leader election | every replica | the manager stops; a lost lease raises ``LeadershipLost`` |
| controller | the leader | the manager stops (a failing reconcile is retried, not an end) |
| leader task (``add_leader_task``) | the leader | restarted with backoff; returning is a normal end |

Without leader election, the controllers and leader tasks run as one group named "controllers", with the
rule of leader election.
"""

from __future__ import annotations

import asyncio
import functools
import signal
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

import structlog

from dbuser_operator.runtime import gc_policy
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.controller import Controller
from dbuser_operator.runtime.fence import Fence, open_fence
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.leaderelection import LeaderElectionConfig, LeaderElector, LeadershipLost
from dbuser_operator.runtime.server import Endpoints
from dbuser_operator.runtime.supervisor import Policy, Runnable, RunnableFailed, Supervisor

log = structlog.get_logger(__name__)

__all__ = ["LeadershipLost", "Manager", "Policy", "Runnable", "RunnableFailed"]


class Manager:
    """Runs a set of controllers (and the informers they watch) in one process."""

    def __init__(
        self,
        kube: KubeClient,
        *,
        leader_election: LeaderElectionConfig | None = None,
        probe_address: str = "0.0.0.0:8081",
        metrics_address: str = "0.0.0.0:8080",
        shutdown_timeout: float = 30.0,
        fence: Fence | None = None,
    ) -> None:
        """``fence`` guards the side effects of the controllers (made from ``leader_election`` if None)."""
        self.kube = kube
        self.shutdown_timeout = shutdown_timeout
        self.controllers: list[Controller] = []
        self.informers: list[Informer] = []
        self.runnables: list[Runnable] = []
        self.leader_runnables: list[Runnable] = []
        self.early_leader_runnables: list[Runnable] = []  # started before the caches have synced
        self.supervisor = Supervisor()
        self._serving = asyncio.Event()
        self.shutdown_hooks: list[Callable[[], Coroutine[Any, Any, None]]] = []
        if fence is None:
            fence = leader_election.fence() if leader_election else open_fence()
        self.fence = fence
        self.elector = LeaderElector(kube, leader_election, fence=fence) if leader_election else None
        self._hooks_ran = False
        self.endpoints = Endpoints(probe_address, metrics_address)
        self.endpoints.health_checks["ping"] = lambda: None
        self.endpoints.health_checks["runnables"] = self.supervisor.not_healthy
        self.endpoints.ready_checks["runnables"] = self.supervisor.not_ready
        self.endpoints.ready_checks["informers-synced"] = self._informers_synced
        self.endpoints.ready_checks["controllers-started"] = self._controllers_started

    def add_controller(self, controller: Controller) -> None:
        """Run ``controller`` (on the leader) and the informers it watches (everywhere)."""
        self.controllers.append(controller)
        if self.elector is not None and controller.gate is None:
            controller.gate = self._still_leading
        for informer in controller.informers:
            self.add_informer(informer)

    def add_leader_task(
        self, name: str, run: Callable[[], Coroutine[Any, Any, None]], *, before_sync: bool = False
    ) -> None:
        """Run ``run()`` on the leader alongside the controllers (e.g. a periodic resync).

        It may return when its work is done; if it raises, it is restarted with backoff. ``before_sync``:
        start it as soon as this replica leads, while the caches may still be listing (it waits for
        those it reads itself); otherwise it starts with the controllers, once every cache has synced.
        """
        runnable = Runnable(name, run, Policy.RESTART, finite=True)
        if before_sync:
            self.early_leader_runnables.append(runnable)
        else:
            self.add_runnable(runnable, leader_only=True)

    def add_runnable(self, runnable: Runnable, *, leader_only: bool = False) -> None:
        """Supervise ``runnable`` on every replica (e.g. the event recorder), or only on the leader."""
        (self.leader_runnables if leader_only else self.runnables).append(runnable)

    def on_shutdown(self, hook: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Await ``hook()`` once the controllers have stopped, before the lease is released (e.g. to flush
        pending Events: ``manager.fence.is_open()`` tells whether it still may, or must drop them)."""
        self.shutdown_hooks.append(hook)

    def add_informer(self, informer: Informer) -> None:
        """Keep ``informer``'s cache current (for example, one that reconcilers only read)."""
        if informer not in self.informers:
            self.informers.append(informer)

    @property
    def is_leader(self) -> bool:
        """Whether this replica runs the controllers (always, without leader election)."""
        return self.elector is None or self.elector.is_leader

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Run until ``stop`` is set (or SIGTERM/SIGINT when no event is given), then shut down.

        Raises what stopped the manager instead: ``LeadershipLost``, or the failure of an EXIT runnable.
        """
        stop = stop or _signal_event()
        everywhere: list[asyncio.Task[None]] = []
        server: asyncio.Task[None] | None = None
        leading: asyncio.Task[None] | None = None
        try:
            server = self._spawn(Runnable("http server", self._serve, Policy.EXIT))
            await self._until(stop, [server], self._serving.wait())
            everywhere += [
                self._spawn(Runnable(name, i.run, ready=_synced_check(i)))
                for name, i in zip(_informer_names(self.informers), self.informers, strict=True)
            ]
            everywhere += [self._spawn(runnable) for runnable in self.runnables]
            # Elected while the caches list; the controllers wait for them (_run_controllers).
            name = "leader election" if self.elector is not None else "controllers"
            leading = self._spawn(Runnable(name, self._lead, Policy.EXIT))
            watched = [server, *everywhere, leading]
            with gc_policy.paused_then_frozen():  # a collection would scan all that is listed so far
                synced = await self._until(stop, watched, _all_synced(self.informers))
            if synced:
                log.info("caches synced", informers=len(self.informers))
                await self._until(stop, watched, None)
        finally:
            log.info("shutting down")
            self.supervisor.stopping()
            await _cancel(leading)
            await self._run_shutdown_hooks()
            for task in everywhere:
                task.cancel()
            await asyncio.gather(*everywhere, return_exceptions=True)
            await _cancel(server)
            gc_policy.unfrozen()
            log.info("shut down")

    def _spawn(self, runnable: Runnable) -> asyncio.Task[None]:
        """A task that runs ``runnable`` under the supervisor (whoever spawns it awaits it)."""
        return asyncio.create_task(self.supervisor.supervise(runnable), name=runnable.name)

    async def _until(
        self, stop: asyncio.Event, watched: Sequence[asyncio.Task[None]], goal: Awaitable[Any] | None
    ) -> bool:
        """Wait for ``goal`` (True) or ``stop`` (False); raise as soon as a watched runnable's task fails."""
        waiters: set[asyncio.Future[Any]] = {asyncio.ensure_future(stop.wait())}
        reached = asyncio.ensure_future(goal) if goal is not None else None
        if reached is not None:
            waiters.add(reached)
        try:
            while True:
                running = {task for task in watched if not task.done()}
                await asyncio.wait(running | waiters, return_when=asyncio.FIRST_COMPLETED)
                for task in watched:
                    if task.done() and not task.cancelled() and task.exception() is not None:
                        task.result()  # an EXIT runnable failed: stop the manager with its error
                if reached is not None and reached.done():
                    return True
                if stop.is_set():
                    return False
        finally:
            for waiter in waiters:
                waiter.cancel()
            await asyncio.gather(*waiters, return_exceptions=True)

    async def _serve(self) -> None:
        """The HTTP server as a runnable: bind (a failure stops the manager), serve until cancelled."""
        try:
            await self.endpoints.start()
            self._serving.set()
            await asyncio.Event().wait()
        finally:
            await self.endpoints.stop()

    async def _lead(self) -> None:
        if self.elector is None:
            await self._run_controllers()
        else:
            await self.elector.run(self._run_controllers)

    async def _run_controllers(self) -> None:
        """Lead: the early leader tasks at once; the controllers and the other leader tasks once every cache
        has synced (a controller never starts on a cache still listing)."""
        tasks = [self._spawn(runnable) for runnable in self.early_leader_runnables]
        try:
            if self.early_leader_runnables:
                log.info("leading: early leader tasks started", tasks=len(tasks))
            await _all_synced(self.informers)
            runnables = [
                Runnable(f"controller {c.name}", functools.partial(c.run, self.shutdown_timeout), Policy.EXIT)
                for c in self.controllers
            ]
            tasks += [self._spawn(runnable) for runnable in [*runnables, *self.leader_runnables]]
            # wait(), not gather(): cancellation must reach the controllers only after abort() was decided.
            if tasks:
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
                for task in done:
                    task.result()  # an EXIT runnable (a controller) that failed
            await asyncio.Event().wait()  # every runnable ended normally: lead on until stopped
        finally:
            if not self.is_leader or not self.fence.is_open():  # lost: stop now, drain nothing
                for controller in self.controllers:
                    controller.abort()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._run_shutdown_hooks()  # while the lease is still held, if it is

    async def _run_shutdown_hooks(self) -> None:
        if self._hooks_ran:
            return
        self._hooks_ran = True
        for hook in self.shutdown_hooks:
            await hook()

    def _still_leading(self) -> bool:
        return self.fence.is_open() and (self.elector is None or self.elector.holds_valid_lease())

    def _informers_synced(self) -> str | None:
        waiting = [i.name for i in self.informers if not i.has_synced]
        return f"waiting for {', '.join(waiting)}" if waiting else None

    def _controllers_started(self) -> str | None:
        if not self.is_leader:
            return None  # a standby is ready once its caches are warm
        waiting = [c.name for c in self.controllers if not c.started]
        return f"waiting for {', '.join(waiting)}" if waiting else None


async def _all_synced(informers: Sequence[Informer]) -> None:
    await asyncio.gather(*(i.wait_for_sync() for i in informers))


def _informer_names(informers: Sequence[Informer]) -> list[str]:
    """``informer <resource>``, numbered from the second one of a resource on (``informer secrets #2``)."""
    names: list[str] = []
    for informer in informers:
        name = f"informer {informer.name}"
        seen = sum(1 for other in names if other == name or other.startswith(f"{name} #"))
        names.append(f"{name} #{seen + 1}" if seen else name)
    return names


def _synced_check(informer: Informer) -> Callable[[], bool]:
    return lambda: informer.has_synced


async def _cancel(task: asyncio.Task[None] | None) -> None:
    """Cancel ``task`` and wait for it; what it raised meanwhile was logged by the supervisor."""
    if task is None:
        return
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def _signal_event() -> asyncio.Event:
    event = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, event.set)
    return event
