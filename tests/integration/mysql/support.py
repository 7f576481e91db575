"""Helpers for the MySQL layer's integration tests: tracked test accounts, logins as a separate client."""

from __future__ import annotations

import contextlib
import secrets
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.envtest.pki import CertificateAuthority


class Accounts:
    """Fresh account names for a test; every account named here is dropped afterwards."""

    def __init__(self, mysql: MySQLServer) -> None:
        self._mysql = mysql
        self.made: list[tuple[str, str]] = []

    def name(self) -> str:
        """A user name no other test uses."""
        return f"it_{secrets.token_hex(5)}"

    def track(self, user: str, *hosts: str) -> str:
        """Drop ``user`` at these hosts at the end of the test."""
        self.made.extend((user, host) for host in hosts)
        return user

    def drop_all(self) -> None:
        with self._mysql.connect() as connection, connection.cursor() as cursor:
            for user, host in self.made:
                cursor.execute("DROP USER IF EXISTS %s@%s", (user, host))


class Databases:
    """Fresh database (schema) names for a test; every one named here is dropped afterwards."""

    def __init__(self, mysql: MySQLServer) -> None:
        self._mysql = mysql
        self.made: list[str] = []

    def name(self, suffix: str = "") -> str:
        """A database name no other test uses (not created), dropped at the end of the test."""
        name = f"it_{secrets.token_hex(5)}{suffix}"
        self.made.append(name)
        return name

    def create(self, suffix: str = "", *tables: str) -> str:
        """A new database with these (one-column) tables."""
        name = self.name(suffix)
        admin(
            self._mysql,
            f"CREATE DATABASE `{name}`",
            *(f"CREATE TABLE `{name}`.`{t}` (a INT)" for t in tables),
        )
        return name

    def drop_all(self) -> None:
        admin(self._mysql, *(f"DROP DATABASE IF EXISTS `{name}`" for name in self.made))


def admin(mysql: MySQLServer, *statements: str) -> None:
    """Run statements as the admin with a plain PyMySQL connection: what a person does by hand."""
    with mysql.connect() as connection, connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def admin_rows(mysql: MySQLServer, query: str, *params: object) -> list[tuple[Any, ...]]:
    """A query's rows, as the admin with a plain PyMySQL connection."""
    with mysql.connect() as connection, connection.cursor() as cursor:
        cursor.execute(query, params or None)
        return list(cursor.fetchall())


def client_tls(mysql: MySQLServer, *, tls: bool) -> dict[str, Any]:
    """PyMySQL's options for a login explicitly without TLS, or with it (the server's certificate verified
    when its CA is known). PyMySQL would otherwise try TLS whenever the server offers it."""
    if not tls:
        return {"ssl_disabled": True}
    if mysql.ca_file is not None:
        return {"ssl_ca": str(mysql.ca_file), "ssl_verify_identity": True}
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # an external server's unknown CA
    return {"ssl": context}


