"""The look every pass of an account takes before it touches it: who owns it, whether it exists, whether its
password is still the one the operator recorded, and what the later steps compare (plugin, owner metadata,
lock and password policy, the credential marker and retained password of :mod:`.dual_password`), in one
query by primary keys."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from dbuser_operator.mysql.accounts import (
    account_metadata,
    catalog,
    dual_password,
    hashed_password,
    limits,
    lock_policy,
    mariadb_dual_auth,
    new_password,
)
from dbuser_operator.mysql.accounts.lock_policy import LockPolicy
from dbuser_operator.mysql.bookkeeping.ownership import Owner, compare_fingerprints, table, valid_account
from dbuser_operator.mysql.identifiers import SQL
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement


@dataclass(frozen=True)
class Lookup:
    """What the operator needs to know of an account before it touches it.

    ``owner``: who owns it (None: nobody). ``exists``: the account exists. ``password_intact``: its
    authentication string still has the recorded fingerprint (None when nothing can be compared: not
    owned, no fingerprint recorded, or no account). ``plugin``: its authentication plugin (None: no account;
    not compared: two lookups are equal when owner, existence and fingerprint are). ``metadata``: the owner
    entry and comment in its attributes (:mod:`.account_metadata`; None: no account; not compared).
    ``policy``: its lock and password policy (None: no account) and ``default_lifetime`` the server's
    ``default_password_lifetime`` (:mod:`.lock_policy`; not compared either), so that a pass needs no
    statement of its own for them. ``fingerprint``: the fingerprint of its authentication string now (None:
    no account); ``password_state`` its credential marker and retained password on MySQL
    (:mod:`.dual_password`), ``dual_auth`` its authentications on MariaDB (:mod:`.mariadb_dual_auth`), and
    ``options`` its limits and TLS requirement (:mod:`.limits`); each None without account (or where the
    server has none); not compared either. ``fingerprint_in_row``: the bookkeeping row holds a fingerprint
    (which wins over the account's attribute: :func:`.new_password.recorded`); ``own_reuse_policy``: the
    account has a password history or reuse interval of its own (:mod:`.hashed_password`). ``unsettled``:
    a new MySQL account whose creation stopped between its ``CREATE USER`` and :func:`.new_password.settle`
    (:func:`.new_password.unsettled`).
    """

    owner: Owner | None
    exists: bool
    password_intact: bool | None
    plugin: str | None = dataclasses.field(default=None, compare=False)
    metadata: account_metadata.AccountMetadata | None = dataclasses.field(default=None, compare=False)
    policy: LockPolicy | None = dataclasses.field(default=None, compare=False)
    default_lifetime: int = dataclasses.field(default=0, compare=False)
    fingerprint: str | None = dataclasses.field(default=None, compare=False)
    password_state: dual_password.PasswordState | None = dataclasses.field(default=None, compare=False)
    dual_auth: mariadb_dual_auth.DualAuthState | None = dataclasses.field(default=None, compare=False)
    options: limits.Limits | None = dataclasses.field(default=None, compare=False)
    fingerprint_in_row: bool = dataclasses.field(default=False, compare=False)
    own_reuse_policy: bool = dataclasses.field(default=False, compare=False)
    unsettled: bool = dataclasses.field(default=False, compare=False)


async def lookup(db: Database, schema: str, user: str, host: str, server: ServerInfo) -> Lookup:
    """Owner, existence, password fingerprint, plugin and owner metadata of ``'user'@'host'``, in one query
    by primary keys."""
    user, host = valid_account(user, host)
    rows = await db.fetch(
        Statement(
            "SELECT o.owner_uid, o.namespace, o.name, o.auth_fingerprint, u.User, SHA2({auth}, 256),"
            " {plugin}, {metadata}, {policy}, {state}, {options}, {created}, {reuse}, {expired}"
            " FROM (SELECT 1) AS one"
            " LEFT JOIN {table} o ON o.user = %s AND o.host = %s"
            " LEFT JOIN {accounts} u ON u.User = %s AND u.Host = %s",
            user,
            host,
            user,
            host.lower(),
            table=table(schema),
            accounts=catalog.accounts_table(server),
            auth=catalog.authentication_string(server, "u"),
            plugin=catalog.plugin(server, "u"),
            metadata=account_metadata.columns(server, "u"),
            policy=lock_policy.column_list(server, "u"),
            state=_state_columns(server),
            options=catalog.options_columns(server, "u"),
            created=new_password.attribute_columns(server, "u"),
            reuse=hashed_password.reuse_columns(server, "u"),
            expired=new_password.expired_column(server, "u"),
        )
    )
    uid, namespace, name, recorded, account, current, plugin, owner_entry, comment = rows[0][:9]
    owner = Owner(str(uid), str(namespace), str(name)) if uid is not None else None
    exists, in_row = account is not None, recorded is not None
    unsettled = owner is not None and exists and new_password.unsettled(recorded, rows[0][25], rows[0][28])
    if owner is not None:  # the bookkeeping row's fingerprint, or the one the account was created with
        recorded = new_password.recorded(recorded, rows[0][24], rows[0][25], owner.uid)
    intact = compare_fingerprints(recorded, current) if owner is not None and exists else None
    state, options = rows[0][14:16], dict(zip(limits.COLUMNS, rows[0][16:24], strict=True))
    policy = LockPolicy.from_row(dict(zip(lock_policy.COLUMNS, rows[0][9:13], strict=True)))
    return Lookup(
        owner,
        exists,
        intact,
        str(plugin) if exists and plugin is not None else None,
        account_metadata.AccountMetadata.from_columns(owner_entry, comment) if exists else None,
        policy if exists else None,
        int(rows[0][13] or 0),
        str(current) if exists and current is not None else None,
        dual_password.state_of(*state) if exists and dual_password.supports_dual_passwords(server) else None,
        mariadb_dual_auth.state_of(state[0]) if exists and server.flavour == "mariadb" else None,
        limits.Limits.from_columns(options) if exists else None,
        in_row,
        any(value is not None and int(str(value)) for value in rows[0][26:28]),
        unsettled,
    )


def _state_columns(server: ServerInfo) -> SQL:
    """Two columns: MySQL's credential marker and retained password; MariaDB's ``Priv`` (its
    authentications) and NULL."""
    return SQL("u.Priv, NULL") if server.flavour == "mariadb" else dual_password.state_columns(server, "u")
