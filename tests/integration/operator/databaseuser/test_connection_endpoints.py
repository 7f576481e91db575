"""The endpoints applications use, and the connection Secret's leftovers, end to end: a real API server, a
real MySQL server, real logins with what the Secret says.

- A server resource's spec.endpoints: the Secret carries the first one by default, or the one it names,
  more of them with prefixed keys, each endpoint's client TLS mode in its URLs; an unknown name is refused
  (EndpointNotFound) and nothing is written; a server without endpoints keeps the Secret of before.
- The default server: --connection-endpoints, or --connection-ssl-mode.
- A user with spec.hosts gets a working Secret.
- Leftovers: labels and annotations removed from the spec are removed (others' kept), a renamed Secret's old
  one deleted when this DatabaseUser owns it (never otherwise), a removed spec.connectionSecret deletes it.
"""

from __future__ import annotations

from typing import Any

import pymysql
import pytest
from sqlalchemy.engine import make_url

from dbuser_operator.api.v1alpha1 import CREDENTIAL_VERSION_ANNOTATION, MANAGED_METADATA_ANNOTATION
from dbuser_operator.controllers.databaseuser.owned_secrets import MANAGED_BY, MANAGED_BY_LABEL
from dbuser_operator.controllers.kit.resources import DATABASE_USERS, MYSQL_SERVERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.mysql.support import client_tls
from tests.integration.operator.databaseuser.test_credentials import (
    log_in_with_url,
    owner_uids,
    secret_of,
    text,
)
from tests.integration.operator.servers.test_servers import create_server
from tests.integration.operator.support.builders import database_user, generated_user, unique
from tests.integration.operator.support.kube import (
    create_secret,
    ready,
    secret_exists,
    wait_for_secret,
    wait_until_gone,
)
from tests.integration.operator.support.mysql import mysql_query
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator, StartOperator
from tests.integration.operator.support.wait import becomes, eventually

pytestmark = pytest.mark.integration

ADDRESS_KEYS = {"host", "port", "DATABASE_URL", "JDBC_URL"}


def values(secret: dict[str, Any]) -> dict[str, str]:
    return {key: text(secret, key) for key in secret["data"]}


