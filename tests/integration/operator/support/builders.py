"""The objects of the operator's tests, one builder per kind, each with names no other test uses."""

from __future__ import annotations

import secrets
from typing import Any

from dbuser_operator.controllers.kit.resources import DATABASE_ROLES, DATABASE_USERS, DATABASES, MYSQL_SERVERS
from dbuser_operator.envtest import MySQLServer
from tests.integration.operator.support.instances import own_target


def unique(name: str) -> str:
    """``name`` with a random suffix: a DatabaseUser and account name no other test (or earlier run against
    the same server) uses."""
    return f"{name}-{secrets.token_hex(3)}"


def database_user(
    name: str, secret: str, key: str = "password", target: str | None = None, **spec: Any
) -> dict[str, Any]:
    """A DatabaseUser whose password is ``key`` of the Secret ``secret``, labelled with ``target`` (by
    default the target of the test's own operator)."""
    target = target or own_target()
    return {
        "apiVersion": DATABASE_USERS.api_version,
        "kind": "DatabaseUser",
        "metadata": {"name": name, "labels": {"dbuser-operator.dev/target": target}},
        "spec": {"password": {"name": secret, "key": key}, **spec},
    }


def generated_user(name: str, target: str | None = None, **spec: Any) -> dict[str, Any]:
    """A DatabaseUser with a generated password (in the Secret ``<name>-password``, key ``password``),
    labelled with ``target`` (by default the target of the test's own operator)."""
    target = target or own_target()
    return {
        "apiVersion": DATABASE_USERS.api_version,
        "kind": "DatabaseUser",
        "metadata": {"name": name, "labels": {"dbuser-operator.dev/target": target}},
        "spec": {"generatedPassword": {}, **spec},
    }


def database_role(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": DATABASE_ROLES.api_version,
        "kind": "DatabaseRole",
        "metadata": {"name": name, "labels": {"dbuser-operator.dev/target": own_target()}},
        "spec": spec,
    }


def database(resource: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": DATABASES.api_version,
        "kind": "Database",
        "metadata": {"name": resource, "labels": {"dbuser-operator.dev/target": own_target()}},
        "spec": spec,
    }


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
        "metadata": {"name": name, "labels": {"dbuser-operator.dev/target": own_target()}},
        "spec": spec,
    }
