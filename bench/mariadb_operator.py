"""Side by side with mariadb-operator: time, CPU, memory, API and SQL writes, Secret rotation, same N users.

``python -m bench.mariadb_operator --binary BIN --crds DIR --n 1000`` (in ``hack/bench.sh``'s environment:
``DBUSER_OPERATOR_TESTBIN`` set). Benchmark code, not a product path. ``BIN`` is mariadb-operator's
controller built from its Go module (bench/README.md, "Side by side with mariadb-operator", says how);
``DIR`` its CRDs (``config/crd/bases`` of the module).

One local kube-apiserver + etcd and one local MariaDB (``--flavour``: 11.8 by default, or 10.11; no general
log); then, one after the other, each warmed up with one user first (dbuser-operator first in the odd rounds,
mariadb-operator in the even ones: neither always meets the servers first):

- **dbuser-operator**: the harness's live convergence (:meth:`bench.scenarios.Bench.convergence`): N
  DatabaseUsers + Secrets, SELECT on the bench database;
- **mariadb-operator**: started with its webhooks off (its default), watching one namespace, pointed at the
  server by an ``ExternalMariaDB``; then N Secrets (labelled ``k8s.mariadb.com/watch``, so that a changed
  password is applied), N ``User`` (password from the Secret) and N ``Grant`` (SELECT on the bench database)
  are created, 32 at a time, and it is timed until every User and Grant has ``Ready=True``. Its flags:
  ``--max-concurrent-reconciles`` as dbuser-operator's (16) and a client rate limit that does not throttle
  (``--kube-api-qps 1000 --kube-api-burst 2000``; its defaults, 1 and 20 qps, would measure the limiter).

Counted the same way for both (:mod:`bench.tally`): CPU seconds of the process from ``/proc`` (first create
to all Ready, and to the API server's last trailing write), API writes from the API server's
``apiserver_request_total`` (not GET/LIST/WATCH, not Leases, less the harness's own), SQL statements and
writes from the server's ``Questions`` and ``Com_*``. Peak RSS is ``VmHWM`` (at all Ready and 10 s later).
Then the rotation: ``--rotations`` Secrets (the same users for both) given a new password one at a time, the
time from the Secret's patch until the new password logs in, and the writes per rotation.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client

from bench import tally
from bench.cli import machine, say
from bench.common import (
    BENCH_DATABASE,
    MySQLAddress,
    admin_sql,
    api_client,
    can_log_in,
    is_ready,
    list_and_watch,
    sample_process,
    settle_writes,
)
from bench.peers_table import summary_line, table
from bench.profile_summary import summarise
from bench.scenarios import Bench, Options
from dbuser_operator.envtest import Binaries, LocalMySQLServer, connect_cluster, install_crds, locate
from dbuser_operator.envtest.ports import LOOPBACK, free_port
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.resources import NAMESPACES, SECRETS, Resource

REPO = Path(__file__).resolve().parent.parent
GROUP, VERSION = "k8s.mariadb.com", "v1alpha1"
EXTERNAL_MARIADBS = Resource(GROUP, VERSION, "externalmariadbs", "ExternalMariaDB")
USERS = Resource(GROUP, VERSION, "users", "User")
GRANTS = Resource(GROUP, VERSION, "grants", "Grant")
SERVER = "mariadb"
WATCH_LABEL = "k8s.mariadb.com/watch"  # a Secret mariadb-operator reconciles its Users on when it changes
CONCURRENCY = 16
IMPLEMENTATIONS = ("dbuser-operator", "mariadb-operator")  # the order of the first round
FLAVOURS = ("mariadb-11.8", "mariadb-10.11")
OPERATOR_ENV = {  # what its Deployment sets; only the names matter here (no Pods are made)
    "MARIADB_OPERATOR_NAME": "mariadb-operator",
    "MARIADB_OPERATOR_IMAGE": "docker-registry3.mariadb.com/mariadb-operator/mariadb-operator:25.10.4",
    "RELATED_IMAGE_MARIADB": "docker-registry1.mariadb.com/library/mariadb:11.8.2",
    "RELATED_IMAGE_MARIADB_NAME": "docker-registry1.mariadb.com/library/mariadb",
    "RELATED_IMAGE_MAXSCALE": "docker-registry2.mariadb.com/mariadb/maxscale:23.08.5",
    "RELATED_IMAGE_EXPORTER": "prom/mysqld-exporter:v0.15.1",
    "RELATED_IMAGE_EXPORTER_MAXSCALE": "maxscale-prometheus-exporter",
    "MARIADB_GALERA_LIB_PATH": "/usr/lib/galera/libgalera_smm.so",
    "MARIADB_DEFAULT_VERSION": "11.8",
}


class ReadyNames:
    """Names seen with ``Ready=True`` on a watch of one resource in one namespace."""

    def __init__(self) -> None:
        self.ready: set[str] = set()

    def on_event(self, kind: str, obj: dict[str, Any]) -> None:
        if kind != "DELETED" and is_ready(obj):
            self.ready.add(obj["metadata"]["name"])


def user_objects(name: str, user: str, password: str) -> list[tuple[Resource, dict[str, Any]]]:
    """One user's Secret, User and Grant (SELECT on the bench database), on the ExternalMariaDB."""
    ref = {"name": SERVER, "kind": "ExternalMariaDB"}
    selector = {"name": f"pw-{name}", "key": "password"}
    user_spec = {"name": user, "host": "%", "mariaDbRef": ref, "passwordSecretKeyRef": selector}
    grant_spec = {
        "mariaDbRef": ref,
        "privileges": ["SELECT"],
        "database": BENCH_DATABASE,
        "table": "*",
        "username": user,
        "host": "%",
    }
    return [
        (
            SECRETS,
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": f"pw-{name}", "labels": {WATCH_LABEL: ""}},
                "stringData": {"password": password},
            },
        ),
        (
            USERS,
            {"apiVersion": USERS.api_version, "kind": "User", "metadata": {"name": name}, "spec": user_spec},
        ),
        (
            GRANTS,
            {
                "apiVersion": GRANTS.api_version,
                "kind": "Grant",
                "metadata": {"name": name},
                "spec": grant_spec,
            },
        ),
    ]


