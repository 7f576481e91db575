"""Rendering the Helm chart with the pinned helm, and reading what it renders (shared by the chart tests)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO, read_pins

CHART = REPO / "charts" / "dbuser-operator"
KUBE_VERSION = read_pins()["KUBERNETES_VERSION"]
API_GROUP = "mysql.dbuser-operator.dev"

Rule = tuple[str, str, str]  # (API group, resource, verb)

# What the operator does with the Kubernetes API (README "RBAC"): exactly these, nothing more.
OPERATOR_RULES: frozenset[Rule] = frozenset(
    {(API_GROUP, "databaseusers", verb) for verb in ("get", "list", "watch", "patch")}
    | {(API_GROUP, "databaseusers/status", "patch")}
    | {(API_GROUP, "databaseroles", verb) for verb in ("get", "list", "watch", "patch")}
    | {(API_GROUP, "databaseroles/status", "patch")}
    | {(API_GROUP, "databases", verb) for verb in ("get", "list", "watch", "patch")}
    | {(API_GROUP, "databases/status", "patch")}
    | {(API_GROUP, "mysqlservers", verb) for verb in ("get", "list", "watch", "patch")}
    | {(API_GROUP, "mysqlservers/status", "patch")}
    | {("", "secrets", verb) for verb in ("list", "watch", "get", "create", "patch", "delete")}
    | {("", "events", verb) for verb in ("create", "patch")}
    | {("", "pods", "list"), ("apps", "deployments", "patch"), ("apps", "statefulsets", "patch")}
)
CERT_MANAGER_RULES: frozenset[Rule] = frozenset(
    {
        ("cert-manager.io", "certificates", verb)
        for verb in ("get", "list", "watch", "create", "patch", "delete")
    }
    | {("cert-manager.io", "certificaterequests", "list")}
)
"""With certManager.enabled: the Certificates it makes for spec.tls.certificate, and the list of
CertificateRequests that tells why one is pending."""
CLUSTER_RULES: frozenset[Rule] = frozenset(
    {("", "namespaces", verb) for verb in ("get", "list", "watch")}
    | {(API_GROUP, "clustermysqlservers", verb) for verb in ("get", "list", "watch", "patch")}
    | {(API_GROUP, "clustermysqlservers/status", "patch")}
)
"""What the operator reads of cluster-scoped resources, whatever namespaces it watches: Namespaces (their
labels, for the servers' policies) and ClusterMySQLServers."""
WORKLOAD_RULES: frozenset[Rule] = frozenset(
    {("certificates.k8s.io", "podcertificaterequests", verb) for verb in ("get", "list", "watch")}
    | {("certificates.k8s.io", "podcertificaterequests/status", "update")}
    | {("", "pods", "get"), ("", "serviceaccounts", "get")}
)
"""The signer's, with ``workloadIdentity.signingCA.secretName``: the requests of the watched namespaces, their
decisions, and the pod and ServiceAccount each names."""
WORKLOAD_CLUSTER_RULES: frozenset[Rule] = frozenset(
    {("certificates.k8s.io", "signers:mysql.dbuser-operator.dev/client", "sign")}
)
"""What the API server asks of whoever decides a request of the signer (cluster-wide)."""
SERVER_SECRET_RULES: frozenset[Rule] = frozenset({("", "secrets", "get")})
CLUSTER_EVENT_RULES: frozenset[Rule] = frozenset({("", "events", verb) for verb in ("create", "patch")})
"""Events about ClusterMySQLServers, in the namespace default (where cluster-scoped objects' Events go), when
it is not a watched one."""
"""The ClusterMySQLServers' admin Secrets, in the cluster resource namespace when it is not a watched one."""
LEADER_ELECTION_RULES: frozenset[Rule] = frozenset(
    {("coordination.k8s.io", "leases", verb) for verb in ("get", "create", "update")}
)

# Value sets every rendering test goes through (the integration tests validate each with the API server).
COMBINATIONS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "watch-namespaces": {"watchNamespaces": ["team-a", "team-b"]},
    "ha-pdb-servicemonitor": {
        "replicaCount": 2,
        "podDisruptionBudget": {"enabled": True},
        "metrics": {
            "serviceMonitor": {"enabled": True, "scrapeTimeout": "10s", "labels": {"release": "prom"}},
            "grafanaDashboard": {"enabled": True},
            "prometheusRule": {"enabled": True, "alertLabels": {"team": "databases"}},
        },
    },
    "leader-election-off": {"leaderElection": {"enabled": False}},
    "cert-manager": {"certManager": {"enabled": True, "clusterIssuers": ["mysql-clients", "corp"]}},
    "cert-manager-watch-namespaces": {"certManager": {"enabled": True}, "watchNamespaces": ["team-a"]},
    "leader-election-on-one-replica": {"leaderElection": {"enabled": True, "leaseName": "my-lease"}},
    "tls": {
        "mysql": {
            "tls": {"secretName": "mysql-tls", "certKey": "tls.crt", "keyKey": "tls.key", "required": True}
        }
    },
    "tls-verify-ca": {"mysql": {"tls": {"mode": "VERIFY_CA", "secretName": "mysql-ca"}}},
    "tls-verify-identity-by-address": {
        "mysql": {
            "host": "10.0.0.7",
            "tls": {
                "mode": "VERIFY_IDENTITY",
                "secretName": "provider-ca",
                "caKey": "bundle.pem",
                "serverName": "db.example.com",
            },
        }
    },
    # One release for many servers: none of its own, ClusterMySQLServer Secrets in a namespace not watched.
    "servers-only": {
        "defaultServer": False,
        "serverCheckPeriod": 7.5,
        "clusterResourceNamespace": "platform",
        "watchNamespaces": ["team-a"],
    },
    "workload-identity": {
        "workloadIdentity": {
            "signingCA": {"secretName": "workload-ca"},
            "certificateMaxLifetime": 7200,
            "bindingGrace": 2.5,
        }
    },
    "workload-identity-watch-namespaces": {
        "workloadIdentity": {"signingCA": {"secretName": "workload-ca"}},
        "watchNamespaces": ["team-a"],
    },
    "connection-ssl-mode": {
        "connection": {"host": "proxy.databases.svc", "port": 6033, "sslMode": "REQUIRED"}
    },
    "connection-endpoints": {
        "connection": {
            "endpoints": [
                {"name": "primary", "host": "mysql.databases.svc"},
                {
                    "name": "readonly",
                    "host": "mysql-ro.databases.svc",
                    "port": 3307,
                    "tls": {"mode": "VERIFY_CA"},
                },
            ]
        }
    },
    "everything-else": {
        "image": {"repository": "registry.example.com/dbuser-operator", "digest": "sha256:" + "ab" * 32},
        "imagePullSecrets": [{"name": "regcred"}],
        "target": "reporting",
        "targetLabel": "example.com/mysql",
        "mysql": {
            "host": "mysql.databases.svc",
            "port": 3307,
            "user": "dbuser-operator",
            "adminSecret": {"name": "custom-admin", "key": "admin-password"},
            "connectTimeout": 2.5,
            "tls": {"secretName": "ca-only", "caKey": "ca.pem"},
        },
        "ownershipSchema": "dbuser_operator_reporting",
        "reservedUsers": ["backup", "monitoring"],
        "allowedGlobalPrivileges": [],
        "resyncPeriod": 0,
        "maxConcurrentReconciles": 8,
        "shutdownTimeout": 12.5,
        "logFormat": "console",
        "logLevel": "debug",
        "extraArgs": ["--mysql-connect-timeout=10"],  # later on the command line: wins over 2.5
        "serviceAccount": {"name": "custom-sa", "annotations": {"example.com/role": "operator"}},
        "podAnnotations": {"example.com/scrape": "true"},
        "podLabels": {"team": "platform"},
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ops", "effect": "NoSchedule"}],
        "priorityClassName": "system-cluster-critical",
        "metrics": {"service": {"port": 9090, "annotations": {"example.com/a": "b"}}},
        "resources": {"requests": {"cpu": "100m", "memory": "200Mi"}, "limits": {"memory": "300Mi"}},
    },
}


