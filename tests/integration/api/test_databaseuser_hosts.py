"""spec.hosts and spec.managementPolicy on a real API server: what admission accepts, what it rejects
(hostile hosts included) and with which message, that hosts may change while host may not, and that the
models agree."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator.api.v1alpha1 import HOSTS_REPEAT_MESSAGE, DatabaseUser
from tests.integration.api.test_databaseuser_crd import body, create, patch, refused_like_the_models, rejected

pytestmark = pytest.mark.integration

ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("two", {"host": "localhost", "hosts": ["127.0.0.1", "10.0.%"]}),
    ("netmask-and-ipv6", {"hosts": ["10.0.0.0/255.0.0.0", "::1", "app.example.com"]}),
    ("sixteen", {"hosts": [f"10.0.0.{i}" for i in range(16)]}),
    ("longest", {"hosts": ["h" * 255]}),
    ("observe", {"managementPolicy": "Observe"}),
    ("paused", {"managementPolicy": "Paused", "hosts": ["localhost"]}),
    # As stored before these fields lost their schema defaults: still admitted, still meaning none.
    (
        "stored-empties",
        {"hosts": [], "roles": [], "defaultRoles": [], "maxUserConnections": 0, "requireTLS": False},
    ),
]


@pytest.mark.parametrize(("name", "spec"), ACCEPTED, ids=[name for name, _ in ACCEPTED])
async def test_accepted(
    crds: list[str], kube_api: client.ApiClient, namespace: str, name: str, spec: dict[str, Any]
) -> None:
    created = await create(kube_api, namespace, body(name, **spec))
    for key, value in spec.items():
        assert created["spec"][key] == value
    parsed = DatabaseUser.model_validate(created).spec
    assert parsed.account_hosts() == [created["spec"]["host"], *created["spec"].get("hosts", [])]


REJECTED: list[tuple[str, dict[str, Any], str]] = [
    ("quote", {"hosts": ["a'b"]}, "spec.hosts[0]: Invalid value"),
    ("double-quote", {"hosts": ['a"b']}, "spec.hosts[0]: Invalid value"),
    ("backtick", {"hosts": ["localhost", "a`b"]}, "spec.hosts[1]: Invalid value"),
    ("backslash", {"hosts": ["a\\b"]}, "spec.hosts[0]: Invalid value"),
    ("space", {"hosts": ["a b"]}, "spec.hosts[0]: Invalid value"),
    ("newline", {"hosts": ["a\nb"]}, "spec.hosts[0]: Invalid value"),
    ("semicolon", {"hosts": ["x';DROP USER root;--"]}, "spec.hosts[0]: Invalid value"),
    ("unicode", {"hosts": ["h\u00f6st"]}, "spec.hosts[0]: Invalid value"),
    ("fullwidth", {"hosts": ["\uff4c\uff4f\uff43\uff41\uff4c"]}, "spec.hosts[0]: Invalid value"),
    ("over-long", {"hosts": ["h" * 256]}, "spec.hosts[0]: Too long"),
    ("empty", {"hosts": [""]}, "spec.hosts[0]: Invalid value"),
    ("seventeen", {"hosts": [f"10.0.0.{i}" for i in range(17)]}, "spec.hosts: Too many: 17"),
    ("duplicate", {"hosts": ["localhost", "localhost"]}, 'spec.hosts[1]: Duplicate value: "localhost"'),
    ("case-duplicate", {"hosts": ["localhost", "LocalHost"]}, HOSTS_REPEAT_MESSAGE),
    ("repeats-host", {"hosts": ["%"]}, HOSTS_REPEAT_MESSAGE),
    ("repeats-host-case", {"host": "Db.Example", "hosts": ["db.example"]}, HOSTS_REPEAT_MESSAGE),
    ("not-a-list", {"hosts": "localhost"}, "spec.hosts: Invalid value"),
    ("policy", {"managementPolicy": "Orphan"}, 'spec.managementPolicy: Unsupported value: "Orphan"'),
    ("policy-case", {"managementPolicy": "observe"}, 'spec.managementPolicy: Unsupported value: "observe"'),
]


@pytest.mark.parametrize(("name", "spec", "complaint"), REJECTED, ids=[name for name, _, _ in REJECTED])
async def test_rejected_with_the_rules_message(
    crds: list[str],
    kube_api: client.ApiClient,
    namespace: str,
    name: str,
    spec: dict[str, Any],
    complaint: str,
) -> None:
    await refused_like_the_models(kube_api, namespace, body(name, **spec), complaint)


async def test_hosts_and_the_policy_may_change_host_may_not(
    crds: list[str], kube_api: client.ApiClient, namespace: str
) -> None:
    await create(kube_api, namespace, body("changing", host="localhost", hosts=["127.0.0.1"]))
    changed = await patch(
        kube_api, namespace, "changing", {"spec": {"hosts": ["10.%", "::1"], "managementPolicy": "Paused"}}
    )
    assert (changed["spec"]["hosts"], changed["spec"]["managementPolicy"]) == (["10.%", "::1"], "Paused")
    changed = await patch(kube_api, namespace, "changing", {"spec": {"hosts": None}})
    assert "hosts" not in changed["spec"]  # the default again: host alone (no hosts for CEL to read)
    assert DatabaseUser.model_validate(changed).spec.account_hosts() == ["localhost"]
    changed = await patch(kube_api, namespace, "changing", {"spec": {"managementPolicy": "Manage"}})
    assert changed["spec"]["managementPolicy"] == "Manage"  # an update without hosts passes the rules
    assert "spec.host is immutable" in await rejected(
        patch(kube_api, namespace, "changing", {"spec": {"host": "127.0.0.1", "hosts": ["localhost"]}})
    )
    assert HOSTS_REPEAT_MESSAGE in await rejected(
        patch(kube_api, namespace, "changing", {"spec": {"hosts": ["LOCALHOST"]}})
    )
