"""`kubectl dbu`, the plugin, end to end: the real kubectl finds it on PATH (as ``kubectl-dbu``) and runs
it with a tenant's own kubeconfig (a certificate user with a namespaced Role), against the real API server,
the operator and the MySQL server; `connect` runs the real mysql/mariadb client."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import Binaries, KubeCluster, MySQLServer
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.resources import Resource
from tests.conftest import REPO
from tests.integration.operator.support.builders import database_user, generated_user, unique
from tests.integration.operator.support.kube import wait_for_event, wait_for_ready
from tests.integration.operator.support.mysql import has_dual_passwords, mysql_query
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.integration.operator.support.rotation import (
    an_hour_ago,
    create_pod,
    delete_users,
    restart_pod_after_rotation,
    secret_password,
    wait_for_phase,
)

pytestmark = pytest.mark.integration

ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
COMMANDS = ("status", "rotate", "consumers", "connect", "why", "certificates", "access")


@pytest.fixture
def plugin_path(tmp_path: Path) -> Path:
    """A directory with ``kubectl-dbu``, the console script's stand-in (main's venv may predate it)."""
    directory = tmp_path / "bin"
    directory.mkdir()
    script = directory / "kubectl-dbu"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m dbuser_operator.kubectl_dbu "$@"\n')
    script.chmod(0o755)
    return directory


async def tenant_kubeconfig(kube: KubeCluster, kube_client: KubeClient, namespace: str, path: Path) -> Path:
    """A kubeconfig for a user who may, in ``namespace`` only, read and annotate DatabaseUsers and read
    pods, Secrets and Events (what a team that owns its namespace has)."""
    user = f"tenant-{namespace}"
    rules = [
        {
            "apiGroups": [DATABASE_USERS.group],
            "resources": ["databaseusers"],
            "verbs": ["get", "list", "watch", "patch"],
        },
        {"apiGroups": [""], "resources": ["pods", "events"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
    ]
    await grant(kube_client, namespace, "dbu-user", rules)
    return await kube.mint_kubeconfig(user, [], path)


async def grant(kube_client: KubeClient, namespace: str, name: str, rules: list[dict[str, Any]]) -> None:
    """A Role ``name`` with ``rules`` in ``namespace``, bound to its tenant (``tenant-<namespace>``,
    the user of :func:`tenant_kubeconfig`)."""
    await kube_client.create(ROLES, {"metadata": {"name": name}, "rules": rules}, namespace)
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": f"tenant-{namespace}"}
        ],
    }
    await kube_client.create(ROLE_BINDINGS, binding, namespace)


class Kubectl:
    """The real kubectl, as a user with ``kubeconfig``, with the plugin on PATH."""

    def __init__(self, binary: Path, kubeconfig: Path, plugin_path: Path) -> None:
        path = os.pathsep.join([str(plugin_path), os.environ.get("PATH", "")])
        python_path = os.pathsep.join([str(REPO / "operator"), str(REPO), os.environ.get("PYTHONPATH", "")])
        self.binary = binary
        self.env = {**os.environ, "KUBECONFIG": str(kubeconfig), "PATH": path, "PYTHONPATH": python_path}

    async def __call__(self, *args: str, code: int = 0) -> str:
        """Run ``kubectl dbu ARGS``; its stdout (fails the test on another exit code)."""
        done = await asyncio.to_thread(
            subprocess.run,
            [str(self.binary), "dbu", *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
            check=False,
        )
        assert done.returncode == code, f"kubectl dbu {' '.join(args)}: {done.returncode}\n{done.stderr}"
        return done.stdout if code == 0 else done.stderr


@pytest.fixture
async def as_tenant(
    kube: KubeCluster, kube_client: KubeClient, namespace: str, binaries: Binaries, plugin_path: Path,
    tmp_path: Path,
) -> Kubectl:  # fmt: skip
    kubeconfig = await tenant_kubeconfig(kube, kube_client, namespace, tmp_path / "tenant.kubeconfig")
    return Kubectl(binaries.path("kubectl"), kubeconfig, plugin_path)


def with_context(kubeconfig: Path, name: str, namespace: str, path: Path) -> Path:
    """A copy of ``kubeconfig`` with one more context ``name``: its first context's, in ``namespace``."""
    config = yaml.safe_load(kubeconfig.read_text())
    first = config["contexts"][0]["context"]
    config["contexts"].append({"name": name, "context": {**first, "namespace": namespace}})
    path.write_text(yaml.safe_dump(config))
    return path


def line_of(output: str, name: str) -> list[str]:
    """The cells of the table row of ``name`` (cells are three or more spaces apart)."""
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.split("   ") if cell.strip()]
        if cells and cells[0] == name:
            return cells
    raise AssertionError(f"no row {name} in:\n{output}")


