"""Server resources end to end: DatabaseUsers on a MySQLServer and on a ClusterMySQLServer (real API server,
real MySQL server, real logins), each server's bookkeeping in its own schema."""

from __future__ import annotations

from typing import Any

import pytest

from dbuser_operator.controllers.resources import CLUSTER_MYSQL_SERVERS, DATABASE_USERS, MYSQL_SERVERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient
from tests.integration.operator.conftest import TARGET, PasswordLedger, RunningOperator, create_secret
from tests.integration.operator.helpers import (
    can_log_in,
    database_user,
    mysql_query,
    unique,
    wait_for_ready,
)

pytestmark = pytest.mark.integration

CLUSTER_NAMESPACE = "default"  # the session operator's --cluster-resource-namespace (no $POD_NAMESPACE)


async def admin_secrets(kube: KubeClient, namespace: str, mysql: MySQLServer, name: str) -> None:
    """The server's admin credentials (and its CA, when it has one) in Secret ``name``."""
    data = {"user": mysql.user, "password": mysql.password}
    if mysql.ca_file is not None:
        data["ca.crt"] = mysql.ca_file.read_text()
    await create_secret(kube, namespace, name, data)


def server_spec(mysql: MySQLServer, secret: str, schema: str) -> dict[str, Any]:
    """A spec reaching ``mysql`` with the admin Secret ``secret``; its bookkeeping in ``schema``."""
    tls: dict[str, Any] = {"mode": "PREFERRED"}
    if mysql.ca_file is not None:
        tls = {"mode": "VERIFY_CA", "ca": {"name": secret, "key": "ca.crt"}}
    return {
        "host": mysql.host,
        "port": mysql.port,
        "credentials": {
            "user": {"name": secret, "key": "user"},
            "password": {"name": secret, "key": "password"},
        },
        "tls": tls,
        "bookkeepingSchema": schema,
    }


def server_object(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": MYSQL_SERVERS.api_version,
        "kind": kind,
        "metadata": {"name": name, "labels": {"dbuser-operator.dev/target": TARGET}},
        "spec": spec,
    }


def owned_in(mysql: MySQLServer, schema: str, user: str) -> list[tuple[Any, ...]]:
    """The bookkeeping rows of ``user`` in ``schema``."""
    return mysql_query(mysql, f"SELECT namespace, name FROM `{schema}`.`accounts` WHERE user = %s", user)


async def test_a_user_on_a_mysqlserver_gets_ready_and_logs_in(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    schema = f"dbu_{unique('srv').replace('-', '_')}"
    await admin_secrets(kube_client, namespace, mysql, "admin")
    await kube_client.create(
        MYSQL_SERVERS, server_object("MySQLServer", "main", server_spec(mysql, "admin", schema)), namespace
    )
    name, password = unique("on-server"), passwords.new()
    await create_secret(kube_client, namespace, "app-pw", {"password": password})
    await kube_client.create(
        DATABASE_USERS, database_user(name, "app-pw", serverRef={"name": "main"}), namespace
    )

    await wait_for_ready(kube_client, namespace, name, limit=60)
    assert can_log_in(mysql, name, password)
    assert owned_in(mysql, schema, name) == [(namespace, name)]  # recorded in this server's schema


async def test_a_user_on_a_clustermysqlserver_gets_ready_and_logs_in(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    schema = f"dbu_{unique('cls').replace('-', '_')}"
    server, secret = unique("shared"), unique("shared-admin")
    await admin_secrets(kube_client, CLUSTER_NAMESPACE, mysql, secret)
    await kube_client.create(
        CLUSTER_MYSQL_SERVERS, server_object("ClusterMySQLServer", server, server_spec(mysql, secret, schema))
    )
    name, password = unique("on-cluster"), passwords.new()
    await create_secret(kube_client, namespace, "app-pw", {"password": password})
    ref = {"kind": "ClusterMySQLServer", "name": server}
    await kube_client.create(DATABASE_USERS, database_user(name, "app-pw", serverRef=ref), namespace)

    await wait_for_ready(kube_client, namespace, name, limit=60)
    assert can_log_in(mysql, name, password)
    assert owned_in(mysql, schema, name) == [(namespace, name)]


async def test_server_not_found_until_it_appears(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name, password = unique("waits"), passwords.new()
    await create_secret(kube_client, namespace, "app-pw", {"password": password})
    await kube_client.create(
        DATABASE_USERS, database_user(name, "app-pw", serverRef={"name": "later"}), namespace
    )
    obj = await wait_for_ready(kube_client, namespace, name, "False", "ServerNotFound")
    assert f"MySQLServer {namespace}/later" in obj["status"]["conditions"][0]["message"]
    assert not can_log_in(mysql, name, password)

    schema = f"dbu_{unique('late').replace('-', '_')}"
    await admin_secrets(kube_client, namespace, mysql, "admin")
    await kube_client.create(
        MYSQL_SERVERS, server_object("MySQLServer", "later", server_spec(mysql, "admin", schema)), namespace
    )
    await wait_for_ready(kube_client, namespace, name, limit=60)  # requeued by the server's creation
    assert can_log_in(mysql, name, password)
