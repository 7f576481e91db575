"""TLS identities and authentication plugins end to end: the operator against the real API server and MySQL
server, proven by real logins (a client certificate of the right subject, the same password across a plugin
change), repaired after changes by hand, and refused with a reason where the server cannot."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import pytest

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import LocalMySQLServer, MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from tests.integration.mysql.support import (
    Certificates,
    admin,
    certificate_subject,
    loaded_plugin,
    plain_login,
    tls_login,
    unloaded_plugin,
)
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.kube import ready, wait_for_ready
from tests.integration.operator.support.mysql import account_exists, mysql_query, write_statements
from tests.integration.operator.support.operator import RunningOperator
from tests.support.kube import eventually

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def certificates(
    mysql_provider: MySQLServer | LocalMySQLServer, tmp_path_factory: pytest.TempPathFactory
) -> Certificates:
    if not isinstance(mysql_provider, LocalMySQLServer):
        pytest.skip("needs a local server of the session's flavour (MYSQL_URL or a container is in use)")
    return Certificates(mysql_provider.ca, tmp_path_factory.mktemp("operator-client-certificates"))


@pytest.fixture(scope="module")
def flavour(mysql: MySQLServer) -> str:
    [(version,)] = mysql_query(mysql, "SELECT VERSION()")
    return "mariadb" if "mariadb" in str(version).lower() else "mysql"


async def patch_spec(kube: KubeClient, namespace: str, name: str, spec: dict[str, Any]) -> None:
    await kube.patch(DATABASE_USERS, name, {"spec": spec}, PatchType.MERGE, namespace=namespace)


def tls_columns(mysql: MySQLServer, user: str) -> tuple[str, str, str, str] | None:
    rows = mysql_query(
        mysql,
        "SELECT ssl_type, x509_issuer, x509_subject, ssl_cipher FROM mysql.user WHERE User = %s",
        user,
    )
    if not rows:
        return None
    return tuple(v.decode() if isinstance(v, bytes) else str(v) for v in rows[0])  # type: ignore[return-value]


def plugin_of(mysql: MySQLServer, user: str) -> str | None:
    rows = mysql_query(mysql, "SELECT plugin FROM mysql.user WHERE User = %s", user)
    return str(rows[0][0]) if rows else None


async def until(condition: Any, what: str) -> None:
    await eventually(condition, timeout=30, interval=0.1, what=what)


async def test_a_certificate_subject_identity_converges_and_is_repaired(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    secret: str,
    certificates: Certificates,
) -> None:
    name = unique("subject")
    subject = certificate_subject(name)
    tls = {"subject": subject, "issuer": certificates.ca.subject_oneline}
    await kube_client.create(DATABASE_USERS, database_user(name, "pw", tls=tls), namespace)
    await wait_for_ready(kube_client, namespace, name)
    assert tls_columns(mysql, name) == ("SPECIFIED", certificates.ca.subject_oneline, subject, "")

    assert tls_login(mysql, name, secret, **certificates.issue(name)) == f"{name}@%"
    assert tls_login(mysql, name, secret, **certificates.issue("intruder")) == 1045
    assert tls_login(mysql, name, secret) == 1045
    assert plain_login(mysql, name, secret) == 1045

    # Drift by hand: the periodic check (every second here) puts the identity back.
    admin(mysql, f"ALTER USER '{name}'@'%' REQUIRE NONE")
    await until(lambda: (tls_columns(mysql, name) or ("",))[0] == "SPECIFIED", "subject restored")
    assert tls_login(mysql, name, secret, **certificates.issue(name)) == f"{name}@%"

    await patch_spec(kube_client, namespace, name, {"tls": {"x509": True, "subject": None, "issuer": None}})
    await until(lambda: (tls_columns(mysql, name) or ("",))[0] == "X509", "any certificate")
    assert tls_login(mysql, name, secret, **certificates.issue("anyone")) == f"{name}@%"
    assert tls_login(mysql, name, secret) == 1045

    await patch_spec(kube_client, namespace, name, {"tls": None})
    await until(lambda: tls_columns(mysql, name) == ("", "", "", ""), "no requirement")
    assert plain_login(mysql, name, secret) == "logged in"


async def test_a_plugin_the_server_lacks_is_refused_with_the_reason(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    flavour: str,
    secret: str,
) -> None:
    """MySQL 9 has no mysql_native_password; MariaDB no caching_sha2_password. Nothing is created."""
    missing = "mysql_native_password" if flavour == "mysql" else "caching_sha2_password"
    name = unique("refused")
    body = database_user(name, "pw", authentication={"plugin": missing})
    await kube_client.create(DATABASE_USERS, body, namespace)
    obj = await wait_for_ready(kube_client, namespace, name, "False", "PluginUnavailable")
    message = ready(obj)["message"]  # type: ignore[index]
    assert f"has no active authentication plugin {missing}" in message
    assert ("removed in MySQL 9.0" if flavour == "mysql" else "a MySQL plugin") in message
    assert not account_exists(mysql, name)


async def test_a_plugin_loaded_later_is_used_without_a_change_of_the_resource(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    flavour: str,
    secret: str,
) -> None:
    """MariaDB's ed25519 (INSTALL SONAME 'auth_ed25519'), MySQL's auth_socket (INSTALL PLUGIN): refused
    while not loaded, used once it is (the refusal is retried with backoff)."""
    plugin = "ed25519" if flavour == "mariadb" else "auth_socket"
    name = unique("later")
    body = database_user(name, "pw", authentication={"plugin": plugin})
    if plugin == "auth_socket":
        del body["spec"]["password"]
    with unloaded_plugin(mysql, flavour, plugin):
        await kube_client.create(DATABASE_USERS, body, namespace)
        await wait_for_ready(kube_client, namespace, name, "False", "PluginUnavailable")
        with loaded_plugin(mysql, flavour, plugin):
            obj = await wait_for_ready(kube_client, namespace, name, limit=60)
            assert obj["status"]["authenticationPlugin"] == plugin
            assert plugin_of(mysql, name) == plugin
            if plugin == "ed25519":
                assert plain_login(mysql, name, secret) == "logged in"
            else:
                # no password: the socket's operating system user only (1698: denied, no password given)
                assert plain_login(mysql, name, secret) in {1045, 1698}
            await kube_client.delete(DATABASE_USERS, name, namespace)
            await until(lambda: not account_exists(mysql, name), "dropped before the plugin is unloaded")


async def test_an_account_moves_to_a_socket_plugin_without_a_password_and_back(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    flavour: str,
    secret: str,
) -> None:
    """unix_socket (MariaDB) or auth_socket (MySQL, loaded for the test): the password goes with
    spec.password, and comes back with it."""
    socket, default = (
        ("auth_socket", "caching_sha2_password")
        if flavour == "mysql"
        else ("unix_socket", "mysql_native_password")
    )
    name = unique("socket")
    with loaded_plugin(mysql, flavour, socket) if flavour == "mysql" else contextlib.nullcontext():
        await kube_client.create(DATABASE_USERS, database_user(name, "pw"), namespace)
        await wait_for_ready(kube_client, namespace, name)
        assert tls_login(mysql, name, secret) == f"{name}@%"

        await patch_spec(
            kube_client, namespace, name, {"authentication": {"plugin": socket}, "password": None}
        )
        await until(lambda: plugin_of(mysql, name) == socket, "socket plugin")
        obj = await wait_for_ready(kube_client, namespace, name)
        assert obj["status"]["authenticationPlugin"] == socket
        assert tls_login(mysql, name, secret) in {1045, 1698}  # 1698: denied, no password given

        password = {"name": "pw", "key": "password"}
        await patch_spec(
            kube_client, namespace, name, {"authentication": {"plugin": default}, "password": password}
        )
        await until(lambda: plugin_of(mysql, name) == default, "password plugin again")
        assert tls_login(mysql, name, secret) == f"{name}@%"
        await kube_client.delete(DATABASE_USERS, name, namespace)
        await until(lambda: not account_exists(mysql, name), "dropped before the plugin is unloaded")


class LoginLoop:
    """Logs in with one password again and again in a thread, counting refusals."""

    def __init__(self, mysql: MySQLServer, user: str, password: str) -> None:
        self.mysql, self.user, self.password = mysql, user, password
        self.logins = self.refused = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            result = tls_login(self.mysql, self.user, self.password)
            self.logins += 1
            self.refused += result != f"{self.user}@%"

    def __enter__(self) -> LoginLoop:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


async def test_a_plugin_migration_keeps_the_password_and_every_login_works(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    flavour: str,
    secret: str,
) -> None:
    """MySQL 9: sha256_password to caching_sha2_password; MariaDB: mysql_native_password to ed25519. An
    application logging in all along with the Secret's password is never refused."""
    before, after = (
        ("sha256_password", "caching_sha2_password")
        if flavour == "mysql"
        else ("mysql_native_password", "ed25519")
    )
    name = unique("migrate")
    with loaded_plugin(mysql, flavour, "ed25519") if flavour == "mariadb" else contextlib.nullcontext():
        await kube_client.create(
            DATABASE_USERS, database_user(name, "pw", authentication={"plugin": before}), namespace
        )
        obj = await wait_for_ready(kube_client, namespace, name)
        assert obj["status"]["authenticationPlugin"] == before
        assert plugin_of(mysql, name) == before
        with LoginLoop(mysql, name, secret) as loop:
            await until(lambda: loop.logins >= 3, "logins before")
            await patch_spec(kube_client, namespace, name, {"authentication": {"plugin": after}})
            await until(lambda: plugin_of(mysql, name) == after, "plugin changed")
            seen = loop.logins
            await until(lambda: loop.logins >= seen + 3, "logins after")
        assert loop.refused == 0, f"{loop.refused} of {loop.logins} logins refused"
        print(f"{before} -> {after}: {loop.logins} logins during the migration, {loop.refused} refused")
        obj = await wait_for_ready(kube_client, namespace, name)
        assert obj["status"]["authenticationPlugin"] == after

        # A plugin changed by hand changes the authentication string: the drift check puts plugin and
        # password back.
        by_hand = (
            f"IDENTIFIED WITH {before} BY 'by-hand'"
            if flavour == "mysql"
            else f"IDENTIFIED VIA {before} USING PASSWORD('by-hand')"
        )
        admin(mysql, f"ALTER USER '{name}'@'%' {by_hand}")
        assert plugin_of(mysql, name) == before
        await until(lambda: plugin_of(mysql, name) == after, "plugin restored")
        assert tls_login(mysql, name, secret) == f"{name}@%"
        await kube_client.delete(DATABASE_USERS, name, namespace)
        await until(lambda: not account_exists(mysql, name), "dropped")


async def test_passes_that_change_nothing_write_nothing(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    flavour: str,
    secret: str,
) -> None:
    """With a plugin and an identity in the spec, later passes find them in place and send no statement."""
    name = unique("quiet")
    plugin = "caching_sha2_password" if flavour == "mysql" else "mysql_native_password"
    body = database_user(name, "pw", authentication={"plugin": plugin}, tls={"x509": True})
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name)
    await asyncio.sleep(1.5)  # let the creation's own passes settle
    written = write_statements(mysql)
    await asyncio.sleep(2.5)  # two drift checks, and any requeue
    assert write_statements(mysql) == written
