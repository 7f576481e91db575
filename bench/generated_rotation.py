"""Rotation of generated passwords end to end, under load, measured on a real API server and MySQL server.

    python -m bench.generated_rotation [--n 1000] [--samples 100] [--clients 20] [--grace 10s]
        [--out bench/results/generated-rotation.json]

N DatabaseUsers with a generated password and a connection Secret (DualPassword where the server has dual
passwords) are made Ready under the operator, run as a subprocess as in ``python -m bench``. Then, one at a
time, ``samples`` of them get a new value of the ``mysql.dbuser-operator.dev/rotate`` annotation; measured
from that patch: the connection Secret holding a new password at a higher credential version (seen by a
watch, as a refreshed mount would see it), and that password logging in (tried every 2 ms). Meanwhile
``clients`` real clients log in over and over (a few ms apart), each with the password the connection Secret
holds at that moment, half of them as the account being rotated: every refused login is counted. After the
last rotation the run waits until every rotated resource has discarded its old password (``gracePeriod``
``--grace``; no pods use the Secrets here, so nothing else holds a discard) and the writes settle, then
counts the operator's API writes (its ``rest_client_requests_total``), the API server's writes by resource
and the server's SQL write counters, per rotation. The server is the test suite's local flavour
(``DBUSER_OPERATOR_MYSQL_FLAVOUR``, default ``mysql-9.7``) or ``MYSQL_URL``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import random
import secrets
import shlex
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client

from bench import processes
from bench.common import (
    SQL_WRITE_COUNTERS,
    TARGET,
    TARGET_LABEL,
    MySQLAddress,
    admin_sql,
    api_client,
    apiserver_writes,
    can_log_in,
    changed_counters,
    counter_delta,
    list_and_watch,
    settle_writes,
    sql_counters,
)
from bench.scenarios import ReadyWatch, percentile
from dbuser_operator.api.v1alpha1 import CREDENTIAL_VERSION_ANNOTATION, ROTATE_ANNOTATION
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import Binaries, LocalMySQLServer, connect_cluster, install_crds, provide_mysql
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import EVENTS, NAMESPACES, SECRETS

REPO = Path(__file__).resolve().parent.parent


def say(message: str) -> None:
    print(f"[{datetime.now(UTC).strftime('%H:%M:%S')}] {message}", flush=True)


def generated_user(name: str, grace: str) -> dict[str, Any]:
    return {
        "apiVersion": DATABASE_USERS.api_version,
        "kind": "DatabaseUser",
        "metadata": {"name": name, "labels": {TARGET_LABEL: TARGET}},
        "spec": {
            "generatedPassword": {},
            "connectionSecret": {"name": f"{name}-db"},
            "rotation": {"gracePeriod": grace},
        },
    }


@dataclass
class Credentials:
    """The connection Secrets as a watch sees them: (credential version, password) per user name."""

    current: dict[str, tuple[int, str]] = field(default_factory=dict)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def on_event(self, kind: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if kind == "DELETED" or not name.endswith("-db") or "password" not in (obj.get("data") or {}):
            return
        annotations = obj["metadata"].get("annotations") or {}
        version = int(annotations.get(CREDENTIAL_VERSION_ANNOTATION, "0"))
        self.current[name.removesuffix("-db")] = (version, base64.b64decode(obj["data"]["password"]).decode())
        self.changed.set()


@dataclass
class Load:
    """Clients logging in again and again with the password the connection Secret holds right then."""

    mysql: MySQLAddress
    credentials: Credentials
    users: list[str]
    hot: str | None = None  # the account being rotated: half of the logins go to it
    logins: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    triggers: dict[str, str] = field(default_factory=dict)  # the rotate annotation's value set, per user
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def client(self, seed: int) -> None:
        chooser = random.Random(seed)  # noqa: S311 - load, not security
        while not self.stop.is_set():
            user = self.hot if self.hot and chooser.random() < 0.5 else chooser.choice(self.users)
            version, password = self.credentials.current[user]
            self.logins += 1
            try:
                if not await can_log_in(self.mysql, user, password):
                    self.failed.append({"user": user, "version": version, "at": time.monotonic()})
            except Exception as error:  # not a refusal (e.g. the server's connection limit): counted apart
                self.errors.append(type(error).__name__)
            await asyncio.sleep(0.003)


async def wait_for(predicate: Any, limit: float, what: str) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} within {limit:g} s")
        await asyncio.sleep(0.05)


async def remove_users(kube: KubeClient, namespace: str, limit: float = 120.0) -> None:
    """Delete the run's DatabaseUsers while its operator still runs (their accounts go with them), wait
    until they are gone, then delete the namespace: the run leaves nothing behind."""
    for item in (await kube.list(DATABASE_USERS, namespace))["items"]:
        with contextlib.suppress(client.ApiException):
            await kube.delete(DATABASE_USERS, item["metadata"]["name"], namespace)
    deadline = time.monotonic() + limit
    while (await kube.list(DATABASE_USERS, namespace))["items"]:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the DatabaseUsers of {namespace} gone within {limit:g} s")
        await asyncio.sleep(0.2)
    with contextlib.suppress(client.ApiException):
        await kube.delete(NAMESPACES, namespace)


async def populate(
    kube: KubeClient,
    namespace: str,
    *,
    names: list[str],
    grace: str,
    watch: ReadyWatch,
    credentials: Credentials,
) -> float:
    """Create the DatabaseUsers (32 at a time); seconds until all are Ready with their connection Secrets."""
    say(f"creating {len(names)} DatabaseUsers with generated passwords and connection Secrets")
    started = time.monotonic()
    creating = asyncio.Semaphore(32)

    async def create(name: str) -> None:
        async with creating:
            await kube.create(DATABASE_USERS, generated_user(name, grace), namespace)

    await asyncio.gather(*(create(name) for name in names))
    if not await watch.wait_for(lambda: set(names) <= watch.ready_at.keys(), 600):
        raise TimeoutError("not all DatabaseUsers became Ready within 600 s")
    await wait_for(lambda: set(names) <= credentials.current.keys(), 60, "every connection Secret")
    return time.monotonic() - started


async def rotate(
    kube: KubeClient, namespace: str, rotated: list[str], load: Load
) -> tuple[list[float], list[float]]:
    """Rotate each one at a time: seconds from the annotation to the new password in the connection
    Secret, and to that password logging in."""
    mysql, credentials = load.mysql, load.credentials
    to_secret: list[float] = []
    to_login: list[float] = []
    for user in rotated:
        version, password = credentials.current[user]
        load.hot = user
        started = time.monotonic()
        load.triggers[user] = secrets.token_hex(4)
        patch = {"metadata": {"annotations": {ROTATE_ANNOTATION: load.triggers[user]}}}
        await kube.patch(DATABASE_USERS, user, patch, PatchType.MERGE, namespace=namespace)
        await wait_for(
            lambda user=user, version=version, password=password: (
                credentials.current[user][0] > version and credentials.current[user][1] != password
            ),
            60,
            f"{user}'s connection Secret updated",
        )
        to_secret.append(time.monotonic() - started)
        new_password = credentials.current[user][1]
        while not await can_log_in(mysql, user, new_password):
            if time.monotonic() - started > 60:
                raise TimeoutError(f"{user}'s new password never logged in")
            await asyncio.sleep(0.002)
        to_login.append(time.monotonic() - started)
    return to_secret, to_login


async def wait_until_discarded(
    kube: KubeClient, namespace: str, triggers: dict[str, str], limit: float = 600
) -> set[str]:
    """Until every rotated resource has handled its trigger and holds no retained old password (phase
    Discarded; none with the Immediate strategy)."""
    deadline = time.monotonic() + limit
    while True:
        listed = await kube.list(DATABASE_USERS, namespace)
        pending = [
            item["metadata"]["name"]
            for item in listed["items"]
            if item["metadata"]["name"] in triggers
            and (
                ((item.get("status") or {}).get("rotation") or {}).get("trigger")
                != triggers[item["metadata"]["name"]]
                or ((item.get("status") or {}).get("rotation") or {}).get("phase") == "Retained"
            )
        ]
        if not pending:
            return {
                ((item.get("status") or {}).get("rotation") or {}).get("strategy", "")
                for item in listed["items"]
                if item["metadata"]["name"] in triggers
            }
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(pending)} of {len(triggers)} still hold their old password")
        await asyncio.sleep(1.0)


async def wait_for_creation_events(kube: KubeClient, namespace: str, n: int, limit: float = 120.0) -> None:
    """Wait until every DatabaseUser of the namespace has its creation Event written."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        listed = await kube.list_all(EVENTS, namespace)
        if len({event["involvedObject"].get("name") for event in listed[0]}) >= n:
            return
        await asyncio.sleep(1.0)
    say(f"not every creation Event was written within {limit:.0f} s: the counts include some")