class MariaDBOperator:
    """mariadb-operator run on a namespace of its own, against one server."""

    def __init__(self, api: client.ApiClient, binary: Path, kubeconfig: Path, mysql: MySQLAddress) -> None:
        self.api, self.kube = api, KubeClient(api, timeout=60)
        self.binary, self.kubeconfig, self.mysql = binary, kubeconfig, mysql
        self.users, self.grants = ReadyNames(), ReadyNames()

    async def prepare(self, namespace: str) -> None:
        """The namespace, the admin's Secret and the ``ExternalMariaDB``."""
        await self.kube.create(NAMESPACES, {"metadata": {"name": namespace}})
        admin = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "mariadb-admin"}}
        await self.kube.create(SECRETS, {**admin, "stringData": {"password": self.mysql.password}}, namespace)
        external = {
            "apiVersion": EXTERNAL_MARIADBS.api_version,
            "kind": "ExternalMariaDB",
            "metadata": {"name": SERVER},
            "spec": {
                "host": self.mysql.host,
                "port": self.mysql.port,
                "username": self.mysql.user,
                "passwordSecretKeyRef": {"name": "mariadb-admin", "key": "password"},
            },
        }
        await self.kube.create(EXTERNAL_MARIADBS, external, namespace)

    def argv(self) -> list[str]:
        return [
            str(self.binary),
            f"--metrics-addr={LOOPBACK}:{free_port()}",
            f"--health-addr={LOOPBACK}:{free_port()}",
            f"--max-concurrent-reconciles={CONCURRENCY}",
            "--kube-api-qps=1000",
            "--kube-api-burst=2000",
            "--log-level=error",
        ]

    def env(self, namespace: str, workdir: Path, version: str) -> dict[str, str]:
        token = workdir / "sa-token"
        token.write_text("unused")  # its agent client's token path: required, unused without Pods
        return {
            **os.environ,
            **OPERATOR_ENV,
            "MARIADB_DEFAULT_VERSION": version,
            "KUBECONFIG": str(self.kubeconfig),
            "MARIADB_OPERATOR_NAMESPACE": namespace,
            "MARIADB_OPERATOR_SA_PATH": str(token),
            "WATCH_NAMESPACE": namespace,
        }

    async def create(self, namespace: str, users: Sequence[tuple[str, str, str]]) -> None:
        """Each ``(name, MySQL user, password)``'s Secret, User and Grant, 32 users at a time."""
        pending = iter(users)

        async def creator() -> None:
            for name, user, password in pending:
                for resource, obj in user_objects(name, user, password):
                    await self.kube.create(resource, obj, namespace)

        await asyncio.gather(*(creator() for _ in range(32)))

    async def wait_ready(self, names: set[str], pid: int, limit: float) -> float:
        """Until every name's User and Grant is Ready (or ``limit`` seconds); the peak ``VmHWM`` meanwhile."""
        deadline, hwm = time.monotonic() + limit, 0.0
        while time.monotonic() < deadline:
            hwm = max(hwm, sample_process(pid).hwm_mib)
            if names <= self.users.ready and names <= self.grants.ready:
                break
            await asyncio.sleep(0.25)
        return hwm


