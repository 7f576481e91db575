"""Server resources end to end: DatabaseUsers on a MySQLServer and on a ClusterMySQLServer (real API server,
real MySQL server, real logins), each server's bookkeeping in its own schema."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dbuser_operator.controllers.kit.resources import (
    CLUSTER_MYSQL_SERVERS,
    DATABASE_ROLES,
    DATABASE_USERS,
    MYSQL_SERVERS,
)
from dbuser_operator.controllers.servers.watch import server_kinds_served
from dbuser_operator.envtest import LocalMySQLServer, MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import SECRETS
from tests.conftest import Runner
from tests.integration.operator.support.builders import database_user, server_object, server_spec, unique
from tests.integration.operator.support.instances import own_target
from tests.integration.operator.support.kube import (
    admin_secrets,
    create_secret,
    deleted,
    printed_table,
    ready,
    wait_for_condition,
    wait_for_ready,
    wait_until_gone,
)
from tests.integration.operator.support.mysql import can_log_in, mysql_query, wait_for_login
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator, StartOperator
from tests.integration.operator.support.wait import eventually

pytestmark = pytest.mark.integration

CLUSTER_NAMESPACE = "default"  # the session operator's --cluster-resource-namespace (no $POD_NAMESPACE)


def owned_in(mysql: MySQLServer, schema: str, user: str) -> list[tuple[Any, ...]]:
    """The bookkeeping rows of ``user`` in ``schema``."""
    return mysql_query(mysql, f"SELECT namespace, name FROM `{schema}`.`accounts` WHERE user = %s", user)


def new_schema() -> str:
    """A bookkeeping schema of its own for one test's server."""
    return f"dbu_{unique('s').replace('-', '_')}"


async def create_server(
    kube: KubeClient, namespace: str, mysql: MySQLServer, name: str = "main", target: str | None = None
) -> str:
    """A MySQLServer ``name`` reaching ``mysql``, its admin Secret ``<name>-admin``; its schema."""
    schema = new_schema()
    await admin_secrets(kube, namespace, mysql, f"{name}-admin")
    body = server_object("MySQLServer", name, server_spec(mysql, f"{name}-admin", schema))
    body["metadata"]["labels"]["dbuser-operator.dev/target"] = target or own_target()
    await kube.create(MYSQL_SERVERS, body, namespace)
    return schema


async def ready_user_on(
    kube: KubeClient,
    namespace: str,
    passwords: PasswordLedger,
    server: str = "main",
    target: str | None = None,
    **spec: Any,
) -> tuple[str, str]:
    """A DatabaseUser on MySQLServer ``server``, once Ready: its name and password."""
    name, password = unique("app"), passwords.new()
    await create_secret(kube, namespace, f"{name}-pw", {"password": password})
    user = database_user(name, f"{name}-pw", target=target, serverRef={"name": server}, **spec)
    await kube.create(DATABASE_USERS, user, namespace)
    await wait_for_ready(kube, namespace, name, limit=60)
    return name, password


async def test_a_user_on_a_mysqlserver_gets_ready_and_logs_in(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    kubectl: Runner,
) -> None:
    schema = await create_server(kube_client, namespace, mysql)
    name, password = await ready_user_on(kube_client, namespace, passwords)
    (row,) = printed_table(kubectl("get", "dbu", name, "-n", namespace, "-o", "wide").stdout)
    assert (row["SERVER"], row["SERVER KIND"]) == ("main", "MySQLServer")
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


async def wait_for_server(
    kube: KubeClient, namespace: str, name: str, status: str, reason: str | None = None, limit: float = 60
) -> dict[str, Any]:
    """Poll the MySQLServer until its Ready condition has ``status`` (and ``reason``)."""
    return await wait_for_condition(kube, MYSQL_SERVERS, namespace, name, status, reason, limit=limit)


