"""The manager: runs informers and controllers, serves probes and metrics, elects a leader, shuts down.

Like controller-runtime's manager: every replica keeps its caches warm; only the leader runs the
controllers. ``/readyz`` passes once the caches are synced and, on the leader, the controllers run.
Losing the lease — a failed renewal, or the :class:`~.fence.Fence` found stale by a side effect or
revoked because the data layer saw a newer leader — stops all reconciling at once (in-flight reconciles
are cancelled, not drained; the shutdown hooks are told the fence is closed, so unsent Events are dropped)
and ``run`` raises :class:`LeadershipLost` (the process should exit and let Kubernetes restart it).
SIGTERM (or ``stop``) shuts down gracefully: in-flight reconciles finish within ``shutdown_timeout``, the
shutdown hooks run (pending Events are written) while the lease is still held, then the lease is
released and the caches stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import structlog

from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.controller import Controller
from dbuser_operator.runtime.fence import Fence, open_fence
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.leaderelection import LeaderElectionConfig, LeaderElector, LeadershipLost
from dbuser_operator.runtime.server import Endpoints

log = structlog.get_logger(__name__)

__all__ = ["LeadershipLost", "Manager"]


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
        self.leader_tasks: dict[str, Callable[[], Coroutine[Any, Any, None]]] = {}
        self.shutdown_hooks: list[Callable[[], Coroutine[Any, Any, None]]] = []
        if fence is None:
            fence = leader_election.fence() if leader_election else open_fence()
        self.fence = fence
        self.elector = LeaderElector(kube, leader_election, fence=fence) if leader_election else None
        self._hooks_ran = False
        self.endpoints = Endpoints(probe_address, metrics_address)
        self.endpoints.health_checks["ping"] = lambda: None
        self.endpoints.ready_checks["informers-synced"] = self._informers_synced
        self.endpoints.ready_checks["controllers-started"] = self._controllers_started

    def add_controller(self, controller: Controller) -> None:
        """Run ``controller`` (on the leader) and the informers it watches (everywhere)."""
        self.controllers.append(controller)
        if self.elector is not None and controller.gate is None:
            controller.gate = self._still_leading
        for informer in controller.informers:
            self.add_informer(informer)

    def add_leader_task(self, name: str, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``run()`` on the leader alongside the controllers (e.g. a periodic resync), until stopped."""
        self.leader_tasks[name] = run

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
        """Run until ``stop`` is set (or SIGTERM/SIGINT when no event is given), then shut down."""
        stop = stop or _signal_event()
        await self.endpoints.start()
        informers = [asyncio.create_task(i.run(), name=f"informer {i.name}") for i in self.informers]
        leading: asyncio.Task[None] | None = None
        try:
            await self._wait_for_caches(stop)
            if not stop.is_set():
                leading = asyncio.create_task(self._lead(), name="leading")
                stopping = asyncio.create_task(stop.wait())
                await asyncio.wait({leading, stopping}, return_when=asyncio.FIRST_COMPLETED)
                stopping.cancel()
                if leading.done():
                    leading.result()  # LeadershipLost, or a controller's crash
        finally:
            log.info("shutting down")
            if leading is not None and not leading.done():
                leading.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await leading
            await self._run_shutdown_hooks()
            for task in informers:
                task.cancel()
            await asyncio.gather(*informers, return_exceptions=True)
            await self.endpoints.stop()
            log.info("shut down")

    async def _wait_for_caches(self, stop: asyncio.Event) -> None:
        synced = asyncio.create_task(_all_synced(self.informers))
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({synced, stopping}, return_when=asyncio.FIRST_COMPLETED)
        for task in (synced, stopping):
            task.cancel()
        if synced.done() and not synced.cancelled():
            log.info("caches synced", informers=len(self.informers))

    async def _lead(self) -> None:
        if self.elector is None:
            await self._run_controllers()
        else:
            await self.elector.run(self._run_controllers)

    async def _run_controllers(self) -> None:
        tasks = [
            asyncio.create_task(c.run(drain_timeout=self.shutdown_timeout), name=f"controller {c.name}")
            for c in self.controllers
        ]
        tasks += [asyncio.create_task(run(), name=name) for name, run in self.leader_tasks.items()]
        try:
            # wait(), not gather(): cancellation must reach the controllers only after abort() was decided.
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                task.result()  # a controller that crashed
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


def _signal_event() -> asyncio.Event:
    event = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, event.set)
    return event