async def mariadb_operator_run(
    api: client.ApiClient,
    peer: MariaDBOperator,
    *,
    n: int,
    rotations: Sequence[int],
    workdir: Path,
    limit: float,
    version: str,
) -> dict[str, Any]:
    """mariadb-operator started on an empty namespace, warmed up with one user, then N Users + Grants
    created: time, CPU, memory and writes; then the rotation of the users ``rotations``."""
    namespace = f"bench-mdbop-{n}-{secrets.token_hex(2)}"
    await peer.prepare(namespace)
    peer.users, peer.grants = ReadyNames(), ReadyNames()
    watches = [
        asyncio.create_task(list_and_watch(peer.kube, USERS, namespace, peer.users.on_event)),
        asyncio.create_task(list_and_watch(peer.kube, GRANTS, namespace, peer.grants.on_event)),
    ]
    argv = peer.argv()
    log = (workdir / f"mariadb-operator-{n}.log").open("ab")
    env = peer.env(namespace, workdir, version)
    process = await asyncio.create_subprocess_exec(*argv, stdout=log, stderr=log, env=env)
    tag = f"mo{n}{secrets.token_hex(2)}"
    try:
        await peer.create(namespace, [("warmup", f"{tag}_warm", secrets.token_urlsafe(16))])
        await peer.wait_ready({"warmup"}, process.pid, 120.0)
        if "warmup" not in peer.users.ready:
            raise RuntimeError(
                f"mariadb-operator: the warm-up User was not Ready in 120 s (log in {workdir})"
            )
        await settle_writes(api)
        users = [(f"u{i:05d}", f"{tag}_{i:05d}", secrets.token_urlsafe(16)) for i in range(n)]
        names = {name for name, _, _ in users}
        before = await tally.read(api, [peer.mysql], process.pid)
        creating = asyncio.create_task(peer.create(namespace, users))
        hwm = await peer.wait_ready(names, process.pid, limit)
        await creating
        if process.returncode is not None:
            raise RuntimeError(f"mariadb-operator exited with {process.returncode} (log in {workdir})")
        finished = time.monotonic()
        at_ready = sample_process(process.pid)
        converged = names <= peer.users.ready and names <= peer.grants.ready
        await settle_writes(api)
        counted = tally.difference(
            before, await tally.read(api, [peer.mysql], process.pid), harness_statements=1, per=n
        )
        await asyncio.sleep(10.0)
        later = sample_process(process.pid)
        logins = sum([await can_log_in(peer.mysql, user, password) for _, user, password in users[:5]])
        say(f"  mariadb-operator: rotation of {len(rotations)} Secrets")
        accounts = [(f"pw-{users[i][0]}", users[i][1]) for i in rotations]
        rotation = await tally.rotation(
            api, peer.kube, peer.mysql, process.pid, namespace=namespace, accounts=accounts
        )
        return {
            "implementation": "mariadb-operator",
            "n": n,
            "converged": converged,
            "users_ready": len(names & peer.users.ready),
            "grants_ready": len(names & peer.grants.ready),
            "seconds": finished - before.at if converged else None,
            "cpu_seconds": at_ready.cpu_seconds - before.cpu_seconds,
            "cpu_seconds_settled": counted["cpu_seconds"],
            "api_writes": counted["api_writes"],
            "api_writes_per_user": counted["api_writes_per"],
            "apiserver_writes_by_resource": counted["apiserver_writes_by_resource"],
            "sql": counted["sql"],
            "sql_statements_per_user": counted["sql_statements_per"],
            "sql_writes_per_user": counted["sql_writes_per"],
            "peak_rss_mib": max(hwm, at_ready.hwm_mib),
            "peak_rss_10s_later_mib": later.hwm_mib,
            "rss_10s_later_mib": later.rss_mib,
            "logins_checked": 5,
            "logins_ok": logins,
            "rotation": rotation,
            "argv": [Path(argv[0]).name, *argv[1:]],
        }
    finally:
        for task in watches:
            task.cancel()
        if process.returncode is None:
            process.terminate()
            await process.wait()
        log.close()
        await Bench.drop_accounts(peer.mysql, tag)  # the next run meets the server as this one did


