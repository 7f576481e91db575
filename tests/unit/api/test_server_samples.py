"""The server samples of config/samples/ are what the models accept, and say what they mean to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dbuser_operator.api.v1alpha1.mysqlserver import ClusterMySQLServer, MySQLServer
from tests.conftest import REPO

SAMPLES = REPO / "config" / "samples"


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def test_the_mysqlserver_sample_and_its_secret() -> None:
    (document,) = _documents(SAMPLES / "mysql_v1alpha1_mysqlserver.yaml")
    server = MySQLServer.model_validate(document)
    assert server.spec.port == 3306
    assert server.spec.policy is None  # its own namespace only
    (secret,) = _documents(SAMPLES / "reporting-mysql-admin.yaml")
    credentials = server.spec.credentials
    assert {credentials.user.name, credentials.password.name} == {secret["metadata"]["name"]}
    assert set(secret["stringData"]) == {credentials.user.key, credentials.password.key}
    # Both are applied with the other samples, in the namespace named on the command line.
    resources = yaml.safe_load((SAMPLES / "kustomization.yaml").read_text())["resources"]
    assert {"mysql_v1alpha1_mysqlserver.yaml", "reporting-mysql-admin.yaml"} <= set(resources)
    assert "mysql_v1alpha1_clustermysqlserver.yaml" not in resources  # its Secret is in the operator's


def test_the_clustermysqlserver_samples() -> None:
    """One without a policy (its Secret named in the comments), one with (docs/servers.md, "Server
    policy"); both labelled for the default target, as the operator's informers select server resources by
    it."""
    (plain,) = _documents(SAMPLES / "mysql_v1alpha1_clustermysqlserver.yaml")
    (with_policy,) = _documents(SAMPLES / "mysql_v1alpha1_clustermysqlserver_policy.yaml")
    server = ClusterMySQLServer.model_validate(plain)
    assert server.metadata.namespace is None
    assert server.spec.policy is None
    assert server.spec.tls is not None
    assert server.spec.tls.mode == "VERIFY_IDENTITY"
    text = (SAMPLES / "mysql_v1alpha1_clustermysqlserver.yaml").read_text()
    assert f"create secret generic {server.spec.credentials.password.name}" in text
    assert ClusterMySQLServer.model_validate(with_policy).spec.policy is not None
    assert plain["metadata"]["name"] != with_policy["metadata"]["name"]
    for document in (plain, with_policy):
        assert document["metadata"]["labels"] == {"dbuser-operator.dev/target": "default"}
