"""spec.account and the policy's maxPasswordLifetime on a real API server: what admission accepts and
rejects (malformed, out-of-range and hostile values), with which message, and that the pydantic models agree
on every case; real kubectl explains the fields."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client
from pydantic import ValidationError

from dbuser_operator.api.v1alpha1 import DatabaseUser
from dbuser_operator.api.v1alpha1.account import (
    EXPIRES_AT_MESSAGE,
    FAILED_LOGIN_PAIR_MESSAGE,
    PASSWORD_EXPIRE_MESSAGE,
    PASSWORD_LOCK_TIME_MESSAGE,
)
from dbuser_operator.api.v1alpha1.mysqlserver import ClusterMySQLServer
from dbuser_operator.api.v1alpha1.server_policy import MAX_PASSWORD_LIFETIME_MESSAGE
from tests.conftest import Runner
from tests.integration.api.test_databaseuser_crd import body, create, patch, refused_like_the_models, rejected
from tests.integration.api.test_server_policy_crd import SAMPLE
from tests.integration.api.test_server_policy_crd import create as create_server
from tests.integration.api.test_server_policy_crd import delete as delete_server

pytestmark = pytest.mark.integration

ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("empty", {}),
    ("locked", {"locked": True}),
    ("never", {"passwordExpire": "Never"}),
    ("default", {"passwordExpire": "Default"}),
    ("days", {"passwordExpire": "90d"}),
    ("hours", {"passwordExpire": "2160h"}),
    ("minutes", {"passwordExpire": "1440m"}),
    ("longest", {"passwordExpire": "65535d"}),
    ("failed-logins", {"failedLoginAttempts": 3, "passwordLockTime": "2d"}),
    ("unbounded", {"failedLoginAttempts": 32767, "passwordLockTime": "Unbounded"}),
    ("expires-at", {"expiresAt": "2026-12-31T18:00:00Z"}),
    ("expires-at-offset", {"expiresAt": "2026-12-31T18:00:00.250+01:00"}),
]


@pytest.mark.parametrize(("name", "account"), ACCEPTED, ids=[name for name, _ in ACCEPTED])
async def test_accepted(
    crds: list[str], kube_api: client.ApiClient, namespace: str, name: str, account: dict[str, Any]
) -> None:
    created = await create(kube_api, namespace, body(name, account=account))
    assert created["spec"]["account"] == {"locked": False} | account  # locked defaults to false
    parsed = DatabaseUser.model_validate(created).spec.account  # the models read what was admitted
    assert parsed is not None
    assert parsed.password_expire == account.get("passwordExpire")


REJECTED: list[tuple[str, dict[str, Any], str]] = [
    ("zero-days", {"passwordExpire": "0d"}, PASSWORD_EXPIRE_MESSAGE),
    ("part-of-a-day", {"passwordExpire": "25h"}, PASSWORD_EXPIRE_MESSAGE),
    ("under-a-day", {"passwordExpire": "1h"}, PASSWORD_EXPIRE_MESSAGE),
    ("too-many-days", {"passwordExpire": "65536d"}, PASSWORD_EXPIRE_MESSAGE),
    ("too-many-hours", {"passwordExpire": "1572888h"}, PASSWORD_EXPIRE_MESSAGE),  # 65537 days
    ("fraction", {"passwordExpire": "1.5h"}, "spec.account.passwordExpire: Invalid value"),
    ("lower-case", {"passwordExpire": "never"}, "spec.account.passwordExpire: Invalid value"),
    ("sql", {"passwordExpire": "1 DAY; DROP USER root"}, "spec.account.passwordExpire"),
    ("negative", {"passwordExpire": "-1d"}, "spec.account.passwordExpire: Invalid value"),
    ("attempts-alone", {"failedLoginAttempts": 3}, FAILED_LOGIN_PAIR_MESSAGE),
    ("lock-time-alone", {"passwordLockTime": "1d"}, FAILED_LOGIN_PAIR_MESSAGE),
    ("zero-attempts", {"failedLoginAttempts": 0, "passwordLockTime": "1d"}, "failedLoginAttempts"),
    ("many-attempts", {"failedLoginAttempts": 32768, "passwordLockTime": "1d"}, "failedLoginAttempts"),
    ("long-lock", {"failedLoginAttempts": 3, "passwordLockTime": "32768d"}, PASSWORD_LOCK_TIME_MESSAGE),
    ("lock-never", {"failedLoginAttempts": 3, "passwordLockTime": "Never"}, "passwordLockTime"),
    ("locked-string", {"locked": "true"}, "spec.account.locked: Invalid value"),
    ("no-zone", {"expiresAt": "2026-12-31T18:00:00"}, "spec.account.expiresAt"),
    ("no-time", {"expiresAt": "tomorrow"}, "spec.account.expiresAt"),
]


@pytest.mark.parametrize(("name", "account", "complaint"), REJECTED, ids=[name for name, _, _ in REJECTED])
async def test_rejected_with_the_rules_message(
    crds: list[str],
    kube_api: client.ApiClient,
    namespace: str,
    name: str,
    account: dict[str, Any],
    complaint: str,
) -> None:
    await refused_like_the_models(kube_api, namespace, body(name, account=account), complaint)


def test_the_expires_at_message_is_the_models() -> None:
    with pytest.raises(ValidationError, match="expiresAt is an RFC 3339 time"):
        DatabaseUser.model_validate(body("x", account={"expiresAt": "2026-12-31T18:00:00"}))
    assert EXPIRES_AT_MESSAGE.startswith("expiresAt")


async def test_the_account_can_change_and_go(
    crds: list[str], kube_api: client.ApiClient, namespace: str
) -> None:
    await create(kube_api, namespace, body("changing", account={"locked": True, "passwordExpire": "90d"}))
    changed = await patch(kube_api, namespace, "changing", {"spec": {"account": {"locked": False}}})
    assert changed["spec"]["account"] == {"locked": False, "passwordExpire": "90d"}
    message = await rejected(
        patch(kube_api, namespace, "changing", {"spec": {"account": {"passwordExpire": "90 days"}}})
    )
    assert "spec.account.passwordExpire" in message
    gone = await patch(kube_api, namespace, "changing", {"spec": {"account": None}})
    assert "account" not in gone["spec"]


def policy_server(cap: str) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load(SAMPLE.read_text())
    obj["metadata"] = {"name": f"cap-{uuid.uuid4().hex[:8]}"}
    obj["spec"]["policy"]["namespaces"][0]["maxPasswordLifetime"] = cap
    return obj


@pytest.mark.parametrize("cap", ["90d", "2160h", "1d"])
async def test_a_max_password_lifetime_is_accepted(
    crds: list[str], kube_api: client.ApiClient, cap: str
) -> None:
    obj = policy_server(cap)
    created = await create_server(kube_api, obj)
    try:
        parsed = ClusterMySQLServer.model_validate(created).spec.policy
        assert parsed is not None
        assert parsed.namespaces[0].max_password_lifetime == cap
    finally:
        await delete_server(kube_api, obj["metadata"]["name"])


@pytest.mark.parametrize("cap", ["0d", "36h", "65536d", "Never", "90"])
async def test_a_malformed_max_password_lifetime_is_refused(
    crds: list[str], kube_api: client.ApiClient, cap: str
) -> None:
    obj = policy_server(cap)
    message = await rejected(create_server(kube_api, obj))
    assert "maxPasswordLifetime" in message
    with pytest.raises(ValidationError, match=r"maxPasswordLifetime|pattern"):
        ClusterMySQLServer.model_validate(obj)
    assert MAX_PASSWORD_LIFETIME_MESSAGE.startswith("maxPasswordLifetime")


def test_kubectl_explains_the_fields(crds: list[str], kubectl: Runner) -> None:
    explained = " ".join(kubectl("explain", "dbu.spec.account").stdout.split())
    for field in ("locked", "passwordExpire", "failedLoginAttempts", "passwordLockTime", "expiresAt"):
        assert field in explained
    assert "AccountOptionUnsupported" in explained
    assert "default_password_lifetime" in explained
