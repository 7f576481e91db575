"""Authentication plugins against the real server: which are active, accounts created and migrated with
one, the same password across a plugin change, plugins without a password, and the server's refusals."""

from __future__ import annotations

import contextlib

import pymysql
import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import Database, InvalidOptionsError, ServerInfo
from dbuser_operator.mysql.accounts import accounts
from dbuser_operator.mysql.accounts.authentication import (
    Method,
    active_plugins,
    read_plugin,
    unavailable,
)
from dbuser_operator.mysql.errors import PluginUnavailableError
from tests.integration.mysql.support import Accounts, admin, admin_rows, loaded_plugin, login, login_error

pytestmark = pytest.mark.integration

DEFAULT = {"mysql": "caching_sha2_password", "mariadb": "mysql_native_password"}
OTHER_FLAVOURS = {"mysql": "ed25519", "mariadb": "caching_sha2_password"}
# A plugin without a password that the flavour has (auth_socket after INSTALL PLUGIN on MySQL).
SOCKET = {"mysql": "auth_socket", "mariadb": "unix_socket"}


async def test_active_plugins_and_why_one_is_unavailable(db: Database, server: ServerInfo) -> None:
    active = await active_plugins(db)
    assert DEFAULT[server.flavour] in active
    assert unavailable(DEFAULT[server.flavour], server, active) is None

    other = OTHER_FLAVOURS[server.flavour]
    refusal = unavailable(other, server, active)
    assert refusal is not None
    assert f"{server} has no active authentication plugin {other}" in refusal
    assert ("a MariaDB plugin" if server.flavour == "mysql" else "a MySQL plugin") in refusal
    assert DEFAULT[server.flavour] in refusal  # the active ones are listed

    native = unavailable("mysql_native_password", server, active)
    assert (native is None) == ("mysql_native_password" in active)
    if server.flavour == "mysql" and server.version >= (9, 0, 0):
        assert native is not None
        assert "removed in MySQL 9.0" in native


async def test_an_account_created_with_the_default_plugin_named(
    db: Database, mysql: MySQLServer, server: ServerInfo, accounts_made: Accounts
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    method = Method(DEFAULT[server.flavour], server.flavour)
    await accounts.create(db, user, "%", "pw-1", method)
    assert await read_plugin(db, server, user, "%") == method.plugin
    assert login(mysql, user, "pw-1", tls=True) == f"{user}@%"

    await accounts.set_password(db, user, "%", "pw-2", method)
    assert await read_plugin(db, server, user, "%") == method.plugin
    assert login(mysql, user, "pw-2", tls=True) == f"{user}@%"
    assert login_error(mysql, user, "pw-1", tls=True) == 1045
    assert await read_plugin(db, server, accounts_made.name(), "%") is None


async def test_a_plugin_change_keeps_the_password(
    db: Database, mysql: MySQLServer, server: ServerInfo, accounts_made: Accounts
) -> None:
    """MySQL 9: sha256_password (deprecated) to caching_sha2_password (mysql_native_password, the usual
    origin, is gone there); MariaDB: mysql_native_password to ed25519. The application logs in with the same
    password before and after. MySQL refuses to RETAIN the old password across a plugin change."""
    user = accounts_made.track(accounts_made.name(), "%")
    if server.flavour == "mysql":
        before, after = Method("sha256_password", "mysql"), Method("caching_sha2_password", "mysql")
        await accounts.create(db, user, "%", "same-pw", before)
        assert login(mysql, user, "same-pw", tls=True) == f"{user}@%"
        with pytest.raises(pymysql.err.OperationalError) as refused:
            admin(
                mysql,
                f"ALTER USER '{user}'@'%' IDENTIFIED WITH caching_sha2_password BY 'same-pw'"
                " RETAIN CURRENT PASSWORD",
            )
        assert refused.value.args[0] == 3894
        await accounts.set_password(db, user, "%", "same-pw", after)
        assert await read_plugin(db, server, user, "%") == "caching_sha2_password"
        assert login(mysql, user, "same-pw", tls=True) == f"{user}@%"
        assert login(mysql, user, "same-pw") == f"{user}@%"  # RSA key exchange without TLS
        return
    with loaded_plugin(mysql, "mariadb", "ed25519"):
        before, after = Method("mysql_native_password", "mariadb"), Method("ed25519", "mariadb")
        await accounts.create(db, user, "%", "same-pw", before)
        assert login(mysql, user, "same-pw") == f"{user}@%"
        await accounts.set_password(db, user, "%", "same-pw", after)
        assert await read_plugin(db, server, user, "%") == "ed25519"
        assert login(mysql, user, "same-pw") == f"{user}@%"

        # A new password under the plugin keeps the plugin; MariaDB's plain IDENTIFIED BY would not.
        await accounts.set_password(db, user, "%", "next-pw", after)
        assert await read_plugin(db, server, user, "%") == "ed25519"
        assert login(mysql, user, "next-pw") == f"{user}@%"
        await accounts.set_password(db, user, "%", "next-pw")
        assert await read_plugin(db, server, user, "%") == "mysql_native_password"
        await accounts.drop(db, user, "%")  # before the plugin is unloaded


async def test_a_plugin_without_a_password(
    db: Database, mysql: MySQLServer, server: ServerInfo, accounts_made: Accounts
) -> None:
    """auth_socket (MySQL, loaded for the test) and unix_socket (MariaDB): the operating system user of a
    socket connection is the identity; a password login over TCP is refused."""
    plugin = SOCKET[server.flavour]
    user = accounts_made.track(accounts_made.name(), "%")
    with loaded_plugin(mysql, "mysql", plugin) if server.flavour == "mysql" else contextlib.nullcontext():
        method = Method(plugin, server.flavour)
        with pytest.raises(InvalidOptionsError, match="takes no password"):
            await accounts.create(db, user, "%", "pw", method)
        await accounts.create(db, user, "%", None, method)
        assert await read_plugin(db, server, user, "%") == plugin
        assert admin_rows(mysql, "SELECT authentication_string FROM mysql.user WHERE User = %s", user) == [
            ("",)
        ]
        assert login_error(mysql, user, "") in {1045, 1698}
        assert login_error(mysql, user, "pw") in {1045, 1698}

        await accounts.set_password(db, user, "%", "pw-now", Method(DEFAULT[server.flavour], server.flavour))
        assert login(mysql, user, "pw-now", tls=True) == f"{user}@%"
        await accounts.set_password(db, user, "%", None, method)
        assert await read_plugin(db, server, user, "%") == plugin
        await accounts.drop(db, user, "%")


async def test_a_plugin_the_server_lacks_is_refused_by_it_and_creates_nothing(
    db: Database, mysql: MySQLServer, server: ServerInfo, accounts_made: Accounts
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    for plugin in ("AWSAuthenticationPlugin", OTHER_FLAVOURS[server.flavour]):
        password = None if plugin == "AWSAuthenticationPlugin" else "pw"
        with pytest.raises(PluginUnavailableError) as refused:
            await accounts.create(db, user, "%", password, Method(plugin, server.flavour))
        assert refused.value.reason == "PluginUnavailable"
        assert refused.value.code == 1524
        assert await read_plugin(db, server, user, "%") is None
