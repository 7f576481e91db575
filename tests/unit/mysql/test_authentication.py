"""Authentication plugins without a server: the IDENTIFIED clauses per flavour, and what is refused."""

from __future__ import annotations

import hashlib

import pytest

from dbuser_operator.mysql import InvalidOptionsError, ServerInfo
from dbuser_operator.mysql.accounts.authentication import (
    PASSWORDLESS,
    PLUGINS,
    Method,
    certificate_only,
    effective,
    known,
    unavailable,
)
from dbuser_operator.mysql.accounts.password_hashes import ed25519_hash, native_hash
from dbuser_operator.mysql.bookkeeping.ownership import expected_fingerprint
from dbuser_operator.mysql.identifiers import SQL, account


def accounts_sql() -> SQL:
    return account("app", "%")


def test_statements_name_only_known_plugins_and_keep_passwords_parameters() -> None:
    with pytest.raises(InvalidOptionsError, match="unknown authentication plugin"):
        Method("x' IDENTIFIED BY 'y", "mysql")
    with pytest.raises(InvalidOptionsError, match="needs a password"):
        Method("ed25519", "mariadb").identified("ALTER USER", accounts_sql(), None)
    mysql_text = Method("caching_sha2_password", "mysql").identified("CREATE USER", accounts_sql(), "p'w")
    assert mysql_text.text == "CREATE USER 'app'@'%%' IDENTIFIED WITH caching_sha2_password BY %s"
    assert mysql_text.params == ("p'w",)
    maria = Method("ed25519", "mariadb").identified("ALTER USER", accounts_sql(), "p'w")
    assert maria.text == "ALTER USER 'app'@'%%' IDENTIFIED VIA ed25519 USING %s"
    assert maria.params == (ed25519_hash("p'w"),)  # the hash, never the password (general log)
    aws = Method("AWSAuthenticationPlugin", "mysql").identified("CREATE USER", accounts_sql(), None)
    assert aws.text == "CREATE USER 'app'@'%' IDENTIFIED WITH AWSAuthenticationPlugin AS 'RDS'"
    assert aws.params == ()
    assert set(PLUGINS) >= {"caching_sha2_password", "ed25519", "unix_socket", "auth_socket"}
    assert set(PASSWORDLESS) == {"auth_socket", "unix_socket", "AWSAuthenticationPlugin"}


def test_mariadb_is_sent_the_hash_it_stores_and_never_the_password() -> None:
    native = Method("mysql_native_password", "mariadb").identified("CREATE USER", accounts_sql(), "p'w")
    assert native.text == "CREATE USER 'app'@'%%' IDENTIFIED BY PASSWORD %s"
    assert native.params == (native_hash("p'w"),)
    assert native.secrets == native.params  # redacted from error messages all the same
    assert Method("mysql_native_password", "mariadb").stored("p'w") == native_hash("p'w")
    assert Method("ed25519", "mariadb").stored("p'w") == ed25519_hash("p'w")
    assert Method("caching_sha2_password", "mysql").stored("p'w") is None
    assert Method("unix_socket", "mariadb").stored(None) is None


def test_the_method_a_statement_without_plugin_amounts_to() -> None:
    """MariaDB with ``old_passwords`` off stores the native hash; MySQL's default is salted."""
    maria = ServerInfo("mariadb", (11, 8, 9), native_by_default=True)
    assert effective(None, maria) == Method("mysql_native_password", "mariadb")
    assert effective(None, ServerInfo("mariadb", (11, 8, 9))) is None  # old_passwords on
    assert effective(None, ServerInfo("mysql", (9, 7, 4))) is None
    ed = Method("ed25519", "mariadb")
    assert effective(ed, maria) is ed


@pytest.mark.parametrize("password", ["", "a\x00b"])
def test_unusable_passwords_are_refused_before_sending(password: str) -> None:
    with pytest.raises(ValueError, match="password"):
        Method("caching_sha2_password", "mysql").identified("ALTER USER", accounts_sql(), password)


def test_a_passwordless_plugin_takes_no_password() -> None:
    for plugin in PASSWORDLESS:
        with pytest.raises(InvalidOptionsError, match="takes no password"):
            Method(plugin, "mariadb").identified("CREATE USER", accounts_sql(), "pw")
    socket = Method("unix_socket", "mariadb").identified("CREATE USER", accounts_sql(), None)
    assert socket.text == "CREATE USER 'app'@'%' IDENTIFIED WITH unix_socket"


@pytest.mark.parametrize(
    ("plugin", "server", "reason"),
    [
        ("mysql_native_password", "9.7.4", "removed in MySQL 9.0"),
        ("ed25519", "9.7.4", "a MariaDB plugin"),
        ("caching_sha2_password", "11.8.9-MariaDB", "a MySQL plugin"),
        ("ed25519", "11.8.9-MariaDB", "INSTALL SONAME 'auth_ed25519'"),
        ("AWSAuthenticationPlugin", "11.8.9-MariaDB", "Amazon RDS and Aurora only"),
    ],
)
def test_why_a_plugin_is_unavailable(plugin: str, server: str, reason: str) -> None:
    info = ServerInfo.parse(server)
    why = unavailable(plugin, info, frozenset({"a_plugin", "b_plugin"}))
    assert why is not None
    assert f"{info} has no active authentication plugin {plugin} (" in why
    assert reason in why
    assert why.endswith("its active ones: a_plugin, b_plugin")
    assert unavailable(plugin, info, frozenset({plugin})) is None


def test_unknown_plugins() -> None:
    with pytest.raises(InvalidOptionsError, match="unknown authentication plugin"):
        known("pam")


def test_a_certificate_only_account_has_an_empty_string_set_as_a_hash() -> None:
    """MySQL: ``AS ''`` (``IDENTIFIED WITH`` a plugin and no password would expire the account); MariaDB:
    ``USING ''``. No password goes with it, and its fingerprint is known beforehand."""
    mysql, maria = certificate_only("mysql"), certificate_only("mariadb")
    assert (mysql.plugin, maria.plugin) == ("caching_sha2_password", "mysql_native_password")
    assert not mysql.takes_password
    assert not maria.takes_password
    created = mysql.identified("CREATE USER", accounts_sql(), None, " REQUIRE SUBJECT %s", ("/CN=a",))
    assert created.text == (
        "CREATE USER 'app'@'%%' IDENTIFIED WITH caching_sha2_password AS '' REQUIRE SUBJECT %s"
    )
    assert created.params == ("/CN=a",)
    altered = maria.identified("ALTER USER", accounts_sql(), None)
    assert altered.text == "ALTER USER 'app'@'%' IDENTIFIED VIA mysql_native_password USING ''"
    with pytest.raises(InvalidOptionsError, match="takes no password"):
        mysql.identified("ALTER USER", accounts_sql(), "pw")
    with pytest.raises(InvalidOptionsError, match="certificate-only"):
        Method("ed25519", "mariadb", certificate_only=True)
    assert mysql.stored(None) == maria.stored(None) == ""
    server = ServerInfo("mysql", (9, 7, 4))
    assert expected_fingerprint(server, None, mysql) == hashlib.sha256(b"").hexdigest()  # SHA2('', 256)
    assert expected_fingerprint(server, None) is None  # no password, no certificate: unknown
