"""The DatabaseUser informer's indexes, and the key mappers that read them: which DatabaseUsers a Secret, a
DatabaseRole, a Database or a DatabaseUser that went away brings back to the work queue."""

from __future__ import annotations

from typing import Any, Final

from dbuser_operator.api.v1alpha1.client_certificate import SECRET_SUFFIX
from dbuser_operator.controllers.kit.resources import server_key
from dbuser_operator.runtime.controller import KeyMapper, objects_naming
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey

SECRET_INDEX: Final = "secret"  # noqa: S105 - an index name, not a password
ACCOUNT_INDEX: Final = "account"
ROLE_INDEX: Final = "role"
DATABASE_REF_INDEX: Final = "database-ref"


def _in_namespace(obj: dict[str, Any], names: list[Any]) -> list[str]:
    """``namespace/name`` of each of ``names`` (once each; a name that is not a string skipped) in the
    namespace of ``obj``."""
    namespace = obj["metadata"].get("namespace", "")
    return [f"{namespace}/{name}" for name in dict.fromkeys(names) if isinstance(name, str) and name]


def referenced_secret(obj: dict[str, Any]) -> list[str]:
    """Index values: ``namespace/name`` of the Secrets a DatabaseUser takes its password from or writes
    (a generated password's, the connection Secret), or whose data it copies (cert-manager's, of
    spec.tls.certificate)."""
    spec = obj.get("spec") or {}
    generated = spec.get("generatedPassword")
    certificate = (spec.get("tls") or {}).get("certificate")
    names = [
        (spec.get("password") or {}).get("name"),
        (generated.get("secretName") or f"{obj['metadata'].get('name')}-password")
        if isinstance(generated, dict)
        else None,
        (spec.get("connectionSecret") or {}).get("name"),
        (certificate.get("secretName") or f"{obj['metadata'].get('name')}{SECRET_SUFFIX}")
        if isinstance(certificate, dict)
        else None,
    ]
    return _in_namespace(obj, names)


def named_account(obj: dict[str, Any]) -> list[str]:
    """Index values: the MySQL accounts a DatabaseUser names (:func:`account_key`), one per host of
    ``spec.host`` and ``spec.hosts``; none for an object without a usable name."""
    spec = obj.get("spec") or {}
    user = spec.get("user") or obj["metadata"].get("name")
    hosts = [spec.get("host") or "%", *(spec.get("hosts") or [])]
    if not isinstance(user, str) or not user:
        return []
    server = server_key(obj)
    return sorted({account_key(server, user, str(host)) for host in hosts})


def account_key(server: str, user: str, host: str) -> str:
    """An account as ACCOUNT_INDEX names it: ``user@host`` (host lower-cased, as MySQL compares them) on
    the settings' server, ``<server key>:user@host`` on a server resource: the same name on two servers
    is two accounts."""
    account = f"{user}@{host.lower()}"
    return f"{server}:{account}" if server else account


def referenced_roles(obj: dict[str, Any]) -> list[str]:
    """Index values: ``namespace/name`` of every DatabaseRole a DatabaseUser names in spec.roles."""
    return _in_namespace(obj, (obj.get("spec") or {}).get("roles") or [])


def referenced_databases(obj: dict[str, Any]) -> list[str]:
    """Index values: ``namespace/name`` of the Databases a DatabaseUser's grants name (databaseRef)."""
    names = [
        (grant.get("databaseRef") or {}).get("name")
        for grant in (obj.get("spec") or {}).get("privileges") or []
        if isinstance(grant, dict)
    ]
    return _in_namespace(obj, names)


def index(users: Informer) -> None:
    """The indexes the controller's mappers read: by Secret, by account, by role, by Database."""
    users.add_index(SECRET_INDEX, referenced_secret)
    users.add_index(ACCOUNT_INDEX, named_account)
    users.add_index(ROLE_INDEX, referenced_roles)
    users.add_index(DATABASE_REF_INDEX, referenced_databases)


def users_of_secret(users: Informer) -> KeyMapper:
    """Key mapper: a Secret requeues the DatabaseUsers that name it."""
    return objects_naming(SECRET_INDEX, users)


def users_of_role(users: Informer) -> KeyMapper:
    """Key mapper: a DatabaseRole requeues the DatabaseUsers naming it in spec.roles."""
    return objects_naming(ROLE_INDEX, users)


def users_of_database(users: Informer) -> KeyMapper:
    """Key mapper: a Database requeues the DatabaseUsers whose grants name it (databaseRef)."""
    return objects_naming(DATABASE_REF_INDEX, users)


def claimants_of(users: Informer) -> KeyMapper:
    """Key mapper: the other resources naming the account of one that went away. Refused while it owned
    the account (AccountClaimed, AccountExists), they may have it now."""
    naming = objects_naming(ACCOUNT_INDEX, users, values=named_account)

    def to_keys(gone: dict[str, Any]) -> list[ObjectKey]:
        key = ObjectKey.of(gone)
        return [other for other in naming(gone) if other != key]

    return to_keys
