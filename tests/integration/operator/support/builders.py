"""The objects of the operator's tests, one builder per kind, each with names no other test uses."""

from __future__ import annotations

import secrets
from typing import Any

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
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
