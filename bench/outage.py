"""A MySQL outage with a backlog: how long after the network returns until every pending change is applied.

    python -m bench.outage [--n 1000] [--stall 20] [--out bench/results/outage.json]

The operator (a subprocess, its defaults) reaches the server through a loopback proxy. Once it is running,
the proxy stalls (accepts connections, forwards nothing, as a cut network or a frozen server), and N
DatabaseUsers with their Secrets are created. Measured from the stall: when all N say Ready=False (naming
the server). After ``--stall`` seconds the proxy forwards again; measured from then: when all N are Ready,
and a sample of them log in with their passwords.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import secrets
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client
from tests.conftest import REPO, testbin_directory
from tests.integration.operator.support.mysql import can_log_in
from tests.support.fault_proxy import FaultProxy

from bench.common import MySQLAddress, database_user, ready_condition, secret
from bench.processes import operator
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import Binaries, MySQLServer, connect_cluster, install_crds, provide_mysql
from dbuser_operator.envtest.mysql import LocalMySQLServer
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.resources import SECRETS

SAMPLE = 20  # logins checked after convergence


async def _conditions(kube: KubeClient, namespace: str) -> list[dict[str, Any]]:
    listed = await kube.request("GET", DATABASE_USERS.path(namespace))
    return [ready_condition(obj) or {} for obj in listed["items"]]


async def _until(kube: KubeClient, namespace: str, n: int, status: str, limit: float) -> float | None:
    """Seconds until all ``n`` users have Ready=``status``; None after ``limit``."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        conditions = await _conditions(kube, namespace)
        if len(conditions) == n and all(c.get("status") == status for c in conditions):
            return time.monotonic() - start
        await asyncio.sleep(0.25)
    return None


async def one_run(n: int, stall: float, workdir: Path) -> dict[str, Any]:
    binaries = Binaries.from_environment(testbin_directory())
    cluster = connect_cluster(binaries, workdir / "kube")
    try:
        with provide_mysql(workdir / "mysql") as provided:
            mysql = provided.admin if isinstance(provided, LocalMySQLServer) else provided
            async with (
                cluster.api_client() as api,
                FaultProxy(mysql.host, mysql.port, mysql=False) as proxy,
            ):
                await install_crds(api, REPO / "crds")
                return await _measure(api, cluster.kubeconfig, mysql, proxy, n, stall, workdir)
    finally:
        if cluster.control_plane is not None:
            cluster.control_plane.stop()


async def _measure(  # noqa: PLR0917 - one run's parts
    api: client.ApiClient,
    kubeconfig: Path,
    mysql: MySQLServer,
    proxy: FaultProxy,
    n: int,
    stall: float,
    workdir: Path,
) -> dict[str, Any]:
    kube = KubeClient(api)
    namespace = f"outage-{uuid.uuid4().hex[:6]}"
    await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    via_proxy = MySQLAddress("127.0.0.1", proxy.port, mysql.user, mysql.password)
    implementation = operator(
        workdir, kubeconfig, via_proxy, namespace, concurrency=None, resync_period=0, log_name="operator"
    )
    await implementation.start()
    try:
        await implementation.wait_ready()
        passwords: dict[str, str] = {}
        proxy.cut()
        stalled = time.monotonic()
        semaphore = asyncio.Semaphore(32)

        async def create(index: int) -> None:
            name, password = f"u{index:05d}", secrets.token_urlsafe(12)
            passwords[name] = password
            async with semaphore:
                await kube.create(SECRETS, secret(name, password), namespace)
                await kube.create(DATABASE_USERS, database_user(name, name, name), namespace)

        await asyncio.gather(*(create(i) for i in range(n)))
        created = time.monotonic() - stalled
        reported = await _until(kube, namespace, n, "False", max(stall - created, 1.0) + 60)
        reported_s = None if reported is None else created + reported
        await asyncio.sleep(max(0.0, stall - (time.monotonic() - stalled)))
        await proxy.heal()
        converged = await _until(kube, namespace, n, "True", 300)
        sample = random.sample(sorted(passwords), min(SAMPLE, n))
        logins = [can_log_in(mysql, user, passwords[user]) for user in sample]
        return {
            "n": n,
            "stall_s": stall,
            "created_during_stall_s": round(created, 2),
            "all_reported_s": None if reported_s is None else round(reported_s, 2),
            "all_ready_after_return_s": None if converged is None else round(converged, 2),
            "sample_logins_ok": sum(logins),
            "sample": len(logins),
        }
    finally:
        await implementation.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.outage", description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="DatabaseUsers created during the stall")
    parser.add_argument("--stall", type=float, default=20.0, help="seconds the proxy stays silent")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "outage.json")
    arguments = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="dbuser-operator-outage-"))
    result = asyncio.run(one_run(arguments.n, arguments.stall, workdir))
    document = {
        "command": "python -m bench.outage " + " ".join(sys.argv[1:] if argv is None else argv),
        **result,
    }
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(document, indent=2) + "\n")
    print(json.dumps(document))
    ok = result["all_ready_after_return_s"] is not None and result["sample_logins_ok"] == result["sample"]
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
