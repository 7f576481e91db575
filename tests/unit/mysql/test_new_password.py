"""Which new accounts are created expired and settled without a client-side hash
(:mod:`dbuser_operator.mysql.accounts.new_password`), and the ``PASSWORD EXPIRE`` clause they are created
with."""

from __future__ import annotations

from dbuser_operator.mysql import ServerInfo
from dbuser_operator.mysql.accounts import new_password
from dbuser_operator.mysql.accounts.authentication import Method
from dbuser_operator.mysql.identifiers import account

MYSQL = ServerInfo("mysql", (9, 7, 4))
MARIADB = ServerInfo("mariadb", (10, 11, 19), native_by_default=True)


def test_only_mysql_accounts_with_a_password_are_created_expired() -> None:
    assert new_password.applies(MYSQL, None, "pw")  # the server's default plugin: caching_sha2_password
    assert new_password.applies(MYSQL, Method("caching_sha2_password", "mysql"), "pw")
    assert not new_password.applies(MYSQL, Method("auth_socket", "mysql"), None)  # no password to settle
    assert not new_password.applies(MYSQL, None, None)
    assert not new_password.applies(MARIADB, Method("mysql_native_password", "mariadb"), "pw")  # known


def test_the_expiry_is_a_constant_clause_after_the_password_parameter() -> None:
    who = account("app", "%")
    sha2 = Method("caching_sha2_password", "mysql")
    created = sha2.identified("CREATE USER", who, "p'w", " PASSWORD EXPIRE")
    expected = "CREATE USER 'app'@'%%' IDENTIFIED WITH caching_sha2_password BY %s PASSWORD EXPIRE"
    assert created.text == expected
    assert created.params == ("p'w",)
    socket = Method("auth_socket", "mysql").identified("CREATE USER", who, None, " PASSWORD EXPIRE")
    assert socket.text == "CREATE USER 'app'@'%' IDENTIFIED WITH auth_socket PASSWORD EXPIRE"


def test_an_account_is_unsettled_only_while_expired_with_no_fingerprint_recorded() -> None:
    assert new_password.unsettled(None, None, "Y")  # CREATE USER … PASSWORD EXPIRE, settle never ran
    assert not new_password.unsettled(None, None, "N")  # a password set since lifted the mark
    assert not new_password.unsettled("row-fp", None, "Y")  # settled (row), then expired by hand
    assert not new_password.unsettled(None, "attr-fp", "Y")  # settled (attribute), then expired by hand
    assert not new_password.unsettled(None, None, None)  # MariaDB: no such column read


def test_the_expiry_flag_is_read_on_mysql_only() -> None:
    assert new_password.expired_column(MYSQL, "u") == "u.password_expired"
    assert new_password.expired_column(MARIADB, "u") == "NULL"
