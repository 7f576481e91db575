"""The addresses applications connect to, and the connection-Secret keys each one gives.

A server offers named endpoints (a Service, a proxy, a read-only replica), or none: then one unnamed
address (the server's host and port, or the operator's ``--connection-host``/``--connection-port``). A
connection Secret carries the standard keys of one endpoint (the one it selects, else the first) and,
prefixed with their names, the keys of any others it asks for.

A certificate-only account's Secret (workload identity) has no password key: ``sslCert`` and ``sslKey`` name
where its pods find their certificate and key (:data:`CREDENTIAL_BUNDLE`, the documented mount of the
``podCertificate`` volume), and its ``sslMode`` requires TLS (the endpoint's, unless that one does not).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dbuser_operator.credentials.urls import database_url, jdbc_url

SSL_MODE_KEY = "sslMode"
SSL_CERT_KEY = "sslCert"
SSL_KEY_KEY = "sslKey"
ADDRESS_KEYS = ("host", "port", SSL_MODE_KEY, "DATABASE_URL", "JDBC_URL")
"""The keys of a connection Secret that depend on the endpoint (the others are the account's)."""

CERTIFICATE_MOUNT = "/var/run/secrets/dbuser-operator"
"""Where a workload's pods mount their ``podCertificate`` projected volume (docs/workload-identity.md)."""
CREDENTIAL_BUNDLE = f"{CERTIFICATE_MOUNT}/credentialbundle.pem"
"""The volume's ``credentialBundlePath``: the private key, then the certificate chain, in one PEM file."""
TLS_MODES = frozenset({"REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"})
"""The client modes that insist on TLS (a certificate is only shown over TLS)."""


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
    endpoint: Endpoint,
    user: str,
    password: str | None,
    database: str | None,
    key_prefix: str = "",
    *,
    certificate: str | None = None,
) -> dict[str, str]:
    """The endpoint-dependent keys (host, port, sslMode when set, DATABASE_URL, JDBC_URL), prefixed;
    ``certificate``: a certificate-only account's (no password), its mode one that requires TLS."""
    mode = endpoint.ssl_mode
    if certificate is not None and mode not in TLS_MODES:
        mode = "REQUIRED"
    host, port = endpoint.host, endpoint.port
    values = {
        "host": host,
        "port": str(port),
        "DATABASE_URL": database_url(
            user, password, host, port, database, ssl_mode=mode, certificate=certificate
        ),
        "JDBC_URL": jdbc_url(user, password, host, port, database, ssl_mode=mode),
    } | ({SSL_MODE_KEY: mode} if mode else {})
    return {key_prefix + key: value for key, value in values.items()}


def connection_values(
    user: str,
    password: str | None,
    endpoint: Endpoint,
    database: str | None,
    more: Sequence[Endpoint] = (),
    *,
    certificate: str | None = None,
) -> dict[str, str]:
    """The keys of a connection Secret (also the names its templates may use): the standard ones for
    ``endpoint``, then each of ``more`` with its prefix. A certificate-only account (``certificate``: its
    credential bundle's path; ``password`` None) has sslCert and sslKey instead of a password."""
    if certificate is not None:
        secret = {SSL_CERT_KEY: certificate, SSL_KEY_KEY: certificate}
    elif password is not None:
        secret = {"password": password}
    else:
        raise ValueError("a connection Secret offers a password or a certificate")
    values = {"username": user, **secret}
    values |= address_values(endpoint, user, password, database, certificate=certificate)
    values |= {"database": database} if database else {}
    for other in more:
        key_prefix = prefix(str(other.name))
        values |= address_values(other, user, password, database, key_prefix, certificate=certificate)
    return values