async def test_server_status_and_printer_columns(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    kubectl: Runner,
) -> None:
    schema = await create_server(kube_client, namespace, mysql)

    obj = await wait_for_server(kube_client, namespace, "main", "True", "Connected")
    status = obj["status"]
    (version,) = mysql_query(mysql, "SELECT VERSION()")[0]
    mariadb = "mariadb" in str(version).lower()
    assert status["flavour"] == ("MariaDB" if mariadb else "MySQL")
    assert str(version).startswith(status["version"])
    assert status["capabilities"]["dualPasswords"] is True  # MySQL 9.7, MariaDB 11.8 and 10.11 alike
    assert status["capabilities"]["manyDefaultRoles"] is (not mariadb)
    assert status["capabilities"]["plugins"]  # the active authentication plugins
    assert status["accounts"] == 0
    assert status["observedGeneration"] == obj["metadata"]["generation"]
    assert f"{mysql.host}:{mysql.port}" in ready(obj)["message"]  # type: ignore[index]
    assert obj["metadata"]["finalizers"] == [f"mysql.dbuser-operator.dev/server-{own_target()}"]
    assert mysql_query(mysql, "SHOW DATABASES LIKE %s", schema) == [(schema,)]  # the bookkeeping schema

    header, row = kubectl("get", "mysqlservers", "-n", namespace).stdout.splitlines()
    assert header.split() == [
        "NAME",
        "HOST",
        "PORT",
        "READY",
        "REASON",
        "FLAVOUR",
        "VERSION",
        "ACCOUNTS",
        "AGE",
    ]
    assert row.split()[:8] == [
        "main",
        mysql.host,
        str(mysql.port),
        "True",
        "Connected",
        status["flavour"],
        status["version"],
        "0",
    ]


