"""The Helm chart, rendered offline by the pinned helm: metadata, CRD, values and their schema, RBAC, the
operator's command line (parsed by the operator's own flag parser), pod security, names, and the Kubernetes
schemas of every object (kubernetes-validate)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # comes with kubernetes-validate
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml
from packaging.version import Version
from pydantic_settings import CliApp

from dbuser_operator.api import crd
from dbuser_operator.api.v1alpha1 import PRIVILEGE_MAX_LENGTH, PRIVILEGE_PATTERN
from dbuser_operator.envtest import Binaries
from dbuser_operator.settings import Settings
from tests.conftest import REPO
from tests.unit.chart.chart import (
    CERT_MANAGER_RULES,
    CHART,
    CLUSTER_EVENT_RULES,
    CLUSTER_RULES,
    COMBINATIONS,
    KUBE_VERSION,
    LEADER_ELECTION_RULES,
    OPERATOR_RULES,
    SERVER_SECRET_RULES,
    WORKLOAD_CLUSTER_RULES,
    WORKLOAD_RULES,
    default_values,
    kustomize,
    leaves,
    manager,
    merged,
    of_kind,
    one,
    render,
    rules,
    template,
    values_schema,
)

PASSWORD_DIR = Path("/var/run/secrets/dbuser-operator/mysql")
TLS_DIR = Path("/var/run/secrets/dbuser-operator/mysql-tls")
WORKLOAD_CA_DIR = Path("/var/run/secrets/dbuser-operator/workload-ca")


def test_chart_metadata() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2"
    assert chart["name"] == "dbuser-operator"
    assert chart["version"] == "0.1.0"
    assert chart["appVersion"] == "0.1.0"
    assert chart["kubeVersion"] == ">=1.28.0-0"
    assert chart["description"]
    # The image the chart runs by default is the release of the Python package.
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert Version(project["version"]).base_version == chart["appVersion"]


def test_chart_crds_are_the_generated_ones() -> None:
    generated = crd.generate()
    assert crd.check(CHART / "crds", generated) == [], "run hack/generate-manifests.sh"
    assert sorted(p.name for p in (CHART / "crds").iterdir()) == sorted(generated)
    for name in generated:
        assert (CHART / "crds" / name).read_bytes() == (REPO / "crds" / name).read_bytes()


def test_generated_manifests_are_fresh(helm: Path) -> None:
    """config/ and the CRD copies are what hack/generate-manifests.sh makes of the chart and the models."""
    result = subprocess.run(
        [str(REPO / "hack" / "generate-manifests.sh"), "--check"],
        capture_output=True,
        text=True,
        check=False,
        env={"HELM": str(helm), "PYTHON": sys.executable, "PATH": "/usr/bin:/bin"},
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("combination", sorted(COMBINATIONS))
def test_helm_lint_strict(helm: Path, tmp_path: Path, combination: str) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(COMBINATIONS[combination]))
    result = subprocess.run(
        [str(helm), "lint", "--strict", str(CHART), "--values", str(values), "--kube-version", KUBE_VERSION],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout
    assert "[WARNING]" not in result.stdout
    assert "[ERROR]" not in result.stdout


# --- values, schema, README -----------------------------------------------------------------------------


def test_every_value_is_documented_in_the_readme_with_its_default() -> None:
    readme = (CHART / "README.md").read_text()
    rows = {
        match.group(1): match.group(2)
        for match in re.finditer(r"^\| `([A-Za-z0-9_.]+)` \| `(.*?)` \|", readme, flags=re.MULTILINE)
    }
    for path, default in leaves(default_values()):
        assert path in rows, f"{path} is not in the values table of charts/dbuser-operator/README.md"
        assert json.loads(rows[path]) == default, f"README gives {path} the default {rows[path]}"
    assert set(rows) == {path for path, _ in leaves(default_values())}, (
        "the README lists values that do not exist"
    )


def _schema_node(schema: dict[str, Any], path: str) -> dict[str, Any]:
    node = schema
    for key in path.split("."):
        properties = node.get("properties", {})
        if key not in properties:
            return {}
        node = properties[key]
    return node


FREE_FORM = {"podSecurityContext", "securityContext", "affinity"}  # Kubernetes structs: the API server checks


def test_the_schema_declares_every_value_and_accepts_the_defaults() -> None:
    schema = values_schema()
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.Draft7Validator(schema).validate(default_values())
    for path, _ in leaves(default_values()):
        top = path.split(".")[0]
        if top in FREE_FORM:
            assert _schema_node(schema, top)["type"] == "object"
            continue
        node = _schema_node(schema, path)
        assert node.get("type"), f"{path} is not declared in values.schema.json"
        assert node.get("description"), f"{path} has no description in values.schema.json"


def test_schema_objects_are_closed() -> None:
    """Every object of the schema that lists its properties refuses unknown ones (typos fail)."""

    def walk(node: dict[str, Any], where: str) -> None:
        if "properties" in node:
            closed = node.get("additionalProperties") is False or where in {
                "resources.requests",
                "resources.limits",
                "metrics.grafanaDashboard.labels",  # any labels; the sidecar's has a default
            }
            assert closed, f"{where or 'the root'} accepts unknown keys"
            for key, child in node["properties"].items():
                walk(child, f"{where}.{key}" if where else key)

    walk(values_schema(), "")


def test_schema_privileges_are_the_apis() -> None:
    node = _schema_node(values_schema(), "allowedGlobalPrivileges")
    assert (node["items"]["pattern"], node["items"]["maxLength"]) == (PRIVILEGE_PATTERN, PRIVILEGE_MAX_LENGTH)


BAD_VALUES: dict[str, dict[str, Any]] = {
    "unknown key": {"replicas": 2},
    "unknown nested key": {"mysql": {"hostname": "db"}},
    "replicaCount not a number": {"replicaCount": "two"},
    "negative replicaCount": {"replicaCount": -1},
    "log format": {"logFormat": "xml"},
    "log level": {"logLevel": "trace"},
    "port out of range": {"mysql": {"port": 70000}},
    "empty host": {"mysql": {"host": ""}},
    "namespace name": {"watchNamespaces": ["Team_A"]},
    "duplicate namespaces": {"watchNamespaces": ["a", "a"]},
    "not a privilege name": {"allowedGlobalPrivileges": ["process"]},
    "privilege with SQL": {"allowedGlobalPrivileges": ["SUPER; DROP"]},
    "empty target": {"target": ""},
    "target not a label value": {"target": "a b"},
    "pull policy": {"image": {"pullPolicy": "Sometimes"}},
    "digest": {"image": {"digest": "latest"}},
    "system schema": {"ownershipSchema": "mysql"},
    "leader election": {"leaderElection": {"enabled": "yes"}},
    "concurrency": {"maxConcurrentReconciles": 0},
    "extra args": {"extraArgs": ["verbose"]},
    "scrape interval": {"metrics": {"serviceMonitor": {"interval": "often"}}},
    "quantity": {"resources": {"limits": {"memory": "a lot"}}},
    "TLS mode": {"mysql": {"tls": {"mode": "verify-ca"}}},
    "TLS server name": {"mysql": {"tls": {"mode": "VERIFY_IDENTITY", "serverName": "a b"}}},
}


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_the_schema_refuses_bad_values(helm: Path, tmp_path: Path, case: str) -> None:
    result = template(helm, tmp_path, BAD_VALUES[case], check=False)
    assert result.returncode != 0, f"{case}: accepted"
    assert "values don't meet the specifications of the schema" in result.stderr, result.stderr


INCONSISTENT: dict[str, tuple[dict[str, Any], str]] = {
    "client cert without key": (
        {"mysql": {"tls": {"secretName": "t", "certKey": "tls.crt"}}},
        "set both or neither",
    ),
    "TLS keys without Secret": (
        {"mysql": {"tls": {"certKey": "a", "keyKey": "b"}}},
        "need mysql.tls.secretName",
    ),
    "TLS files with mode DISABLED": (
        {"mysql": {"tls": {"mode": "DISABLED", "secretName": "t"}}},
        "mysql.tls.mode DISABLED uses no TLS",
    ),
    "TLS required with mode DISABLED": (
        {"mysql": {"tls": {"mode": "DISABLED", "required": True}}},
        "mysql.tls.mode DISABLED uses no TLS",
    ),
    "TLS required with mode PREFERRED": (
        {"mysql": {"tls": {"mode": "PREFERRED", "required": True}}},
        "PREFERRED accepts a server without TLS",
    ),
    "VERIFY_CA without a Secret": (
        {"mysql": {"tls": {"mode": "VERIFY_CA"}}},
        "VERIFY_CA needs the CA",
    ),
    "VERIFY_CA without a CA key": (
        {
            "mysql": {
                "tls": {"mode": "VERIFY_CA", "secretName": "t", "caKey": "", "certKey": "c", "keyKey": "k"}
            }
        },
        "VERIFY_CA needs the CA",
    ),
    "server name with VERIFY_CA": (
        {"mysql": {"tls": {"mode": "VERIFY_CA", "secretName": "t", "serverName": "db"}}},
        "checked only with mysql.tls.mode VERIFY_IDENTITY",
    ),
    "server name with the default PREFERRED": (
        {"mysql": {"tls": {"serverName": "db"}}},
        "checked only with mysql.tls.mode VERIFY_IDENTITY",
    ),
    "two replicas without leader election": (
        {"replicaCount": 2, "leaderElection": {"enabled": False}},
        "needs leader election",
    ),
    "PDB that blocks every drain": (
        {"replicaCount": 2, "podDisruptionBudget": {"enabled": True, "minAvailable": 2}},
        "must be lower than replicaCount",
    ),
    "existing ServiceAccount without a name": ({"serviceAccount": {"create": False}}, "serviceAccount.name"),
}


@pytest.mark.parametrize("case", sorted(INCONSISTENT))
def test_the_templates_refuse_inconsistent_values(helm: Path, tmp_path: Path, case: str) -> None:
    values, message = INCONSISTENT[case]
    result = template(helm, tmp_path, values, check=False)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr


# --- RBAC ------------------------------------------------------------------------------------------------


def _leader_elect(values: dict[str, Any]) -> bool:
    enabled = values["leaderElection"]["enabled"]
    return bool(values["replicaCount"] > 1 if enabled is None else enabled)


@pytest.mark.parametrize("combination", sorted(COMBINATIONS))
def test_rbac_is_exactly_what_the_operator_needs(helm: Path, tmp_path: Path, combination: str) -> None:
    values = merged(default_values(), COMBINATIONS[combination])
    objects = render(helm, tmp_path, COMBINATIONS[combination], release="dbu", namespace="ops")
    account = one(objects, "ServiceAccount")["metadata"]
    subject = [{"kind": "ServiceAccount", "name": account["name"], "namespace": "ops"}]
    roles = {(r["metadata"].get("namespace"), r["metadata"]["name"]): r for r in of_kind(objects, "Role")}
    bindings = of_kind(objects, "RoleBinding")

    signer = bool(values["workloadIdentity"]["signingCA"]["secretName"])
    namespaced_rules = OPERATOR_RULES | (WORKLOAD_RULES if signer else frozenset())
    if values["certManager"]["enabled"]:
        namespaced_rules |= CERT_MANAGER_RULES
    cluster_rules = CLUSTER_RULES | (WORKLOAD_CLUSTER_RULES if signer else frozenset())
    secrets_namespace = values["clusterResourceNamespace"] or "ops"
    server_secrets = roles.get((secrets_namespace, "dbu-dbuser-operator-server-secrets"))
    if values["watchNamespaces"]:
        cluster_role = one(objects, "ClusterRole")
        assert cluster_role["metadata"]["name"] == "dbu-dbuser-operator-cluster"
        assert rules(cluster_role) == cluster_rules
        assert one(objects, "ClusterRoleBinding")["roleRef"]["name"] == "dbu-dbuser-operator-cluster"
        assert one(objects, "ClusterRoleBinding")["subjects"] == subject
        for namespace in values["watchNamespaces"]:
            assert rules(roles[(namespace, "dbu-dbuser-operator")]) == namespaced_rules
            (binding,) = [
                b
                for b in bindings
                if b["metadata"]["namespace"] == namespace and b["metadata"]["name"] == "dbu-dbuser-operator"
            ]
            assert binding["roleRef"] == {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "dbu-dbuser-operator",
            }
            assert binding["subjects"] == subject
        # The ClusterMySQLServers' admin Secrets: readable in the cluster resource namespace, written never.
        if secrets_namespace in values["watchNamespaces"]:
            assert server_secrets is None
        else:
            assert server_secrets is not None
            assert rules(server_secrets) == SERVER_SECRET_RULES
            name = "dbu-dbuser-operator-server-secrets"
            (binding,) = [b for b in bindings if b["metadata"]["name"] == name]
            assert binding["metadata"]["namespace"] == secrets_namespace
            assert binding["roleRef"]["name"] == name
            assert binding["subjects"] == subject
    else:
        assert rules(one(objects, "ClusterRole")) == namespaced_rules | cluster_rules
        binding = one(objects, "ClusterRoleBinding")
        assert binding["roleRef"]["name"] == one(objects, "ClusterRole")["metadata"]["name"]
        assert binding["subjects"] == subject
        assert server_secrets is None  # the ClusterRole reads Secrets everywhere

    lease_role = roles.get(("ops", "dbu-dbuser-operator-leader-election"))
    if _leader_elect(values):
        assert lease_role is not None
        assert rules(lease_role) == LEADER_ELECTION_RULES
        (binding,) = [b for b in bindings if b["metadata"]["name"] == "dbu-dbuser-operator-leader-election"]
        assert binding["metadata"]["namespace"] == "ops"
        assert binding["subjects"] == subject
    else:
        assert lease_role is None
    cluster_events = roles.get(("default", "dbu-dbuser-operator-cluster-events"))
    if values["watchNamespaces"] and "default" not in values["watchNamespaces"]:
        assert cluster_events is not None
        assert rules(cluster_events) == CLUSTER_EVENT_RULES
        (binding,) = [b for b in bindings if b["metadata"]["name"] == "dbu-dbuser-operator-cluster-events"]
        assert binding["metadata"]["namespace"] == "default"
        assert binding["subjects"] == subject
    else:
        assert cluster_events is None  # the ClusterRole or the Role of the watched default has them
    expected_roles = (
        len(values["watchNamespaces"])
        + _leader_elect(values)
        + (server_secrets is not None)
        + (cluster_events is not None)
    )
    assert len(roles) == len(bindings) == expected_roles


def test_rbac_can_be_left_out(helm: Path, tmp_path: Path) -> None:
    objects = render(helm, tmp_path, {"rbac": {"create": False}, "replicaCount": 2})
    kinds = {obj["kind"] for obj in objects}
    assert not kinds & {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}


# --- the operator's command line ---------------------------------------------------------------------------


def _parse_args(args: list[str], monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The settings the operator itself makes of ``args`` (its own flag parser, no environment)."""
    for name in list(os.environ):
        if name.startswith("DBUSER_OPERATOR_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("POD_NAMESPACE", "ops")
    monkeypatch.setenv("POD_NAME", "dbu-dbuser-operator-abc")
    return CliApp.run(Settings, cli_args=args)


def _mounted_secret(deployment: dict[str, Any], file: Path) -> tuple[str, str]:
    """(Secret name, key) that the file at ``file`` in the manager container comes from."""
    pod = deployment["spec"]["template"]["spec"]
    (mount,) = [m for m in pod["containers"][0]["volumeMounts"] if Path(m["mountPath"]) == file.parent]
    assert mount["readOnly"] is True
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    (item,) = [i for i in volume["secret"]["items"] if i["path"] == file.name]
    return volume["secret"]["secretName"], item["key"]


@pytest.mark.parametrize("combination", sorted(COMBINATIONS))
def test_args_are_the_operators_flags(
    helm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, combination: str
) -> None:
    values = merged(default_values(), COMBINATIONS[combination])
    objects = render(helm, tmp_path, COMBINATIONS[combination], release="dbu", namespace="ops")
    deployment = one(objects, "Deployment")
    settings = _parse_args(manager(objects)["args"], monkeypatch)
    mysql, tls = values["mysql"], values["mysql"]["tls"]

    assert settings.target == values["target"]
    assert settings.target_label == values["targetLabel"]
    assert settings.namespaces == values["watchNamespaces"]
    assert settings.kubeconfig is None  # in-cluster
    assert (settings.mysql_host, settings.mysql_port, settings.mysql_user) == (
        mysql["host"],
        mysql["port"],
        mysql["user"],
    )
    assert settings.default_server is values["defaultServer"]
    assert settings.server_check_period == values["serverCheckPeriod"]
    assert settings.cluster_resource_namespace == (values["clusterResourceNamespace"] or "ops")
    if not values["defaultServer"]:  # no server of its own: no admin Secret, no TLS files mounted
        pod = deployment["spec"]["template"]["spec"]
        assert [volume["name"] for volume in pod["volumes"]] == ["tmp"]
        assert settings.mysql_password_file is None
        assert (settings.mysql_tls_ca, settings.mysql_tls_cert, settings.mysql_tls_key) == (None, None, None)
        return
    password_file = PASSWORD_DIR / mysql["adminSecret"]["key"]
    assert settings.mysql_password_file == password_file
    secret = mysql["adminSecret"]["name"] or "dbu-dbuser-operator-mysql-admin"
    assert _mounted_secret(deployment, password_file) == (secret, mysql["adminSecret"]["key"])
    expected_timeout = 10 if "--mysql-connect-timeout=10" in values["extraArgs"] else mysql["connectTimeout"]
    assert settings.mysql_connect_timeout == expected_timeout

    files = {"ca": tls["caKey"], "cert": tls["certKey"], "key": tls["keyKey"]} if tls["secretName"] else {}
    for name, setting in (
        ("ca", settings.mysql_tls_ca),
        ("cert", settings.mysql_tls_cert),
        ("key", settings.mysql_tls_key),
    ):
        if files.get(name):
            assert setting == TLS_DIR / files[name]
            assert _mounted_secret(deployment, TLS_DIR / files[name]) == (tls["secretName"], files[name])
        else:
            assert setting is None
    assert settings.mysql_tls_required is tls["required"]
    assert settings.mysql_ssl_mode == (tls["mode"] or None)
    assert settings.mysql_tls_server_name == (tls["serverName"] or None)
    legacy = "VERIFY_IDENTITY" if files.get("ca") or files.get("cert") or tls["required"] else "PREFERRED"
    assert settings.mysql_tls_options().effective_mode == (tls["mode"] or legacy)

    connection = values["connection"]
    assert (settings.connection_host, settings.connection_port) == (
        connection["host"] or None,
        connection["port"],
    )
    assert settings.connection_ssl_mode == (connection["sslMode"] or None)
    assert [e.model_dump(by_alias=True, exclude_none=True) for e in settings.connection_endpoints] == [
        {"port": 3306, **endpoint} for endpoint in connection["endpoints"]
    ]

    workload = values["workloadIdentity"]
    if workload["signingCA"]["secretName"]:
        assert settings.workload_signing_ca == WORKLOAD_CA_DIR
        for name in ("tls.crt", "tls.key"):
            secret_file = WORKLOAD_CA_DIR / name
            assert _mounted_secret(deployment, secret_file) == (workload["signingCA"]["secretName"], name)
    else:
        assert settings.workload_signing_ca is None
    assert settings.workload_certificate_max_lifetime == workload["certificateMaxLifetime"]
    assert settings.workload_binding_grace == workload["bindingGrace"]
    assert settings.ownership_schema == values["ownershipSchema"]
    assert settings.reserved_users == values["reservedUsers"]
    assert settings.allowed_global_privileges == values["allowedGlobalPrivileges"]
    assert settings.cert_manager is values["certManager"]["enabled"]
    assert settings.cert_manager_cluster_issuers == values["certManager"]["clusterIssuers"]
    assert settings.resync_period == values["resyncPeriod"]
    assert settings.max_concurrent_reconciles == values["maxConcurrentReconciles"]
    assert settings.shutdown_timeout == values["shutdownTimeout"]
    assert settings.metrics_bind_address == "0.0.0.0:8080"
    assert settings.health_probe_bind_address == "0.0.0.0:8081"
    assert settings.leader_elect is _leader_elect(values)
    if settings.leader_elect:
        assert settings.leader_election_id == (values["leaderElection"]["leaseName"] or "dbu-dbuser-operator")
    assert settings.leader_election_namespace == "ops"  # POD_NAMESPACE, from the downward API below
    assert settings.log_format == values["logFormat"]
    assert settings.log_level == values["logLevel"]

    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in manager(objects)["env"]}
    assert env == {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"}
    assert deployment["spec"]["strategy"]["type"] == (
        "RollingUpdate" if settings.leader_elect else "Recreate"
    )


def test_the_charts_defaults_are_the_operators(
    helm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every flag the chart passes by default has the operator's own default, except the deliberate ones."""
    chart = _parse_args(manager(render(helm, tmp_path))["args"], monkeypatch).model_dump()
    operator = _parse_args([], monkeypatch).model_dump()
    deliberate = {
        "mysql_host": ("mysql", "127.0.0.1"),  # a Service in the cluster, not the pod itself
        "mysql_password_file": (PASSWORD_DIR / "password", None),  # the mounted Secret
    }
    differences = {key: (chart[key], operator[key]) for key in chart if chart[key] != operator[key]}
    assert differences == deliberate


# --- pod ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("combination", sorted(COMBINATIONS))
def test_the_pod_is_locked_down_and_probed(helm: Path, tmp_path: Path, combination: str) -> None:
    values = merged(default_values(), COMBINATIONS[combination])
    objects = render(helm, tmp_path, COMBINATIONS[combination])
    deployment = one(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = manager(objects)

    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["runAsUser"] == 65532
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["serviceAccountName"] == one(objects, "ServiceAccount")["metadata"]["name"]
    assert pod["terminationGracePeriodSeconds"] >= values["shutdownTimeout"] + 10

    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 8080, "health": 8081}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert container["resources"] == values["resources"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert "emptyDir" in next(v for v in pod["volumes"] if v["name"] == mounts["/tmp"])
    for volume in pod["volumes"]:
        if "secret" in volume:
            assert volume["secret"]["defaultMode"] == 0o440  # group-readable through fsGroup, no one else

    service = one(objects, "Service")
    assert service["spec"]["ports"] == [
        {
            "name": "metrics",
            "port": values["metrics"]["service"]["port"],
            "targetPort": "metrics",
            "protocol": "TCP",
        }
    ]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()


def test_optional_objects(helm: Path, tmp_path: Path) -> None:
    defaults = render(helm, tmp_path)
    assert of_kind(defaults, "ServiceMonitor") == []
    assert of_kind(defaults, "PodDisruptionBudget") == []
    assert one(defaults, "Deployment")["spec"]["replicas"] == 1

    objects = render(helm, tmp_path, COMBINATIONS["ha-pdb-servicemonitor"])
    deployment, service = one(objects, "Deployment"), one(objects, "Service")
    assert deployment["spec"]["replicas"] == 2
    pdb = one(objects, "PodDisruptionBudget")
    assert pdb["apiVersion"] == "policy/v1"
    assert pdb["spec"] == {"minAvailable": 1, "selector": deployment["spec"]["selector"]}
    monitor = one(objects, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"] == [
        {"port": "metrics", "path": "/metrics", "scheme": "http", "interval": "30s", "scrapeTimeout": "10s"}
    ]
    assert monitor["metadata"]["labels"]["release"] == "prom"


def test_image(helm: Path, tmp_path: Path) -> None:
    assert manager(render(helm, tmp_path))["image"] == "dbuser-operator:0.1.0"
    tagged = render(
        helm, tmp_path, {"image": {"repository": "r.example/op", "tag": "1.2.3", "pullPolicy": "Always"}}
    )
    assert (manager(tagged)["image"], manager(tagged)["imagePullPolicy"]) == ("r.example/op:1.2.3", "Always")
    digest = "sha256:" + "0" * 64
    pinned = render(helm, tmp_path, {"image": {"tag": "1.2.3", "digest": digest}})
    assert manager(pinned)["image"] == f"dbuser-operator@{digest}"


def test_every_name_includes_the_release_name(helm: Path, tmp_path: Path) -> None:
    """Two releases (two MySQL servers) in one namespace share no object, Lease or Secret name."""
    values = {
        "replicaCount": 2,
        "podDisruptionBudget": {"enabled": True},
        "metrics": {"serviceMonitor": {"enabled": True}},
    }
    names = {}
    for release in ("mysql-main", "mysql-report"):
        objects = render(helm, tmp_path, values, release=release)
        names[release] = {(obj["kind"], obj["metadata"]["name"]) for obj in objects}
        assert all(release in name for _, name in names[release])
        args = manager(objects)["args"]
        assert f"--leader-election-id={release}-dbuser-operator" in args
        secret = one(objects, "Deployment")["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"]
        assert secret == f"{release}-dbuser-operator-mysql-admin"
    assert names["mysql-main"].isdisjoint(names["mysql-report"])
    # A release name that contains the chart name is used as it is.
    objects = render(helm, tmp_path, release="dbuser-operator")
    assert one(objects, "Deployment")["metadata"]["name"] == "dbuser-operator"


# --- Kubernetes schemas (offline) --------------------------------------------------------------------------


def _validate(doc: dict[str, Any]) -> None:
    version = KUBE_VERSION.lstrip("v")
    major_minor = ".".join(version.split(".")[:2])
    supported = kubernetes_validate.latest_version()
    if Version(major_minor) > Version(supported):
        version = supported  # the closest version it knows
    kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.parametrize("combination", sorted(COMBINATIONS))
def test_kubernetes_validate_accepts_every_object(helm: Path, tmp_path: Path, combination: str) -> None:
    objects = render(helm, tmp_path, COMBINATIONS[combination])
    objects += [yaml.safe_load(text) for text in crd.generate().values()]
    for doc in objects:
        if doc["apiVersion"].startswith("monitoring.coreos.com/"):
            continue  # not a Kubernetes API: the integration tests check it against a CRD
        try:
            _validate(doc)
        except kubernetes_validate.ValidationError as error:
            pytest.fail(f"{doc['kind']} {doc['metadata']['name']}: {error}")


def test_kustomize_builds_config_default_like_the_chart(
    binaries: Binaries, helm: Path, tmp_path: Path
) -> None:
    """`kubectl kustomize config/default` works (pinned kubectl) and gives the chart's RBAC and pod."""
    objects = kustomize(binaries.path("kubectl"), REPO / "config" / "default")
    namespace = "dbuser-operator-system"
    assert one(objects, "Namespace")["metadata"]["name"] == namespace
    installed = sorted(of_kind(objects, "CustomResourceDefinition"), key=lambda obj: obj["metadata"]["name"])
    generated = sorted(map(yaml.safe_load, crd.generate().values()), key=lambda obj: obj["metadata"]["name"])
    assert installed == generated, "config/ installs the generated CRDs"
    assert rules(one(objects, "ClusterRole")) == OPERATOR_RULES | CLUSTER_RULES
    assert rules(one(objects, "Role")) == LEADER_ELECTION_RULES
    account = one(objects, "ServiceAccount")["metadata"]
    assert account == {**account, "name": "dbuser-operator-controller-manager", "namespace": namespace}
    for binding in of_kind(objects, "ClusterRoleBinding") + of_kind(objects, "RoleBinding"):
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account["name"], "namespace": namespace}
        ]
    deployment = one(objects, "Deployment")
    assert deployment["metadata"] == {**deployment["metadata"], "name": "dbuser-operator-controller-manager"}
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == account["name"]

    chart = render(
        helm,
        tmp_path,
        {"leaderElection": {"enabled": True, "leaseName": "dbuser-operator"}},
        release="dbuser-operator",
        namespace=namespace,
    )
    chart_pod = one(chart, "Deployment")["spec"]["template"]["spec"]
    pod = deployment["spec"]["template"]["spec"]
    for key in ("securityContext", "terminationGracePeriodSeconds", "automountServiceAccountToken"):
        assert pod[key] == chart_pod[key]
    # The release "dbuser-operator" has the names config/ uses after its prefix: the pods are the same.
    assert pod["containers"] == chart_pod["containers"]
    assert pod["volumes"] == chart_pod["volumes"]
    for doc in objects:
        _validate(doc)