def login(mysql: MySQLServer, user: str, password: str, *, tls: bool = False, **options: Any) -> str:
    """Log in as ``user`` with a separate PyMySQL connection, without TLS unless ``tls``;
    ``CURRENT_USER()``. Without TLS, a caching_sha2_password account (MySQL 8+) is logged in to with the
    server's RSA key, as a real client does.

    The password goes as its UTF-8 bytes (PyMySQL would encode a str as Latin-1).
    """
    connection = pymysql.connect(
        host=mysql.host,
        port=mysql.port,
        user=user,
        password=password.encode(),
        connect_timeout=5,
        **client_tls(mysql, tls=tls),
        **options,
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT CURRENT_USER()")
            (current,) = cursor.fetchone()
        return str(current)
    finally:
        connection.close()


def as_user(mysql: MySQLServer, user: str, password: str, query: str) -> list[tuple[Any, ...]] | int:
    """Run ``query`` logged in as ``user``: its rows, or the error code if the server refuses it."""
    connection = pymysql.connect(
        host=mysql.host, port=mysql.port, user=user, password=password.encode(), connect_timeout=5
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute(query)
            return list(cursor.fetchall())
    except pymysql.err.MySQLError as exc:
        return int(exc.args[0])
    finally:
        connection.close()


def login_error(mysql: MySQLServer, user: str, password: str, *, tls: bool = False) -> int:
    """The error code of a login that must fail (1045: access denied)."""
    with pytest.raises(pymysql.err.OperationalError) as refused:
        login(mysql, user, password, tls=tls)
    return int(refused.value.args[0])


# The plugins a test loads, by flavour: how to load and unload each (the servers of the test environment
# have the libraries, not loaded by default).
_LOADABLE = {
    ("mysql", "auth_socket"): (
        "INSTALL PLUGIN auth_socket SONAME 'auth_socket.so'",
        "UNINSTALL PLUGIN auth_socket",
    ),
    ("mariadb", "ed25519"): ("INSTALL SONAME 'auth_ed25519'", "UNINSTALL SONAME 'auth_ed25519'"),
}


def active_plugins(mysql: MySQLServer) -> set[str]:
    rows = admin_rows(
        mysql,
        "SELECT PLUGIN_NAME FROM information_schema.PLUGINS"
        " WHERE PLUGIN_TYPE = 'AUTHENTICATION' AND PLUGIN_STATUS = 'ACTIVE'",
    )
    return {str(name) for (name,) in rows}


@contextlib.contextmanager
def loaded_plugin(mysql: MySQLServer, flavour: str, name: str) -> Iterator[None]:
    """The authentication plugin ``name`` loaded while inside (unloaded after, if it was not before)."""
    install, uninstall = _LOADABLE[(flavour, name)]
    loaded_here = name not in active_plugins(mysql)
    if loaded_here:
        admin(mysql, install)
    try:
        yield
    finally:
        if loaded_here:
            admin(mysql, uninstall)


@contextlib.contextmanager
def unloaded_plugin(mysql: MySQLServer, flavour: str, name: str) -> Iterator[None]:
    """The authentication plugin ``name`` not loaded while inside (loaded again after, if it was)."""
    install, uninstall = _LOADABLE[(flavour, name)]
    was_loaded = name in active_plugins(mysql)
    if was_loaded:
        admin(mysql, uninstall)
    try:
        yield
    finally:
        if was_loaded and name not in active_plugins(mysql):
            admin(mysql, install)


ORGANIZATION = "dbuser-operator-tests"


class Certificates:
    """Client certificates of the session server's CA, written to files for the client."""

    def __init__(self, ca: CertificateAuthority, directory: Path) -> None:
        self.ca = ca
        self.directory = directory

    def issue(self, common_name: str) -> dict[str, str]:
        """PyMySQL's options to present a certificate of subject ``/O=dbuser-operator-tests/CN=<name>``."""
        pair = self.ca.issue_client_named(ORGANIZATION, common_name)
        stem = self.directory / secrets.token_hex(4)
        cert, key = stem.with_suffix(".crt"), stem.with_suffix(".key")
        cert.write_bytes(pair.cert_pem)
        key.write_bytes(pair.key_pem)
        return {"ssl_cert": str(cert), "ssl_key": str(key)}


def bundle_login(mysql: MySQLServer, user: str, bundle: Path | None, password: str = "") -> str | int:
    """Log in over verified TLS presenting the credential ``bundle`` (key and certificate in one file, as a
    pod reads it; None: no certificate) with ``password``: CURRENT_USER(), or the refusal's error code
    (2013 or 2006 when the server ends the TLS handshake: a certificate it does not trust)."""
    certificate = {"ssl_cert": str(bundle), "ssl_key": str(bundle)} if bundle is not None else {}
    return tls_login(mysql, user, password, **certificate)


def certificate_subject(common_name: str) -> str:
    """The subject of :meth:`Certificates.issue`'s certificate, as MySQL compares it."""
    return f"/O={ORGANIZATION}/CN={common_name}"


def tls_login(mysql: MySQLServer, user: str, password: str = "pw", **options: Any) -> str | int:
    """Log in over verified TLS with ``options`` (a certificate, or none): CURRENT_USER(), or the refusal's
    error code."""
    return current_user(
        host=mysql.host,
        port=mysql.port,
        user=user,
        password=password.encode(),
        connect_timeout=5,
        **client_tls(mysql, tls=True),
        **options,
    )


def current_user(**options: Any) -> str | int:
    """Log in with PyMySQL's ``options``: CURRENT_USER(), or the refusal's error code (a TLS handshake the
    server ends included)."""
    try:
        connection = pymysql.connect(**options)
    except pymysql.err.OperationalError as error:
        return int(error.args[0])
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT CURRENT_USER()")
            (current,) = cursor.fetchone()
        return str(current)
    finally:
        connection.close()


def plain_login(mysql: MySQLServer, user: str, password: str = "pw") -> str | int:
    """Log in without TLS: "logged in", or the refusal's error code."""
    try:
        connection = pymysql.connect(
            host=mysql.host,
            port=mysql.port,
            user=user,
            password=password.encode(),
            connect_timeout=5,
            ssl_disabled=True,
        )
        connection.close()
    except pymysql.err.OperationalError as error:
        return int(error.args[0])
    return "logged in"
