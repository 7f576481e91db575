"""The resource types, names and indexes the controllers share."""

from __future__ import annotations

from typing import Any

from dbuser_operator.api.v1alpha1 import GROUP, KIND, PLURAL, VERSION, database, databaserole, mysqlserver
from dbuser_operator.api.v1alpha1.client_certificate import SECRET_SUFFIX
from dbuser_operator.runtime.resources import Resource

DATABASE_USERS = Resource(GROUP, VERSION, PLURAL, KIND)
DATABASE_ROLES = Resource(GROUP, VERSION, databaserole.PLURAL, databaserole.KIND)
DATABASES = Resource(GROUP, VERSION, database.PLURAL, database.KIND)
MYSQL_SERVERS = Resource(GROUP, VERSION, mysqlserver.PLURAL, mysqlserver.KIND)
CLUSTER_MYSQL_SERVERS = Resource(
    GROUP, VERSION, mysqlserver.CLUSTER_PLURAL, mysqlserver.CLUSTER_KIND, namespaced=False
)
FIELD_MANAGER = "dbuser-operator"
SECRET_INDEX = "secret"  # noqa: S105 - an index name, not a password
ACCOUNT_INDEX = "account"
SERVER_INDEX = "server"
SERVER_SECRET_INDEX = "server-secret"  # noqa: S105 - an index of servers: namespace/name of their Secrets
DEFAULT_SERVER = ""
"""The SERVER_INDEX value of resources without serverRef: the server the operator's settings name."""


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
    namespace = obj["metadata"].get("namespace", "")
    return [f"{namespace}/{name}" for name in dict.fromkeys(names) if isinstance(name, str) and name]


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


def server_key(obj: dict[str, Any]) -> str:
    """Which server a DatabaseUser or DatabaseRole lives on: ``MySQLServer/<namespace>/<name>``,
    ``ClusterMySQLServer/<name>``, or :data:`DEFAULT_SERVER` without spec.serverRef."""
    ref = (obj.get("spec") or {}).get("serverRef")
    if not isinstance(ref, dict) or not ref.get("name"):
        return DEFAULT_SERVER
    if ref.get("kind") == mysqlserver.CLUSTER_KIND:
        return f"{mysqlserver.CLUSTER_KIND}/{ref['name']}"
    return f"{mysqlserver.KIND}/{obj['metadata'].get('namespace', '')}/{ref['name']}"


def referenced_server(obj: dict[str, Any]) -> list[str]:
    """Index values: the :func:`server_key` of a DatabaseUser or DatabaseRole."""
    return [server_key(obj)]


def describe_server(key: str) -> str:
    """A server key for people: ``MySQLServer team-a/main``, ``ClusterMySQLServer shared``, or the
    operator's own server."""
    if key == DEFAULT_SERVER:
        return "the operator's default server"
    kind, _, rest = key.partition("/")
    return f"{kind} {rest}"
