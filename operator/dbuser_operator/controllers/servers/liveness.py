"""Whether each server answers, known within seconds: a probe per server on its own connection (never the
pool's), every ``period`` seconds while it answers and every :data:`UNHEALTHY_PERIOD` while it does not.

A server found unreachable (no login, no answer within the probe's bound, refused) by
:data:`CONFIRMATIONS` probes in a row (the second at once: one late answer may be this process's own stall,
a busy event loop, not the server's) is marked so on its Database: the calls in flight on it fail at once
and later ones fail without waiting, naming the cause. A change either way is reported to
``requeue(key, with_dependents)``: the server controller then writes the server's status, and, when the
server is back (``with_dependents``), the resources on it are requeued at once rather than at their next
backoff.

A server somebody else found unreachable (its health check, or any statement through its pool:
:meth:`~.handle.ServerHandle.doubt`) is probed at once rather than at the next period, and what the probe
finds is reported even if, for the probe, nothing changed: an outage shorter than a period may end before
the probe looks, and the server's status, written by that health check, would say Ready=False (holding the
resources on it) until the next health check. A statement's failure so confirms an outage within a second
or two, and the resources it failed are requeued when the server answers again, not at their backoff.
Runs on the leader (the only replica that talks to the servers).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import structlog
from prometheus_client import Gauge

from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.controllers.servers.registry import ServerRegistry
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.runtime.metrics import REGISTRY

log = structlog.get_logger(__name__)

UNHEALTHY_PERIOD = 1.0  # seconds between probes of a server that does not answer
STOP_TIMEOUT = 5.0  # seconds a stopped server's probe task gets to end
PROBE_TIMEOUT = 2.0  # seconds a logged-in probe waits for SELECT 1 (its login has the connect timeout)
CONFIRMATIONS = 2  # failed probes in a row (the second at once) that make an answering server unreachable
DEFAULT_SERVER_LABEL = "default"  # the ``server`` label of the settings' server

SERVER_UP = Gauge(
    "dbuser_operator_mysql_server_up",
    "Whether the server answered its last health check or probe (1) or not (0)",
    ["server"],
    registry=REGISTRY,
)

Requeue = Callable[[str, bool], None]
"""``requeue(key, with_dependents)``: look at the server resource of ``key`` again, and (``with_dependents``)
at every resource on it."""


def server_label(key: str) -> str:
    """The ``server`` label of a server key (``default`` for the settings' server)."""
    return key or DEFAULT_SERVER_LABEL


@dataclass
class _Watch:
    handle: ServerHandle
    task: asyncio.Task[None]


class Liveness:
    """Probes every server the registry holds, each in its own task, until cancelled."""

    def __init__(
        self,
        registry: ServerRegistry,
        requeue: Requeue,
        *,
        period: float,
        timeout: float = PROBE_TIMEOUT,
        unhealthy_period: float = UNHEALTHY_PERIOD,
        rescan: float = 0.5,
    ) -> None:
        self.registry, self.requeue = registry, requeue
        self.period, self.timeout, self.unhealthy_period = period, timeout, unhealthy_period
        self.rescan = rescan  # seconds between looks for servers added to or gone from the registry
        self._watches: dict[str, _Watch] = {}

    async def run(self) -> None:
        """Follow the registry's servers: a probe task for each new handle, none for one gone."""
        try:
            while True:
                handles = self.registry.handles()
                for key, watch in list(self._watches.items()):
                    if handles.get(key) is not watch.handle:  # gone, or rebuilt from a new spec
                        await self._stop(key)
                for key, handle in handles.items():
                    if key not in self._watches:
                        task = asyncio.create_task(self._follow(key, handle), name=f"liveness {key!r}")
                        self._watches[key] = _Watch(handle, task)
                await asyncio.sleep(self.rescan)
        finally:
            for key in list(self._watches):
                await self._stop(key)

    async def _stop(self, key: str) -> None:
        watch = self._watches.pop(key)
        watch.task.cancel()
        # Waited for without awaiting it: its CancelledError is not ours (suppressing it would also
        # swallow a cancellation of this task), and a probe stuck past its cancellation holds no one.
        await asyncio.wait([watch.task], timeout=STOP_TIMEOUT)
        watch.handle.probe.close()

    async def _follow(self, key: str, handle: ServerHandle) -> None:
        up: bool | None = None
        failures = 0  # in a row
        task = asyncio.current_task()
        while True:
            doubted = handle.doubted.is_set()
            handle.doubted.clear()
            try:
                await handle.probe.check(self.timeout)
            except MySQLError as error:
                failures += 1
                if up is not False and failures < CONFIRMATIONS:  # once may be this process's own stall
                    log.debug(
                        "server probe failed; probing again", server=server_label(key), error=str(error)
                    )
                    continue
                cause = str(error)
                handle.db.mark_unreachable(cause)  # the latest cause, for the calls that fail meanwhile
                if up is not False:
                    log.warning("server unreachable", server=server_label(key), error=cause)
                    self._changed(key, up=False)
                up = False
            except Exception as refused:  # the fence: not (or no longer) the leader; nothing was sent
                log.debug("server probe skipped", server=server_label(key), reason=str(refused))
            else:
                failures = 0
                if up is not True or doubted:
                    if up is False:
                        log.info("server reachable again", server=server_label(key))
                        handle.returned()
                    elif doubted:
                        log.info("doubted server answers", server=server_label(key))
                    handle.db.mark_reachable()
                    self._changed(key, up=True, recovered=up is False, doubted=doubted)
                up = True
            if task is not None and task.cancelling():  # swallowed by aiomysql's connect (Python 3.11)
                raise asyncio.CancelledError
            await self._rest(handle, self.period if up else self.unhealthy_period)

    async def _rest(self, handle: ServerHandle, seconds: float) -> None:
        """Wait ``seconds`` before the next probe, less if the server is doubted meanwhile; at least
        ``unhealthy_period``, so that doubts that keep coming are answered once a period at most."""
        await asyncio.sleep(min(seconds, self.unhealthy_period))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds - self.unhealthy_period):
                await handle.doubted.wait()

    def _changed(self, key: str, *, up: bool, recovered: bool = False, doubted: bool = False) -> None:
        SERVER_UP.labels(server_label(key)).set(1 if up else 0)
        if up and not (recovered or doubted):
            return  # found up at the first probe: nothing waited for it
        try:
            # A return requeues the resources on the server; an answer to a doubt (the probe saw no outage,
            # a health check did) only the server resource: its Ready=True requeues the resources it held.
            self.requeue(key, up and recovered)
        except Exception:  # a requeue never stops the probes
            log.exception("reporting a server's liveness failed", server=server_label(key))
