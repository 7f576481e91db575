"""The chart against the real API server: every rendered object passes a server-side dry run (strict field
validation), and a release installs, upgrades and uninstalls with the real helm. There is no
controller-manager locally, so no pod runs: the objects are checked, and tests/integration/operator/
test_chart_rbac.py runs the operator itself with the ServiceAccount's permissions."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from dbuser_operator.api.finalizer_policy import POLICY_KIND
from dbuser_operator.api.v1alpha1.meta import target_finalizer
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import install_crds
from dbuser_operator.envtest.admission import BINDINGS, POLICIES
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.errors import NotFound
from tests.conftest import REPO, Runner
from tests.integration.operator.support.wait import eventually
from tests.unit.chart.chart import (
    CHART,
    CLUSTER_EVENT_RULES,
    CLUSTER_RULES,
    COMBINATIONS,
    KUBE_VERSION,
    LEADER_ELECTION_RULES,
    OPERATOR_RULES,
    SERVER_SECRET_RULES,
    manager,
    of_kind,
    parse,
    rules,
)

pytestmark = pytest.mark.integration

MONITORING_CRDS = {
    "servicemonitors.monitoring.coreos.com": "servicemonitor-crd.yaml",
    "prometheusrules.monitoring.coreos.com": "prometheusrule-crd.yaml",
}
DATA = Path(__file__).parent / "data"


async def _exists(api: client.ApiClient, crd: str) -> bool:
    try:
        await client.ApiextensionsV1Api(api).read_custom_resource_definition(crd, _request_timeout=30)
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


@pytest.fixture(scope="module")
async def monitoring_crds(kube_api: client.ApiClient) -> AsyncIterator[None]:
    """The ServiceMonitor and PrometheusRule kinds: the cluster's own, or typed stand-ins installed for these
    tests."""
    installed = []
    for crd, stand_in in MONITORING_CRDS.items():
        if not await _exists(kube_api, crd):
            await install_crds(kube_api, DATA / stand_in)
            installed.append(crd)
    yield
    for crd in installed:
        await client.ApiextensionsV1Api(kube_api).delete_custom_resource_definition(crd, _request_timeout=30)


@pytest.fixture
async def extra_namespaces(kube_api: client.ApiClient, namespace: str) -> AsyncIterator[list[str]]:
    """Two more namespaces to watch."""
    core = client.CoreV1Api(kube_api)
    names = [f"{namespace}-a", f"{namespace}-b"]
    for name in names:
        await core.create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=name)), _request_timeout=30
        )
    yield names
    for name in names:
        await core.delete_namespace(name, _request_timeout=30)


def _values_file(directory: Path, values: dict[str, Any]) -> Path:
    path = directory / f"values-{uuid.uuid4().hex[:8]}.yaml"
    path.write_text(yaml.safe_dump(values))
    return path


def _dry_run(kubectl: Runner, manifests: str, tmp_path: Path) -> str:
    """``kubectl apply --dry-run=server`` (strict field validation) of objects that name their namespace."""
    path = tmp_path / "manifests.yaml"
    path.write_text(manifests)
    result = kubectl("apply", "--dry-run=server", "--validate=strict", "-f", str(path), check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("combination", sorted(COMBINATIONS))
async def test_every_rendered_object_passes_a_server_side_dry_run(
    helm: Runner,
    kubectl: Runner,
    crds: list[str],
    monitoring_crds: None,
    namespace: str,
    extra_namespaces: list[str],
    tmp_path: Path,
    combination: str,
) -> None:
    values = dict(COMBINATIONS[combination])
    if "watchNamespaces" in values:
        values["watchNamespaces"] = extra_namespaces
    if values.get("clusterResourceNamespace"):  # one that exists, and is not watched
        values["clusterResourceNamespace"] = namespace
    rendered = helm(
        "template", "dry", str(CHART), "--namespace", namespace, "--include-crds",
        "--kube-version", KUBE_VERSION, "--values", str(_values_file(tmp_path, values)),
    ).stdout  # fmt: skip
    objects = parse(rendered)
    output = _dry_run(kubectl, rendered, tmp_path)
    applied = {
        (line.split("/")[0].split(".")[0], line.split("/")[1].split()[0]) for line in output.splitlines()
    }
    for obj in objects:
        assert (obj["kind"].lower(), obj["metadata"]["name"]) in applied, f"{obj['kind']} missing in {output}"
    assert output.count("(server dry run)") == len(objects)


def test_config_default_passes_a_server_side_dry_run(
    kubectl: Runner, crds: list[str], namespace: str, tmp_path: Path
) -> None:
    """config/default (kustomize), moved into the test namespace by an overlay, as users customise it."""
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    shutil.copytree(REPO / "config", overlay / "config")
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump({"namespace": namespace, "resources": ["config/default"]})
    )
    built = kubectl("kustomize", str(overlay)).stdout
    objects = parse(built)
    assert {obj["kind"] for obj in objects} >= {"CustomResourceDefinition", "Deployment", "ClusterRole"}
    output = _dry_run(kubectl, built, tmp_path)
    assert output.count("(server dry run)") == len(objects)


def only_in(namespaces: list[str]) -> list[dict[str, Any]]:
    """The JSON Patch of config/README that limits the finalizer policy to ``namespaces``."""
    selector = {"key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces}
    path = "/spec/matchConstraints/namespaceSelector"
    return [{"op": "add", "path": path, "value": {"matchExpressions": [selector]}}]


async def test_config_finalizer_policy_holds_the_default_target_where_an_overlay_says(
    kubectl: Runner, kube_api: client.ApiClient, crds: list[str], extra_namespaces: list[str], tmp_path: Path
) -> None:
    """config/finalizer-policy applied on its own, through an overlay that limits it to one namespace (as
    config/README shows for an operator that watches some namespaces only): in force there, for the default
    target only, and gone with `kubectl delete -k`."""
    watched, other = extra_namespaces
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    shutil.copytree(REPO / "config", overlay / "config")
    kustomization = {
        "resources": ["config/finalizer-policy"],
        "patches": [{"target": {"kind": POLICY_KIND}, "patch": yaml.safe_dump(only_in([watched]))}],
    }
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    kube = KubeClient(kube_api)
    try:
        kubectl("apply", "-k", str(overlay))
        await _held_on_creation(kube, watched, "default")
        assert not await _held(kube, other, "default")
        assert not await _held(kube, watched, "another")
    finally:
        kubectl("delete", "-k", str(overlay), "--ignore-not-found")
    await eventually(
        lambda: _not_held(kube, watched, "default"),
        limit=60,
        interval=0.2,
        message="the deleted policy was still applied",
    )


async def _not_held(kube: KubeClient, namespace: str, target: str) -> bool:
    return not await _held(kube, namespace, target)


async def _read(call: Any, *args: Any) -> Any:
    """The object, or None when the API server answers 404."""
    try:
        return await call(*args, _request_timeout=30)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


async def test_install_upgrade_uninstall(
    helm: Runner, kube_api: client.ApiClient, crds: list[str], namespace: str, tmp_path: Path
) -> None:
    release = f"rel-{uuid.uuid4().hex[:6]}"
    name = f"{release}-dbuser-operator"
    apps, core = client.AppsV1Api(kube_api), client.CoreV1Api(kube_api)
    rbac, policy = client.RbacAuthorizationV1Api(kube_api), client.PolicyV1Api(kube_api)

    installed = helm(
        "install", release, str(CHART), "--namespace", namespace, "--skip-crds",
        "--set", "mysql.host=mysql.databases.svc", "--set", "target=install-test",
    )  # fmt: skip
    # NOTES.txt: what to do next.
    notes = installed.stdout
    assert f"kubectl -n {namespace} create secret generic {name}-mysql-admin" in notes
    assert "dbuser-operator.dev/target: install-test" in notes
    assert "kubectl get dbu -A -l dbuser-operator.dev/target=install-test" in notes

    deployment = await apps.read_namespaced_deployment(name, namespace, _request_timeout=30)
    assert deployment.spec.replicas == 1
    assert deployment.spec.strategy.type == "Recreate"
    args = deployment.spec.template.spec.containers[0].args
    assert "--mysql-host=mysql.databases.svc" in args
    assert "--no-leader-elect" in args
    assert await core.read_namespaced_service_account(name, namespace, _request_timeout=30)
    assert await core.read_namespaced_service(f"{name}-metrics", namespace, _request_timeout=30)
    cluster_role = await rbac.read_cluster_role(name, _request_timeout=30)
    assert rules(kube_api.sanitize_for_serialization(cluster_role)) == OPERATOR_RULES | CLUSTER_RULES
    binding = await rbac.read_cluster_role_binding(name, _request_timeout=30)
    assert [(s.kind, s.name, s.namespace) for s in binding.subjects] == [("ServiceAccount", name, namespace)]
    assert await _read(rbac.read_namespaced_role, f"{name}-leader-election", namespace) is None
    # The finalizer policy: the API server serves it here, so helm renders it, and it is in force.
    kube = KubeClient(kube_api)
    assert (await kube.get(POLICIES, f"{name}-finalizer"))["spec"]["failurePolicy"] == "Ignore"
    assert (await kube.get(BINDINGS, f"{name}-finalizer"))["spec"]["policyName"] == f"{name}-finalizer"
    await _held_on_creation(kube, namespace, "install-test")

    # Upgrade: two replicas turn leader election on (Role, flag, rolling updates) and a PDB.
    helm(
        "upgrade", release, str(CHART), "--namespace", namespace, "--skip-crds", "--reuse-values",
        "--set", "replicaCount=2", "--set", "podDisruptionBudget.enabled=true",
    )  # fmt: skip
    deployment = await apps.read_namespaced_deployment(name, namespace, _request_timeout=30)
    assert deployment.spec.replicas == 2
    assert deployment.spec.strategy.type == "RollingUpdate"
    args = deployment.spec.template.spec.containers[0].args
    assert "--leader-elect" in args
    assert f"--leader-election-id={name}" in args
    assert "--mysql-host=mysql.databases.svc" in args  # --reuse-values kept it
    role = await rbac.read_namespaced_role(f"{name}-leader-election", namespace, _request_timeout=30)
    assert rules(kube_api.sanitize_for_serialization(role)) == LEADER_ELECTION_RULES
    pdb = await policy.read_namespaced_pod_disruption_budget(name, namespace, _request_timeout=30)
    assert pdb.spec.min_available == 1
    history = helm("history", release, "--namespace", namespace, "-o", "yaml").stdout
    assert [entry["revision"] for entry in yaml.safe_load(history)] == [1, 2]

    # Uninstall removes everything it installed (cluster-scoped objects too).
    helm("uninstall", release, "--namespace", namespace, "--wait", "--timeout", "60s")
    assert await _read(apps.read_namespaced_deployment, name, namespace) is None
    assert await _read(core.read_namespaced_service_account, name, namespace) is None
    assert await _read(core.read_namespaced_service, f"{name}-metrics", namespace) is None
    assert await _read(rbac.read_cluster_role, name) is None
    assert await _read(rbac.read_cluster_role_binding, name) is None
    assert await _read(rbac.read_namespaced_role, f"{name}-leader-election", namespace) is None
    assert await _read(policy.read_namespaced_pod_disruption_budget, name, namespace) is None
    for resource in (POLICIES, BINDINGS):
        with pytest.raises(NotFound):
            await kube.get(resource, f"{name}-finalizer")

    async def released() -> bool:
        return not await _held(kube, namespace, "install-test")

    message = "new DatabaseUsers still got the finalizer after the uninstall"
    await eventually(released, limit=60, interval=0.2, message=message)  # once the policy cache catches up
    # ... but never the CRD: the DatabaseUsers of every release live on.
    assert crds
    assert await _exists(kube_api, crds[0])


async def test_install_with_watch_namespaces_creates_roles_there(
    helm: Runner, kube_api: client.ApiClient, crds: list[str], namespace: str, extra_namespaces: list[str]
) -> None:
    release = f"ns-{uuid.uuid4().hex[:6]}"
    name = f"{release}-dbuser-operator"
    rbac = client.RbacAuthorizationV1Api(kube_api)
    installed = helm(
        "install", release, str(CHART), "--namespace", namespace, "--skip-crds",
        "--set", f"watchNamespaces={{{','.join(extra_namespaces)}}}",
    )  # fmt: skip
    # NOTES.txt tells to create the example in a watched namespace.
    assert f"kubectl -n {extra_namespaces[0]} create secret generic app-db-password" in installed.stdout
    for watched in extra_namespaces:
        role = await rbac.read_namespaced_role(name, watched, _request_timeout=30)
        assert rules(kube_api.sanitize_for_serialization(role)) == OPERATOR_RULES
        binding = await rbac.read_namespaced_role_binding(name, watched, _request_timeout=30)
        assert [(s.name, s.namespace) for s in binding.subjects] == [(name, namespace)]
    assert await _read(rbac.read_cluster_role, name) is None
    # The finalizer policy holds what the release serves: its target, in the namespaces it watches only.
    kube = KubeClient(kube_api)
    await _held_on_creation(kube, extra_namespaces[0], "default")
    assert not await _held(kube, namespace, "default")
    assert not await _held(kube, extra_namespaces[1], "another")
    # Namespaces and ClusterMySQLServers (cluster-scoped) by a ClusterRole of their own; the
    # ClusterMySQLServers' Secrets, in the release namespace (not watched), by a Role that may only get them.
    cluster_role = await rbac.read_cluster_role(f"{name}-cluster", _request_timeout=30)
    assert rules(kube_api.sanitize_for_serialization(cluster_role)) == CLUSTER_RULES
    cluster_binding = await rbac.read_cluster_role_binding(f"{name}-cluster", _request_timeout=30)
    assert [(s.name, s.namespace) for s in cluster_binding.subjects] == [(name, namespace)]
    server_secrets = await rbac.read_namespaced_role(f"{name}-server-secrets", namespace, _request_timeout=30)
    assert rules(kube_api.sanitize_for_serialization(server_secrets)) == SERVER_SECRET_RULES
    cluster_events = await rbac.read_namespaced_role(f"{name}-cluster-events", "default", _request_timeout=30)
    assert rules(kube_api.sanitize_for_serialization(cluster_events)) == CLUSTER_EVENT_RULES
    helm("uninstall", release, "--namespace", namespace, "--wait", "--timeout", "60s")
    for watched in extra_namespaces:
        assert await _read(rbac.read_namespaced_role, name, watched) is None
    assert await _read(rbac.read_cluster_role, f"{name}-cluster") is None
    assert await _read(rbac.read_namespaced_role, f"{name}-server-secrets", namespace) is None
    assert await _read(rbac.read_namespaced_role, f"{name}-cluster-events", "default") is None


async def _held(kube: KubeClient, namespace: str, target: str) -> bool:
    """Whether a DatabaseUser of ``target`` created in ``namespace`` would get ``target``'s finalizer (a
    dry run: nothing is stored)."""
    body = {
        "apiVersion": DATABASE_USERS.api_version,
        "kind": DATABASE_USERS.kind,
        "metadata": {"generateName": "probe-", "labels": {"dbuser-operator.dev/target": target}},
        "spec": {"password": {"name": "pw", "key": "password"}},
    }
    path = DATABASE_USERS.path(namespace)
    created = await kube.request("POST", path, query=[("dryRun", "All")], body=body)
    return target_finalizer(target) in (created["metadata"].get("finalizers") or [])


async def _held_on_creation(kube: KubeClient, namespace: str, target: str) -> None:
    """Until the API server applies a policy just installed (its policy cache catches up in a moment)."""
    await eventually(
        lambda: _held(kube, namespace, target),
        limit=60,
        interval=0.2,
        message=f"a new DatabaseUser of {target} in {namespace} never got the finalizer",
    )


@pytest.fixture
def renamed_chart(tmp_path: Path) -> tuple[Path, str]:
    """A copy of the chart whose CRD is in a group of its own: its installation can be watched from
    scratch without touching the session's DatabaseUser CRD."""
    group = f"mysql-{uuid.uuid4().hex[:8]}.chart-test.dbuser-operator.dev"
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    for path in (chart / "crds").glob("*.yaml"):
        path.write_text(path.read_text().replace("mysql.dbuser-operator.dev", group))
    return chart, group


