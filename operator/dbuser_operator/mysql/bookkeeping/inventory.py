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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

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


@dataclass(frozen=True, slots=True)
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
    return (await read_inventory(db, schema, server, keep_everyone=False)).owned


async def read_inventory(
    db: Database, schema: str, server: ServerInfo | None = None, *, keep_everyone: bool = True
) -> Inventory:
    """:func:`inventory`, with the privilege rows of every account kept (the same :data:`QUERIES`; none
    kept but the owned accounts' without ``keep_everyone``)."""
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
    # two columns of _ACCOUNTS.)
    keys = [(str(row[0]), str(row[1])) for row in accounts]
    claimed = {(user, host.lower()): (user, host) for user, host in keys}
    rows_by_account, everyone = _by_account(privileges, claimed, keep_everyone=keep_everyone)
    parse = _States(server, read_metadata)
    no_rows: list[Row] = []
    result = {
        key: parse.state(row, rows_by_account.get(key, no_rows))
        for key, row in zip(keys, accounts, strict=True)
    }
    return Inventory(result, everyone)


def _by_account(
    privileges: list[Row], claimed: Mapping[tuple[str, str], tuple[str, str]], *, keep_everyone: bool
) -> tuple[dict[tuple[str, str], list[Row]], dict[tuple[str, str], list[Row]]]:
    """The privilege rows ``(rank, schema, table, privilege, is_grantable, detail)`` of each owned account
    (as claimed), and of every account (the host lower-cased; empty unless ``keep_everyone``). Rows are
    grouped by their GRANTEE first: each account's is split once, not once per row."""
    rows_by_account: defaultdict[tuple[str, str], list[Row]] = defaultdict(list)
    everyone: defaultdict[tuple[str, str], list[Row]] = defaultdict(list)
    by_grantee: defaultdict[object, list[Row]] = defaultdict(list)
    for row in privileges:
        if row[3] == ROUTINE_RANK:
            grant = row[3:]
            rows_by_account[(str(row[0]), str(row[1]))].append(grant)
            if keep_everyone:
                everyone[(str(row[0]), str(row[1]).lower())].append(grant)
        else:
            by_grantee[row[2]].append(row[3:])
    for value, grants in by_grantee.items():
        grantee = split_grantee(str(value))
        if grantee is None:
            continue
        lowered = (grantee[0], grantee[1].lower())
        if keep_everyone:
            everyone[lowered].extend(grants)
        account = claimed.get(lowered)
        if account is not None:
            rows_by_account[account].extend(grants)
    return rows_by_account, everyone


def _index(column: str) -> int:
    return _ACCOUNTS_ROW.index(column)


_USER, _LIMITS, _LIMITS_END = _index("User"), _index(COLUMNS[0]), _index(COLUMNS[-1]) + 1
_POLICY, _POLICY_END = _index(POLICY_COLUMNS[0]), _index(POLICY_COLUMNS[-1]) + 1
_UID, _NAMESPACE, _NAME = _index("owner_uid"), _index("namespace"), _index("name")
_FINGERPRINT, _RECORDED = _index("fingerprint"), _index("auth_fingerprint")
_CREATED_OWNER, _CREATED_FINGERPRINT = _index("created_owner"), _index("created_fingerprint")
_OWNER_ENTRY, _COMMENT, _DEFAULT_LIFETIME = (
    _index("owner_entry"),
    _index("comment"),
    _index("default_lifetime"),
)


class _States:
    """Turns :data:`_ACCOUNTS` rows into :class:`AccountState` (as a parse by column name would), building
    each distinct limits, policy and set of grants once per inventory: most accounts share them, and these
    values are immutable (a column's values have one type in a result set; the types are in the keys all
    the same)."""

    def __init__(self, server: ServerInfo | None, read_metadata: bool) -> None:
        self.server = server
        self.read_metadata = read_metadata
        self._limits: dict[tuple[object, ...], Limits] = {}
        self._policies: dict[tuple[object, ...], LockPolicy] = {}
        self._grants: dict[tuple[Row, ...], frozenset[Grant]] = {}
        self._comments: dict[object, object] = {}

    def state(self, row: Row, grant_rows: Sequence[Row]) -> AccountState:
        """The state of the account of ``row`` (an :data:`_ACCOUNTS` row), its privilege rows
        ``grant_rows``."""
        owner = Owner(str(row[_UID]), str(row[_NAMESPACE]), str(row[_NAME]))
        lifetime = int(row[_DEFAULT_LIFETIME] or 0)
        if row[_USER] is None:
            return AccountState(owner, False, None, None, frozenset(), None, None, lifetime)
        recorded = new_password.recorded(
            row[_RECORDED], row[_CREATED_OWNER], row[_CREATED_FINGERPRINT], owner.uid
        )
        return AccountState(
            owner=owner,
            present=True,
            limits=_shared(self._limits, row[_LIMITS:_LIMITS_END], COLUMNS, Limits.from_columns),
            password_intact=compare_fingerprints(recorded, row[_FINGERPRINT]),
            grants=self._shared_grants(tuple(grant_rows)),
            metadata=self._metadata(row[_OWNER_ENTRY], row[_COMMENT]) if self.read_metadata else None,
            policy=(
                _shared(self._policies, row[_POLICY:_POLICY_END], POLICY_COLUMNS, LockPolicy.from_row)
                if self.server is not None
                else None
            ),
            default_lifetime=lifetime,
        )

    def _shared_grants(self, rows: tuple[Row, ...]) -> frozenset[Grant]:
        found = self._grants.get(rows)
        if found is None:
            found = self._grants[rows] = grants_from_rows(rows)
        return found

    def _metadata(self, owner_entry: object, comment: object) -> AccountMetadata:
        """The owner entry parsed for each account (a dict: its own); the same comment text parsed once."""
        found = AccountMetadata.from_columns(owner_entry, None)
        if comment is None:
            return found
        parsed = self._comments.get(comment, _UNPARSED)
        if parsed is _UNPARSED:
            parsed = AccountMetadata.from_columns(None, comment).comment
            if isinstance(parsed, str):  # immutable (a hand edit may leave an object there: not shared)
                self._comments[comment] = parsed
        return AccountMetadata(found.owner, parsed)


_UNPARSED: Final = object()


_T = TypeVar("_T")


def _shared(
    built: dict[tuple[object, ...], _T],
    values: tuple[object, ...],
    columns: Sequence[str],
    build: Callable[[Mapping[str, object]], _T],
) -> _T:
    """What ``build`` makes of ``values`` (the row's ``columns``), made once for equal values of equal
    types and kept in ``built``."""
    key = (*values, *map(type, values))
    found = built.get(key)
    if found is None:
        found = built[key] = build(dict(zip(columns, values, strict=True)))
    return found


def recorded(row: Mapping[str, object]) -> object:
    """The fingerprint an owned account's is compared with (:func:`.new_password.recorded`)."""
    uid = str(row["owner_uid"])
    return new_password.recorded(
        row["auth_fingerprint"], row["created_owner"], row["created_fingerprint"], uid
    )
