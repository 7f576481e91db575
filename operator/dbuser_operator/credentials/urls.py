"""Connection URLs for an account, every part percent-encoded, so any password survives a URL parser.

A client TLS mode (the MySQL client's --ssl-mode values: DISABLED, PREFERRED, REQUIRED, VERIFY_CA,
VERIFY_IDENTITY) goes where each convention puts it: ``?ssl-mode=REQUIRED`` in a ``mysql://`` URI (MySQL's
URI-like connection strings), ``sslMode=REQUIRED`` among Connector/J's properties. Without one, the URLs are
as they were before modes existed.

A certificate-only account (workload identity) has no password: its URLs carry none, and the ``mysql://``
one names the client certificate and key (``ssl-cert``, ``ssl-key``: the path of the pod's credential
bundle, which holds both). Connector/J reads a client certificate from a key store only
(``clientCertificateKeyStoreUrl``), not from PEM: its URL names no file (docs/workload-identity.md).
"""

from __future__ import annotations

from urllib.parse import quote


def _part(text: str) -> str:
    return quote(text, safe="")


def url_host(host: str) -> str:
    """The host as a URL writes it: an IPv6 address in brackets, anything else percent-encoded."""
    return f"[{host}]" if ":" in host else _part(host)


def database_url(
    user: str,
    password: str | None,
    host: str,
    port: int,
    database: str | None,
    *,
    ssl_mode: str | None = None,
    certificate: str | None = None,
) -> str:
    """``mysql://user:password@host:port/database?ssl-mode=MODE`` (no path without a database, no query
    without a mode); without a password ``mysql://user@…``, and ``certificate`` (a PEM file holding the
    client key and certificate) as ``&ssl-cert=…&ssl-key=…``."""
    path = f"/{_part(database)}" if database else ""
    options = [("ssl-mode", ssl_mode)] if ssl_mode else []
    options += [("ssl-cert", certificate), ("ssl-key", certificate)] if certificate else []
    query = "?" + "&".join(f"{name}={_part(value)}" for name, value in options) if options else ""
    secret = f":{_part(password)}" if password is not None else ""
    return f"mysql://{_part(user)}{secret}@{url_host(host)}:{port}{path}{query}"


def jdbc_url(
    user: str,
    password: str | None,
    host: str,
    port: int,
    database: str | None,
    *,
    ssl_mode: str | None = None,
) -> str:
    """``jdbc:mysql://host:port/database?user=…&password=…&sslMode=MODE``, as MySQL Connector/J reads it
    (it decodes percent-encoded property values); no password property without a password."""
    credentials = f"user={_part(user)}" + (f"&password={_part(password)}" if password is not None else "")
    mode = f"&sslMode={_part(ssl_mode)}" if ssl_mode else ""
    return f"jdbc:mysql://{url_host(host)}:{port}/{_part(database or '')}?{credentials}{mode}"