def test_a_fresh_install_creates_the_crd_and_uninstall_keeps_it(
    helm: Runner,
    kubectl: Runner,
    namespace: str,
    renamed_chart: tuple[Path, str],
) -> None:
    chart, group = renamed_chart
    crd_name, role_crd = f"databaseusers.{group}", f"databaseroles.{group}"
    server_crd, cluster_server_crd = f"mysqlservers.{group}", f"clustermysqlservers.{group}"
    release = f"crd-{uuid.uuid4().hex[:6]}"
    try:
        helm("install", release, str(chart), "--namespace", namespace)
        kubectl("wait", "--for=condition=Established", f"crd/{crd_name}", "--timeout=60s")
        # The CRD from the chart serves DatabaseUsers (schema, defaults, printer columns).
        user = {
            "apiVersion": f"{group}/v1alpha1",
            "kind": "DatabaseUser",
            "metadata": {"name": "app", "namespace": namespace},
            "spec": {"password": {"name": "app-db-password", "key": "password"}},
        }
        manifest = Path(chart / "user.yaml")
        manifest.write_text(yaml.safe_dump(user))
        kubectl("apply", "-f", str(manifest))
        table = kubectl("get", f"databaseusers.{group}", "-n", namespace).stdout
        assert table.split()[:5] == ["NAME", "USER", "HOST", "READY", "REASON"]
        bad = {
            **user,
            "spec": {"password": {"name": "app-db-password", "key": "password"}, "user": "bad user"},
        }
        manifest.write_text(yaml.safe_dump({**bad, "metadata": {"name": "bad", "namespace": namespace}}))
        assert kubectl("apply", "-f", str(manifest), check=False).returncode != 0  # the schema refuses it

        # The chart's DatabaseRole CRD too: a role with the sample's shape, printer columns, a refusal.
        kubectl("wait", "--for=condition=Established", f"crd/{role_crd}", "--timeout=60s")
        role = {
            "apiVersion": f"{group}/v1alpha1",
            "kind": "DatabaseRole",
            "metadata": {"name": "app-reader", "namespace": namespace},
            "spec": {"privileges": [{"database": "app", "privileges": ["SELECT"]}]},
        }
        manifest.write_text(yaml.safe_dump(role))
        kubectl("apply", "-f", str(manifest))
        table = kubectl("get", f"dbrole.{group}", "-n", namespace).stdout
        assert table.split()[:5] == ["NAME", "ROLE", "READY", "REASON", "AGE"]
        stored = yaml.safe_load(
            kubectl("get", f"databaseroles.{group}", "app-reader", "-n", namespace, "-o", "yaml").stdout
        )
        assert stored["spec"]["deletionPolicy"] == "Delete"  # the schema's default
        bad_role = {**role, "metadata": {"name": "bad", "namespace": namespace}, "spec": {"role": "a'b"}}
        manifest.write_text(yaml.safe_dump(bad_role))
        assert kubectl("apply", "-f", str(manifest), check=False).returncode != 0

        # The server kinds: a MySQLServer and a ClusterMySQLServer as the samples write them, their printer
        # columns, defaults, a refusal; a DatabaseUser's serverRef cannot be changed afterwards.
        for crd_of_kind in (server_crd, cluster_server_crd):
            kubectl("wait", "--for=condition=Established", f"crd/{crd_of_kind}", "--timeout=60s")
        server_spec: dict[str, Any] = {
            "host": "mysql-reporting.databases.svc",
            "credentials": {
                "user": {"name": "reporting-admin", "key": "user"},
                "password": {"name": "reporting-admin", "key": "password"},
            },
        }
        cluster_name = f"shared-{uuid.uuid4().hex[:6]}"
        servers = [
            {
                "apiVersion": f"{group}/v1alpha1",
                "kind": "MySQLServer",
                "metadata": {"name": "reporting", "namespace": namespace},
                "spec": server_spec,
            },
            {
                "apiVersion": f"{group}/v1alpha1",
                "kind": "ClusterMySQLServer",
                "metadata": {"name": cluster_name},
                "spec": {**server_spec, "policy": {"namespaces": [{"namespaceSelector": {}}]}},
            },
        ]
        manifest.write_text(yaml.safe_dump_all(servers))
        kubectl("apply", "-f", str(manifest))
        columns = ["NAME", "HOST", "PORT", "READY", "REASON", "FLAVOUR", "VERSION", "ACCOUNTS", "AGE"]
        rows = kubectl("get", f"mysqlservers.{group}", "-n", namespace).stdout.splitlines()
        assert rows[0].split() == columns
        # The port is defaulted.
        assert rows[1].split()[:3] == ["reporting", "mysql-reporting.databases.svc", "3306"]
        rows = kubectl("get", f"clustermysqlservers.{group}", cluster_name).stdout.splitlines()
        assert rows[0].split() == columns
        stored = yaml.safe_load(
            kubectl("get", f"clustermysqlservers.{group}", cluster_name, "-o", "yaml").stdout
        )
        assert stored["spec"]["policy"]["namespaces"][0]["allowGlobalPrivileges"] is False  # defaulted
        bad_server = {**servers[0], "spec": {**server_spec, "host": "bad host; DROP"}}
        manifest.write_text(yaml.safe_dump(bad_server))
        assert kubectl("apply", "-f", str(manifest), check=False).returncode != 0
        on_server = {
            **user,
            "metadata": {"name": "on-server", "namespace": namespace},
            "spec": {
                "password": {"name": "app-db-password", "key": "password"},
                "serverRef": {"name": "reporting"},
            },
        }
        manifest.write_text(yaml.safe_dump(on_server))
        kubectl("apply", "-f", str(manifest))
        moved = kubectl(
            "patch", f"databaseusers.{group}", "on-server", "-n", namespace, "--type=merge",
            "-p", '{"spec": {"serverRef": {"name": "elsewhere"}}}', check=False,
        )  # fmt: skip
        assert moved.returncode != 0
        assert "serverRef" in moved.stderr

        # A second release with the CRD present: Helm skips it and installs the rest.
        second = helm(
            "install", f"{release}-2", str(chart), "--namespace", namespace, "--set", "target=second"
        )
        assert second.returncode == 0
        helm("uninstall", f"{release}-2", "--namespace", namespace, "--wait", "--timeout", "60s")
        helm("uninstall", release, "--namespace", namespace, "--wait", "--timeout", "60s")
        kept = kubectl("get", "crd", crd_name, "-o", "name", check=False)
        assert kept.stdout.strip() == f"customresourcedefinition.apiextensions.k8s.io/{crd_name}", (
            "helm uninstall must keep the CRD (and the users' resources)"
        )
        for name in (role_crd, server_crd, cluster_server_crd):
            assert kubectl("get", "crd", name, "-o", "name", check=False).returncode == 0
    finally:
        for name in (crd_name, role_crd, server_crd, cluster_server_crd):
            kubectl("delete", "crd", name, "--ignore-not-found", "--timeout=60s", check=False)
        # kubectl's discovery cache still knows the copies' short names (dbu, ...): refresh it, so that later
        # tests' `kubectl get dbu` finds the real kind, not a deleted copy.
        kubectl("api-resources", check=False)


