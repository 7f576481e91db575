"""The API client's CPU per request: the operator's kinds of write and a read, against a real API server.

``python -m bench.client_requests [--n 500] [--rounds 6]`` (``DBUSER_OPERATOR_TESTBIN`` set) starts a local
API server and sends, through ``KubeClient`` fenced by an acquired ``Fence`` as the operator's is, 16 at a
time: ``--n`` merge PATCHes (a status-sized change of a ConfigMap), ``--n`` Event POSTs (the recorder's body)
and ``--n`` GETs, ``--rounds`` times. It prints the process's user and system CPU per request (from
``getrusage``; the API server runs in its own process), the median and the best round of each kind.
``--against FILE`` also loads another version of ``runtime/client.py`` (e.g. ``git show main:operator/
dbuser_operator/runtime/client.py > /tmp/client.py``) and sends every round through both, each on the
session its own ``api_client`` makes (its request class, its trace hooks), taking turns in
the same process: on a busy machine two separate runs differ by more than the clients do. Benchmark code,
not a product path.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from dbuser_operator.envtest import Binaries, connect_cluster
from dbuser_operator.runtime import metrics
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.fence import Fence
from dbuser_operator.runtime.resources import EVENTS, NAMESPACES, Resource

CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap")
NAMESPACE = "bench"
CONCURRENCY = 16
Request = Callable[[int], Awaitable[Any]]


def _status_change(index: int) -> dict[str, Any]:
    """About what a reconcile's status PATCH changes: a condition, the account, its privileges."""
    condition = {"type": "Ready", "status": "True", "reason": "AccountReady", "observedGeneration": 1}
    condition |= {"message": f"account 'u{index}'@'%' matches", "lastTransitionTime": "2026-11-29T07:43:00Z"}
    status = {
        "conditions": [condition],
        "user": f"u{index}",
        "host": "%",
        "privileges": ["SELECT ON `bench`.*"],
    }
    return {"metadata": {"annotations": {"at": str(time.monotonic_ns())}}, "data": {"status": repr(status)}}


def _event(index: int) -> dict[str, Any]:
    """An Event as the recorder creates it."""
    involved = {"apiVersion": "v1", "kind": "ConfigMap", "name": f"c{index}", "namespace": NAMESPACE}
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"c{index}.{time.monotonic_ns():x}", "namespace": NAMESPACE},
        "involvedObject": involved | {"uid": "6806bfd6-bb80-4803-916b-000000000000", "resourceVersion": "1"},
        "type": "Normal",
        "reason": "AccountCreated",
        "message": f"account 'u{index}'@'%' created",
        "source": {"component": "dbuser-operator", "host": "bench"},
        "reportingComponent": "dbuser-operator",
        "reportingInstance": "bench",
        "firstTimestamp": "2026-11-29T16:00:00Z",
        "lastTimestamp": "2026-11-29T16:00:00Z",
        "count": 1,
    }


async def _parallel(n: int, request: Request) -> None:
    slots = asyncio.Semaphore(CONCURRENCY)

    async def one(index: int) -> None:
        async with slots:
            await request(index)

    await asyncio.gather(*(one(index) for index in range(n)))


def _cpu() -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


def other_client(path: Path) -> Any:
    """Another version of ``runtime/client.py``, as a module of its own (its metrics in a registry of their
    own)."""
    spec = importlib.util.spec_from_file_location("bench_other_client", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    registry, metrics.REGISTRY = metrics.REGISTRY, CollectorRegistry()
    try:
        spec.loader.exec_module(module)
    finally:
        metrics.REGISTRY = registry
    return module


def _requests(kube: Any, patch_type: Any) -> dict[str, Request]:
    return {
        "PATCH (merge)": lambda i: kube.patch(
            CONFIG_MAPS, f"c{i}", _status_change(i), patch_type.MERGE, namespace=NAMESPACE
        ),
        "POST (Event)": lambda i: kube.create(EVENTS, _event(i), NAMESPACE),
        "GET": lambda i: kube.get(CONFIG_MAPS, f"c{i}", NAMESPACE),
    }


async def measure(
    n: int, rounds: int, workdir: Path, against: Path | None
) -> dict[str, list[tuple[float, float]]]:
    """(user, system) CPU microseconds per request of each kind (and client), one pair per round."""
    testbin = os.environ.get("DBUSER_OPERATOR_TESTBIN")
    cluster = connect_cluster(
        Binaries.from_environment(*([Path(testbin)] if testbin else [])), workdir, audit=False
    )
    try:
        async with cluster.api_client() as api, contextlib.AsyncExitStack() as stack:
            fence = Fence(3600.0)
            fence.acquired(time.monotonic(), 1)
            kube = KubeClient(api).fenced(fence.check)
            await kube.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
            await _parallel(
                n, lambda i: kube.create(CONFIG_MAPS, {"metadata": {"name": f"c{i}"}, "data": {}}, NAMESPACE)
            )
            clients = {"": _requests(kube, PatchType)}
            if against is not None:  # its own session too, as its api_client makes it
                other = other_client(against)
                other_api = await stack.enter_async_context(other.api_client(api.configuration))
                clients[f" ({against.name})"] = _requests(
                    other.KubeClient(other_api).fenced(fence.check), other.PatchType
                )
            found: dict[str, list[tuple[float, float]]] = {}
            for turn in range(rounds):
                for kind in clients[""]:
                    for label in sorted(clients, reverse=turn % 2 == 1):
                        user, system = _cpu()
                        await _parallel(n, clients[label][kind])
                        user_after, system_after = _cpu()
                        per_request = ((user_after - user) / n * 1e6, (system_after - system) / n * 1e6)
                        found.setdefault(kind + label, []).append(per_request)
            return found
    finally:
        if cluster.control_plane is not None:
            cluster.control_plane.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--against", type=Path, help="another version of runtime/client.py, in turns")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-requests-") as workdir:
        found = asyncio.run(measure(arguments.n, arguments.rounds, Path(workdir), arguments.against))
    print(
        f"CPU µs per request ({arguments.n} a round, {CONCURRENCY} at a time), median / best of",
        arguments.rounds,
    )
    for kind, rounds in found.items():
        users, systems = [user for user, _ in rounds], [system for _, system in rounds]
        print(
            f"  {kind:>30}: user {statistics.median(users):6.1f} / {min(users):6.1f}, "
            f"system {statistics.median(systems):5.1f} / {min(systems):5.1f}"
        )


if __name__ == "__main__":
    main()
