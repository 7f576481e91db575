"""A quiet tenant's reconcile latency while another tenant floods the template renderer (issue 28).

    python -m bench.template_flood [--flood 40] [--samples 6] [--out bench/results/template-flood.json]

The operator runs as a subprocess, as in ``python -m bench``, watching two namespaces. The noisy one gets
``flood`` DatabaseUsers at once (32 creates at a time), all naming one password Secret, each with a
connection-Secret template that takes about a second of Jinja2 loops (bounded: under the 2 s limit when the
machine is idle). The quiet one gets, one pair at a time, a plain DatabaseUser and one with a cheap template;
each sample is *create sent → Ready seen by a watch*. Three phases: with no flood (the baseline), while the
flood is created and renders, and after one edit of the Secret the flood shares (every noisy resource
renders again). The server is the test suite's local flavour (``DBUSER_OPERATOR_MYSQL_FLAVOUR``, default
``mysql-9.7``) or ``MYSQL_URL``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client

from bench import processes
from bench.common import PASSWORD_KEY, TARGET, TARGET_LABEL, MySQLAddress, admin_sql, api_client, secret
from bench.scenarios import ReadyWatch, percentile
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import Binaries, LocalMySQLServer, connect_cluster, install_crds, provide_mysql
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import NAMESPACES, SECRETS

REPO = Path(__file__).resolve().parent.parent
EXPENSIVE = ("{% for a in '" + "x" * 70 + "' %}") * 4 + "{% endfor %}" * 4 + "{{ password }}"  # 70**4 passes
CHEAP = "{{ username }}:{{ password }}"


def say(message: str) -> None:
    print(f"[{datetime.now(UTC).strftime('%H:%M:%S')}] {message}", flush=True)


def user(name: str, secret_name: str, template: str | None) -> dict[str, Any]:
    """A DatabaseUser of the benchmark's target; with ``template``, a connection Secret rendering it."""
    spec: dict[str, Any] = {"user": name, "password": {"name": secret_name, "key": PASSWORD_KEY}}
    if template is not None:
        spec["connectionSecret"] = {"name": f"{name}-db", "templates": {"t": template}}
    return {
        "apiVersion": DATABASE_USERS.api_version,
        "kind": "DatabaseUser",
        "metadata": {"name": name, "labels": {TARGET_LABEL: TARGET}},
        "spec": spec,
    }


class Quiet:
    """The quiet tenant: pairs of (plain, cheap template) DatabaseUsers, each timed to Ready."""

    def __init__(self, kube: KubeClient, namespace: str, watch: ReadyWatch) -> None:
        self.kube = kube
        self.namespace = namespace
        self.watch = watch
        self.count = 0

    async def sample(self) -> tuple[float, float]:
        """Seconds from create to Ready of a plain DatabaseUser and of one with a cheap template."""
        self.count += 1
        plain, cheap = f"q{self.count:03d}", f"qt{self.count:03d}"
        sent = time.monotonic()
        await self.kube.create(DATABASE_USERS, user(plain, "quiet-pw", None), self.namespace)
        cheap_sent = time.monotonic()
        await self.kube.create(DATABASE_USERS, user(cheap, "quiet-pw", CHEAP), self.namespace)
        names = {plain, cheap}
        if not await self.watch.wait_for(lambda: names <= self.watch.ready_at.keys(), 300):
            raise TimeoutError("a quiet DatabaseUser did not become Ready within 300 s")
        return self.watch.ready_at[plain] - sent, self.watch.ready_at[cheap] - cheap_sent

    async def phase(self, samples: int, interval: float) -> dict[str, Any]:
        plain, cheap = [], []
        for _ in range(samples):
            started = time.monotonic()
            a, b = await self.sample()
            plain.append(a)
            cheap.append(b)
            await asyncio.sleep(max(0.0, interval - (time.monotonic() - started)))
        return {"plain_s": summary(plain), "cheap_template_s": summary(cheap)}


def summary(values: list[float]) -> dict[str, Any]:
    return {
        "p50": round(percentile(values, 0.5), 3),
        "max": round(max(values), 3),
        "all": [round(value, 3) for value in values],
    }


async def flood_state(kube: KubeClient, namespace: str) -> dict[str, tuple[int, str]]:
    """Each resource's (credential version, Ready reason), by name."""
    users = await kube.list(DATABASE_USERS, namespace)
    states = {}
    for item in users["items"]:
        status = item.get("status") or {}
        ready = next((c for c in status.get("conditions") or [] if c["type"] == "Ready"), {})
        states[item["metadata"]["name"]] = (status.get("credentialVersion") or 0, ready.get("reason", ""))
    return states