def test_the_api_server_keeps_every_field_the_chart_sets(
    helm: Runner, kubectl: Runner, crds: list[str], namespace: str, tmp_path: Path
) -> None:
    """No field of the operator's container is pruned or dropped by the API server (a misplaced field
    would be)."""
    values = COMBINATIONS["everything-else"]
    rendered = helm(
        "template", "stored", str(CHART), "--namespace", namespace, "--kube-version", KUBE_VERSION,
        "--values", str(_values_file(tmp_path, values)),
    ).stdout  # fmt: skip
    expected = manager(parse(rendered))
    path = tmp_path / "deployment.yaml"
    path.write_text(yaml.safe_dump_all(of_kind(parse(rendered), "Deployment")))
    applied = kubectl("apply", "--dry-run=server", "-n", namespace, "-o", "yaml", "-f", str(path)).stdout
    container = yaml.safe_load(applied)["spec"]["template"]["spec"]["containers"][0]
    for key, value in expected.items():
        assert _contains(container[key], value), f"{key}: sent {value}, stored {container[key]}"


def _contains(stored: Any, sent: Any) -> bool:
    """Whether ``stored`` has everything of ``sent`` (the server may add defaults, never drop a field)."""
    if isinstance(sent, dict):
        return isinstance(stored, dict) and all(
            k in stored and _contains(stored[k], v) for k, v in sent.items()
        )
    if isinstance(sent, list):
        return (
            isinstance(stored, list)
            and len(stored) == len(sent)
            and all(_contains(a, b) for a, b in zip(stored, sent, strict=True))
        )
    return bool(stored == sent)
