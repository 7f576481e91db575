"""The CRDs' categories on a real API server, read by the real kubectl: `kubectl get dbuser-operator` lists
every kind of the operator, `kubectl get dbuser-namespaced` a namespace's share (every kind but the
cluster-scoped ClusterMySQLServer), and `-o wide` names the server resource's kind. One sample of each
kind, labelled with a target no operator serves (so no finalizer holds them)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO, Runner

pytestmark = pytest.mark.integration

SAMPLES = REPO / "config" / "samples"
TARGET_LABEL = "dbuser-operator.dev/target"
KINDS = {"databaseuser", "databaserole", "database", "mysqlserver", "clustermysqlserver"}


def _samples(target: str, suffix: str) -> list[dict[str, Any]]:
    files = [*yaml.safe_load((SAMPLES / "kustomization.yaml").read_text())["resources"]]
    files.append("mysql_v1alpha1_clustermysqlserver.yaml")
    documents = [doc for name in files for doc in yaml.safe_load_all((SAMPLES / name).read_text()) if doc]
    for doc in documents:
        if doc["apiVersion"].startswith("mysql.dbuser-operator.dev/"):
            doc["metadata"].setdefault("labels", {})[TARGET_LABEL] = target
        if doc["kind"] == "ClusterMySQLServer":
            doc["metadata"]["name"] += f"-{suffix}"  # cluster-scoped: a name no other test uses
    return documents


def _kinds(output: str) -> set[str]:
    """The kinds of ``kubectl get -o name`` (``databaseuser.mysql.dbuser-operator.dev/app``)."""
    return {line.split(".", 1)[0] for line in output.split()}


def test_the_categories_list_every_kind(
    kubectl: Runner, crds: list[str], namespace: str, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    target = f"categories-{suffix}"
    manifest = tmp_path / "samples.yaml"
    manifest.write_text(yaml.safe_dump_all(_samples(target, suffix)))
    kubectl("apply", "-n", namespace, "-f", str(manifest))
    try:
        selector = f"{TARGET_LABEL}={target}"
        everything = kubectl("get", "dbuser-operator", "-A", "-l", selector, "-o", "name").stdout
        assert _kinds(everything) == KINDS, everything
        share = kubectl("get", "dbuser-namespaced", "-n", namespace, "-l", selector, "-o", "name").stdout
        assert _kinds(share) == KINDS - {"clustermysqlserver"}, share
        users = kubectl("get", "dbuser", "-n", namespace, "-l", selector, "-o", "name").stdout
        assert _kinds(users) == {"databaseuser"}, users  # the first release's category, unchanged
        wide = kubectl("get", "databaseusers", "-n", namespace, "-l", selector, "-o", "wide").stdout
        assert "SERVER KIND" in wide.splitlines()[0], wide
    finally:
        kubectl("delete", "-n", namespace, "-f", str(manifest), "--wait=false")
