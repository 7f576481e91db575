"""The README, followed top to bottom: its Install block and its first DatabaseUser, run in order against the
local API server and MySQL, and the DatabaseUser is Ready (its account logs in with the README's password).

The blocks are read from README.md, so the test breaks when the README drifts. Each command runs as written
with the real helm and kubectl, but for what a local environment cannot do or must not share:
- ``docker build``/``docker push``: no Docker engine; the test checks that the pushed image is the one
  ``helm install`` sets, and runs the image's entry point (``dbuser-operator``) itself;
- ``helm install``: rendered by ``helm template`` with the same arguments and applied with kubectl (there is
  no controller-manager to run a pod), with the MySQL server, target and bookkeeping schema of the test's
  own appended (``--set``, as a user with several releases does);
- ``kubectl rollout status``: the Deployment's container run as a local process, with its args and env, the
  Secret volumes it mounts as files, and a token of the chart's ServiceAccount; then its /readyz.
The README's namespace becomes one of the test's own, its account name a unique one.
"""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio import client

from dbuser_operator.envtest import KubeCluster, MySQLServer
from dbuser_operator.envtest.kubeconfig import current_cluster
from dbuser_operator.envtest.ports import free_port
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.resources import SECRETS
from tests.conftest import REPO, Runner
from tests.integration.operator.rbac.test_chart_rbac import service_account_token, write_token_kubeconfig
from tests.integration.operator.support.builders import unique
from tests.integration.operator.support.instances import new_target
from tests.integration.operator.support.kube import wait_for_ready, wait_until_gone
from tests.integration.operator.support.mysql import account_exists, can_log_in, mysql_query
from tests.integration.operator.support.wait import eventually
from tests.support.readme import commands, fenced

pytestmark = [pytest.mark.integration, pytest.mark.one_flavour]

README_NAMESPACE = "dbuser-operator"
PASSWORD_PLACEHOLDER = "<the MySQL admin password>"
TARGET_LABEL = "dbuser-operator.dev/target"


class Walk:
    """The state of one walk through the README: what it installed, and the operator process it runs."""

    def __init__(self, kube: KubeCluster, kubectl: Runner, helm: Runner, mysql: MySQLServer, workdir: Path):
        self.kube, self.kubectl, self.helm, self.mysql, self.workdir = kube, kubectl, helm, mysql, workdir
        self.namespace = f"readme-{uuid.uuid4().hex[:8]}"
        self.target, self.schema = new_target("readme"), f"dbu_readme_{uuid.uuid4().hex[:8]}"
        self.pushed: list[str] = []
        self.readme_target = ""
        self.rendered: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.health_port = free_port()

    def local(self, args: list[str]) -> list[str]:
        """The command with the test's namespace, and paths in the repository as absolute ones (the README's
        commands run at the repository's root)."""
        return [
            self.namespace
            if arg == README_NAMESPACE
            else str(REPO / arg)
            if not arg.startswith("-") and "/" in arg and (REPO / arg).exists()
            else arg
            for arg in args
        ]

    def docker(self, args: list[str]) -> None:
        if args[1] == "build":
            assert args[2] == "-t", args
            assert args[4] == ".", f"not a build of this repository's Dockerfile: {args}"
            self.pushed.append(args[3])
        else:
            assert args[1:] == ["push", self.pushed[-1]], f"push of an image not built above: {args}"

    def run_kubectl(self, args: list[str]) -> None:
        args = [arg.replace(PASSWORD_PLACEHOLDER, self.mysql.password) for arg in self.local(args)]
        self.kubectl(*args[1:])

    def helm_install(self, args: list[str]) -> None:
        assert args[1] == "install", args
        values = dict(arg.split("=", 1) for arg in args[args.index("--set") :] if "=" in arg)
        self.readme_target = values["target"]
        image = f"{values['image.repository']}:{self.chart_version()}"
        assert image in self.pushed, f"helm installs {image}, the README pushes {self.pushed}"
        own = {
            "mysql.host": self.mysql.host,
            "mysql.port": str(self.mysql.port),
            "mysql.user": self.mysql.user,
            "target": self.target,
            "ownershipSchema": self.schema,
        }
        overrides = [item for key, value in own.items() for item in ("--set", f"{key}={value}")]
        rendered = self.helm("template", *self.local(args)[2:], *overrides).stdout
        self.rendered = self.workdir / "rendered.yaml"
        self.rendered.write_text(rendered)
        self.kubectl("apply", "-f", str(self.rendered))

    def chart_version(self) -> str:
        chart = yaml.safe_load((REPO / "charts" / "dbuser-operator" / "Chart.yaml").read_text())
        return str(chart["appVersion"])

    async def start_operator(self, api: client.ApiClient, kube_client: KubeClient, deployment: str) -> None:
        """The Deployment's container as a local process, as the pod would run it."""
        obj = yaml.safe_load(
            self.kubectl("get", "deployment", deployment, "-n", self.namespace, "-o", "yaml").stdout
        )
        pod = obj["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        args: list[str] = list(container["args"])
        for mount in container.get("volumeMounts", []):
            secret = volumes[mount["name"]].get("secret")
            if secret is None:
                continue  # an emptyDir (/tmp): the process has its own
            folder = self.workdir / mount["name"]
            folder.mkdir(mode=0o700)
            data = (await kube_client.get(SECRETS, secret["secretName"], self.namespace))["data"]
            for item in secret["items"]:
                (folder / item["path"]).write_bytes(base64.b64decode(data[item["key"]]))
            args = [arg.replace(mount["mountPath"], str(folder)) for arg in args]
        # Loopback ports of its own: the machine is shared.
        args = [
            a for a in args if not a.startswith(("--metrics-bind-address=", "--health-probe-bind-address="))
        ]
        args += [
            "--metrics-bind-address=127.0.0.1:0",
            f"--health-probe-bind-address=127.0.0.1:{self.health_port}",
        ]
        account = pod["serviceAccountName"]
        token = await service_account_token(api, account, self.namespace)
        user = f"system:serviceaccount:{self.namespace}:{account}"
        kubeconfig = write_token_kubeconfig(
            self.workdir / "sa.kubeconfig", current_cluster(self.kube.kubeconfig), user, token
        )
        env = {"PATH": os.environ["PATH"], "HOME": str(self.workdir)}
        fields = {"metadata.name": f"{deployment}-local", "metadata.namespace": self.namespace}
        for variable in container.get("env", []):
            value = variable.get("value")
            if value is None:
                value = fields[variable["valueFrom"]["fieldRef"]["fieldPath"]]
            env[variable["name"]] = value
        self.spawn([*args, f"--kubeconfig={kubeconfig}"], env)

        def ready() -> bool:
            assert self.process is not None
            assert self.process.poll() is None, self.log()
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{self.health_port}/readyz", timeout=5
                ) as answer:
                    return bool(answer.status == 200)
            except OSError as error:
                raise AssertionError(f"/readyz: {error}") from None

        await eventually(ready, limit=60, interval=0.2, message="the operator never became ready")

    def spawn(self, args: list[str], env: dict[str, str]) -> None:
        """The image's entry point, ``dbuser-operator``, from this environment."""
        entry_point = Path(sys.executable).parent / "dbuser-operator"
        with (self.workdir / "operator.log").open("wb") as log:
            self.process = subprocess.Popen(
                [str(entry_point), *args], env=env, stdout=log, stderr=subprocess.STDOUT
            )

    def log(self) -> str:
        return (self.workdir / "operator.log").read_text(errors="replace")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def walk(
    kube: KubeCluster, kubectl: Runner, helm: Runner, mysql: MySQLServer, crds: list[str], tmp_path: Path
) -> Iterator[Walk]:
    state = Walk(kube, kubectl, helm, mysql, tmp_path)
    yield state
    state.stop()
    if state.rendered is not None:
        kubectl("delete", "-f", str(state.rendered), "--ignore-not-found", "--wait=false")
    kubectl("delete", "namespace", state.namespace, "--ignore-not-found", "--wait=false")
    mysql_query(mysql, f"DROP DATABASE IF EXISTS `{state.schema}`")