async def test_a_wrong_admin_password_makes_the_server_and_its_users_wait_until_the_secret_is_fixed(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    schema = f"dbu_{unique('pw').replace('-', '_')}"
    wrong = passwords.new("wrong-admin")
    await create_secret(kube_client, namespace, "admin", {"user": mysql.user, "password": wrong})
    spec = server_spec(mysql, "admin", schema)
    if mysql.ca_file is not None:
        await create_secret(kube_client, namespace, "admin-ca", {"ca.crt": mysql.ca_file.read_text()})
        spec["tls"]["ca"]["name"] = "admin-ca"
    await kube_client.create(MYSQL_SERVERS, server_object("MySQLServer", "main", spec), namespace)
    server = await wait_for_server(kube_client, namespace, "main", "False", "AccessDenied")
    assert f"{mysql.host}:{mysql.port}" in ready(server)["message"]  # type: ignore[index]

    name, password = unique("waiting"), passwords.new()
    await create_secret(kube_client, namespace, "app-pw", {"password": password})
    await kube_client.create(
        DATABASE_USERS, database_user(name, "app-pw", serverRef={"name": "main"}), namespace
    )
    user = await wait_for_ready(kube_client, namespace, name, "False", "ServerNotReady")
    assert f"MySQLServer {namespace}/main" in ready(user)["message"]  # type: ignore[index]
    assert not can_log_in(mysql, name, password)

    # The admin Secret fixed: reconnect without a restart, the server Ready, the user too.
    await kube_client.patch(
        SECRETS, "admin", {"stringData": {"password": mysql.password}}, PatchType.MERGE, namespace=namespace
    )
    await wait_for_server(kube_client, namespace, "main", "True", "Connected")
    await wait_for_ready(kube_client, namespace, name, limit=60)
    assert can_log_in(mysql, name, password)


async def test_server_deletion_waits_for_its_users_then_lets_go(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    await create_server(kube_client, namespace, mysql)
    name, password = await ready_user_on(kube_client, namespace, passwords)

    await kube_client.delete(MYSQL_SERVERS, "main", namespace)
    server = await wait_for_server(kube_client, namespace, "main", "False", "Deleting")
    assert "1 DatabaseUser(s)" in ready(server)["message"]  # type: ignore[index]
    user = await wait_for_ready(kube_client, namespace, name, "False", "ServerDeleting")
    assert f"MySQLServer {namespace}/main" in ready(user)["message"]  # type: ignore[index]
    assert can_log_in(mysql, name, password)  # nothing done to the account

    # The user deleted: its account dropped on the server being deleted; then the server goes.
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
    assert not can_log_in(mysql, name, password)
    await wait_until_server_gone(kube_client, namespace, "main")


async def test_the_release_annotation_lets_a_server_go_at_once(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    await create_server(kube_client, namespace, mysql)
    name, password = await ready_user_on(kube_client, namespace, passwords)
    await kube_client.delete(MYSQL_SERVERS, "main", namespace)
    await wait_for_server(kube_client, namespace, "main", "False", "Deleting")

    release = {"metadata": {"annotations": {"mysql.dbuser-operator.dev/release": "true"}}}
    await kube_client.patch(MYSQL_SERVERS, "main", release, PatchType.MERGE, namespace=namespace)
    await wait_until_server_gone(kube_client, namespace, "main")
    released = await warning_event(kube_client, namespace, "MySQLServer", "Released")
    assert "1 DatabaseUser(s)" in released["message"]
    assert can_log_in(mysql, name, password)  # left in MySQL
    await wait_for_ready(kube_client, namespace, name, "False", "ServerNotFound")

    # Its DatabaseUser is deleted at once: there is no server to act on, nothing is dropped, and it says so.
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
    let_go = await warning_event(kube_client, namespace, "DatabaseUser", "ServerGone")
    assert "let go without dropping anything" in let_go["message"]
    assert can_log_in(mysql, name, password)
    mysql_query(mysql, f"DROP USER '{name}'@'%'")


async def wait_until_server_gone(kube: KubeClient, namespace: str, name: str, limit: float = 60) -> None:
    await eventually(
        lambda: deleted(kube, MYSQL_SERVERS, namespace, name),
        limit=limit,
        interval=0.1,
        message=f"MySQLServer {namespace}/{name} was not deleted",
    )


async def warning_event(kube: KubeClient, namespace: str, kind: str, reason: str) -> dict[str, Any]:
    """The Warning Event ``reason`` about an object of ``kind`` in ``namespace``, once it is recorded."""

    async def check() -> dict[str, Any]:
        events = (await kube.request("GET", f"/api/v1/namespaces/{namespace}/events"))["items"]
        wanted = (kind, reason, "Warning")
        found = [e for e in events if (e["involvedObject"]["kind"], e["reason"], e["type"]) == wanted]
        assert found, f"{len(events)} other Events"
        return dict(found[0])

    message = f"no Warning Event {reason} about a {kind} in {namespace}"
    return await eventually(check, limit=30, interval=0.1, message=message)


@pytest.fixture(scope="module")
def second_mysql(envtest_workdir: Path) -> Iterator[MySQLServer]:
    """A second real server of the session's flavour, for this module's tests."""
    server = LocalMySQLServer(envtest_workdir / "second-mysql")
    server.start()
    yield server.admin
    server.stop()


async def test_the_same_account_name_on_two_servers_is_two_accounts(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    second_mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """Two DatabaseUsers naming one account name, each on its own server: both Ready (no AccountClaimed),
    each password logs in on its own server only, each server's bookkeeping records its own."""
    schema = f"dbu_{unique('two').replace('-', '_')}"
    for name, server in (("first", mysql), ("second", second_mysql)):
        await admin_secrets(kube_client, namespace, server, f"{name}-admin")
        body = server_object("MySQLServer", name, server_spec(server, f"{name}-admin", schema))
        await kube_client.create(MYSQL_SERVERS, body, namespace)
    account = unique("shared-name")
    first_password, second_password = passwords.new(), passwords.new()
    await create_secret(kube_client, namespace, "first-pw", {"password": first_password})
    await create_secret(kube_client, namespace, "second-pw", {"password": second_password})
    for name in ("first", "second"):
        user = database_user(f"{name}-app", f"{name}-pw", user=account, serverRef={"name": name})
        await kube_client.create(DATABASE_USERS, user, namespace)

    await wait_for_ready(kube_client, namespace, "first-app", limit=60)
    await wait_for_ready(kube_client, namespace, "second-app", limit=60)
    assert can_log_in(mysql, account, first_password)
    assert not can_log_in(mysql, account, second_password)
    assert can_log_in(second_mysql, account, second_password)
    assert not can_log_in(second_mysql, account, first_password)
    assert owned_in(mysql, schema, account) == [(namespace, "first-app")]
    assert owned_in(second_mysql, schema, account) == [(namespace, "second-app")]

    # Deleting one drops its account on its own server only.
    await kube_client.delete(DATABASE_USERS, "first-app", namespace)
    await wait_until_gone(kube_client, namespace, "first-app")
    assert not can_log_in(mysql, account, first_password)
    assert can_log_in(second_mysql, account, second_password)


async def test_without_a_default_server_only_server_resources_are_served(
    start_operator: StartOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """--no-default-server (the --mysql-* flags, pointing nowhere here, are not used): a user without
    serverRef is refused with a condition saying so; one on a MySQLServer converges; connection Secrets
    carry the server resource's host and port."""
    target = "no-default"
    instance = await start_operator(target=target, default_server=False, mysql_host="192.0.2.1")
    try:
        name, password = unique("no-ref"), passwords.new()
        await create_secret(kube_client, namespace, "app-pw", {"password": password})
        await kube_client.create(DATABASE_USERS, database_user(name, "app-pw", target=target), namespace)
        refused = await wait_for_ready(kube_client, namespace, name, "False", "ServerNotFound")
        assert "no default server" in ready(refused)["message"]  # type: ignore[index]

        await create_server(kube_client, namespace, mysql, target=target)
        spec: dict[str, Any] = {"connectionSecret": {"name": "served-db"}}
        served, served_password = await ready_user_on(
            kube_client, namespace, passwords, target=target, **spec
        )
        assert can_log_in(mysql, served, served_password)
        connection = await kube_client.get(SECRETS, "served-db", namespace)
        host, port = (base64.b64decode(connection["data"][key]).decode() for key in ("host", "port"))
        assert (host, port) == (mysql.host, str(mysql.port))
    finally:
        instance.stop.set()
        await asyncio.wait_for(instance.task, timeout=30)


async def test_a_role_on_a_server_is_granted_there_and_refused_to_a_user_of_another_server(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """A DatabaseRole on a MySQLServer is made there (its bookkeeping in that server's schema) and granted to
    a user on the same server; a user on the default server naming it is refused, saying why."""
    schema = await create_server(kube_client, namespace, mysql)
    role = unique("srv-reader")
    grant = {"privileges": ["SELECT"], "database": "app"}
    role_body = {
        "apiVersion": DATABASE_ROLES.api_version,
        "kind": "DatabaseRole",
        "metadata": {"name": role, "labels": {"dbuser-operator.dev/target": own_target()}},
        "spec": {"privileges": [grant], "serverRef": {"name": "main"}},
    }
    await kube_client.create(DATABASE_ROLES, role_body, namespace)
    password = passwords.new()
    await create_secret(kube_client, namespace, "app-pw", {"password": password})
    same, other = unique("same-server"), unique("other-server")
    same_spec: dict[str, Any] = {"serverRef": {"name": "main"}, "roles": [role]}
    await kube_client.create(DATABASE_USERS, database_user(same, "app-pw", **same_spec), namespace)
    await kube_client.create(DATABASE_USERS, database_user(other, "app-pw", roles=[role]), namespace)

    await wait_for_ready(kube_client, namespace, same, limit=60)
    assert mysql_query(mysql, f"SELECT name FROM `{schema}`.`roles` WHERE user = %s", role) == [(role,)]
    refused = await wait_for_ready(kube_client, namespace, other, "False", "RoleNotFound", limit=60)
    message = ready(refused)["message"]  # type: ignore[index]
    assert f"is on MySQLServer {namespace}/main, this user on the operator's default server" in message
    assert "must be on the same server" in message


async def test_with_leader_election_each_servers_sessions_are_fenced_in_its_own_schema(
    start_operator: StartOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """A leader's connections to a server resource record the leader epoch and register their sessions in
    that server's bookkeeping schema (the epoch of the one Lease; the sessions per server)."""
    target = "fenced-servers"
    election = f"servers-{uuid.uuid4().hex[:8]}"
    instance = await start_operator(
        target=target,
        leader_elect=True,
        leader_election_id=election,
        leader_election_namespace=namespace,
        leader_election_identity=f"servers-test-{uuid.uuid4().hex[:6]}",
    )
    try:
        schema = await create_server(kube_client, namespace, mysql, target=target)
        name, password = await ready_user_on(kube_client, namespace, passwords, target=target)
        assert can_log_in(mysql, name, password)

        lease = f"{namespace}/{election}"
        epochs = mysql_query(mysql, f"SELECT epoch FROM `{schema}`.`leader_epoch` WHERE election = %s", lease)
        assert len(epochs) == 1
        sessions = mysql_query(
            mysql, f"SELECT epoch FROM `{schema}`.`leader_sessions` WHERE election = %s", lease
        )
        assert sessions
        assert {epoch for (epoch,) in sessions} == {epochs[0][0]}
    finally:
        instance.stop.set()
        await asyncio.wait_for(instance.task, timeout=30)


async def test_the_drift_check_repairs_an_account_on_a_server_resource(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """The session operator checks for drift every second, on every server in use: a password changed by
    hand on an account of a MySQLServer is set back."""
    await create_server(kube_client, namespace, mysql)
    name, password = await ready_user_on(kube_client, namespace, passwords)

    by_hand = passwords.new("by-hand")
    mysql_query(mysql, f"ALTER USER `{name}`@'%%' IDENTIFIED BY %s", by_hand)
    # Not "the old password fails now": a pass may already have set it back (one retrying a status
    # conflict, or the drift check itself). The Warning Event proves the change was seen and undone.
    event = await warning_event(kube_client, namespace, "DatabaseUser", "PasswordRestored")
    assert event["involvedObject"]["name"] == name
    message = "the drift check never set the password back"
    await wait_for_login(mysql, name, password, limit=60, interval=0.2, message=message)
    assert not can_log_in(mysql, name, by_hand)


async def test_a_health_check_that_finds_nothing_new_writes_nothing(
    start_operator: StartOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
) -> None:
    """Checked every 0.2 s, a healthy server's status is written once; its metrics say it is up."""
    target = "quick-checks"
    instance = await start_operator(target=target, server_check_period=0.2)
    try:
        await create_server(kube_client, namespace, mysql, target=target)
        obj = await wait_for_server(kube_client, namespace, "main", "True", "Connected")
        version = obj["metadata"]["resourceVersion"]
        server = f"MySQLServer/{namespace}/main"
        assert REGISTRY.get_sample_value("dbuser_operator_mysql_server_up", {"server": server}) == 1
        await asyncio.sleep(2)  # about ten checks
        again = await kube_client.get(MYSQL_SERVERS, "main", namespace)
        assert again["metadata"]["resourceVersion"] == version
        assert REGISTRY.get_sample_value("dbuser_operator_mysql_server_pool_size", {"server": server}) == 16
    finally:
        instance.stop.set()
        await asyncio.wait_for(instance.task, timeout=30)


async def test_the_server_kinds_are_found_served(kube_client: KubeClient, crds: list[str]) -> None:
    """Discovery finds both kinds once their CRDs are installed (without them the operator runs as before
    server resources, logging why)."""
    assert await server_kinds_served(kube_client)


async def test_an_admin_that_requires_x509_connects_with_the_client_certificate_secret(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    mysql_provider: MySQLServer | LocalMySQLServer,
    passwords: PasswordLedger,
) -> None:
    """An admin account REQUIRE X509: AccessDenied without a client certificate; with
    tls.clientCertificateSecret (a kubernetes.io/tls Secret) added to the spec, the server reconnects at
    once and its users converge."""
    assert isinstance(mysql_provider, LocalMySQLServer)  # its CA signs the client certificates it trusts
    admin, admin_password = unique("x509admin").replace("-", "_"), passwords.new()
    mysql_query(mysql, f"CREATE USER `{admin}`@'%%' IDENTIFIED BY %s REQUIRE X509", admin_password)
    try:
        privileges = "CREATE USER, CREATE, DROP, ALTER, INDEX, SELECT, INSERT, UPDATE, DELETE, PROCESS"
        mysql_query(mysql, f"GRANT {privileges} ON *.* TO `{admin}`@'%' WITH GRANT OPTION")
        pair = mysql_provider.ca.issue_client(admin)
        tls_secret = {
            "metadata": {"name": "admin-client"},
            "type": "kubernetes.io/tls",
            "stringData": {"tls.crt": pair.cert_pem.decode(), "tls.key": pair.key_pem.decode()},
        }
        await kube_client.create(SECRETS, tls_secret, namespace)
        data = {"user": admin, "password": admin_password, "ca.crt": mysql_provider.ca_file.read_text()}
        await create_secret(kube_client, namespace, "main-admin", data)
        spec = server_spec(mysql, "main-admin", new_schema())
        spec["tls"] = {"mode": "VERIFY_CA", "ca": {"name": "main-admin", "key": "ca.crt"}}
        await kube_client.create(MYSQL_SERVERS, server_object("MySQLServer", "main", spec), namespace)
        await wait_for_server(kube_client, namespace, "main", "False", "AccessDenied")

        patch = {"spec": {"tls": {"clientCertificateSecret": "admin-client"}}}
        await kube_client.patch(MYSQL_SERVERS, "main", patch, PatchType.MERGE, namespace=namespace)
        await wait_for_server(kube_client, namespace, "main", "True", "Connected")
        name, password = await ready_user_on(kube_client, namespace, passwords)
        assert can_log_in(mysql, name, password)
    finally:
        mysql_query(mysql, f"DROP USER IF EXISTS `{admin}`@'%'")