async def dbuser_operator_run(
    api: client.ApiClient, bench: Bench, *, n: int, rotations: Sequence[int]
) -> dict[str, Any]:
    """dbuser-operator's live convergence of N DatabaseUsers, then the rotation of the users ``rotations``."""
    row, run = await bench.convergence("operator", n)
    try:
        await asyncio.sleep(10.0)
        row["peak_rss_10s_later_mib"] = run.implementation.sample().hwm_mib
        population = run.population
        accounts = [(f"pw-{population.name(i)}", population.user(i)) for i in rotations]
        say(f"  dbuser-operator: rotation of {len(accounts)} Secrets")
        row["rotation"] = await tally.rotation(
            api,
            bench.kube,
            bench.mysql,
            run.implementation.pid,
            namespace=population.namespace,
            accounts=accounts,
        )
    finally:
        await run.close(bench)
    return {**row, "implementation": "dbuser-operator"}


async def amain(
    arguments: argparse.Namespace, kubeconfig: Path, mysql: MySQLAddress, workdir: Path
) -> dict[str, Any]:
    results: dict[str, Any] = {
        "command": "python -m bench.mariadb_operator " + " ".join(arguments.argv),
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "loadavg_at_start": os.getloadavg(),
        "runs": [],
    }
    async with await api_client(kubeconfig) as api:
        await install_crds(api, REPO / "crds", arguments.crds)
        await admin_sql(mysql, f"CREATE DATABASE IF NOT EXISTS `{BENCH_DATABASE}`")
        results["machine"]["mysql_version"] = (await admin_sql(mysql, "SELECT VERSION()"))[0][0]
        options = Options(
            sizes=[arguments.n],
            scenarios={"convergence"},
            idle_seconds=0,
            peer=False,
            peer_max_n=0,
            steady_n=None,
            coldstart_n=None,
            rotation_samples=0,
            concurrency=CONCURRENCY,
            create_concurrency=32,
            resync_period=300,
            time_limit=arguments.time_limit,
            profile_dir=arguments.profile,
        )
        bench = Bench(api=api, kubeconfig=kubeconfig, mysql=mysql, workdir=workdir, options=options, say=say)
        await bench.prepare()
        try:
            peer = MariaDBOperator(api, arguments.binary, kubeconfig, mysql)
            version = arguments.flavour.removeprefix("mariadb-")
            # the same users rotated in both, every round
            chosen = min(arguments.rotations, arguments.n)
            rotations = random.Random(20261129).sample(range(arguments.n), chosen)  # noqa: S311

            async def run(implementation: str) -> dict[str, Any]:
                say(f"{implementation} N={arguments.n}")
                if implementation == "dbuser-operator":
                    return await dbuser_operator_run(api, bench, n=arguments.n, rotations=rotations)
                return await mariadb_operator_run(
                    api,
                    peer,
                    n=arguments.n,
                    rotations=rotations,
                    workdir=workdir,
                    limit=arguments.time_limit,
                    version=version,
                )

            for round_ in range(arguments.rounds):
                if round_:
                    # new namespaces and accounts: the last ones may linger
                    bench.run_id = secrets.token_hex(2)
                order = round_order(round_, arguments.implementations)
                for implementation in order:
                    row = await run(implementation)
                    results["runs"].append({**row, "round": round_ + 1, "first": order[0]})
                    say(f"  {summary_line(row)}")
        finally:
            bench.close()
    results["table"] = table(results["runs"])
    return results