async def test_the_readme_install_and_first_database_user_work_in_order(
    walk: Walk, kube_api: client.ApiClient, namespace: str, mysql: MySQLServer
) -> None:
    kube_client = KubeClient(kube_api)
    (install,) = fenced("Install", "sh")
    for command in commands(install):
        if command[0] == "docker":
            walk.docker(command)
        elif command[0] == "helm":
            walk.helm_install(command)
        elif command[0] == "kubectl" and "rollout" in command:
            (deployment,) = [arg.split("/", 1)[1] for arg in command if arg.startswith("deployment/")]
            await walk.start_operator(kube_api, kube_client, deployment)
        elif command[0] == "kubectl":
            walk.run_kubectl(command)
        else:
            pytest.fail(f"the README's Install runs {command[0]}, which this test does not know")
    assert walk.process is not None, "the Install block never waits for the operator"

    (first,) = fenced("A first DatabaseUser", "yaml")
    documents = [doc for doc in yaml.safe_load_all(first) if doc]
    (user,) = [doc for doc in documents if doc["kind"] == "DatabaseUser"]
    (secret,) = [doc for doc in documents if doc["kind"] == "Secret"]
    assert user["metadata"]["labels"][TARGET_LABEL] == walk.readme_target, "the README's targets differ"
    assert user["spec"]["password"]["name"] == secret["metadata"]["name"]
    user["metadata"]["labels"][TARGET_LABEL] = walk.target
    account = unique("readme").replace("-", "_")
    user["spec"]["user"] = account
    manifest = walk.workdir / "first-user.yaml"
    manifest.write_text(yaml.safe_dump_all(documents))
    walk.kubectl("apply", "-n", namespace, "-f", str(manifest))
    name = user["metadata"]["name"]
    try:
        await wait_for_ready(kube_client, namespace, name, limit=60)
    except AssertionError as error:
        raise AssertionError(f"{error}\noperator log:\n{walk.log()[-4000:]}") from None
    password = secret["stringData"][user["spec"]["password"]["key"]]
    assert can_log_in(mysql, account, password)

    walk.kubectl("delete", "-n", namespace, "-f", str(manifest), "--wait=false")
    await wait_until_gone(kube_client, namespace, name, limit=60)
    assert not account_exists(mysql, account)
