"""The access report a server resource's status carries: who can reach what on that server.

Written by the leader after each drift check (only when it changed), read by ``kubectl dbu access`` and by
whoever may read the server resource. Bounded: at most :data:`MAX_ENTRIES` entries, each list in an entry
at most :data:`MAX_ITEMS` items; what does not fit is counted, and ``truncated`` says so. Entries needing
attention come first (drifted, orphaned, unmanaged with global privileges, other unmanaged, then managed).
Account and role names are not secrets; passwords, hashes and authentication strings never appear.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from dbuser_operator.api.v1alpha1.meta import INT64, Model

MAX_ENTRIES: Final = 100
"""At most this many accounts are listed; the counts cover them all."""
MAX_ITEMS: Final = 16
"""At most this many privileges, databases, roles or drifted grants per entry."""
MAX_TEXT: Final = 256
"""Longest host, plugin, subject or item shown (longer ones are cut, ending in '…')."""

AccessState = Literal["Drifted", "Orphaned", "Unmanaged", "Managed"]


class AccessEntry(Model):
    """One account or role on the server and what it can reach."""

    user: str = Field(max_length=MAX_TEXT)
    """The account's user name (a role's name)."""

    host: str = Field(max_length=MAX_TEXT)
    """The account's host ('%' or '' for a role)."""

    role: bool = False
    """Whether it is a role rather than an account that logs in."""

    state: AccessState
    """Drifted (managed, and holding a privilege no resource asked for), Orphaned (recorded as owned, its
    resource gone), Unmanaged (no resource owns it) or Managed."""

    owner: str | None = Field(default=None, max_length=MAX_TEXT)
    """The owning resource, namespace/name (unset: unmanaged)."""

    plugin: str | None = Field(default=None, max_length=MAX_TEXT)
    """Its authentication plugin."""

    password_changed: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """When its password last changed, as the server records it."""

    tls: str | None = Field(default=None, max_length=MAX_TEXT)
    """The TLS it requires: ANY (SSL), X509 or SPECIFIED (unset: none)."""

    tls_subject: str | None = Field(default=None, max_length=MAX_TEXT)
    """The certificate subject it requires, if any."""

    global_privileges: list[str] | None = Field(default=None, max_length=MAX_ITEMS + 1)
    """Its privileges on *.* (GRANT OPTION included), at most 16 and a '+N more' item."""

    databases: list[str] | None = Field(default=None, max_length=MAX_ITEMS + 1)
    """The databases it holds privileges on (tables and columns included; '*' for every one)."""

    roles: list[str] | None = Field(default=None, max_length=MAX_ITEMS + 1)
    """The roles granted to it."""

    drift: list[str] | None = Field(default=None, max_length=MAX_ITEMS + 1)
    """The privileges it holds that its resource did not ask for (PRIVILEGE ON level)."""


class AccessSummary(Model):
    """Who can reach what on the server, from the leader's last drift check."""

    accounts: int = Field(default=0, ge=0, json_schema_extra=INT64)
    """Accounts and roles on the server."""

    roles: int = Field(default=0, ge=0, json_schema_extra=INT64)
    """Of them, roles."""

    managed: int = Field(default=0, ge=0, json_schema_extra=INT64)
    """Owned by a resource of this server (drifted included)."""

    unmanaged: int = Field(default=0, ge=0, json_schema_extra=INT64)
    """Owned by no resource (the server's own accounts, a DBA's, another tool's)."""

    drifted: int = Field(default=0, ge=0, json_schema_extra=INT64)
    """Managed accounts holding a privilege no resource asked for."""

    orphaned: int = Field(default=0, ge=0, json_schema_extra=INT64)
    """Recorded as owned, but their resource is gone."""

    entries: list[AccessEntry] = Field(default_factory=list, max_length=MAX_ENTRIES)
    """The accounts, those needing attention first, at most 100."""

    truncated: bool = False
    """Whether some accounts (or some items of an entry) were left out."""
