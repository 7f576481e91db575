"""Connection URLs for an account, every part percent-encoded, so any password survives a URL parser."""

from __future__ import annotations

from urllib.parse import quote


def _part(text: str) -> str:
    return quote(text, safe="")


def url_host(host: str) -> str:
    """The host as a URL writes it: an IPv6 address in brackets, anything else percent-encoded."""
    return f"[{host}]" if ":" in host else _part(host)


def database_url(user: str, password: str, host: str, port: int, database: str | None) -> str:
    """``mysql://user:password@host:port/database`` (no path without a database)."""
    path = f"/{_part(database)}" if database else ""
    return f"mysql://{_part(user)}:{_part(password)}@{url_host(host)}:{port}{path}"


def jdbc_url(user: str, password: str, host: str, port: int, database: str | None) -> str:
    """``jdbc:mysql://host:port/database?user=…&password=…``, as MySQL Connector/J reads it (it decodes
    percent-encoded property values)."""
    credentials = f"user={_part(user)}&password={_part(password)}"
    return f"jdbc:mysql://{url_host(host)}:{port}/{_part(database or '')}?{credentials}"
