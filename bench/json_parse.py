"""The parse of one LIST page of DatabaseUsers: the standard library's ``json.loads`` against orjson's.

``python -m bench.json_parse [--n 500] [--repeat 40] [--list N] [--page FILE] [--save FILE]`` starts
a local API server (``DBUSER_OPERATOR_TESTBIN``), creates ``--n`` DatabaseUsers as the fleet lays them
out (one in five with a connection Secret, one in ten with a role), gives each the status a settled
operator writes (through ``/status``, as another field manager: so ``managedFields`` holds both
entries, as in a real cluster), reads one LIST page of them as the informers do (``limit`` = ``--n``),
and times both parsers over its bytes: CPU seconds per page, the best and the median of ``--repeat``.
``--list N`` also times the operator's own listing (``KubeClient.list_all``, pages of 500) of N such
users with each parser in turn, three times. ``--page FILE`` times a page saved before (``--save``)
instead of starting a server. Both parsers must give equal objects, or it fails. Benchmark code, not a
product path.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from kubernetes_asyncio import client

from bench.common import TARGET, MySQLAddress
from bench.fleet import Fleet, parallel
from dbuser_operator import __version__
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import Binaries, connect_cluster, install_crds
from dbuser_operator.runtime import client as runtime_client
from dbuser_operator.runtime.client import KubeClient, PatchType, decode
from dbuser_operator.runtime.resources import Resource

REPO = Path(__file__).resolve().parent.parent
NAMESPACES = Resource("", "v1", "namespaces", "Namespace")


def status(obj: dict[str, Any], index: int) -> dict[str, Any]:
    """The status a settled operator leaves on the fleet's user ``obj``."""
    user, now = obj["spec"]["user"], "2026-11-29T07:43:00Z"
    conditions = [
        {"type": "Progressing", "status": "False", "reason": "Settled", "message": "no work pending"},
        {
            "type": "Ready",
            "status": "True",
            "reason": "AccountReady",
            "message": f"account '{user}'@'%' matches",
        },
    ]
    result: dict[str, Any] = {
        "conditions": [c | {"observedGeneration": 1, "lastTransitionTime": now} for c in conditions],
        "observedGeneration": 1,
        "operatorVersion": __version__,
        "user": user,
        "host": "%",
        "hosts": ["%"],
        "privileges": ["SELECT ON `bench`.*"],
        "appliedSecret": {
            "name": obj["spec"]["password"]["name"],
            "uid": f"6806bfd6-bb80-4803-916b-{index:012d}",
            "resourceVersion": str(1000 + index),
        },
    }
    if "connectionSecret" in obj["spec"]:
        result |= {"connectionSecret": obj["spec"]["connectionSecret"]["name"], "credentialVersion": 1}
    return result


async def seed(kube: KubeClient, n: int) -> None:
    """``n`` fleet users with their settled status, 32 at a time."""
    # Ten servers, as the fleet bench's (not started: only the users' layout is taken from them).
    servers = tuple(MySQLAddress("127.0.0.1", 3306 + k, "root", "", f"s{k}") for k in range(10))
    fleet = Fleet(run="f82fe0", servers=servers, size=n)
    for namespace in sorted({fleet.namespace_of(i) for i in range(n)}):
        await kube.create(NAMESPACES, {"metadata": {"name": namespace}})

    async def one(index: int) -> None:
        namespace = fleet.namespace_of(index)
        obj = await kube.create(DATABASE_USERS, fleet.database_user(index), namespace)
        await kube.patch(
            DATABASE_USERS,
            obj["metadata"]["name"],
            {"status": status(obj, index)},
            PatchType.MERGE,
            namespace=namespace,
            subresource="status",
            field_manager="dbuser-operator",
        )

    await parallel(n, one, 32)


