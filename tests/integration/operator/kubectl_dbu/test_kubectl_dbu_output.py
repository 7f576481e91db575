"""`kubectl dbu` output and shell: ``-o json|yaml|wide``, ``--watch`` until Ctrl-C, completion through the
real kubectl (``kubectl_complete-dbu``), the plain path's imports, and the full client for a kubeconfig
with an exec plugin: all as a tenant, with the real kubectl and API server."""

from __future__ import annotations

import asyncio
import base64
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dbuser_operator.envtest import Binaries
from dbuser_operator.kubectl_dbu.names import DATABASE_USERS, ROTATE_ANNOTATION
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import Resource
from tests.integration.operator.kubectl_dbu.test_kubectl_dbu import (
    ROLE_BINDINGS,
    Kubectl,
    as_tenant,
    line_of,
    plugin_path,
)
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.kube import wait_for_ready
from tests.integration.operator.support.operator import RunningOperator
from tests.integration.operator.support.rotation import delete_users

pytestmark = pytest.mark.integration
__all__ = ["as_tenant", "plugin_path"]  # fixtures of the plugin's first test module
HEAVY = ("kubernetes_asyncio", "aiohttp", "pydantic")
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
LINE_LIMIT = 60.0  # seconds to wait for one line of the watch before the test gives up (a hang guard)


async def test_json_yaml_and_wide(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, as_tenant: Kubectl
) -> None:
    name = unique("kdbu-out")
    await kube_client.create(DATABASE_USERS, database_user(name, "missing-pw"), namespace)
    await wait_for_ready(kube_client, namespace, name, "False", "SecretNotFound")
    try:
        listed = json.loads(await as_tenant("status", "-n", namespace, "-o", "json"))
        (item,) = listed["items"]
        assert {key: item[key] for key in ("namespace", "name", "ready", "reason", "server", "account")} == {
            "namespace": namespace,
            "name": name,
            "ready": "False",
            "reason": "SecretNotFound",
            "server": "(default)",
            "account": f"{name}@%",
        }
        (again,) = yaml.safe_load(await as_tenant("status", "-n", namespace, "-o", "yaml"))["items"]
        assert {**again, "age": item["age"]} == item  # the same record (a second older)
        wide = await as_tenant("status", "-n", namespace, "-o", "wide")
        wide_headers = ["HOSTS", "SERVICE ACCOUNT", "CREDENTIAL VERSION", "AGE"]
        assert wide.splitlines()[1].split("   ")[-4:] == wide_headers
        assert line_of(wide, name)[:3] == [name, "False", "SecretNotFound"]
    finally:
        await delete_users(kube_client, namespace)


@pytest.mark.usefixtures("crds")
async def test_a_status_reads_over_plain_https_without_the_api_client(
    kube_client: KubeClient, namespace: str, as_tenant: Kubectl
) -> None:
    name = unique("kdbu-plain")
    await kube_client.create(DATABASE_USERS, database_user(name, "missing-pw"), namespace)
    probe = (
        "import json, sys\nfrom dbuser_operator.kubectl_dbu.cli import main\n"
        "code = main(['status', '-n', sys.argv[1]])\n"
        f"print(json.dumps([code, sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})]))"
    )
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", probe, namespace],
        capture_output=True, text=True, env=as_tenant.env, timeout=120, check=True,
    )  # fmt: skip
    *table, last = done.stdout.splitlines()
    assert json.loads(last) == [0, []], done.stderr
    assert line_of("\n".join(table), name)[:2] == [name, "Unknown"]  # read: no operator runs here
    await delete_users(kube_client, namespace)


async def next_line(process: asyncio.subprocess.Process, wanted: str) -> str:
    """The next line of the watch that contains ``wanted``."""
    assert process.stdout is not None
    assert process.stderr is not None
    while True:
        line = (await asyncio.wait_for(process.stdout.readline(), LINE_LIMIT)).decode()
        assert line, f"the watch ended: {(await process.stderr.read()).decode()}"
        if wanted in line:
            return line


@pytest.mark.usefixtures("crds")
async def test_watch_prints_each_change_until_ctrl_c(
    kube_client: KubeClient, namespace: str, as_tenant: Kubectl
) -> None:
    first, second = unique("kdbu-w1"), unique("kdbu-w2")
    await kube_client.create(DATABASE_USERS, database_user(first, "missing-pw"), namespace)
    process = await asyncio.create_subprocess_exec(
        str(as_tenant.binary), "dbu", "status", "-n", namespace, "--watch",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=as_tenant.env,
    )  # fmt: skip
    try:
        assert (await next_line(process, "NAMESPACE")).split()[:3] == ["NAMESPACE", "NAME", "READY"]
        await next_line(process, first)  # the status as it is
        await kube_client.create(DATABASE_USERS, database_user(second, "missing-pw"), namespace)
        assert (await next_line(process, second)).split()[:3] == [namespace, second, "Unknown"]
        status = {"conditions": [{
            "type": "Ready", "status": "False", "reason": "SecretNotFound", "message": "no Secret",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }]}  # fmt: skip
        await kube_client.patch(
            DATABASE_USERS,
            first,
            {"status": status},
            PatchType.MERGE,
            namespace=namespace,
            subresource="status",
        )
        assert (await next_line(process, first)).split()[:4] == [namespace, first, "False", "SecretNotFound"]
        annotation = {"metadata": {"annotations": {ROTATE_ANNOTATION: "now"}}}
        await kube_client.patch(DATABASE_USERS, second, annotation, PatchType.MERGE, namespace=namespace)
        await next_line(process, second)  # any change is a line
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), LINE_LIMIT) == 130
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await delete_users(kube_client, namespace)


