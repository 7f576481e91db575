"""The resource types, names and indexes the ``DatabaseUser`` controller uses."""

from __future__ import annotations

from typing import Any

from dbuser_operator.api.v1alpha1 import GROUP, KIND, PLURAL, VERSION
from dbuser_operator.runtime.resources import Resource

DATABASE_USERS = Resource(GROUP, VERSION, PLURAL, KIND)
FIELD_MANAGER = "dbuser-operator"
SECRET_INDEX = "secret"  # noqa: S105 - an index name, not a password
ACCOUNT_INDEX = "account"


def referenced_secret(obj: dict[str, Any]) -> list[str]:
    """Index values: ``namespace/name`` of the Secrets a DatabaseUser takes its password from or writes
    (a generated password's, the connection Secret)."""
    spec = obj.get("spec") or {}
    generated = spec.get("generatedPassword")
    names = [
        (spec.get("password") or {}).get("name"),
        (generated.get("secretName") or f"{obj['metadata'].get('name')}-password")
        if isinstance(generated, dict)
        else None,
        (spec.get("connectionSecret") or {}).get("name"),
    ]
    namespace = obj["metadata"].get("namespace", "")
    return [f"{namespace}/{name}" for name in dict.fromkeys(names) if isinstance(name, str) and name]


def named_account(obj: dict[str, Any]) -> list[str]:
    """Index values: the MySQL accounts ``user@host`` a DatabaseUser names, one per host of ``spec.host``
    and ``spec.hosts`` (lower-cased, as MySQL compares them); none for an object without a usable name."""
    spec = obj.get("spec") or {}
    user = spec.get("user") or obj["metadata"].get("name")
    hosts = [spec.get("host") or "%", *(spec.get("hosts") or [])]
    if not isinstance(user, str) or not user:
        return []
    return sorted({f"{user}@{str(host).lower()}" for host in hosts})
