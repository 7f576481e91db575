"""Side by side with mariadb-operator: peak RSS (and time) for the same N users on the same MariaDB.

``python -m bench.mariadb_operator --binary BIN --crds DIR --n 5000`` (in ``hack/bench.sh``'s environment:
``DBUSER_OPERATOR_TESTBIN`` set). Benchmark code, not a product path. ``BIN`` is mariadb-operator's
controller built from its Go module (bench/README.md, "Many servers", says how); ``DIR`` its CRDs
(``config/crd/bases`` of the module).

One local kube-apiserver + etcd and one local MariaDB 11.8 (no general log); then, one after the other:

- **dbuser-operator**: the harness's live convergence (:meth:`bench.scenarios.Bench.convergence`): N
  DatabaseUsers + Secrets, SELECT on the bench database;
- **mariadb-operator**: started with its webhooks off (its default), watching one namespace, pointed at the
  server by an ``ExternalMariaDB``; then N Secrets, N ``User`` (password from the Secret) and N ``Grant``
  (SELECT on the bench database) are created, 32 at a time, and it is timed until every User and Grant has
  ``Ready=True``. Its flags: ``--max-concurrent-reconciles`` as dbuser-operator's (16) and a client rate
  limit that does not throttle (``--kube-api-qps 1000 --kube-api-burst 2000``; its defaults, 1 and 20 qps,
  would measure the limiter).

Peak RSS is each process's ``VmHWM`` when all its objects are Ready (and once more after a few idle seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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
)
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
CONCURRENCY = 16
OPERATOR_ENV = {  # what its Deployment sets; only the names matter here (no Pods are made)
    "MARIADB_OPERATOR_NAME": "mariadb-operator",
    "MARIADB_OPERATOR_IMAGE": "docker-registry3.mariadb.com/mariadb-operator/mariadb-operator:25.10.2",
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
                "metadata": {"name": f"pw-{name}"},
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


async def mariadb_operator_run(
    kube: KubeClient,
    binary: Path,
    kubeconfig: Path,
    mysql: MySQLAddress,
    *,
    n: int,
    workdir: Path,
    limit: float,
) -> dict[str, Any]:
    """mariadb-operator started on an empty namespace, then N Users + Grants created: time and memory."""
    namespace = f"bench-mdbop-{n}-{secrets.token_hex(2)}"
    await kube.create(NAMESPACES, {"metadata": {"name": namespace}})
    admin = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "mariadb-admin"}}
    await kube.create(SECRETS, {**admin, "stringData": {"password": mysql.password}}, namespace)
    external = {
        "apiVersion": EXTERNAL_MARIADBS.api_version,
        "kind": "ExternalMariaDB",
        "metadata": {"name": SERVER},
        "spec": {
            "host": mysql.host,
            "port": mysql.port,
            "username": mysql.user,
            "passwordSecretKeyRef": {"name": "mariadb-admin", "key": "password"},
        },
    }
    await kube.create(EXTERNAL_MARIADBS, external, namespace)
    token = workdir / "sa-token"
    token.write_text("unused")  # its agent client's token path: required, unused without Pods
    env = {
        **os.environ,
        **OPERATOR_ENV,
        "KUBECONFIG": str(kubeconfig),
        "MARIADB_OPERATOR_NAMESPACE": namespace,
        "MARIADB_OPERATOR_SA_PATH": str(token),
        "WATCH_NAMESPACE": namespace,
    }
    argv = [
        str(binary),
        f"--metrics-addr={LOOPBACK}:{free_port()}",
        f"--health-addr={LOOPBACK}:{free_port()}",
        f"--max-concurrent-reconciles={CONCURRENCY}",
        "--kube-api-qps=1000",
        "--kube-api-burst=2000",
        "--log-level=error",
    ]
    users, grants = ReadyNames(), ReadyNames()
    watches = [
        asyncio.create_task(list_and_watch(kube, USERS, namespace, users.on_event)),
        asyncio.create_task(list_and_watch(kube, GRANTS, namespace, grants.on_event)),
    ]
    log = (workdir / f"mariadb-operator-{n}.log").open("ab")
    process = await asyncio.create_subprocess_exec(*argv, stdout=log, stderr=log, env=env)
    passwords: dict[str, str] = {}
    try:
        await asyncio.sleep(3.0)  # its caches sync; the ExternalMariaDB gets connected
        tag = f"mo{n}{secrets.token_hex(2)}"
        indexes = iter(range(n))
        started = time.monotonic()

        async def create_all() -> None:
            for index in indexes:
                name, user, password = f"u{index:05d}", f"{tag}_{index:05d}", secrets.token_urlsafe(16)
                passwords[user] = password
                for resource, obj in user_objects(name, user, password):
                    await kube.create(resource, obj, namespace)

        await asyncio.gather(*(create_all() for _ in range(32)))
        created = time.monotonic()
        hwm = 0.0
        while time.monotonic() - started < limit:
            if process.returncode is not None:
                raise RuntimeError(f"mariadb-operator exited with {process.returncode} (log in {workdir})")
            hwm = max(hwm, sample_process(process.pid).hwm_mib)
            if len(users.ready) >= n and len(grants.ready) >= n:
                break
            await asyncio.sleep(0.25)
        finished = time.monotonic()
        converged = len(users.ready) >= n and len(grants.ready) >= n
        at_ready = sample_process(process.pid)
        await asyncio.sleep(10.0)
        later = sample_process(process.pid)
        sample = list(passwords.items())[:5]
        logins = sum([await can_log_in(mysql, user, password) for user, password in sample])
        return {
            "implementation": "mariadb-operator",
            "n": n,
            "converged": converged,
            "users_ready": len(users.ready),
            "grants_ready": len(grants.ready),
            "seconds": finished - started if converged else None,
            "create_seconds": created - started,
            "cpu_seconds": later.cpu_seconds,
            "peak_rss_mib": max(hwm, later.hwm_mib),
            "rss_at_ready_mib": at_ready.rss_mib,
            "rss_10s_later_mib": later.rss_mib,
            "logins_checked": len(sample),
            "logins_ok": logins,
            "argv": [Path(argv[0]).name, *argv[1:]],
        }
    finally:
        for task in watches:
            task.cancel()
        if process.returncode is None:
            process.terminate()
            await process.wait()
        log.close()


async def amain(
    arguments: argparse.Namespace, kubeconfig: Path, mysql: MySQLAddress, workdir: Path
) -> dict[str, Any]:
    results: dict[str, Any] = {
        "command": "python -m bench.mariadb_operator " + " ".join(arguments.argv),
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "runs": [],
    }
    async with await api_client(kubeconfig) as api:
        await install_crds(api, REPO / "crds", arguments.crds)
        await admin_sql(mysql, f"CREATE DATABASE IF NOT EXISTS `{BENCH_DATABASE}`")
        results["machine"]["mysql_version"] = (await admin_sql(mysql, "SELECT VERSION()"))[0][0]
        kube = KubeClient(api, timeout=60)
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
        )
        bench = Bench(api=api, kubeconfig=kubeconfig, mysql=mysql, workdir=workdir, options=options, say=say)
        await bench.prepare()
        for round_ in range(arguments.rounds):
            if round_:
                bench.run_id = secrets.token_hex(2)  # new namespaces and accounts: the last ones may linger
            if "dbuser-operator" in arguments.implementations:
                say(f"dbuser-operator N={arguments.n}")
                row, run = await bench.convergence("operator", arguments.n)
                await asyncio.sleep(10.0)
                row["peak_rss_10s_later_mib"] = run.implementation.sample().hwm_mib
                await run.close(bench)
                results["runs"].append({**row, "implementation": "dbuser-operator"})
                say(f"  peak RSS {row['peak_rss_10s_later_mib']:.1f} MiB, {row['seconds']:.1f} s")
            if "mariadb-operator" in arguments.implementations:
                say(f"mariadb-operator N={arguments.n}")
                row = await mariadb_operator_run(
                    kube,
                    arguments.binary,
                    kubeconfig,
                    mysql,
                    n=arguments.n,
                    workdir=workdir,
                    limit=arguments.time_limit,
                )
                results["runs"].append(row)
                ready = f"{row['users_ready']} Users and {row['grants_ready']} Grants Ready"
                say(f"  peak RSS {row['peak_rss_mib']:.1f} MiB, {row['seconds']} s, {ready}")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mariadb_operator", description=__doc__)
    parser.add_argument("--binary", type=Path, required=True, help="mariadb-operator's controller binary")
    parser.add_argument("--crds", type=Path, required=True, help="its CRDs (config/crd/bases)")
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=600.0)
    parser.add_argument(
        "--implementations", default="dbuser-operator,mariadb-operator", help="which, comma-separated"
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
    server = LocalMySQLServer(workdir / "mysql", locate("mariadb-11.8"), general_log=False)
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
    say(f"wrote {arguments.out}; logs in {workdir}")
    shutil.rmtree(workdir / "mysql", ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
