"""The state of every owned account at once, with a fixed number of queries however many there are.

:func:`inventory` sends :data:`QUERIES` (two) queries: the bookkeeping table ``LEFT JOIN mysql.user``
(presence, limits, TLS requirement and identity, the authentication string's fingerprint, the lock and
password policy), and the three
``information_schema`` privilege tables (and ``COLUMN_PRIVILEGES``) of every account, and
``mysql.procs_priv`` joined to the bookkeeping table on user and host for routines, united (``UNION
ALL``). The rest is done here: each privilege row is matched to its owned account by its GRANTEE (a dictionary
look-up: the same join in SQL is quadratic on MariaDB), and the operator compares each account's state with
its resource's spec without another round trip. Time and server CPU grow linearly with the accounts.

Collations: ``mysql.user.User`` is binary on both servers (``utf8mb3_bin``) and ``Host`` is binary on
MariaDB, case-insensitive ASCII on MySQL; the bookkeeping table's ASCII columns are converted to the
Unicode side implicitly (the Unicode side wins), so the primary key of ``mysql.user`` is used, and hosts
are compared as ``LOWER(host)`` because the servers store them in lower case. information_schema's
GRANTEE is ``utf8mb3_general_ci`` (case-insensitive): rows are matched to their account here, user names
case-sensitively.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from dbuser_operator.mysql.accounts import account_metadata, new_password
from dbuser_operator.mysql.accounts.account_metadata import AccountMetadata
from dbuser_operator.mysql.accounts.limits import COLUMNS, Limits, column_list
from dbuser_operator.mysql.accounts.lock_policy import COLUMNS as POLICY_COLUMNS
from dbuser_operator.mysql.accounts.lock_policy import LockPolicy
from dbuser_operator.mysql.accounts.lock_policy import column_list as policy_columns
from dbuser_operator.mysql.bookkeeping.ownership import Owner, compare_fingerprints, table
from dbuser_operator.mysql.grants import Grant, grants_from_rows, split_grantee
from dbuser_operator.mysql.grants.model import ROUTINE_RANK
from dbuser_operator.mysql.identifiers import SQL
from dbuser_operator.mysql.session.connection import Database, Row
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement

QUERIES: Final = 2
"""The number of queries :func:`inventory` sends, whatever the number of accounts."""


@dataclass(frozen=True)
class AccountState:
    """An owned account as the server has it.

    ``present``: the account exists. ``limits``: its limits and TLS requirement (None when absent).
    ``policy``: its lock and password policy, and ``default_lifetime`` the server's
    ``default_password_lifetime`` (None when absent, or when the inventory was read without the server).
    ``password_intact``: its authentication string still has the recorded fingerprint (None when absent or
    no fingerprint is recorded). ``grants``: its global, database, table, column and routine grants, one per
    level. ``metadata``: the owner entry and comment in its attributes (None when absent, or not read: a
    server without attributes, or no server given to :func:`inventory`).
    """

    owner: Owner
    present: bool
    limits: Limits | None
    password_intact: bool | None
    grants: frozenset[Grant]
    metadata: AccountMetadata | None = None
    policy: LockPolicy | None = None
    default_lifetime: int = 0


_OWNED_COLUMNS: Final = ("user", "host", "owner_uid", "namespace", "name", "auth_fingerprint")
_ACCOUNTS: Final = (
    "SELECT "  # noqa: S608 - constant column names
    + column_list(_OWNED_COLUMNS, "o")
    + ", u.User, "
    + column_list(COLUMNS, "u")
    + ", SHA2(u.authentication_string, 256), {created}, {metadata}, {policy}"
    " FROM {table} o LEFT JOIN mysql.user u ON u.User = o.user AND u.Host = LOWER(o.host){join}"
)
_ACCOUNTS_ROW: Final = (
    *_OWNED_COLUMNS,
    "User",
    *COLUMNS,
    "fingerprint",
    "created_owner",
    "created_fingerprint",
    "owner_entry",
    "comment",
    *POLICY_COLUMNS,
    "default_lifetime",
)
"""The names of :data:`_ACCOUNTS`' columns: the bookkeeping row's, then ``mysql.user``'s (NULL when the
account is gone), the fingerprint of its authentication string and the one it was created with (the owner
and fingerprint of :data:`.new_password.FINGERPRINT_ATTRIBUTE`), its owner entry and comment (NULL where not
read), and its lock and password policy with the server's default password lifetime
(:mod:`.lock_policy`; on MariaDB from ``mysql.global_priv``, joined on its primary key)."""
_MARIADB_POLICY_JOIN: Final = " LEFT JOIN mysql.global_priv g ON g.User = o.user AND g.Host = LOWER(o.host)"

# The information_schema rows of every account, matched to the owned ones here, by GRANTEE: a join on that
# string in SQL cannot use an index, and MariaDB runs it as a nested loop (owned accounts times privilege
# rows: 14 s of server CPU at 8000 accounts). Routines come from mysql.procs_priv, joined on its primary key.
_PRIVILEGES: Final = (
    "SELECT NULL, NULL, p.GRANTEE, 0, '*', '*', p.PRIVILEGE_TYPE, p.IS_GRANTABLE, NULL"
    " FROM information_schema.USER_PRIVILEGES p"
    " UNION ALL"
    " SELECT NULL, NULL, p.GRANTEE, 1, p.TABLE_SCHEMA, '*', p.PRIVILEGE_TYPE, p.IS_GRANTABLE, NULL"
    " FROM information_schema.SCHEMA_PRIVILEGES p"
    " UNION ALL"
    " SELECT NULL, NULL, p.GRANTEE, 2, p.TABLE_SCHEMA, p.TABLE_NAME, p.PRIVILEGE_TYPE, p.IS_GRANTABLE, NULL"
    " FROM information_schema.TABLE_PRIVILEGES p"
    " UNION ALL"
    " SELECT NULL, NULL, p.GRANTEE, 3, p.TABLE_SCHEMA, p.TABLE_NAME, p.PRIVILEGE_TYPE, p.IS_GRANTABLE,"
    " p.COLUMN_NAME"
    " FROM information_schema.COLUMN_PRIVILEGES p"
    " UNION ALL"
    " SELECT o.user, o.host, NULL, 4, CONVERT(p.Db USING utf8mb4), CONVERT(p.Routine_name USING utf8mb4),"
    " CONVERT(p.Proc_priv USING utf8mb4), 'NO', CONVERT(p.Routine_type USING utf8mb4)"
    " FROM mysql.procs_priv p JOIN {table} o ON p.User = o.user AND p.Host = LOWER(o.host)"
    " WHERE p.Routine_type IN ('PROCEDURE', 'FUNCTION')"
)


@dataclass(frozen=True)
class Inventory:
    """What :func:`read_inventory` read: the owned accounts' states, and the privilege rows of every
    account (owned or not), for the access report."""

    owned: dict[tuple[str, str], AccountState]
    rows_by_grantee: Mapping[tuple[str, str], list[Row]]
    """Privilege rows ``(rank, schema, table, privilege, is_grantable, detail)`` by ``(user, host)``, the
    host lower-cased (routines only for owned accounts)."""

    def grants_of(self, user: str, host: str) -> frozenset[Grant]:
        """The global, database, table and column grants of any account (routines: owned ones only)."""
        return grants_from_rows(self.rows_by_grantee.get((user, host.lower()), []))


async def inventory(
    db: Database, schema: str, server: ServerInfo | None = None
) -> dict[tuple[str, str], AccountState]:
    """Every account of the bookkeeping table in ``schema``, keyed by ``(user, host)`` as claimed; with
    ``server``, their owner metadata too where it has account attributes, and their lock and password
    policy.

    Sends :data:`QUERIES` queries in all.
    """
    return (await read_inventory(db, schema, server)).owned


async def read_inventory(db: Database, schema: str, server: ServerInfo | None = None) -> Inventory:
    """:func:`inventory`, with the privilege rows of every account kept (the same :data:`QUERIES`)."""
    owned = table(schema)
    metadata = account_metadata.columns(server, "u") if server is not None else SQL("NULL, NULL")
    read_metadata = server is not None and account_metadata.supports_attributes(server)
    if server is None:
        policy, join = SQL("NULL, NULL, NULL, NULL, NULL"), SQL("")
    elif server.flavour == "mariadb":
        policy, join = policy_columns(server, "g"), SQL(_MARIADB_POLICY_JOIN)
    else:
        policy, join = policy_columns(server, "u"), SQL("")
    created = new_password.attribute_columns(server, "u") if server is not None else SQL("NULL, NULL")
    statement = Statement(
        _ACCOUNTS, table=owned, created=created, metadata=metadata, policy=policy, join=join
    )
    accounts: list[Row] = await db.fetch(statement)
    privileges: list[Row] = await db.fetch(Statement(_PRIVILEGES, table=owned))

    # A GRANTEE names an owned account when its user is the same (case-sensitive) and its host the same
    # without regard to case: the rule of grants.is_grantee, as a look-up key. (user and host are the first
    # two columns of _ACCOUNTS; a row is made a dict only when its state is, one at a time.)
    claimed = {(str(row[0]), str(row[1]).lower()): (str(row[0]), str(row[1])) for row in accounts}
    rows_by_account: defaultdict[tuple[str, str], list[Row]] = defaultdict(list)
    everyone: defaultdict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in privileges:
        grant = row[3:]  # one tuple, listed for the account and for everyone
        if row[3] == ROUTINE_RANK:
            rows_by_account[(str(row[0]), str(row[1]))].append(grant)
            everyone[(str(row[0]), str(row[1]).lower())].append(grant)
            continue
        grantee = split_grantee(str(row[2]))
        if grantee is None:
            continue
        lowered = (grantee[0], grantee[1].lower())
        everyone[lowered].append(grant)
        account = claimed.get(lowered)
        if account is not None:
            rows_by_account[account].append(grant)

    result: dict[tuple[str, str], AccountState] = {}
    for owned_row in (dict(zip(_ACCOUNTS_ROW, row, strict=True)) for row in accounts):
        user, host = str(owned_row["user"]), str(owned_row["host"])
        owner = Owner(str(owned_row["owner_uid"]), str(owned_row["namespace"]), str(owned_row["name"]))
        present = owned_row["User"] is not None
        result[(user, host)] = AccountState(
            owner=owner,
            present=present,
            limits=Limits.from_columns(owned_row) if present else None,
            password_intact=(
                compare_fingerprints(recorded(owned_row), owned_row["fingerprint"]) if present else None
            ),
            grants=grants_from_rows(rows_by_account.get((user, host), [])) if present else frozenset(),
            metadata=(
                AccountMetadata.from_columns(owned_row["owner_entry"], owned_row["comment"])
                if present and read_metadata
                else None
            ),
            policy=LockPolicy.from_row(owned_row) if present and server is not None else None,
            default_lifetime=int(owned_row["default_lifetime"] or 0),
        )
    return Inventory(result, everyone)


def recorded(row: Mapping[str, object]) -> object:
    """The fingerprint an owned account's is compared with (:func:`.new_password.recorded`)."""
    uid = str(row["owner_uid"])
    return new_password.recorded(
        row["auth_fingerprint"], row["created_owner"], row["created_fingerprint"], uid
    )
