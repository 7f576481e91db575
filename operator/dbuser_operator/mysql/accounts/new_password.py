"""A new MySQL account's password made the operator's own, with no hash computed on the client.

MySQL salts its hashes (``caching_sha2_password``): the fingerprint of a new account's authentication
string (:mod:`.ownership`) cannot be known before ``CREATE USER``, and reading it afterwards would take a
password somebody set in between for the operator's. Checking the string against the password on the
client costs thousands of rounds of SHA-256 per account (:func:`.password_hashes.caching_sha2_matches`).
Instead the account is created with ``PASSWORD EXPIRE`` (:func:`.accounts.create`), a mark that every change
of its password lifts (``ALTER USER … IDENTIFIED``, ``SET PASSWORD``), and :func:`settle` then reads the
string with the mark in one statement:

- still expired: the string is the one ``CREATE USER`` stored. It is set again as it is (``IDENTIFIED WITH
  plugin AS``: the same hash, which lifts the mark), and its fingerprint recorded. A change by hand between
  the read and that statement is overwritten by the operator's own password; one after the record shows as
  drift.
- not expired (or gone, or under a plugin the operator does not set): somebody changed it since ``CREATE
  USER``. :data:`~.ownership.FOREIGN` is recorded, so the next look sees drift and sets the password back
  (which lifts the mark too).

The hash travels to the server in that one statement (as MariaDB's always do, :mod:`.authentication`);
the password never does again. MySQL only: MariaDB's default hash is unsalted and known beforehand.
"""

from __future__ import annotations

from pydantic import SecretStr

from dbuser_operator.mysql.accounts import authentication, catalog, password_hashes
from dbuser_operator.mysql.bookkeeping.ownership import FOREIGN, table, valid_account
from dbuser_operator.mysql.identifiers import SQL, account
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement


def applies(server: ServerInfo, method: authentication.Method | None, password: str | None) -> bool:
    """Whether a new account with ``password`` under ``method`` (None: the server's default plugin) is
    made this way: on MySQL, for a plugin that takes a password."""
    return server.flavour == "mysql" and password is not None and (method is None or method.takes_password)


async def settle(db: Database, schema: str, user: str, host: str, server: ServerInfo) -> bool:
    """Lift the expiry of the account :func:`.accounts.create` made with ``expired`` and record its
    fingerprint; whether its password was still the operator's (False: :data:`~.ownership.FOREIGN`
    recorded, the expiry left to the pass that sets the password back)."""
    user, host = valid_account(user, host)
    rows = await db.fetch(
        Statement(
            "SELECT {plugin}, {auth}, u.password_expired FROM {accounts} u WHERE u.User = %s AND u.Host = %s",
            user,
            host.lower(),
            plugin=catalog.plugin(server, "u"),
            auth=catalog.authentication_string(server, "u"),
            accounts=catalog.accounts_table(server),
        )
    )
    plugin, auth, expired = rows[0] if rows else ("", "", "N")
    known = authentication.PLUGINS.get(str(plugin))
    own = str(expired).upper() == "Y" and known is not None and known.takes_password
    if own:
        stored = auth.decode("utf-8", "surrogateescape") if isinstance(auth, bytes) else str(auth)
        await db.execute(
            Statement(
                "ALTER USER {account} IDENTIFIED WITH {plugin} AS %s",
                SecretStr(stored),
                account=account(user, host),
                plugin=SQL(str(plugin)),  # one of PLUGINS' names
            )
        )
    fingerprint = password_hashes.fingerprint(auth) if own else FOREIGN
    await db.execute(
        Statement(
            "UPDATE {table} SET auth_fingerprint = %s WHERE user = %s AND host = %s",
            fingerprint,
            user,
            host,
            table=table(schema),
        )
    )
    return own
