"""A server resource's spec.policy on a real API server: the policy sample is accepted as written, and label
selectors Kubernetes would refuse are refused at admission, with the models' messages."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client
from pydantic import ValidationError

from dbuser_operator.api.v1alpha1 import GROUP, VERSION
from dbuser_operator.api.v1alpha1.mysqlserver import CLUSTER_PLURAL, ClusterMySQLServer
from dbuser_operator.api.v1alpha1.server_policy import (
    VALUES_FORBIDDEN_MESSAGE,
    VALUES_REQUIRED_MESSAGE,
    LabelSelectorRequirement,
)
from tests.conftest import REPO
from tests.integration.api.test_databaseuser_crd import TIMEOUT, rejected

pytestmark = pytest.mark.integration

SAMPLE = REPO / "config" / "samples" / "mysql_v1alpha1_clustermysqlserver_policy.yaml"


def server(name: str, requirement: dict[str, Any]) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load(SAMPLE.read_text())
    obj["metadata"] = {"name": name}
    obj["spec"]["policy"]["namespaces"][0]["namespaceSelector"] = {"matchExpressions": [requirement]}
    return obj


async def create(api: client.ApiClient, obj: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = await client.CustomObjectsApi(api).create_cluster_custom_object(
        GROUP, VERSION, CLUSTER_PLURAL, obj, _request_timeout=TIMEOUT
    )
    return created


async def delete(api: client.ApiClient, name: str) -> None:
    await client.CustomObjectsApi(api).delete_cluster_custom_object(
        GROUP, VERSION, CLUSTER_PLURAL, name, _request_timeout=TIMEOUT
    )


async def test_the_policy_sample_is_accepted_as_written(crds: list[str], kube_api: client.ApiClient) -> None:
    obj: dict[str, Any] = yaml.safe_load(SAMPLE.read_text())
    obj["metadata"]["name"] = f"policy-{uuid.uuid4().hex[:8]}"
    created = await create(kube_api, obj)
    try:
        stored = ClusterMySQLServer.model_validate(created)
        assert stored.spec.policy is not None
        entries = created["spec"]["policy"]["namespaces"]
        assert entries[0]["databases"] == ["{namespace}_*"]
        assert entries[0]["allowGlobalPrivileges"] is False  # the defaults, filled in by the API server
        assert entries[0]["allowRoles"] is True
        assert entries[0]["allowPlugins"] is False
        assert entries[0]["allowGrantOption"] is False
        assert entries[1]["allowGlobalPrivileges"] is True
        assert entries[1]["allowGrantOption"] is True
    finally:
        await delete(kube_api, obj["metadata"]["name"])


REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "In without values": ({"key": "team", "operator": "In"}, VALUES_REQUIRED_MESSAGE),
    "NotIn with no values": ({"key": "team", "operator": "NotIn", "values": []}, VALUES_REQUIRED_MESSAGE),
    "Exists with values": ({"key": "team", "operator": "Exists", "values": ["a"]}, VALUES_FORBIDDEN_MESSAGE),
    "DoesNotExist with values": (
        {"key": "team", "operator": "DoesNotExist", "values": ["a"]},
        VALUES_FORBIDDEN_MESSAGE,
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
async def test_selectors_kubernetes_refuses_are_refused_like_the_models(
    crds: list[str], kube_api: client.ApiClient, case: str
) -> None:
    requirement, complaint = REFUSED[case]
    message = await rejected(create(kube_api, server(f"policy-{uuid.uuid4().hex[:8]}", requirement)))
    assert complaint in message
    with pytest.raises(ValidationError, match=complaint):
        LabelSelectorRequirement.model_validate(requirement)


async def test_valid_selectors_are_accepted(crds: list[str], kube_api: client.ApiClient) -> None:
    for requirement in (
        {"key": "team", "operator": "In", "values": ["a"]},
        {"key": "team", "operator": "NotIn", "values": ["a", "b"]},
        {"key": "team", "operator": "Exists"},
        {"key": "team", "operator": "DoesNotExist", "values": []},
    ):
        name = f"policy-{uuid.uuid4().hex[:8]}"
        await create(kube_api, server(name, requirement))
        await delete(kube_api, name)