def log_in_as_url_says(mysql: MySQLServer, url: str) -> tuple[str, bool]:
    """Log in with PyMySQL to what ``url`` says, with TLS when its ssl-mode requires it;
    (CURRENT_USER(), whether the session is encrypted)."""
    parsed = make_url(url)
    mode = parsed.query.get("ssl-mode", "PREFERRED")
    assert isinstance(mode, str)
    connection = pymysql.connect(
        host=parsed.host,
        port=parsed.port or 3306,
        user=parsed.username,
        password=(parsed.password or "").encode(),
        database=parsed.database,
        connect_timeout=5,
        **client_tls(mysql, tls=mode not in {"DISABLED", "PREFERRED"}),
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT CURRENT_USER()")
            (user,) = cursor.fetchone()
            cursor.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
            row = cursor.fetchone()
    finally:
        connection.close()
    return str(user), bool(row and row[1])


async def settled(kube: KubeClient, namespace: str, name: str, reason: str | None = None) -> dict[str, Any]:
    """The DatabaseUser once a pass acted on its current generation: Ready, or not with ``reason``."""

    async def check() -> dict[str, Any]:
        obj = await kube.get(DATABASE_USERS, name, namespace)
        generation, condition = obj["metadata"]["generation"], ready(obj) or {}
        current = (obj.get("status") or {}).get("observedGeneration") == generation
        current = current and condition.get("observedGeneration", generation) == generation
        wanted = condition.get("status") == "True" if reason is None else condition.get("reason") == reason
        assert current, f"not yet at generation {generation}: {ready(obj)}"
        assert wanted, f"Ready: {ready(obj)}"
        return obj

    message = f"{namespace}/{name} never settled ({reason or 'Ready'})"
    return await eventually(check, limit=60, interval=0.05, message=message)


async def patch_user(kube: KubeClient, namespace: str, name: str, spec: dict[str, Any]) -> None:
    await kube.patch(DATABASE_USERS, name, {"spec": spec}, PatchType.MERGE, namespace=namespace)


async def test_the_secret_carries_the_servers_endpoints(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    await create_server(kube_client, namespace, mysql)
    endpoints = [
        {"name": "primary", "host": mysql.host, "port": mysql.port, "tls": {"mode": "REQUIRED"}},
        {"name": "read-only", "host": "mysql-ro.databases.svc", "port": 3307},
    ]
    patch = {"spec": {"endpoints": endpoints}}
    await kube_client.patch(MYSQL_SERVERS, "main", patch, PatchType.MERGE, namespace=namespace)
    name, password = unique("ep"), passwords.new()
    await create_secret(kube_client, namespace, f"{name}-pw", {"password": password})
    connection: dict[str, Any] = {"name": f"{name}-db", "endpoints": ["read-only"]}
    spec: dict[str, Any] = {"serverRef": {"name": "main"}, "connectionSecret": connection}
    await kube_client.create(DATABASE_USERS, database_user(name, f"{name}-pw", **spec), namespace)
    await settled(kube_client, namespace, name)

    # The first endpoint by default, its TLS mode in both URLs; the other one's keys prefixed.
    found = values(await secret_of(kube_client, namespace, f"{name}-db"))
    assert (found["host"], found["port"], found["sslMode"]) == (mysql.host, str(mysql.port), "REQUIRED")
    assert found["DATABASE_URL"].endswith(f"@{mysql.host}:{mysql.port}?ssl-mode=REQUIRED")
    assert found["JDBC_URL"].endswith("&sslMode=REQUIRED")
    assert log_in_as_url_says(mysql, found["DATABASE_URL"]) == (f"{name}@%", True)  # over TLS
    assert (found["read_only_host"], found["read_only_port"]) == ("mysql-ro.databases.svc", "3307")
    assert found["read_only_DATABASE_URL"] == f"mysql://{name}:{password}@mysql-ro.databases.svc:3307"
    assert "read_only_sslMode" not in found
    assert found["read_only_JDBC_URL"].startswith("jdbc:mysql://mysql-ro.databases.svc:3307/?user=")

    # The one it names; a platform edit of the server's endpoints reaches the Secret.
    await patch_user(
        kube_client, namespace, name, {"connectionSecret": {"endpoint": "read-only", "endpoints": None}}
    )
    chosen = await wait_for_secret(
        kube_client, namespace, f"{name}-db", lambda s: text(s, "host") == "mysql-ro.databases.svc"
    )
    assert {key for key in chosen["data"]} == {*ADDRESS_KEYS, "username", "password"}
    endpoints[1]["port"] = 3308
    await kube_client.patch(MYSQL_SERVERS, "main", patch, PatchType.MERGE, namespace=namespace)
    moved = await wait_for_secret(kube_client, namespace, f"{name}-db", lambda s: text(s, "port") == "3308")
    assert moved["metadata"]["annotations"][CREDENTIAL_VERSION_ANNOTATION] == "1"  # the password is the same

    # An unknown name: refused, naming the server and its endpoints; the Secret as it was.
    await patch_user(kube_client, namespace, name, {"connectionSecret": {"endpoint": "proxy"}})
    obj = await settled(kube_client, namespace, name, "EndpointNotFound")
    message = ready(obj)["message"]  # type: ignore[index]
    assert (
        f"MySQLServer {namespace}/main has no endpoint proxy (its endpoints: primary, read-only)" in message
    )
    again = await secret_of(kube_client, namespace, f"{name}-db")
    assert again["metadata"]["resourceVersion"] == moved["metadata"]["resourceVersion"]
    await patch_user(kube_client, namespace, name, {"connectionSecret": {"endpoints": ["nope"]}})
    obj = await settled(kube_client, namespace, name, "EndpointNotFound")
    assert "no endpoint proxy, nope" in ready(obj)["message"]  # type: ignore[index]

    # The server without endpoints: the Secret of before (the server's host and port, no TLS mode).
    await patch_user(
        kube_client, namespace, name, {"connectionSecret": {"endpoint": None, "endpoints": None}}
    )
    await kube_client.patch(
        MYSQL_SERVERS, "main", {"spec": {"endpoints": None}}, PatchType.MERGE, namespace=namespace
    )
    plain = await wait_for_secret(
        kube_client,
        namespace,
        f"{name}-db",
        lambda s: "sslMode" not in s["data"] and text(s, "port") == str(mysql.port),
    )
    assert values(plain)["DATABASE_URL"] == f"mysql://{name}:{password}@{mysql.host}:{mysql.port}"
    assert log_in_with_url(mysql, values(plain)["DATABASE_URL"])[0] == f"{name}@%"
    await settled(kube_client, namespace, name)
    await patch_user(kube_client, namespace, name, {"connectionSecret": {"endpoint": "primary"}})
    obj = await settled(kube_client, namespace, name, "EndpointNotFound")
    assert "has no endpoint primary (its endpoints: none)" in ready(obj)["message"]  # type: ignore[index]
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name, limit=60)


async def test_the_default_servers_endpoints_come_from_the_settings(
    start_operator: StartOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    endpoints = [
        {"name": "primary", "host": mysql.host, "port": mysql.port},
        {"name": "proxy", "host": "proxysql.databases.svc", "port": 6033, "tls": {"mode": "VERIFY_IDENTITY"}},
    ]
    await start_operator(target="endpoints", connection_endpoints=endpoints)
    name, password = unique("dflt"), passwords.new()
    await create_secret(kube_client, namespace, f"{name}-pw", {"password": password})
    connection = {"name": f"{name}-db", "endpoint": "proxy", "endpoints": ["primary"]}
    obj = database_user(name, f"{name}-pw", target="endpoints", connectionSecret=connection)
    await kube_client.create(DATABASE_USERS, obj, namespace)
    await settled(kube_client, namespace, name)
    found = values(await secret_of(kube_client, namespace, f"{name}-db"))
    assert (found["host"], found["port"], found["sslMode"]) == (
        "proxysql.databases.svc",
        "6033",
        "VERIFY_IDENTITY",
    )
    assert (
        found["DATABASE_URL"]
        == f"mysql://{name}:{password}@proxysql.databases.svc:6033?ssl-mode=VERIFY_IDENTITY"
    )
    assert found["JDBC_URL"] == (
        f"jdbc:mysql://proxysql.databases.svc:6033/?user={name}&password={password}&sslMode=VERIFY_IDENTITY"
    )
    assert log_in_with_url(mysql, found["primary_DATABASE_URL"])[0] == f"{name}@%"

    await patch_user(kube_client, namespace, name, {"connectionSecret": {"endpoint": "replica"}})
    obj = await settled(kube_client, namespace, name, "EndpointNotFound")
    assert (
        "the default server (--connection-endpoints) has no endpoint replica (its endpoints: primary, proxy)"
        in (
            ready(obj)["message"]  # type: ignore[index]
        )
    )
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)


async def test_the_default_servers_tls_mode_comes_from_the_settings(
    start_operator: StartOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    await start_operator(target="sslmode", connection_ssl_mode="REQUIRED")
    name = unique("tls")
    await create_secret(kube_client, namespace, f"{name}-pw", {"password": passwords.new()})
    obj = database_user(name, f"{name}-pw", target="sslmode", connectionSecret={"name": f"{name}-db"})
    await kube_client.create(DATABASE_USERS, obj, namespace)
    await settled(kube_client, namespace, name)
    found = values(await secret_of(kube_client, namespace, f"{name}-db"))
    assert (found["host"], found["sslMode"]) == (mysql.host, "REQUIRED")
    assert log_in_as_url_says(mysql, found["DATABASE_URL"]) == (f"{name}@%", True)
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)


async def test_a_user_with_several_hosts_gets_a_working_secret(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name = unique("hosts")
    database = f"db_{name.replace('-', '_')}"
    mysql_query(mysql, f"CREATE DATABASE `{database}`")
    spec: dict[str, Any] = {
        "hosts": [mysql.host],  # the more specific account: logins from the test come in as this one
        "privileges": [{"database": database, "privileges": ["SELECT"]}],
        "connectionSecret": {"name": f"{name}-db"},
    }
    await kube_client.create(DATABASE_USERS, generated_user(name, **spec), namespace)
    obj = await settled(kube_client, namespace, name)
    assert sorted(obj["status"]["hosts"]) == sorted(["%", mysql.host])
    found = values(await secret_of(kube_client, namespace, f"{name}-db"))
    passwords.values.add(found["password"])
    assert log_in_with_url(mysql, found["DATABASE_URL"]) == (f"{name}@{mysql.host}", database)
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
    assert not await secret_exists(kube_client, namespace, f"{name}-db")
    mysql_query(mysql, f"DROP DATABASE `{database}`")


async def test_leftovers_of_the_connection_secret_are_cleaned_up(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name = unique("left")
    await create_secret(kube_client, namespace, f"{name}-pw", {"password": passwords.new()})
    connection = {
        "name": f"{name}-a",
        "labels": {"team": "shop", "tier": "web"},
        "annotations": {"owner": "shop-team", "note": "x"},
    }
    obj = await kube_client.create(
        DATABASE_USERS, database_user(name, f"{name}-pw", connectionSecret=connection), namespace
    )
    uid = obj["metadata"]["uid"]
    ready_obj = await settled(kube_client, namespace, name)
    assert ready_obj["status"]["connectionSecret"] == f"{name}-a"
    first = await secret_of(kube_client, namespace, f"{name}-a")
    assert first["metadata"]["labels"] == {"team": "shop", "tier": "web", MANAGED_BY_LABEL: MANAGED_BY}
    # Someone else's label and annotation on the Secret.
    theirs = {"metadata": {"labels": {"backup": "daily"}, "annotations": {"reloader": "on"}}}
    await kube_client.patch(SECRETS, f"{name}-a", theirs, PatchType.MERGE, namespace=namespace)

    # A label and an annotation removed from the spec go; the others stay, theirs too.
    await patch_user(
        kube_client,
        namespace,
        name,
        {"connectionSecret": {"labels": {"tier": None}, "annotations": {"note": None}}},
    )
    trimmed = await wait_for_secret(
        kube_client, namespace, f"{name}-a", lambda s: "tier" not in s["metadata"]["labels"]
    )
    assert trimmed["metadata"]["labels"] == {"team": "shop", "backup": "daily", MANAGED_BY_LABEL: MANAGED_BY}
    annotations = trimmed["metadata"]["annotations"]
    assert "note" not in annotations
    assert (annotations["owner"], annotations["reloader"], annotations[CREDENTIAL_VERSION_ANNOTATION]) == (
        "shop-team",
        "on",
        "1",
    )
    # All of them removed: the record goes too, what others set stays.
    await patch_user(
        kube_client, namespace, name, {"connectionSecret": {"labels": None, "annotations": None}}
    )
    bare = await wait_for_secret(
        kube_client, namespace, f"{name}-a", lambda s: "team" not in s["metadata"]["labels"]
    )
    assert bare["metadata"]["labels"] == {"backup": "daily", MANAGED_BY_LABEL: MANAGED_BY}
    assert bare["metadata"]["annotations"] == {"reloader": "on", CREDENTIAL_VERSION_ANNOTATION: "1"}
    assert MANAGED_METADATA_ANNOTATION not in bare["metadata"]["annotations"]

    # Renamed: the new one is written, then the old one (ours) deleted.
    await patch_user(kube_client, namespace, name, {"connectionSecret": {"name": f"{name}-b"}})
    renamed = await wait_for_secret(kube_client, namespace, f"{name}-b")
    assert owner_uids(renamed) == [(uid, True)]
    obj = await settled(kube_client, namespace, name)
    assert obj["status"]["connectionSecret"] == f"{name}-b"
    assert not await secret_exists(kube_client, namespace, f"{name}-a")

    # Renamed again while the old name holds a Secret someone else made: that one stays.
    await kube_client.delete(SECRETS, f"{name}-b", namespace)  # the operator writes it back, owned
    await wait_for_secret(kube_client, namespace, f"{name}-b", lambda s: owner_uids(s) == [(uid, True)])
    await kube_client.patch(
        SECRETS, f"{name}-b", {"metadata": {"ownerReferences": None}}, PatchType.MERGE, namespace=namespace
    )  # no longer this DatabaseUser's (as if someone else had made it)
    await patch_user(kube_client, namespace, name, {"connectionSecret": {"name": f"{name}-c"}})
    await wait_for_secret(kube_client, namespace, f"{name}-c")
    obj = await settled(kube_client, namespace, name)
    assert obj["status"]["connectionSecret"] == f"{name}-c"
    assert await secret_exists(kube_client, namespace, f"{name}-b")

    # Removed from the spec: the Secret goes, and status says none.
    await kube_client.patch(
        DATABASE_USERS, name, {"spec": {"connectionSecret": None}}, PatchType.MERGE, namespace=namespace
    )
    obj = await settled(kube_client, namespace, name)
    assert "connectionSecret" not in obj["status"]
    assert not await secret_exists(kube_client, namespace, f"{name}-c")
    assert await secret_exists(kube_client, namespace, f"{name}-b")
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)


async def test_a_forged_status_never_deletes_another_resources_secret(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """status.connectionSecret names what to clean up: whoever may write it can only name a Secret this
    DatabaseUser owns, or nothing is deleted."""
    mine, other = unique("mine"), unique("other")
    for name in (mine, other):
        await create_secret(kube_client, namespace, f"{name}-pw", {"password": passwords.new()})
        user = database_user(name, f"{name}-pw", connectionSecret={"name": f"{name}-db"})
        await kube_client.create(DATABASE_USERS, user, namespace)
        await settled(kube_client, namespace, name)
    theirs = (await secret_of(kube_client, namespace, f"{other}-db"))["metadata"]
    forged = {"status": {"connectionSecret": f"{other}-db"}}
    await kube_client.patch(
        DATABASE_USERS, mine, forged, PatchType.MERGE, namespace=namespace, subresource="status"
    )
    await kube_client.patch(  # a pass now
        DATABASE_USERS,
        mine,
        {"metadata": {"annotations": {"poke": "1"}}},
        PatchType.MERGE,
        namespace=namespace,
    )

    async def named() -> Any:
        return (await kube_client.get(DATABASE_USERS, mine, namespace))["status"].get("connectionSecret")

    await becomes(named, f"{mine}-db", message="the forged status was never replaced")
    kept = (await secret_of(kube_client, namespace, f"{other}-db"))["metadata"]
    assert (kept["uid"], kept["resourceVersion"]) == (theirs["uid"], theirs["resourceVersion"])
    assert await secret_exists(kube_client, namespace, f"{mine}-db")
    for name in (mine, other):
        await kube_client.delete(DATABASE_USERS, name, namespace)
        await wait_until_gone(kube_client, namespace, name)