async def complete(kubectl: Kubectl, *words: str) -> list[str]:
    """What the real kubectl offers after ``kubectl dbu WORDS`` (its hidden ``__complete``)."""
    done = await asyncio.to_thread(
        subprocess.run,
        [str(kubectl.binary), "__complete", "dbu", *words],
        capture_output=True, text=True, env=kubectl.env, timeout=120, check=True,
    )  # fmt: skip
    return done.stdout.splitlines()


@pytest.mark.usefixtures("crds")
async def test_kubectl_completes_the_plugin(
    kube_client: KubeClient, namespace: str, as_tenant: Kubectl, plugin_path: Path
) -> None:
    name = unique("kdbu-compl")
    await kube_client.create(DATABASE_USERS, database_user(name, "missing-pw"), namespace)
    script = plugin_path / "kubectl_complete-dbu"
    script.write_text(
        f"#!/bin/sh\nexec {sys.executable} -c 'import sys\n"
        'from dbuser_operator.kubectl_dbu.complete import main\nsys.exit(main())\' "$@"\n'
    )
    script.chmod(0o755)
    try:
        assert "status" in await complete(as_tenant, "st")
        assert (await complete(as_tenant, "status", "-o", ""))[:3] == ["json", "yaml", "wide"]
        assert name in await complete(as_tenant, "why", "-n", namespace, "kdbu-c")
    finally:
        await delete_users(kube_client, namespace)


def exec_kubeconfig(kubeconfig: Path, folder: Path) -> Path:
    """A copy of ``kubeconfig`` whose user's certificate comes from an exec plugin (``cat`` of an
    ExecCredential): only the full client runs exec plugins."""
    config = yaml.safe_load(kubeconfig.read_text())
    user = config["users"][0]["user"]
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {
            "clientCertificateData": base64.b64decode(user["client-certificate-data"]).decode(),
            "clientKeyData": base64.b64decode(user["client-key-data"]).decode(),
        },
    }
    (folder / "credential.json").write_text(json.dumps(credential))
    config["users"][0]["user"] = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": "cat",
            "args": [str(folder / "credential.json")],
            "interactiveMode": "Never",
        }
    }
    path = folder / "exec.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.usefixtures("crds")
async def test_an_exec_plugin_kubeconfig_goes_through_the_full_client(
    kube_client: KubeClient, namespace: str, as_tenant: Kubectl, binaries: Binaries, plugin_path: Path,
    tmp_path: Path,
) -> None:  # fmt: skip
    name = unique("kdbu-exec")
    await kube_client.create(DATABASE_USERS, database_user(name, "missing-pw"), namespace)
    exec_config = exec_kubeconfig(Path(as_tenant.env["KUBECONFIG"]), tmp_path)
    try:
        viaexec = Kubectl(binaries.path("kubectl"), exec_config, plugin_path)
        assert line_of(await viaexec("status", "-n", namespace), name)[:2] == [name, "Unknown"]
        denied = await viaexec("status", "-n", "default", code=1)
        assert denied.startswith("Error from server (Forbidden):")
    finally:
        await delete_users(kube_client, namespace)


def wrong_ca_kubeconfig(kubeconfig: Path, folder: Path) -> Path:
    """A copy of ``kubeconfig`` that trusts another certificate (the user's own), not the cluster's CA."""
    config = yaml.safe_load(kubeconfig.read_text())
    config["clusters"][0]["cluster"].pop("certificate-authority", None)
    config["clusters"][0]["cluster"]["certificate-authority-data"] = config["users"][0]["user"][
        "client-certificate-data"
    ]
    path = folder / "wrong-ca.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.usefixtures("crds")
async def test_the_plain_path_verifies_the_server(
    namespace: str, as_tenant: Kubectl, binaries: Binaries, plugin_path: Path, tmp_path: Path
) -> None:
    kubeconfig = wrong_ca_kubeconfig(Path(as_tenant.env["KUBECONFIG"]), tmp_path)
    refused = await Kubectl(binaries.path("kubectl"), kubeconfig, plugin_path)(
        "status", "-n", namespace, code=1
    )
    assert refused.startswith("Unable to connect to the server:")
    assert "CERTIFICATE_VERIFY_FAILED" in refused


def token_kubeconfig(kubeconfig: Path, token: str, folder: Path) -> Path:
    """A copy of ``kubeconfig`` whose user is a bearer token."""
    config = yaml.safe_load(kubeconfig.read_text())
    config["users"][0]["user"] = {"token": token}
    path = folder / "token.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.usefixtures("crds")
async def test_the_plain_path_with_a_service_account_token(
    kube_client: KubeClient, namespace: str, as_tenant: Kubectl, binaries: Binaries, plugin_path: Path,
    tmp_path: Path,
) -> None:  # fmt: skip
    name = unique("kdbu-token")
    await kube_client.create(DATABASE_USERS, database_user(name, "missing-pw"), namespace)
    await kube_client.create(SERVICE_ACCOUNTS, {"metadata": {"name": "reader"}}, namespace)
    binding = {
        "metadata": {"name": "dbu-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "dbu-user"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}],
    }
    await kube_client.create(ROLE_BINDINGS, binding, namespace)
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    issued = await kube_client.request(
        "POST", SERVICE_ACCOUNTS.path(namespace, "reader", "token"), body=request
    )
    kubeconfig = token_kubeconfig(Path(as_tenant.env["KUBECONFIG"]), issued["status"]["token"], tmp_path)
    reader = Kubectl(binaries.path("kubectl"), kubeconfig, plugin_path)
    try:
        assert line_of(await reader("status", "-n", namespace), name)[:2] == [name, "Unknown"]
        denied = await reader("status", "-n", "default", code=1)
        assert 'User "system:serviceaccount:' in denied
    finally:
        await delete_users(kube_client, namespace)