async def run(
    api: client.ApiClient, kubeconfig: Path, mysql: MySQLAddress, workdir: Path, arguments: argparse.Namespace
) -> dict[str, Any]:
    kube = KubeClient(api, timeout=60)
    namespace = f"bench-genrot-{secrets.token_hex(2)}"
    await kube.create(NAMESPACES, {"metadata": {"name": namespace}})
    operator = processes.operator(
        workdir, kubeconfig, mysql, namespace, concurrency=None, resync_period=60.0, log_name="genrot"
    )
    await operator.start()
    watch, credentials = ReadyWatch(kube, namespace), Credentials()
    tasks: list[asyncio.Task[None]] = []
    try:
        await operator.wait_ready()
        await watch.start()
        synced = asyncio.Event()
        tasks.append(
            asyncio.create_task(list_and_watch(kube, SECRETS, namespace, credentials.on_event, synced=synced))
        )
        await synced.wait()
        names = [f"g{index:05d}" for index in range(arguments.n)]
        converged = await populate(
            kube, namespace, names=names, grace=arguments.grace, watch=watch, credentials=credentials
        )
        say(f"all {arguments.n} Ready with connection Secrets in {converged:.1f} s")
        # Their creation Events are held while reconciles are queued (up to 60 s): counted before, they
        # would add N ÷ samples writes to every rotation.
        await wait_for_creation_events(kube, namespace, arguments.n)

        load = Load(mysql, credentials, names)
        tasks += [asyncio.create_task(load.client(seed)) for seed in range(arguments.clients)]
        await asyncio.sleep(2.0)  # the load runs before the first rotation too
        sql_before, api_before = await sql_counters(mysql), await apiserver_writes(api)
        metrics_before = await operator.metrics()
        rotated = random.Random(20261123).sample(names, min(arguments.samples, arguments.n))  # noqa: S311
        to_secret, to_login = await rotate(kube, namespace, rotated, load)
        load.hot = None
        say(f"{len(rotated)} rotations; waiting for every old password to be discarded")

        strategies = await wait_until_discarded(kube, namespace, load.triggers)
        await settle_writes(api, interval=2.0)
        await asyncio.sleep(1.0)  # a few more logins after the last discard
        load.stop.set()
        metrics_after = await operator.metrics()
        sql = counter_delta(sql_before, await sql_counters(mysql))
        api_by_resource = changed_counters(api_before, await apiserver_writes(api))
        harness = len(rotated)  # the annotation patches
        operator.check_running()
        samples = len(rotated)
        return {
            "n": arguments.n,
            "samples": samples,
            "clients": arguments.clients,
            "grace_period": arguments.grace,
            "strategies": sorted(strategies),
            "converged_seconds": round(converged, 2),
            "trigger_to_connection_secret_ms": {
                "p50": round(1000 * percentile(to_secret, 0.50), 1),
                "p99": round(1000 * percentile(to_secret, 0.99), 1),
                "max": round(1000 * max(to_secret), 1),
            },
            "trigger_to_new_password_logs_in_ms": {
                "p50": round(1000 * percentile(to_login, 0.50), 1),
                "p99": round(1000 * percentile(to_login, 0.99), 1),
                "max": round(1000 * max(to_login), 1),
            },
            "logins": load.logins,
            "failed_logins": len(load.failed),
            "login_errors": len(load.errors),
            "failed_login_samples": load.failed[:10],
            "operator_api_writes_per_rotation": round(
                (metrics_after.writes - metrics_before.writes) / samples, 2
            ),
            "operator_api_requests_by_method": counter_delta(metrics_before.requests, metrics_after.requests),
            "apiserver_writes_per_rotation_by_resource": {
                resource: round((count - (harness if resource == "databaseusers" else 0)) / samples, 2)
                for resource, count in sorted(api_by_resource.items())
            },
            "sql_writes_per_rotation": {
                name: round(sql[name] / samples, 2) for name in SQL_WRITE_COUNTERS if sql.get(name)
            },
            "latencies_ms": [round(1000 * value, 1) for value in to_login],
        }
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await watch.stop()
        try:
            await remove_users(kube, namespace)
        finally:
            await operator.stop()


