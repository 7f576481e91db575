"""The addresses applications connect to, and the connection-Secret keys each one gives.

A server offers named endpoints (a Service, a proxy, a read-only replica), or none: then one unnamed
address (the server's host and port, or the operator's ``--connection-host``/``--connection-port``). A
connection Secret carries the standard keys of one endpoint (the one it selects, else the first) and,
prefixed with their names, the keys of any others it asks for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dbuser_operator.credentials.urls import database_url, jdbc_url

SSL_MODE_KEY = "sslMode"
ADDRESS_KEYS = ("host", "port", SSL_MODE_KEY, "DATABASE_URL", "JDBC_URL")
"""The keys of a connection Secret that depend on the endpoint (the others are the account's)."""


@dataclass(frozen=True)
class Endpoint:
    """One address applications connect to; ``name`` None for a server without named endpoints."""

    host: str
    port: int
    ssl_mode: str | None = None  # the MySQL client's --ssl-mode value, None: the client's default
    name: str | None = None


class EndpointNotFound(Exception):
    """A connection Secret names an endpoint the server does not have; the message names the known ones."""


def prefix(name: str) -> str:
    """The key prefix of endpoint ``name``: ``read-only`` gives ``read_only_`` (a Jinja2 name too)."""
    return name.replace("-", "_") + "_"


def select(
    endpoints: Sequence[Endpoint], fallback: Endpoint, wanted: str | None, more: Sequence[str] = ()
) -> tuple[Endpoint, list[Endpoint]]:
    """The endpoint of the standard keys (``wanted``, else the first, else ``fallback`` when there are
    none) and those of ``more``, in their order; :class:`EndpointNotFound` for a name not among them."""
    by_name = {endpoint.name: endpoint for endpoint in endpoints}
    unknown = [name for name in (wanted, *more) if name is not None and name not in by_name]
    if unknown:
        known = ", ".join(str(endpoint.name) for endpoint in endpoints) or "none"
        missing = ", ".join(dict.fromkeys(unknown))
        raise EndpointNotFound(f"no endpoint {missing} (its endpoints: {known})")
    chosen = by_name[wanted] if wanted is not None else (endpoints[0] if endpoints else fallback)
    return chosen, [by_name[name] for name in dict.fromkeys(more)]


def address_values(
    endpoint: Endpoint, user: str, password: str, database: str | None, key_prefix: str = ""
) -> dict[str, str]:
    """The endpoint-dependent keys (host, port, sslMode when set, DATABASE_URL, JDBC_URL), prefixed."""
    mode = endpoint.ssl_mode
    values = {
        "host": endpoint.host,
        "port": str(endpoint.port),
        "DATABASE_URL": database_url(user, password, endpoint.host, endpoint.port, database, ssl_mode=mode),
        "JDBC_URL": jdbc_url(user, password, endpoint.host, endpoint.port, database, ssl_mode=mode),
    } | ({SSL_MODE_KEY: mode} if mode else {})
    return {key_prefix + key: value for key, value in values.items()}


def connection_values(
    user: str, password: str, endpoint: Endpoint, database: str | None, more: Sequence[Endpoint] = ()
) -> dict[str, str]:
    """The keys of a connection Secret (also the names its templates may use): the standard ones for
    ``endpoint``, then each of ``more`` with its prefix."""
    values = {"username": user, "password": password} | address_values(endpoint, user, password, database)
    values |= {"database": database} if database else {}
    for other in more:
        values |= address_values(other, user, password, database, prefix(str(other.name)))
    return values