async def settle(
    kube: KubeClient, namespace: str, done: Callable[[str, int, str], bool], limit: float = 600
) -> dict[str, tuple[int, str]]:
    """Poll until ``done(name, version, reason)`` holds for every resource of ``namespace``; their states."""
    deadline = time.monotonic() + limit
    while True:
        states = await flood_state(kube, namespace)
        if all(done(name, *state) for name, state in states.items()):
            return states
        if time.monotonic() > deadline:
            raise TimeoutError(f"{namespace} did not settle within {limit:g} s")
        await asyncio.sleep(0.5)


def failed(states: dict[str, tuple[int, str]]) -> int:
    """Resources whose render went past the 2 s bound (on a loaded machine): TemplateInvalid."""
    return sum(reason == "TemplateInvalid" for _, reason in states.values())


async def run(
    api: client.ApiClient, kubeconfig: Path, mysql: MySQLAddress, workdir: Path, arguments: argparse.Namespace
) -> dict[str, Any]:
    kube = KubeClient(api, timeout=60)
    suffix = secrets.token_hex(2)
    noisy, quiet = f"bench-noisy-{suffix}", f"bench-quiet-{suffix}"
    for namespace in (noisy, quiet):
        await kube.create(NAMESPACES, {"metadata": {"name": namespace}})
    await kube.create(SECRETS, secret("noisy-pw", secrets.token_urlsafe(18)), noisy)
    await kube.create(SECRETS, secret("quiet-pw", secrets.token_urlsafe(18)), quiet)
    operator = processes.operator(
        workdir,
        kubeconfig,
        mysql,
        f"{noisy},{quiet}",
        concurrency=None,
        resync_period=300.0,
        log_name="flood",
    )
    await operator.start()
    quiet_watch = ReadyWatch(kube, quiet)
    try:
        await operator.wait_ready()
        await quiet_watch.start()
        tenant = Quiet(kube, quiet, quiet_watch)
        await tenant.sample()  # warm-up: the renderer's worker process has started
        say("baseline: no flood")
        baseline = await tenant.phase(arguments.samples, 0.5)

        names = [f"n{index:03d}" for index in range(arguments.flood)]
        say(f"flood: {len(names)} DatabaseUsers with expensive templates in {noisy}")
        creating = asyncio.Semaphore(32)

        async def create(name: str) -> None:
            async with creating:
                await kube.create(DATABASE_USERS, user(name, "noisy-pw", EXPENSIVE), noisy)

        started = time.monotonic()
        await asyncio.gather(*(create(name) for name in names))
        during = await tenant.phase(arguments.samples, 2.0)
        rendered = ("AccountReady", "TemplateInvalid")
        before = await settle(kube, noisy, lambda _, __, reason: reason in rendered)
        flood_ready = time.monotonic() - started

        say("one edit of the Secret the flood shares")
        started = time.monotonic()
        patch = {"stringData": {PASSWORD_KEY: secrets.token_urlsafe(18)}}
        await kube.patch(SECRETS, "noisy-pw", patch, PatchType.MERGE, namespace=noisy)
        await asyncio.sleep(0.5)
        after_edit = await tenant.phase(arguments.samples, 2.0)
        # Every noisy resource rendered again: its Secret has the new password, or its render failed.
        after = await settle(
            kube,
            noisy,
            lambda name, version, reason: (
                reason == "TemplateInvalid" or (reason == "AccountReady" and version > before[name][0])
            ),
        )
        flood_rerendered = time.monotonic() - started
        operator.check_running()
        return {
            "flood": arguments.flood,
            "samples": arguments.samples,
            "flood_settled_seconds": round(flood_ready, 1),
            "flood_timed_out": failed(before),
            "flood_rerendered_seconds": round(flood_rerendered, 1),
            # Renders past the 2 s bound on a loaded machine: TemplateInvalid, as any template that slow.
            "flood_timed_out_after_edit": failed(after),
            "baseline": baseline,
            "during_flood": during,
            "after_shared_secret_edit": after_edit,
        }
    finally:
        await quiet_watch.stop()
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
        prog="python -m bench.template_flood", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--flood", type=int, default=40, help="the noisy tenant's DatabaseUsers (40)")
    parser.add_argument("--samples", type=int, default=6, help="quiet pairs per phase (6)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "template-flood.json")
    arguments = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="dbuser-operator-flood-"))
    say(f"state and logs in {workdir}")
    started = time.monotonic()
    result = asyncio.run(amain(arguments, workdir))
    document = {
        "command": "python -m bench.template_flood "
        + shlex.join(list(sys.argv[1:] if argv is None else argv)),
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_seconds": round(time.monotonic() - started, 1),
        **result,
    }
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(document, indent=2) + "\n")
    print(json.dumps(document, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
