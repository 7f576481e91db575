"""How the informers' first lists grow with the fleet: the API server's LIST of DatabaseUsers and Secrets.

A bare control plane (etcd + kube-apiserver, as the bench starts them; no MySQL, no operator) holding the
fleet's objects as a converged fleet has them (:mod:`bench.fleet`'s layout over ten servers: every
DatabaseUser with the status a settled operator writes, through ``/status`` as another field manager, and a
finalizer; its password Secret; a fifth with a connection Secret as the operator writes it; the roles, the
server resources and their admin Secrets), then the lists an operator makes at its start, timed:

``python -m bench.list_growth serve --workdir W`` starts the control plane and keeps it up (etcd's data in
``W/etcd-data``: a second ``serve`` starts on the same data); ``seed --workdir W --n N`` creates users
through the API server, ``inject --workdir W --start S --n N`` copies them into etcd up to N
(:mod:`bench.list_growth_fill`; restart ``serve`` after it); ``measure --workdir W --variants …`` lists with
each variant in turn, ``--rounds`` times, and prints per variant (JSON lines) the wall seconds, the API
server's and etcd's CPU seconds (``/proc``), the pages and their latencies, the objects the API server's
storage layer fetched (``apiserver_storage_list_*``) and the load average. Benchmark code, not a product
path.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import time
from pathlib import Path
from resource import RUSAGE_SELF
from resource import getrusage as resource_usage
from typing import Any

import aiohttp

from bench.common import TARGET, TARGET_LABEL, apiserver_metrics, cpu_seconds, parse_metrics
from bench.list_growth_fill import fleet, inject, seed_main
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import Binaries
from dbuser_operator.envtest.kube import KubeCluster, LocalControlPlane
from dbuser_operator.runtime.client import KubeClient, decode
from dbuser_operator.runtime.gc_policy import paused_then_frozen
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import SECRETS

# --- serve -------------------------------------------------------------------------------------------------


def serve(workdir: Path) -> None:
    """Start the control plane under ``workdir``, write its pids, and keep it up until SIGTERM/SIGINT."""
    testbin = os.environ.get("DBUSER_OPERATOR_TESTBIN")
    binaries = Binaries.from_environment(*([Path(testbin)] if testbin else []))
    workdir.mkdir(parents=True, exist_ok=True)
    plane = LocalControlPlane(binaries, workdir, audit=False)
    plane.start()
    etcd, apiserver = plane.processes()
    (workdir / "pids.json").write_text(json.dumps({"etcd": etcd.pid, "apiserver": apiserver.pid}))
    print(f"up: {plane.server_url}, kubeconfig {plane.admin_kubeconfig}, pids {etcd.pid} {apiserver.pid}")
    stop = False

    def on_signal(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        while not stop:
            time.sleep(1)
    finally:
        plane.stop()


# --- measure -----------------------------------------------------------------------------------------------

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
KIND_OF = {"users": DATABASE_USERS, "secrets": SECRETS}
VARIANTS = (
    "paged-500",  # the informer before it streamed: pages of 500, resourceVersion "" (consistent)
    "paged-2000",
    "paged-5000",
    "unpaged",
    "rv0-500",  # resourceVersion "0": any version the watch cache has (limit ignored there)
    "per-namespace-500",  # one paged list per namespace, all at once (an informer given namespaces)
    "watchlist",  # watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan
    "informer-stream",  # runtime.informer.Informer, streamed; "MB" is then its peak RSS in MiB
    "informer-paged",  # the same by pages of 500
)


async def _get(kube: KubeClient, path: str, query: list[tuple[str, str]]) -> aiohttp.ClientResponse:
    """A GET whose body the caller reads (a page, or a watch's stream), within 10 minutes."""
    return await kube._send(
        "GET",
        path,
        query=query,
        headers={"Accept": "application/json"},
        data=None,
        bounds=aiohttp.ClientTimeout(total=600),
    )


async def list_pages(
    kube: KubeClient, kind: str, namespace: str | None, limit: int | None, rv: str | None
) -> tuple[int, list[float], int]:
    """One paged list: objects, each page's seconds (request to parsed), bytes."""
    resource = KIND_OF[kind]
    selector = f"{TARGET_LABEL}={TARGET}" if kind == "users" else None
    objects, pages, size, token = 0, [], 0, None
    while True:
        started = time.monotonic()
        query = [("limit", str(limit))] if limit else []
        query += [("labelSelector", selector)] if selector else []
        query += [("resourceVersion", rv)] if rv is not None and token is None else []
        query += [("continue", token)] if token else []
        response = await _get(kube, resource.path(namespace), query)
        async with response:
            body = await response.read()
        if response.status == 429:  # the watch cache (re)initialising: as a client would, again
            await asyncio.sleep(1)
            continue
        if response.status != 200:
            raise RuntimeError(f"{response.status}: {body[:300]!r}")
        page = decode(body)
        pages.append(time.monotonic() - started)
        size += len(body)
        objects += len(page.get("items") or [])
        token = page["metadata"].get("continue") or None
        if not token:
            return objects, pages, size


async def watch_list(kube: KubeClient, kind: str, namespace: str | None) -> tuple[int, list[float], int]:
    """The streaming list: every object as an ADDED event, then the initial-events-end bookmark."""
    resource = KIND_OF[kind]
    selector = f"{TARGET_LABEL}={TARGET}" if kind == "users" else None
    query = [
        ("watch", "true"),
        ("sendInitialEvents", "true"),
        ("resourceVersionMatch", "NotOlderThan"),
        ("allowWatchBookmarks", "true"),
        ("timeoutSeconds", "600"),
    ]
    query += [("labelSelector", selector)] if selector else []
    started = time.monotonic()
    response = await _get(kube, resource.path(namespace), query)
    objects, size, first = 0, 0, None
    async with response:
        if response.status != 200:
            raise RuntimeError(f"{response.status}: {(await response.read())[:300]!r}")
        while True:
            line = await response.content.readline()
            if not line:
                raise RuntimeError("the watch ended before the initial events did")
            size += len(line)
            event = decode(line)
            first = first or time.monotonic() - started
            if event["type"] == "ADDED":
                objects += 1
            elif event["type"] == "BOOKMARK":
                annotations = event["object"]["metadata"].get("annotations") or {}
                if annotations.get(INITIAL_EVENTS_END) == "true":
                    return objects, [first, time.monotonic() - started], size
            elif event["type"] == "ERROR":
                raise RuntimeError(f"watch error: {event['object']}")


async def run_informer(kube: KubeClient, kind: str, stream: bool) -> tuple[int, list[float], int]:
    """The operator's own informer (its compaction, its filtering) until synced; its peak RSS in MiB as
    the third value (run it alone in its process: the peak is the process's)."""
    resource = KIND_OF[kind]
    selector = f"{TARGET_LABEL}={TARGET}" if kind == "users" else None
    informer = Informer(kube, resource, label_selector=selector, stream_lists=stream)
    started = time.monotonic()
    task = asyncio.create_task(informer.run())
    try:
        with paused_then_frozen():  # as the manager does while the caches fill
            await informer.wait_for_sync()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    peak_mib = resource_usage(RUSAGE_SELF).ru_maxrss // 1024
    return len(informer.store), [time.monotonic() - started], peak_mib


async def run_variant(kube: KubeClient, kind: str, variant: str) -> tuple[int, list[float], int]:
    if variant.startswith("informer-"):
        return await run_informer(kube, kind, variant == "informer-stream")
    if variant == "watchlist":
        return await watch_list(kube, kind, None)
    if variant.startswith("per-namespace"):
        layout = fleet(0)
        namespaces = [*layout.all_namespaces(), layout.admin_namespace]
        results = await asyncio.gather(
            *(list_pages(kube, kind, ns, int(variant.rsplit("-", 1)[1]), None) for ns in namespaces)
        )
        return (
            sum(r[0] for r in results),
            [p for r in results for p in r[1]],
            sum(r[2] for r in results),
        )
    limit = None if variant == "unpaged" else int(variant.rsplit("-", 1)[1])
    return await list_pages(kube, kind, None, limit, "0" if variant.startswith("rv0") else None)


CACHE_METRICS = {
    "apiserver_cache_list_total",
    "apiserver_cache_list_fetched_objects_total",
    "apiserver_storage_list_total",
    "apiserver_storage_list_fetched_objects_total",
}


async def served_from(api: Any) -> dict[str, float]:
    """Lists the watch cache and etcd served so far (by metric and resource prefix)."""
    found: dict[str, float] = {}
    for name, labels, value in parse_metrics(await apiserver_metrics(api), CACHE_METRICS):
        where = labels.get("resource_prefix") or labels.get("resource") or ""
        if "secrets" in where or "databaseusers" in where:
            key = f"{name.removeprefix('apiserver_')}{{{where.rsplit('/', 1)[-1]}}}"
            found[key] = found.get(key, 0) + value
    return found


async def measure_main(workdir: Path, kinds: list[str], variants: list[str], rounds: int) -> None:
    pids = json.loads((workdir / "pids.json").read_text())
    async with KubeCluster(kubeconfig=workdir / "admin.kubeconfig").api_client() as api:
        kube = KubeClient(api, timeout=600)
        for round_ in range(rounds):
            for kind in kinds:
                for variant in variants:
                    before, cache_before = cpu_seconds(pids), await served_from(api)
                    client_cpu, wall = time.process_time(), time.monotonic()
                    objects, pages, size = await run_variant(kube, kind, variant)
                    wall, client_cpu = time.monotonic() - wall, time.process_time() - client_cpu
                    after, cache_after = cpu_seconds(pids), await served_from(api)
                    row = {
                        "round": round_,
                        "kind": kind,
                        "variant": variant,
                        "objects": objects,
                        # the bytes listed; for the informer variants, its process's peak RSS in MiB
                        ("peak_rss_mib" if variant.startswith("informer-") else "MB"): (
                            size if variant.startswith("informer-") else round(size / 1e6, 1)
                        ),
                        "wall_s": round(wall, 2),
                        "apiserver_cpu_s": round(after["apiserver"] - before["apiserver"], 2),
                        "etcd_cpu_s": round(after["etcd"] - before["etcd"], 2),
                        "client_cpu_s": round(client_cpu, 2),
                        "pages": len(pages),
                        "page_s_max": round(max(pages), 3),
                        "page_s_median": round(sorted(pages)[len(pages) // 2], 3),
                        "first_page_s": round(pages[0], 3),
                        "last_page_s": round(pages[-1], 3),
                        "load": os.getloadavg()[0],
                        "served": {
                            k: v - cache_before.get(k, 0)
                            for k, v in cache_after.items()
                            if v != cache_before.get(k, 0)
                        },
                    }
                    print(json.dumps(row), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["serve", "seed", "inject", "measure"])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--start", type=int, default=0, help="seed: the first user's index")
    parser.add_argument("--n", type=int, default=30000, help="seed: up to this many users")
    parser.add_argument("--width", type=int, default=48, help="seed: concurrent users")
    parser.add_argument("--template-range", type=int, default=1000, help="inject: users to copy")
    parser.add_argument("--kinds", default="users,secrets", help="measure: users, secrets")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="measure: " + ", ".join(VARIANTS))
    parser.add_argument("--rounds", type=int, default=2, help="measure: rounds over the variants")
    args = parser.parse_args()
    if args.command == "serve":
        serve(args.workdir)
    elif args.command == "seed":
        asyncio.run(seed_main(args.workdir, args.start, args.n, args.width))
    elif args.command == "inject":
        inject(args.workdir, args.start, args.n, args.template_range)
    else:
        asyncio.run(measure_main(args.workdir, args.kinds.split(","), args.variants.split(","), args.rounds))


if __name__ == "__main__":
    main()
