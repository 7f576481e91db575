"""The names every MySQL and MariaDB server keeps for itself, whatever the operator's configuration: its
system accounts and its system schemas. The registry of what is reserved on a physical server
(:mod:`~dbuser_operator.controllers.servers.admins`) starts from these and adds the operator's own."""

from __future__ import annotations

from typing import Final

from dbuser_operator.mysql.bookkeeping.ownership import SYSTEM_SCHEMAS

SYSTEM_ACCOUNTS: Final = frozenset({"root", "mariadb.sys", "debian-sys-maint", "mysql"})
"""Accounts the servers and their packages make (``mysql.*`` too: :func:`system_account`)."""

__all__ = ["SYSTEM_ACCOUNTS", "SYSTEM_SCHEMAS", "system_account", "system_schema"]


def system_account(name: str) -> bool:
    """Whether ``name`` is an account (or role) name the server keeps for itself."""
    return name in SYSTEM_ACCOUNTS or name.startswith("mysql.")


def system_schema(name: str) -> bool:
    """Whether ``name`` is a system schema (without regard to case: the servers may fold names)."""
    return name.lower() in SYSTEM_SCHEMAS