async def amain(arguments: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    testbin = os.environ.get("DBUSER_OPERATOR_TESTBIN")
    binaries = Binaries.from_environment(*([Path(testbin)] if testbin else []))
    cluster = connect_cluster(binaries, workdir / "kube", audit=False)
    try:
        with provide_mysql(workdir / "mysql", general_log=False) as provided:
            server = provided.admin if isinstance(provided, LocalMySQLServer) else provided
            mysql = MySQLAddress(server.host, server.port, server.user, server.password)
            async with await api_client(cluster.kubeconfig) as api:
                await install_crds(api, REPO / "crds")
                version = (await admin_sql(mysql, "SELECT VERSION()"))[0][0]
                say(f"MySQL {version}")
                result = await run(api, cluster.kubeconfig, mysql, workdir, arguments)
                result["mysql_version"] = version
                return result
    finally:
        if cluster.control_plane is not None:
            cluster.control_plane.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.generated_rotation", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--n", type=int, default=1000, help="DatabaseUsers Ready during the rotations (1000)")
    parser.add_argument("--samples", type=int, default=100, help="rotations, one at a time (100)")
    parser.add_argument("--clients", type=int, default=20, help="clients logging in meanwhile (20)")
    parser.add_argument("--grace", default="10s", help="spec.rotation.gracePeriod of every resource (10s)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "generated-rotation.json")
    arguments = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="dbuser-operator-genrot-"))
    say(f"state and logs in {workdir}")
    started = time.monotonic()
    result = asyncio.run(amain(arguments, workdir))
    document = {
        "command": "python -m bench.generated_rotation "
        + shlex.join(list(sys.argv[1:] if argv is None else argv)),
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_seconds": round(time.monotonic() - started, 1),
        **result,
    }
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(document, indent=2) + "\n")
    summary = {
        key: value for key, value in document.items() if key not in {"latencies_ms", "failed_login_samples"}
    }
    print(json.dumps(summary, indent=2))
    # Immediate rotation (MariaDB) ends the old password at once: a client holding it fails, by design.
    return 0 if document["failed_logins"] == 0 or document["strategies"] != ["DualPassword"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
