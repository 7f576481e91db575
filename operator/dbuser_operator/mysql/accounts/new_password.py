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

Where the server keeps account attributes (8.0.21+) the fingerprint goes into that same statement, as the
attribute :data:`FINGERPRINT_ATTRIBUTE` (the owner's UID and ``SHA2`` of the string), not into the
bookkeeping row: one statement less per new account. It is written with the string it describes, so a later
change by hand makes them differ (drift), as the row's would. The row's fingerprint stays NULL until the
operator's next change of the password records one there, and while it is NULL the look and the drift check
compare the attribute's instead (:func:`recorded`), if it names the row's owner (an account let go and taken
over by another resource is not taken for that one's).
"""

from __future__ import annotations

import json
from typing import Final, LiteralString

from pydantic import SecretStr

from dbuser_operator.mysql.accounts import account_metadata, authentication, catalog, password_hashes
from dbuser_operator.mysql.bookkeeping.ownership import FOREIGN, table, valid_account
from dbuser_operator.mysql.identifiers import SQL, account
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement


def applies(server: ServerInfo, method: authentication.Method | None, password: str | None) -> bool:
    """Whether a new account with ``password`` under ``method`` (None: the server's default plugin) is
    made this way: on MySQL, for a plugin that takes a password."""
    return server.flavour == "mysql" and password is not None and (method is None or method.takes_password)


FINGERPRINT_ATTRIBUTE: Final = account_metadata.FINGERPRINT_ATTRIBUTE
_PATH: Final = f'\'$.metadata."{FINGERPRINT_ATTRIBUTE}"'


def attribute_columns(server: ServerInfo, alias: str) -> SQL:
    """Two columns of the accounts table aliased ``alias`` (a constant): the owner UID and the fingerprint
    of :data:`FINGERPRINT_ATTRIBUTE` (NULL, NULL where absent, and on a server without attributes)."""
    return catalog.columns_or_nulls(
        alias,
        account_metadata.supports_attributes(server),
        "JSON_UNQUOTE(JSON_EXTRACT({a}.User_attributes, " + _PATH + ".owner'))",
        "JSON_UNQUOTE(JSON_EXTRACT({a}.User_attributes, " + _PATH + ".sha2'))",
    )


def expired_column(server: ServerInfo, alias: str) -> SQL:
    """One column of the accounts table aliased ``alias`` (a constant): its ``password_expired`` flag on
    MySQL (NULL elsewhere: MariaDB's new accounts are not made this way)."""
    return catalog.columns_or_nulls(alias, server.flavour == "mysql", "{a}.password_expired")


def unsettled(row: object, attribute: object, expired: object) -> bool:
    """Whether an owned account is still as a ``CREATE USER`` of :func:`.accounts.create` left it with
    ``expired``: the mark still set and no fingerprint recorded (``row``: the bookkeeping row's, None;
    ``attribute``: the account's, None), so :func:`settle` never ran (the pass stopped in between). A
    password set since would have lifted the mark; one the operator set has its fingerprint recorded."""
    return row is None and attribute is None and str(expired).upper() == "Y"


def recorded(row: object, attribute_owner: object, attribute: object, owner_uid: str) -> object:
    """The fingerprint to compare the account's with: the bookkeeping row's (``row``), or while it is NULL
    the one the account was created with (its attribute), if that names ``owner_uid``."""
    if row is not None or attribute_owner is None or str(attribute_owner) != owner_uid:
        return row
    return attribute


async def settle(
    db: Database, schema: str, user: str, host: str, server: ServerInfo, *, owner_uid: str
) -> bool:
    """Lift the expiry of the account :func:`.accounts.create` made with ``expired`` and record its
    fingerprint (in the same statement where the server keeps attributes, for ``owner_uid``); whether its
    password was still the operator's (False: :data:`~.ownership.FOREIGN` recorded in the bookkeeping row,
    the expiry left to the pass that sets the password back)."""
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
    in_attribute = own and account_metadata.supports_attributes(server)
    if own:
        stored = auth.decode("utf-8", "surrogateescape") if isinstance(auth, bytes) else str(auth)
        fingerprint = {"owner": owner_uid, "sha2": password_hashes.fingerprint(auth)}
        suffix: LiteralString = " ATTRIBUTE %s" if in_attribute else ""
        attribute = (json.dumps({FINGERPRINT_ATTRIBUTE: fingerprint}),) if in_attribute else ()
        await db.execute(
            Statement(
                "ALTER USER {account} IDENTIFIED WITH {plugin} AS %s" + suffix,
                SecretStr(stored),
                *attribute,
                account=account(user, host),
                plugin=SQL(str(plugin)),  # one of PLUGINS' names
            )
        )
    if in_attribute:
        return True
    await db.execute(
        Statement(
            "UPDATE {table} SET auth_fingerprint = %s WHERE user = %s AND host = %s",
            password_hashes.fingerprint(auth) if own else FOREIGN,
            user,
            host,
            table=table(schema),
        )
    )
    return own