async def test_every_command_has_help(as_tenant: Kubectl) -> None:
    top = await as_tenant("--help")
    for command in COMMANDS:
        assert command in top
        text = await as_tenant(command, "--help")
        assert text.startswith(f"usage: kubectl dbu {command}")
        assert "--namespace" in text
        assert "--kubeconfig" in text
        assert "--context" in text
    assert "--all-namespaces" in await as_tenant("status", "--help")


async def test_status_rotate_consumers_and_why_as_a_tenant(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    as_tenant: Kubectl,
    kube: KubeCluster,
    binaries: Binaries,
    plugin_path: Path,
) -> None:
    if not has_dual_passwords(mysql):
        pytest.skip("the retained old password: MySQL's dual passwords")
    name, refused = unique("kdbu"), unique("kdbu-refused")
    spec: dict[str, Any] = {
        "connectionSecret": {"name": f"{name}-db"},
        "rotation": {"gracePeriod": "1s", "maxWait": "10m"},
    }
    await kube_client.create(DATABASE_USERS, generated_user(name, **spec), namespace)
    await kube_client.create(DATABASE_USERS, database_user(refused, "no-such-secret"), namespace)
    await wait_for_ready(kube_client, namespace, name)
    await wait_for_ready(kube_client, namespace, refused, "False", "SecretNotFound")
    try:
        status = await as_tenant("status", "-n", namespace)
        assert status.splitlines()[0] == f"NAMESPACE: {namespace}"
        row = line_of(status, name)
        assert row[:6] == [name, "True", "AccountReady", "-", "(default)", f"{name}@%"]  # nothing pending
        assert row[6].endswith("s")  # the password's age, seconds old
        assert row[7:] == ["-", "-"]  # no rotation yet, nothing on an old password
        assert line_of(status, refused)[:3] == [refused, "False", "SecretNotFound"]

        # A pod that started long before the rotation holds the old password.
        await create_pod(kube_client, namespace, "app-1", f"{name}-db", an_hour_ago(), how="envFrom")
        first = await secret_password(kube_client, namespace, f"{name}-db")
        rotated = await as_tenant("rotate", name, "-n", namespace, "--wait", "--timeout", "60")
        assert rotated.strip() == f"databaseuser/{name} rotated (Retained, credential version 2)"
        assert await secret_password(kube_client, namespace, f"{name}-db") != first
        row = line_of(await as_tenant("status", "-n", namespace), name)
        assert row[3] == "RotationRetained"  # Progressing, while Ready stays True
        assert row[7:] == ["Retained", "1"]

        consumers = await as_tenant("consumers", name, "-n", namespace)
        assert "Pods on the old password (1):" in consumers
        assert line_of(consumers, "app-1")[0] == "app-1"
        assert "OldPasswordDiscardedWhileInUse" in consumers  # where the sessions are reported
        assert "connection id up to" in consumers
        assert first not in consumers

        # The pod restarts onto the new password: the operator discards the old one.
        await restart_pod_after_rotation(kube_client, namespace, "app-1", name)
        await wait_for_phase(kube_client, namespace, name, "Discarded", limit=30)
        consumers = await as_tenant("consumers", name, "-n", namespace)
        assert "No old password is retained (rotation phase: Discarded)" in consumers
        row = line_of(await as_tenant("status", "-n", namespace), name)
        assert (row[3], *row[7:]) == ("-", "Discarded", "-")

        # A pass's Events are recorded after its status, in the background: the phase is no sign that the
        # discard's Event (nor the rotation's) is there yet.
        for reason in ("PasswordGenerated", "Rotated", "OldPasswordDiscarded"):
            await wait_for_event(kube_client, namespace, name, reason)
        why = await as_tenant("why", name, "-n", namespace)
        assert why.splitlines()[0] == f"DatabaseUser {namespace}/{name}: Ready=True (AccountReady)"
        assert "phase=Discarded, strategy=DualPassword" in why
        assert f"Connection: Secret {name}-db, credential version 2" in why
        reasons = [line.split()[2] for line in why.split("Events (last")[1].splitlines()[2:]]
        assert {"PasswordGenerated", "Rotated", "OldPasswordDiscarded"} <= set(reasons), why
        assert reasons.index("Rotated") < reasons.index("OldPasswordDiscarded")  # oldest first

        why_refused = await as_tenant("why", refused, "-n", namespace)
        assert why_refused.splitlines()[0].endswith("Ready=False (SecretNotFound)")
        assert line_of(why_refused, "Ready")[:3] == ["Ready", "False", "SecretNotFound"]

        # The tenant's RBAC, not more: no cluster-wide list, no other namespace.
        denied = await as_tenant("status", "-A", code=1)
        assert denied.startswith("Error from server (Forbidden):")
        assert 'cannot list resource "databaseusers"' in denied
        assert (await as_tenant("why", name, "-n", "default", code=1)).startswith(
            "Error from server (Forbidden)"
        )
        assert "NotFound" in await as_tenant("why", "nobody", "-n", namespace, code=1)
        admin = Kubectl(binaries.path("kubectl"), kube.kubeconfig, plugin_path)
        assert f"NAMESPACE: {namespace}" in await admin("status", "-A")
        by_server = await admin("status", "-A", "--server", "(default)")
        assert by_server.splitlines()[0] == "SERVER: (default)"
        assert line_of(by_server, namespace)[1] in {name, refused}
    finally:
        await delete_users(kube_client, namespace)