async def page_of(api: client.ApiClient, n: int) -> bytes:
    """The first LIST page of ``n`` users, as the API server sends it."""
    response: aiohttp.ClientResponse = await api.call_api(
        DATABASE_USERS.path(None),
        "GET",
        query_params=[("limit", str(n)), ("labelSelector", f"dbuser-operator.dev/target={TARGET}")],
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
    )
    async with response:
        return await response.read()


async def listings(kube: KubeClient, rounds: int) -> dict[str, list[tuple[float, float]]]:
    """The operator's listing (``KubeClient.list_all``, pages of 500) of every user, ``rounds`` times with
    each parser in turn: (wall, CPU) seconds of each."""
    parsers: dict[str, Callable[[bytes], Any]] = {"json.loads": json.loads, "orjson.loads": orjson.loads}
    found: dict[str, list[tuple[float, float]]] = {name: [] for name in parsers}
    try:
        for _ in range(rounds):
            for name, parse in parsers.items():
                vars(runtime_client)["decode"] = parse  # the client's parse of a page
                wall, cpu = time.monotonic(), time.process_time()
                await kube.list_all(DATABASE_USERS)
                found[name].append((time.monotonic() - wall, time.process_time() - cpu))
    finally:
        vars(runtime_client)["decode"] = decode
    return found


async def capture(n: int, workdir: Path, list_n: int) -> tuple[bytes, dict[str, list[tuple[float, float]]]]:
    """One LIST page of ``n`` fleet users; with ``list_n``, the listings of that many."""
    testbin = os.environ.get("DBUSER_OPERATOR_TESTBIN")
    cluster = connect_cluster(Binaries.from_environment(*([Path(testbin)] if testbin else [])), workdir)
    try:
        async with cluster.api_client() as api:
            await install_crds(api, REPO / "crds")
            kube = KubeClient(api)
            await seed(kube, max(n, list_n))
            page = await page_of(api, n)
            return page, (await listings(kube, 3) if list_n else {})
    finally:
        if cluster.control_plane is not None:
            cluster.control_plane.stop()


def timed(parse: Callable[[bytes], Any], page: bytes, repeat: int) -> list[float]:
    """CPU seconds of each of ``repeat`` parses of ``page``."""
    seconds = []
    for _ in range(repeat):
        start = time.process_time()
        parse(page)
        seconds.append(time.process_time() - start)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=40)
    parser.add_argument("--page", type=Path, help="time this saved page instead of starting a server")
    parser.add_argument("--save", type=Path, help="save the page read")
    parser.add_argument("--list", type=int, default=0, help="also time the listing of this many users")
    arguments = parser.parse_args()
    found: dict[str, list[tuple[float, float]]] = {}
    if arguments.page is not None:
        page = arguments.page.read_bytes()
    else:
        with tempfile.TemporaryDirectory(prefix="bench-json-") as workdir:
            page, found = asyncio.run(capture(arguments.n, Path(workdir), arguments.list))
    if arguments.save is not None:
        arguments.save.write_bytes(page)
    items = json.loads(page)["items"]
    if orjson.loads(page) != json.loads(page):
        raise SystemExit("orjson and json parsed the page differently")
    managed = sum(len(json.dumps(item["metadata"].get("managedFields"))) for item in items)
    print(f"page: {len(items)} DatabaseUsers, {len(page)} bytes ({managed} of them managedFields)")
    for name, parse in (("json.loads", json.loads), ("orjson.loads", orjson.loads)):
        seconds = timed(parse, page, arguments.repeat)
        best, median = min(seconds) * 1000, statistics.median(seconds) * 1000
        print(f"{name:>13}: best {best:.2f} ms, median {median:.2f} ms per page ({arguments.repeat} parses)")
    for name, runs in found.items():
        walls = ", ".join(f"{wall:.2f}" for wall, _ in runs)
        cpus = ", ".join(f"{cpu:.2f}" for _, cpu in runs)
        print(f"list_all of {arguments.list} users with {name}: wall {walls} s; CPU {cpus} s")


if __name__ == "__main__":
    main()