def round_order(round_: int, implementations: set[str]) -> list[str]:
    """Who runs first in round ``round_`` (from 0): dbuser-operator in the even rounds, mariadb-operator in
    the odd ones, so that neither always meets the servers first (as ``--pairs`` alternates the floor)."""
    order = [name for name in IMPLEMENTATIONS if name in implementations]
    return order if round_ % 2 == 0 else order[::-1]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mariadb_operator", description=__doc__)
    parser.add_argument("--binary", type=Path, required=True, help="mariadb-operator's controller binary")
    parser.add_argument("--crds", type=Path, required=True, help="its CRDs (config/crd/bases)")
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--rotations", type=int, default=100, help="Secrets rotated, one at a time (100)")
    parser.add_argument("--flavour", choices=FLAVOURS, default=FLAVOURS[0], help="the MariaDB server")
    parser.add_argument("--time-limit", type=float, default=600.0)
    parser.add_argument("--implementations", default=",".join(IMPLEMENTATIONS), help="which, comma-separated")
    parser.add_argument(
        "--profile",
        type=Path,
        help="a folder: py-spy samples of dbuser-operator there (bench.profile_summary)",
    )
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "mariadb-operator.json")
    arguments = parser.parse_args(argv)
    arguments.argv = list(argv) if argv is not None else sys.argv[1:]
    arguments.implementations = set(arguments.implementations.split(","))
    workdir = Path(tempfile.mkdtemp(prefix="dbuser-operator-mdbop-"))
    testbin = os.environ.get("DBUSER_OPERATOR_TESTBIN")
    cluster = connect_cluster(
        Binaries.from_environment(*([Path(testbin)] if testbin else [])), workdir / "kube", audit=False
    )
    server = LocalMySQLServer(workdir / "mysql", locate(arguments.flavour), general_log=False)
    try:
        server.start()
        admin = server.admin
        mysql = MySQLAddress(admin.host, admin.port, admin.user, admin.password)
        results = asyncio.run(amain(arguments, cluster.kubeconfig, mysql, workdir))
    finally:
        server.stop()
        if cluster.control_plane is not None:
            cluster.control_plane.stop()
    arguments.out.write_text(json.dumps(results, indent=1) + "\n")
    print(results["table"])
    for profile in sorted(arguments.profile.glob("*.txt")) if arguments.profile else []:
        print(f"\n{profile.name}\n{summarise(profile.read_text())}")
    say(f"wrote {arguments.out}; logs in {workdir}")
    shutil.rmtree(workdir / "mysql", ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