def helm_env(home: Path) -> dict[str, str]:
    """An environment for helm with its state under ``home`` (never the user's own)."""
    return {
        **os.environ,
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
    }


def write_values(directory: Path, values: Mapping[str, Any], name: str = "values.yaml") -> Path:
    path = directory / name
    path.write_text(yaml.safe_dump(dict(values)))
    return path


def template(
    helm: Path,
    workdir: Path,
    values: Mapping[str, Any] | None = None,
    release: str = "dbu",
    namespace: str = "ops",
    chart: Path = CHART,
    check: bool = True,
    api_versions: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """``helm template`` of the chart with ``values`` (offline, for the pinned Kubernetes version; offline,
    helm knows only the built-in API versions: ``api_versions`` adds ``group/version/Kind``s a cluster
    serves, as ``helm install`` learns them from the API server)."""
    command = [str(helm), "template", release, str(chart), "--namespace", namespace]
    command += ["--kube-version", KUBE_VERSION, "--values", str(write_values(workdir, values or {}))]
    for api_version in api_versions:
        command += ["--api-versions", api_version]
    return subprocess.run(
        command, capture_output=True, text=True, check=check, env=helm_env(workdir / "helm"), timeout=60
    )


def render(
    helm: Path, workdir: Path, values: Mapping[str, Any] | None = None, **options: Any
) -> list[dict[str, Any]]:
    """The objects ``helm template`` renders."""
    return parse(template(helm, workdir, values, **options).stdout)


def kustomize(kubectl: Path, directory: Path) -> list[dict[str, Any]]:
    """The objects ``kubectl kustomize directory`` builds (the pinned kubectl)."""
    built = subprocess.run(
        [str(kubectl), "kustomize", str(directory)], capture_output=True, text=True, check=True, timeout=60
    )
    return parse(built.stdout)


def parse(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj["kind"] == kind]


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = of_kind(objects, kind)
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def manager(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The operator's container in the Deployment."""
    containers: list[dict[str, Any]] = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["manager"]
    return containers[0]


def rules(role: Mapping[str, Any]) -> set[Rule]:
    """A (Cluster)Role's rules as (group, resource, verb) triples (``resource:name`` for a rule limited to
    resourceNames, which only the signer's rule is); a wildcard is refused."""
    triples = set()
    for rule in role.get("rules", []):
        names = rule.get("resourceNames")
        assert names is None or rule["resources"] == ["signers"], "resourceNames only on signers"
        assert "nonResourceURLs" not in rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    assert "*" not in (group, resource, verb), f"wildcard in {role['metadata']['name']}"
                    for name in names or [None]:
                        triples.add((group, f"{resource}:{name}" if name else resource, verb))
    return triples


def leaves(values: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, default) of every leaf of values.yaml; an empty map or any list is a leaf."""
    if isinstance(values, dict) and values:
        for key, value in values.items():
            yield from leaves(value, f"{prefix}.{key}" if prefix else key)
    else:
        yield prefix, values


def default_values() -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
    return values


def values_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())
    return schema


def merged(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` deep-merged over ``base``, as helm merges values files."""
    result = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(result.get(key), Mapping):
            result[key] = merged(result[key], value)
        else:
            result[key] = value
    return result
