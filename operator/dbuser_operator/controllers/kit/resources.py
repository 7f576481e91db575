"""The resource types, names and indexes the controllers share."""

from __future__ import annotations

from typing import Any

from dbuser_operator.api.v1alpha1 import GROUP, KIND, PLURAL, VERSION, database, databaserole, mysqlserver
from dbuser_operator.runtime.resources import Resource

DATABASE_USERS = Resource(GROUP, VERSION, PLURAL, KIND)
DATABASE_ROLES = Resource(GROUP, VERSION, databaserole.PLURAL, databaserole.KIND)
DATABASES = Resource(GROUP, VERSION, database.PLURAL, database.KIND)
MYSQL_SERVERS = Resource(GROUP, VERSION, mysqlserver.PLURAL, mysqlserver.KIND)
CLUSTER_MYSQL_SERVERS = Resource(
    GROUP, VERSION, mysqlserver.CLUSTER_PLURAL, mysqlserver.CLUSTER_KIND, namespaced=False
)
FIELD_MANAGER = "dbuser-operator"
SERVER_INDEX = "server"
SERVER_SECRET_INDEX = "server-secret"  # noqa: S105 - an index of servers: namespace/name of their Secrets
DEFAULT_SERVER = ""
"""The SERVER_INDEX value of resources without serverRef: the server the operator's settings name."""


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
