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
    """Index value: ``namespace/name`` of the Secret a DatabaseUser takes its password from."""
    name = ((obj.get("spec") or {}).get("password") or {}).get("name")
    return [f"{obj['metadata'].get('namespace', '')}/{name}"] if name else []


def named_account(obj: dict[str, Any]) -> list[str]:
    """Index values: the MySQL accounts ``user@host`` a DatabaseUser names, one per host of ``spec.host``
    and ``spec.hosts`` (lower-cased, as MySQL compares them); none for an object without a usable name."""
    spec = obj.get("spec") or {}
    user = spec.get("user") or obj["metadata"].get("name")
    hosts = [spec.get("host") or "%", *(spec.get("hosts") or [])]
    if not isinstance(user, str) or not user:
        return []
    return sorted({f"{user}@{str(host).lower()}" for host in hosts})
