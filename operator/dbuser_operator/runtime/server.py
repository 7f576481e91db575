"""The HTTP endpoints of a manager: ``/healthz`` and ``/readyz`` (probes), ``/metrics`` (Prometheus)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from dbuser_operator.runtime.metrics import REGISTRY

log = structlog.get_logger(__name__)

Check = Callable[[], str | None]  # None when healthy, else the reason


def _probe(checks: dict[str, Check]) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handle(request: web.Request) -> web.StreamResponse:
        failures = {name: reason for name, check in checks.items() if (reason := _run(check)) is not None}
        if failures:
            text = "".join(f"[-]{name} failed: {reason}\n" for name, reason in failures.items())
            return web.Response(status=503, text=text)
        verbose = "verbose" in request.query
        text = "".join(f"[+]{name} ok\n" for name in checks) if verbose else "ok"
        return web.Response(text=text)

    return handle


def _run(check: Check) -> str | None:
    """A check's verdict; one that raises fails, naming the exception (the probe still answers)."""
    try:
        return check()
    except Exception as error:
        log.exception("probe check raised", check=getattr(check, "__qualname__", repr(check)))
        return f"the check raised {type(error).__name__}"


async def _metrics(_: web.Request) -> web.Response:
    return web.Response(body=generate_latest(REGISTRY), headers={"Content-Type": CONTENT_TYPE_LATEST})


class Endpoints:
    """Serves the probes and the metrics, each on its own ``host:port`` (port 0: any free port)."""

    def __init__(self, probe_address: str, metrics_address: str) -> None:
        self.probe_address = probe_address
        self.metrics_address = metrics_address
        self.health_checks: dict[str, Check] = {}
        self.ready_checks: dict[str, Check] = {}
        self._runners: list[web.AppRunner] = []
        self.ports: dict[str, int] = {}

    async def start(self) -> None:
        """Start listening."""
        probes = web.Application()
        probes.router.add_get("/healthz", _probe(self.health_checks))
        probes.router.add_get("/readyz", _probe(self.ready_checks))
        metrics = web.Application()
        metrics.router.add_get("/metrics", _metrics)
        for kind, app, address in (
            ("probes", probes, self.probe_address),
            ("metrics", metrics, self.metrics_address),
        ):
            host, _, port = address.rpartition(":")
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, host or "0.0.0.0", int(port))  # noqa: S104 - probes serve the kubelet
            await site.start()
            self._runners.append(runner)
            server = site._server  # the bound port, when port 0 asked for any
            sockets = getattr(server, "sockets", None) or []
            self.ports[kind] = sockets[0].getsockname()[1] if sockets else int(port)

    async def stop(self) -> None:
        """Stop listening."""
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()
