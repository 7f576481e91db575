"""Generated passwords and connection Secrets end to end: real API server, real MySQL server, real clients.

A real driver logs in with exactly what the connection Secret says: SQLAlchemy parses its DATABASE_URL and
connects through PyMySQL, the way an application does.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest
import sqlalchemy
from sqlalchemy.engine import make_url

from dbuser_operator.api.v1alpha1 import CREDENTIAL_VERSION_ANNOTATION
from dbuser_operator.controllers.databaseuser.owned_secrets import MANAGED_BY, MANAGED_BY_LABEL
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.mysql.support import client_tls
from tests.integration.operator.support.builders import database_user, generated_user, unique
from tests.integration.operator.support.instances import own_target
from tests.integration.operator.support.kube import (
    create_secret,
    ready,
    secret_exists,
    wait_for_ready,
    wait_for_secret,
    wait_until_gone,
)
from tests.integration.operator.support.mysql import account_exists, can_log_in, mysql_query
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator, StartOperator
from tests.integration.operator.support.wait import becomes

pytestmark = pytest.mark.integration


def text(secret: dict[str, Any], key: str) -> str:
    return base64.b64decode(secret["data"][key]).decode()


async def secret_of(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    return await kube.get(SECRETS, name, namespace)


def log_in_with_url(mysql: MySQLServer, url: str) -> tuple[str, str | None]:
    """Connect with SQLAlchemy + PyMySQL to exactly what ``url`` says; (CURRENT_USER(), DATABASE())."""
    parsed = make_url(url).set(drivername="mysql+pymysql")
    engine = sqlalchemy.create_engine(
        parsed,
        connect_args={"connect_timeout": 5, **client_tls(mysql, tls=False)},
        poolclass=sqlalchemy.NullPool,
    )
    try:
        with engine.connect() as connection:
            row = connection.execute(sqlalchemy.text("SELECT CURRENT_USER(), DATABASE()")).one()
    finally:
        engine.dispose()
    return str(row[0]), row[1]


def owner_uids(secret: dict[str, Any]) -> list[tuple[str, bool]]:
    return [
        (ref["uid"], bool(ref.get("controller"))) for ref in secret["metadata"].get("ownerReferences") or []
    ]


async def test_generated_password_logs_in_through_the_connection_secret(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name = unique("gen")
    database = f"db_{name.replace('-', '_')}"
    mysql_query(mysql, f"CREATE DATABASE `{database}`")
    spec: dict[str, Any] = {
        "generatedPassword": {"length": 40, "characterSet": "AlphanumericSymbols"},
        "privileges": [{"database": database, "privileges": ["SELECT"]}],
        "connectionSecret": {
            "name": f"{name}-db",
            "labels": {"team": "shop"},
            "annotations": {"owner": "shop-team"},
            "templates": {
                "GO_DSN": "{{ username }}:{{ password }}@tcp({{ host }}:{{ port }})/{{ database }}"
            },
        },
    }
    obj = await kube_client.create(DATABASE_USERS, generated_user(name, **spec), namespace)
    ready_obj = await wait_for_ready(kube_client, namespace, name)
    uid = obj["metadata"]["uid"]

    generated = await secret_of(kube_client, namespace, f"{name}-password")
    password = text(generated, "password")
    passwords.values.add(password)  # the leak check looks for it too
    assert len(password) == 40
    assert owner_uids(generated) == [(uid, True)]
    assert generated["metadata"]["labels"][MANAGED_BY_LABEL] == MANAGED_BY

    connection = await secret_of(kube_client, namespace, f"{name}-db")
    assert owner_uids(connection) == [(uid, True)]
    assert connection["metadata"]["labels"] == {"team": "shop", MANAGED_BY_LABEL: MANAGED_BY}
    assert connection["metadata"]["annotations"]["owner"] == "shop-team"
    assert connection["metadata"]["annotations"][CREDENTIAL_VERSION_ANNOTATION] == "1"
    assert ready_obj["status"]["credentialVersion"] == 1
    values = {key: text(connection, key) for key in connection["data"]}
    assert values["host"] == mysql.host
    assert values["port"] == str(mysql.port)
    assert values["username"] == name
    assert values["password"] == password
    assert values["database"] == database
    assert values["GO_DSN"] == f"{name}:{password}@tcp({mysql.host}:{mysql.port})/{database}"
    assert values["JDBC_URL"].startswith(f"jdbc:mysql://{mysql.host}:{mysql.port}/{database}?user=")

    # A real driver parses DATABASE_URL and logs in with exactly that.
    assert log_in_with_url(mysql, values["DATABASE_URL"]) == (f"{name}@%", database)

    # Nothing changes on later passes: no new password, no write.
    await asyncio.sleep(1.5)  # the session operator checks drift every second
    assert (await secret_of(kube_client, namespace, f"{name}-password"))["metadata"]["resourceVersion"] == (
        generated["metadata"]["resourceVersion"]
    )
    again = await secret_of(kube_client, namespace, f"{name}-db")
    assert again["metadata"]["resourceVersion"] == connection["metadata"]["resourceVersion"]

    # Under Delete, both Secrets go with the resource.
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
    assert not account_exists(mysql, name)
    assert not await secret_exists(kube_client, namespace, f"{name}-password")
    assert not await secret_exists(kube_client, namespace, f"{name}-db")
    mysql_query(mysql, f"DROP DATABASE `{database}`")


async def test_a_user_secret_is_copied_and_kept_in_sync(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name = unique("own")
    first, second = passwords.new("p@ss/w:rd%"), passwords.new("#?&=+ ")
    await create_secret(kube_client, namespace, "own-pw", {"password": first})
    spec: dict[str, Any] = {"connectionSecret": {"name": "own-db"}}  # no grants: no database
    spec["rotation"] = {"strategy": "Immediate"}  # the old password stops at once
    await kube_client.create(DATABASE_USERS, database_user(name, "own-pw", **spec), namespace)
    await wait_for_ready(kube_client, namespace, name)
    connection = await secret_of(kube_client, namespace, "own-db")
    assert text(connection, "password") == first
    assert "database" not in connection["data"]
    assert log_in_with_url(mysql, text(connection, "DATABASE_URL"))[0] == f"{name}@%"

    await kube_client.patch(
        SECRETS, "own-pw", {"stringData": {"password": second}}, PatchType.MERGE, namespace=namespace
    )
    connection = await wait_for_secret(
        kube_client, namespace, "own-db", lambda secret: text(secret, "password") == second
    )
    assert connection["metadata"]["annotations"][CREDENTIAL_VERSION_ANNOTATION] == "2"
    assert log_in_with_url(mysql, text(connection, "DATABASE_URL"))[0] == f"{name}@%"
    assert not can_log_in(mysql, name, first)

    # The connection Secret is written before status: the Ready=True still there is the old one (a Secret
    # change does not move the generation), so wait for the version itself.
    async def credential_version() -> object:
        return (await wait_for_ready(kube_client, namespace, name))["status"].get("credentialVersion")

    await becomes(credential_version, 2, message="status.credentialVersion never became 2")

    # A key someone removed is written back, and the version stays (the password did not change).
    await kube_client.patch(SECRETS, "own-db", {"data": {"host": None}}, PatchType.MERGE, namespace=namespace)
    repaired = await wait_for_secret(
        kube_client, namespace, "own-db", lambda secret: "host" in secret["data"]
    )
    assert repaired["metadata"]["annotations"][CREDENTIAL_VERSION_ANNOTATION] == "2"
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)


async def test_secrets_the_operator_does_not_own_are_never_written(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name = unique("taken")
    theirs = passwords.new()
    foreign = await create_secret(kube_client, namespace, f"{name}-password", {"password": theirs})
    await kube_client.create(DATABASE_USERS, generated_user(name), namespace)
    obj = await wait_for_ready(kube_client, namespace, name, "False", "SecretNotOwned")
    assert f"Secret {namespace}/{name}-password" in ready(obj)["message"]  # type: ignore[index]
    assert not account_exists(mysql, name)
    unchanged = await secret_of(kube_client, namespace, f"{name}-password")
    assert unchanged["metadata"]["resourceVersion"] == foreign["metadata"]["resourceVersion"]

    # Once the foreign Secret is gone, the operator makes its own.
    await kube_client.delete(SECRETS, f"{name}-password", namespace)
    await wait_for_ready(kube_client, namespace, name)
    generated = await secret_of(kube_client, namespace, f"{name}-password")
    passwords.values.add(text(generated, "password"))
    assert text(generated, "password") != theirs
    assert can_log_in(mysql, name, text(generated, "password"))

    # The connection Secret's name follows the same rule.
    await create_secret(kube_client, namespace, "someone-elses", {"config": "x"})
    await kube_client.patch(
        DATABASE_USERS,
        name,
        {"spec": {"connectionSecret": {"name": "someone-elses"}}},
        PatchType.MERGE,
        namespace=namespace,
    )
    obj = await wait_for_ready(kube_client, namespace, name, "False", "SecretNotOwned")
    assert "connection Secret" in ready(obj)["message"]  # type: ignore[index]
    assert (await secret_of(kube_client, namespace, "someone-elses"))["data"] == {
        "config": base64.b64encode(b"x").decode()
    }
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
    assert await secret_exists(kube_client, namespace, "someone-elses")


async def test_a_stored_password_is_used_not_a_new_one(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """The state a SIGKILL between creating the Secret and creating the account leaves: the operator's
    Secret exists, the account does not. The next pass creates the account with the stored password."""
    name = unique("crashed")
    obj = await kube_client.create(DATABASE_USERS, generated_user(name, target="nobody"), namespace)
    stored = passwords.new()
    reference = {
        "apiVersion": DATABASE_USERS.api_version,
        "kind": "DatabaseUser",
        "name": name,
        "uid": obj["metadata"]["uid"],
        "controller": True,
    }
    body = {
        "metadata": {
            "name": f"{name}-password",
            "ownerReferences": [reference],
            "labels": {MANAGED_BY_LABEL: MANAGED_BY},
        },
        "stringData": {"password": stored},
    }
    secret = await kube_client.create(SECRETS, body, namespace)
    await kube_client.patch(
        DATABASE_USERS,
        name,
        {"metadata": {"labels": {"dbuser-operator.dev/target": own_target()}}},
        PatchType.MERGE,
        namespace=namespace,
    )
    await wait_for_ready(kube_client, namespace, name)
    assert can_log_in(mysql, name, stored)
    after = await secret_of(kube_client, namespace, f"{name}-password")
    assert after["metadata"]["resourceVersion"] == secret["metadata"]["resourceVersion"]
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)


async def test_retain_keeps_both_secrets_unowned_and_usable(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name = unique("kept")
    spec: dict[str, Any] = {"deletionPolicy": "Retain", "connectionSecret": {"name": f"{name}-db"}}
    await kube_client.create(DATABASE_USERS, generated_user(name, **spec), namespace)
    await wait_for_ready(kube_client, namespace, name)
    passwords.values.add(text(await secret_of(kube_client, namespace, f"{name}-password"), "password"))
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
    generated = await secret_of(kube_client, namespace, f"{name}-password")
    connection = await secret_of(kube_client, namespace, f"{name}-db")
    assert owner_uids(generated) == owner_uids(connection) == []
    assert log_in_with_url(mysql, text(connection, "DATABASE_URL"))[0] == f"{name}@%"

    # A new DatabaseUser of that name takes them (and the account) back only when told to adopt.
    obj = generated_user(name, **spec)
    await kube_client.create(DATABASE_USERS, obj, namespace)
    await wait_for_ready(kube_client, namespace, name, "False", "SecretNotOwned")
    await kube_client.patch(
        DATABASE_USERS,
        name,
        {"metadata": {"annotations": {"mysql.dbuser-operator.dev/adopt": "true"}}},
        PatchType.MERGE,
        namespace=namespace,
    )
    adopted = await wait_for_ready(kube_client, namespace, name)
    assert owner_uids(await secret_of(kube_client, namespace, f"{name}-db")) == [
        (adopted["metadata"]["uid"], True)
    ]
    assert text(await secret_of(kube_client, namespace, f"{name}-password"), "password") == text(
        generated, "password"
    )
    assert log_in_with_url(mysql, text(connection, "DATABASE_URL"))[0] == f"{name}@%"
    await kube_client.patch(
        DATABASE_USERS, name, {"spec": {"deletionPolicy": "Delete"}}, PatchType.MERGE, namespace=namespace
    )
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
    assert not account_exists(mysql, name)


HOSTILE = {
    "{{ ''.__class__.__mro__[1].__subclasses__() }}": "not allowed: access to attribute '__class__'",
    "{{ lipsum.__globals__ }}": "uses 'lipsum'",
    "{{ password * 1000000 }}": "a repetition longer than",
    "{% for a in DATABASE_URL %}{% for b in DATABASE_URL %}{{ JDBC_URL }}{% endfor %}{% endfor %}": (
        "renders more than"
    ),
    "{% for a in JDBC_URL %}" * 6 + "{% endfor %}" * 6: "took longer than",  # about 100**6 passes
    "{{ {}[password] }}": "failed to render (UndefinedError)",
}


async def test_hostile_templates_are_refused_and_never_hang(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name = unique("tpl")
    password = passwords.new()
    await create_secret(kube_client, namespace, "tpl-pw", {"password": password})
    spec: dict[str, Any] = {"connectionSecret": {"name": "tpl-db", "templates": {"ok": "{{ username }}"}}}
    await kube_client.create(DATABASE_USERS, database_user(name, "tpl-pw", **spec), namespace)
    await wait_for_ready(kube_client, namespace, name)
    for template, complaint in HOSTILE.items():
        patch = {"spec": {"connectionSecret": {"templates": {"ok": "{{ username }}", "evil": template}}}}
        await kube_client.patch(DATABASE_USERS, name, patch, PatchType.MERGE, namespace=namespace)
        obj = await wait_for_ready(kube_client, namespace, name, "False", "TemplateInvalid")
        message = ready(obj)["message"]  # type: ignore[index]
        assert complaint in message, message
        assert password not in message
        # The Secret keeps what it had; a good template makes the resource Ready again.
        assert "evil" not in (await secret_of(kube_client, namespace, "tpl-db"))["data"]
        await kube_client.patch(
            DATABASE_USERS,
            name,
            {"spec": {"connectionSecret": {"templates": {"evil": None}}}},
            PatchType.MERGE,
            namespace=namespace,
        )
        await wait_for_ready(kube_client, namespace, name)
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)


async def test_connection_host_and_port_come_from_the_settings(
    start_operator: StartOperator, kube_client: KubeClient, namespace: str, passwords: PasswordLedger
) -> None:
    first = await start_operator(target="conn", connection_host="mysql.databases.svc", connection_port=6033)
    name = unique("svc")
    await create_secret(kube_client, namespace, "svc-pw", {"password": passwords.new()})
    spec: dict[str, Any] = {"connectionSecret": {"name": "svc-db"}}
    await kube_client.create(DATABASE_USERS, database_user(name, "svc-pw", target="conn", **spec), namespace)
    await wait_for_ready(kube_client, namespace, name)
    connection = await secret_of(kube_client, namespace, "svc-db")
    assert (text(connection, "host"), text(connection, "port")) == ("mysql.databases.svc", "6033")
    url = make_url(text(connection, "DATABASE_URL"))
    assert (url.host, url.port, url.username, url.database) == ("mysql.databases.svc", 6033, name, None)

    # Restarted with another host and port: the Secret follows, at the same credential version.
    first.stop.set()
    await asyncio.wait_for(first.task, timeout=30)
    await start_operator(target="conn", connection_host="proxy.databases.svc", connection_port=6034)
    moved = await wait_for_secret(
        kube_client, namespace, "svc-db", lambda secret: text(secret, "host") == "proxy.databases.svc"
    )
    assert text(moved, "port") == "6034"
    assert make_url(text(moved, "DATABASE_URL")).host == "proxy.databases.svc"
    assert moved["metadata"]["annotations"][CREDENTIAL_VERSION_ANNOTATION] == "1"
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
