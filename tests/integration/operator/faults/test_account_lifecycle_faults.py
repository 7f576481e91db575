"""Accounts stay accounted for when the happy path breaks: status writes refused, the operator killed
mid-way, an owner deleted while another resource waits for its account, an owner outside the scope.

The account of a resource is found from its spec (user and host are immutable), never from its status:
a resource deleted before its first status write has its account dropped (Delete) or kept and forgotten
(Retain) like any other.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException
from pydantic import SecretStr

from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION, ESCAPED_DATABASE_MESSAGE
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import KubeCluster, MySQLServer
from dbuser_operator.local import write_private
from dbuser_operator.mysql import ConnectionSettings, Database
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.mysql.bookkeeping.ownership import Owner
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import Resource
from tests.integration.operator.support import wait
from tests.integration.operator.support.builders import database_user
from tests.integration.operator.support.instances import Instances, new_target, own_schema
from tests.integration.operator.support.kube import (
    finalizers_become,
    ready,
    wait_for_ready,
    wait_until_gone,
)
from tests.integration.operator.support.mysql import account_exists, can_log_in, mysql_query
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.support.kube import eventually

pytestmark = pytest.mark.integration

POLICIES = Resource(
    "admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", False
)
BINDINGS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingadmissionpolicybindings",
    "ValidatingAdmissionPolicyBinding",
    False,
)
TARGET_LABEL = "dbuser-operator.dev/target"


def owned_rows(mysql: MySQLServer, user_prefix: str, schema: str | None = None) -> list[tuple[Any, ...]]:
    """Bookkeeping rows (of the test's operator, unless ``schema`` names another) whose user starts with
    ``user_prefix``."""
    return mysql_query(
        mysql,
        f"SELECT user, owner_uid FROM `{schema or own_schema()}`.accounts WHERE user LIKE %s",
        f"{user_prefix}%",
    )


def accounts_named(mysql: MySQLServer, user_prefix: str) -> list[str]:
    rows = mysql_query(mysql, "SELECT User FROM mysql.user WHERE User LIKE %s", f"{user_prefix}%")
    return sorted(str(row[0]) for row in rows)


@pytest.fixture
async def status_writes_refused(kube_client: KubeClient, namespace: str) -> AsyncIterator[None]:
    """A ValidatingAdmissionPolicy that refuses every write of ``databaseusers/status`` in the namespace."""
    name = f"refuse-status-{namespace}"
    policy = {
        "apiVersion": POLICIES.api_version,
        "kind": POLICIES.kind,
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [DATABASE_USERS.group],
                        "apiVersions": ["*"],
                        "operations": ["UPDATE"],
                        "resources": ["databaseusers/status"],
                    }
                ]
            },
            "validations": [{"expression": "false", "message": "status writes refused by the test"}],
        },
    }
    binding = {
        "apiVersion": BINDINGS.api_version,
        "kind": BINDINGS.kind,
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
            },
        },
    }
    await kube_client.create(POLICIES, policy)
    await kube_client.create(BINDINGS, binding)
    try:
        await _wait_until_status_refused(kube_client, namespace)
        yield
    finally:
        await kube_client.delete(BINDINGS, name)
        await kube_client.delete(POLICIES, name)


async def _wait_until_status_refused(kube: KubeClient, namespace: str) -> None:
    """The API server loads policies asynchronously: probe with a resource no operator serves."""
    probe = database_user("probe", "pw", target="nobody")
    await kube.create(DATABASE_USERS, probe, namespace)
    patch = {"status": {"observedGeneration": 1}}

    async def refused() -> ApiException | None:
        try:
            await kube.patch(
                DATABASE_USERS, "probe", patch, PatchType.MERGE, namespace=namespace, subresource="status"
            )
        except ApiException as error:
            return error
        return None

    refusal = await wait.eventually(refused, interval=0.2, message="the admission policy never took effect")
    assert refusal is not None  # eventually returns a truthy answer
    assert refusal.status in {403, 422}, refusal
    assert "status writes refused by the test" in str(refusal.body)
    await kube.delete(DATABASE_USERS, "probe", namespace)


@pytest.mark.parametrize("policy", ["Delete", "Retain"])
async def test_a_resource_deleted_before_its_first_status_write_leaks_no_account(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    secret: str,
    status_writes_refused: None,
    policy: str,
) -> None:
    user = f"early{policy.lower()}{secrets.token_hex(3)}"
    body = database_user("early", "pw", user=user, deletionPolicy=policy)
    await kube_client.create(DATABASE_USERS, body, namespace)
    await eventually(lambda: account_exists(mysql, user), timeout=30, interval=0.05, what="the account")
    obj = await kube_client.get(DATABASE_USERS, "early", namespace)
    assert "status" not in obj  # every status write was refused: only the spec names the account
    uid = obj["metadata"]["uid"]
    assert owned_rows(mysql, user) == [(user, uid)]

    await kube_client.delete(DATABASE_USERS, "early", namespace)
    await wait_until_gone(kube_client, namespace, "early")
    assert owned_rows(mysql, user) == []  # the bookkeeping row is gone under both policies
    if policy == "Delete":
        assert not account_exists(mysql, user)
    else:
        assert can_log_in(mysql, user, secret)  # kept as it was, and forgotten
        mysql_query(mysql, f"DROP USER '{user}'@'%'")


class OperatorProcess:
    """``python -m dbuser_operator`` as a real process, for SIGKILL."""

    def __init__(self, kube: KubeCluster, mysql: MySQLServer, workdir: Path, target: str) -> None:
        self.target, self.schema = target, "dbuser_" + target.replace("-", "_")
        password_file = write_private(workdir / f"mysql-admin-password-{target}", mysql.password)
        self.env = {
            **os.environ,
            "DBUSER_OPERATOR_KUBECONFIG": str(kube.kubeconfig),
            "DBUSER_OPERATOR_MYSQL_HOST": mysql.host,
            "DBUSER_OPERATOR_MYSQL_PORT": str(mysql.port),
            "DBUSER_OPERATOR_MYSQL_USER": mysql.user,
            "DBUSER_OPERATOR_MYSQL_PASSWORD_FILE": str(password_file),
            "DBUSER_OPERATOR_TARGET": target,
            "DBUSER_OPERATOR_OWNERSHIP_SCHEMA": self.schema,
            "DBUSER_OPERATOR_METRICS_BIND_ADDRESS": "127.0.0.1:0",
            "DBUSER_OPERATOR_HEALTH_PROBE_BIND_ADDRESS": "127.0.0.1:0",
            "DBUSER_OPERATOR_RESYNC_PERIOD": "0",
            "DBUSER_OPERATOR_LOG_LEVEL": "info",
        }
        self.log = workdir / f"{target}-operator.log"  # scanned for leaks like operator.log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "dbuser_operator"], env=self.env, stdout=log, stderr=subprocess.STDOUT
            )

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)


@pytest.fixture
async def crash_operator(
    kube: KubeCluster, mysql: MySQLServer, envtest_workdir: Path, crds: list[str], instances: Instances
) -> AsyncIterator[OperatorProcess]:
    """An operator process (target and bookkeeping schema of its own) to kill; what it leaves is cleaned up
    when the test ends."""
    workdir = envtest_workdir / "operator"
    workdir.mkdir(exist_ok=True)
    process = OperatorProcess(kube, mysql, workdir, target=new_target("crash"))
    try:
        yield process
    finally:
        process.kill()
        await instances.take_over(process.target, process.schema, [])


async def test_a_crash_mid_way_then_deletion_while_down_leaks_nothing(
    crash_operator: OperatorProcess,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    secret: str,
) -> None:
    count = 80
    prefix = f"k{secrets.token_hex(3)}x"
    names = [f"crash-{n:02d}" for n in range(count)]
    for n, name in enumerate(names):
        body = database_user(name, "pw", target=crash_operator.target, user=f"{prefix}{n:02d}")
        await kube_client.create(DATABASE_USERS, body, namespace)

    crash_operator.start()
    await eventually(lambda: len(accounts_named(mysql, prefix)) >= 15, timeout=60, what="15 accounts")
    crash_operator.kill()
    made = len(accounts_named(mysql, prefix))
    print(f"killed with {made} of {count} accounts created")
    assert made < count  # killed mid-way

    for name in names:
        await kube_client.delete(DATABASE_USERS, name, namespace)
    crash_operator.start()
    for name in names:
        await wait_until_gone(kube_client, namespace, name, limit=120)
    assert accounts_named(mysql, prefix) == []
    assert owned_rows(mysql, prefix, crash_operator.schema) == []


async def test_a_refused_claimant_gets_the_account_once_its_owner_is_deleted(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer, secret: str
) -> None:
    user = f"heir{secrets.token_hex(3)}"
    await kube_client.create(DATABASE_USERS, database_user("owner", "pw", user=user), namespace)
    await wait_for_ready(kube_client, namespace, "owner")
    await kube_client.create(DATABASE_USERS, database_user("heir", "pw", user=user), namespace)
    await wait_for_ready(kube_client, namespace, "heir", "False", "AccountClaimed")

    await kube_client.delete(DATABASE_USERS, "owner", namespace)
    await wait_until_gone(kube_client, namespace, "owner")
    # Nothing about "heir" changed: only the deletion of the owner can make the operator look again.
    obj = await wait_for_ready(kube_client, namespace, "heir", limit=30)
    assert owned_rows(mysql, user) == [(user, obj["metadata"]["uid"])]
    assert can_log_in(mysql, user, secret)
    await kube_client.delete(DATABASE_USERS, "heir", namespace)
    await wait_until_gone(kube_client, namespace, "heir")
    assert not account_exists(mysql, user)


async def test_an_owner_under_another_target_is_alive_and_its_account_is_not_adopted(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    secret: str,
    passwords: PasswordLedger,
) -> None:
    user = f"held{secrets.token_hex(3)}"
    await kube_client.create(DATABASE_USERS, database_user("holder", "pw", user=user), namespace)
    await wait_for_ready(kube_client, namespace, "holder")
    # The holder moves to another instance: this one lets go, and the account stays recorded as its.
    relabel = {"metadata": {"labels": {TARGET_LABEL: "elsewhere"}}}
    await kube_client.patch(DATABASE_USERS, "holder", relabel, PatchType.MERGE, namespace=namespace)
    await finalizers_become(kube_client, namespace, "holder", [])

    taker = database_user("taker", "pw", user=user)
    taker["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
    await kube_client.create(DATABASE_USERS, taker, namespace)
    obj = await wait_for_ready(kube_client, namespace, "taker", "False", "AccountClaimed")
    message = ready(obj)["message"]  # type: ignore[index]
    assert f"DatabaseUser {namespace}/holder" in message
    assert "deleted" not in message  # outside this instance's cache, but alive
    holder_uid = (await kube_client.get(DATABASE_USERS, "holder", namespace))["metadata"]["uid"]
    assert owned_rows(mysql, user) == [(user, holder_uid)]

    await kube_client.delete(DATABASE_USERS, "taker", namespace)
    await wait_until_gone(kube_client, namespace, "taker")
    assert can_log_in(mysql, user, secret)  # neither taken over nor dropped
    await kube_client.delete(DATABASE_USERS, "holder", namespace)
    mysql_query(mysql, f"DROP USER '{user}'@'%'")
    mysql_query(mysql, f"DELETE FROM `{own_schema()}`.accounts WHERE user = %s", user)


async def test_a_database_name_too_long_once_escaped_is_refused_at_admission(
    crds: list[str], kube_client: KubeClient, namespace: str
) -> None:
    long_name = "d" * 63 + "_"  # 64 characters: the pattern admits it; GRANT would send 65
    body = database_user("toolong", "pw", privileges=[{"privileges": ["SELECT"], "database": long_name}])
    with pytest.raises(ApiException) as refused:
        await kube_client.create(DATABASE_USERS, body, namespace)
    assert refused.value.status == 422
    status = json.loads(refused.value.body or b"{}")
    assert status["details"]["causes"][0]["field"] == "spec.privileges[0].database"
    assert ESCAPED_DATABASE_MESSAGE in status["message"]
    # On one table, the database name is not escaped: 64 characters are fine.
    table_grant = {"privileges": ["SELECT"], "database": long_name, "table": "t"}
    body = database_user("fits", "pw", target="nobody", privileges=[table_grant])
    await kube_client.create(DATABASE_USERS, body, namespace)


async def test_a_claim_left_by_a_crashed_pass_creates_the_account_once(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer, secret: str
) -> None:
    """The row names the resource, the account is missing (the pass that claimed it died before CREATE
    USER): the account is created once, and the Event says an earlier pass had claimed it."""
    user = f"claimed{secrets.token_hex(3)}"
    parked = await kube_client.create(
        DATABASE_USERS, database_user("resumed", "pw", target="parked", user=user), namespace
    )
    uid = parked["metadata"]["uid"]
    settings = ConnectionSettings(
        host=mysql.host, port=mysql.port, user=mysql.user, password=SecretStr(mysql.password)
    )
    async with Database(settings) as db:  # the crashed pass: its claim landed, its CREATE USER did not
        await ownership.ensure_schema(db, own_schema())
        await ownership.claim(
            db, own_schema(), ownership.account(user, "%"), Owner(uid, namespace, "resumed")
        )
    relabel = {"metadata": {"labels": {TARGET_LABEL: operator.settings.target}}}
    await kube_client.patch(DATABASE_USERS, "resumed", relabel, PatchType.MERGE, namespace=namespace)
    await wait_for_ready(kube_client, namespace, "resumed")
    assert can_log_in(mysql, user, secret)
    assert owned_rows(mysql, user) == [(user, uid)]

    async def created_events() -> list[dict[str, Any]]:
        events = await kube_client.request("GET", f"/api/v1/namespaces/{namespace}/events")
        return [e for e in events["items"] if e["reason"] in {"AccountCreated", "AccountRecreated"}]

    # the recorder sends Events in the background
    found = await wait.eventually(created_events, interval=0.1, message="the AccountCreated Event")
    assert [(e["reason"], e.get("count", 1)) for e in found] == [("AccountCreated", 1)]
    assert "claimed by an earlier pass" in found[0]["message"]
    await kube_client.delete(DATABASE_USERS, "resumed", namespace)
    await wait_until_gone(kube_client, namespace, "resumed")
    assert not account_exists(mysql, user)
