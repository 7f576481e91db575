"""A MySQL password change that carries its own fingerprint: one write instead of two.

The ownership fingerprint (:mod:`~dbuser_operator.mysql.bookkeeping.ownership`) of a ``caching_sha2_password``
string cannot be known before the server salts it, so a change by ``IDENTIFIED BY`` is followed by a read
of the new string and an ``UPDATE`` of the bookkeeping row: two writes per rotation. Here the string is made
on the client instead (a salt of the operator's, the server's number of rounds:
:func:`.password_hashes.caching_sha2_string`; ``mysql_native_password``'s is unsalted) and set as it is,
``IDENTIFIED WITH plugin AS``, with its fingerprint in the same statement's ``ATTRIBUTE``
(:data:`.account_metadata.FINGERPRINT_ATTRIBUTE`, as :mod:`.new_password` writes it for a new account):
the string and what describes it are written together, so no change by hand can fall in between, and a
later one makes them differ (drift) as the row's would. The look and the drift check compare the
attribute's while the row's fingerprint is NULL (:func:`.new_password.recorded`); a row that holds one (an
older version of the operator, or a path that records there) is cleared once, by the first such change.

A hash is not a password to the server's own checks: ``validate_password`` (component or plugin) and the
password history and reuse interval skip a string given ``AS``. Where any of them is in force
(:func:`server_checks_passwords`: the server's variables, and the account's own history as the look read
it) the password goes ``IDENTIFIED BY`` as before, and its fingerprint to the row: the server's policy is
worth the second write.
"""

from __future__ import annotations

from typing import Final

from dbuser_operator.mysql.accounts import account_metadata, catalog, password_hashes
from dbuser_operator.mysql.accounts.authentication import Method
from dbuser_operator.mysql.accounts.dual_password import Hashed
from dbuser_operator.mysql.bookkeeping.ownership import table, valid_account
from dbuser_operator.mysql.identifiers import SQL
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement

DEFAULT_ROUNDS: Final = 5000
"""``caching_sha2_password_digest_rounds`` where the server has no such variable (before 8.0.24)."""

_PLUGINS: Final = (password_hashes.CACHING_SHA2, password_hashes.NATIVE)


def applies(server: ServerInfo, plugin: str | None) -> bool:
    """Whether a password under ``plugin`` (the account's or the spec's) can be set this way on ``server``:
    MySQL with account attributes, a plugin whose string the operator makes."""
    return account_metadata.supports_attributes(server) and plugin in _PLUGINS


def hashed(plugin: str, password: str, rounds: int, owner_uid: str) -> Hashed:
    """The string ``plugin`` stores for ``password`` (a fresh salt for ``caching_sha2_password``), and its
    fingerprint entry naming ``owner_uid``."""
    if plugin == password_hashes.CACHING_SHA2:
        string = password_hashes.caching_sha2_string(password, rounds)
    else:
        string = password_hashes.native_hash(password)
    entry = {"owner": owner_uid, "sha2": password_hashes.fingerprint(string)}
    return Hashed(plugin, string, {account_metadata.FINGERPRINT_ATTRIBUTE: entry})


def plugin_of(method: Method | None, current: str | None) -> str | None:
    """The plugin the account has after the change: the spec's, else the account's own (``IDENTIFIED BY``
    keeps it)."""
    return method.plugin if method is not None else current


async def digest_rounds(db: Database, server: ServerInfo) -> int:
    """The server's ``caching_sha2_password_digest_rounds`` (a start-up option: read once per server)."""
    if server.version < (8, 0, 24):
        return DEFAULT_ROUNDS
    rows = await db.fetch(Statement("SHOW GLOBAL VARIABLES LIKE 'caching_sha2_password_digest_rounds'"))
    return int(str(rows[0][1])) if rows else DEFAULT_ROUNDS


def reuse_columns(server: ServerInfo, alias: str) -> SQL:
    """Two columns of the accounts table aliased ``alias`` (a constant): the account's own password history
    and reuse interval (NULL: the server's), for the look (NULL, NULL on a server without attributes)."""
    present = account_metadata.supports_attributes(server)
    return catalog.columns_or_nulls(alias, present, "{a}.Password_reuse_history", "{a}.Password_reuse_time")


async def server_checks_passwords(db: Database, own_policy: bool) -> bool:
    """Whether the server checks a new password itself, which it does not for a string given ``AS``: the
    ``validate_password`` component or plugin is loaded (its variables exist), a password history or reuse
    interval is set for the server, or (``own_policy``, as the look read it) for the account. ``SHOW``: no
    privilege needed."""
    if own_policy:
        return True
    rows = await db.fetch(
        Statement(
            "SHOW GLOBAL VARIABLES WHERE Variable_name LIKE %s OR Variable_name IN (%s, %s)",
            "validate\\_password%",
            "password_history",
            "password_reuse_interval",
        )
    )
    for name, value in rows:
        if str(name).startswith("validate_password") or str(value or "0") not in ("0", ""):
            return True
    return False


async def clear_row_fingerprint(db: Database, schema: str, user: str, host: str) -> None:
    """The bookkeeping row's fingerprint set to NULL, so that the attribute's is the one compared (once per
    account whose row held one)."""
    await db.execute(
        Statement(
            "UPDATE {table} SET auth_fingerprint = NULL WHERE user = %s AND host = %s",
            *valid_account(user, host),
            table=table(schema),
        )
    )