async def test_rotate_refuses_a_password_of_the_user(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, as_tenant: Kubectl
) -> None:
    name = unique("kdbu-own")
    await kube_client.create(DATABASE_USERS, database_user(name, "own-pw"), namespace)
    refused = await as_tenant("rotate", name, "-n", namespace, code=1)
    assert "has no generated password" in refused
    assert "own-pw" in refused
    obj = await kube_client.get(DATABASE_USERS, name, namespace)
    assert "annotations" not in obj["metadata"]  # nothing was written
    await delete_users(kube_client, namespace)


@pytest.mark.skipif(not shutil.which("mysql") and not shutil.which("mariadb"), reason="no mysql client")
async def test_connect_runs_the_client_as_the_account(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    as_tenant: Kubectl,
) -> None:
    name, without = unique("kdbu-conn"), unique("kdbu-nosecret")
    database = f"db_{name.replace('-', '_')}"
    mysql_query(mysql, f"CREATE DATABASE `{database}`")
    spec: dict[str, Any] = {
        "privileges": [{"database": database, "privileges": ["SELECT"]}],
        "connectionSecret": {"name": f"{name}-db"},
    }
    await kube_client.create(DATABASE_USERS, generated_user(name, **spec), namespace)
    await kube_client.create(DATABASE_USERS, generated_user(without), namespace)
    try:
        await wait_for_ready(kube_client, namespace, name)
        password = await secret_password(kube_client, namespace, f"{name}-db")
        passwords.values.add(password)
        query = "SELECT CURRENT_USER(), DATABASE()"
        out = await as_tenant("connect", name, "-n", namespace, "--", "--batch", "--skip-column-names",
                              "-e", query)  # fmt: skip
        assert out.split() == [f"{name}@%", database]
        assert password not in out
        # Without "--": the client's own options after NAME go to it too.
        out = await as_tenant("connect", name, "-n", namespace, "-N", "-e", "SELECT 40 + 2")
        assert out.split() == ["42"]
        refused = await as_tenant("connect", without, "-n", namespace, code=1)
        assert refused.startswith(
            f"error: databaseuser/{without} has no connection Secret (spec.connectionSecret)"
        )
    finally:
        await delete_users(kube_client, namespace)
        mysql_query(mysql, f"DROP DATABASE `{database}`")


async def test_the_contexts_namespace_and_text_that_would_drive_a_terminal(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    as_tenant: Kubectl,
    binaries: Binaries,
    plugin_path: Path,
    tmp_path: Path,
) -> None:
    name = unique("kdbu-ctx")
    obj = await kube_client.create(DATABASE_USERS, database_user(name, "missing-pw"), namespace)
    await wait_for_ready(kube_client, namespace, name, "False", "SecretNotFound")
    # Anyone who may create Events in the namespace can write one about the user: its text is hostile.
    event = {
        "metadata": {"name": f"{name}.forged"},
        "involvedObject": {"kind": "DatabaseUser", "name": name, "namespace": namespace,
                           "uid": obj["metadata"]["uid"]},
        "reason": "Forged",
        "message": "look\x1b]0;owned\x07\x1b[2J\u202eevil",
        "type": "Warning",
        "lastTimestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }  # fmt: skip
    await kube_client.create(Resource("", "v1", "events", "Event"), event, namespace)
    try:
        # A second context whose namespace is the test's: -n is then not needed.
        kubeconfig = with_context(
            Path(as_tenant.env["KUBECONFIG"]), "team", namespace, tmp_path / "two.kubeconfig"
        )
        user = Kubectl(binaries.path("kubectl"), kubeconfig, plugin_path)
        assert "Forbidden" in await user("status", code=1)  # the current context: namespace default
        status = await user("status", "--context", "team")
        assert status.splitlines()[0] == f"NAMESPACE: {namespace}"
        assert line_of(status, name)[:3] == [name, "False", "SecretNotFound"]
        assert "nope" in await user("status", "--context", "nope", code=1)
        missing = await user("status", "--kubeconfig", str(tmp_path / "none"), code=1)
        assert missing.startswith("error: no kubeconfig at")

        why = await user("why", name, "--context", "team")
        assert "\x1b" not in why
        assert "\x07" not in why
        assert "\u202e" not in why
        forged = [line for line in why.splitlines() if "Forged" in line]
        assert len(forged) == 1
        assert forged[0].endswith("look\\x1b]0;owned\\x07\\x1b[2J\\u202eevil")  # shown, escaped
    finally:
        await delete_users(kube_client, namespace)
