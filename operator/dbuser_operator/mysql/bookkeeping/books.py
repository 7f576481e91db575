"""The ledger's tables as they are on disk, and the statements each takes (:mod:`.ownership` is the API).

The three tables keep the layouts existing installs have: ``accounts`` and ``roles`` keyed by user and
host (a role's host is ``%`` on either flavour), the owner's name in ``name``; ``databases`` keyed by the
database's name without regard to case (a server with ``lower_case_table_names`` reads ``App`` as ``app``: two
resources must never own one database under two spellings), the owner's name in ``resource``. A
:class:`Book` carries a table's statements, so that the API is one for all three.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, LiteralString

TABLE: Final = "accounts"
ROLES_TABLE: Final = "roles"
"""The table of the roles the operator owns: the same shape, the host ``%`` whatever the flavour."""
DATABASES_TABLE: Final = "databases"
"""The table of the databases the operator owns: keyed by name, the owner's name in ``resource``."""
NameClass = Literal["account", "role", "database"]
"""What a kind's name in MySQL is: an account, a role or a database."""

_CREATE_TABLE: Final = (
    "CREATE TABLE IF NOT EXISTS {table} ("
    " user VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,"
    " host VARCHAR(255) CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,"
    " owner_uid VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,"
    " namespace VARCHAR(253) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,"
    " name VARCHAR(253) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,"
    " auth_fingerprint CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,"
    " created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),"
    " PRIMARY KEY (user, host)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
    " COMMENT='MySQL accounts owned by dbuser-operator, and the resources owning them'"
)


_CREATE_DATABASES_TABLE: Final = (
    "CREATE TABLE IF NOT EXISTS {table} ("
    " name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL,"
    " owner_uid VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,"
    " namespace VARCHAR(253) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,"
    " resource VARCHAR(253) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,"
    " created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),"
    " PRIMARY KEY (name)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
    " COMMENT='MySQL databases owned by dbuser-operator, and the resources owning them'"
)


@dataclass(frozen=True)
class Book:
    """One table of the ledger, with its statements: the tables differ in layout (accounts and roles are
    keyed by user and host, databases by name, their owner's name in ``resource``), the API does not."""

    name: str
    create: LiteralString
    select: LiteralString  # the owner of one key
    insert: LiteralString  # key, owner_uid, namespace, name
    delete: LiteralString  # one key, if the owner_uid owns it
    delete_name: LiteralString  # every key of one user or name that the owner_uid owns
    every: LiteralString  # key, owner_uid, namespace, name of every row


def _keyed_by_account(name: str) -> Book:
    """A table of the accounts' layout (accounts, roles)."""
    return Book(
        name,
        _CREATE_TABLE,
        select="SELECT owner_uid, namespace, name FROM {table} WHERE user = %s AND host = %s",
        insert="INSERT INTO {table} (user, host, owner_uid, namespace, name) VALUES (%s, %s, %s, %s, %s)"
        " ON DUPLICATE KEY UPDATE owner_uid = owner_uid",
        delete="DELETE FROM {table} WHERE user = %s AND host = %s AND owner_uid = %s",
        delete_name="DELETE FROM {table} WHERE user = %s AND owner_uid = %s",
        every="SELECT user, host, owner_uid, namespace, name FROM {table} ORDER BY user, host",
    )


ACCOUNTS: Final = _keyed_by_account(TABLE)
ROLES: Final = _keyed_by_account(ROLES_TABLE)
DATABASES: Final = Book(
    DATABASES_TABLE,
    _CREATE_DATABASES_TABLE,
    select="SELECT owner_uid, namespace, resource FROM {table} WHERE name = %s",
    insert="INSERT INTO {table} (name, owner_uid, namespace, resource) VALUES (%s, %s, %s, %s)"
    " ON DUPLICATE KEY UPDATE owner_uid = owner_uid",
    delete="DELETE FROM {table} WHERE name = %s AND owner_uid = %s",
    delete_name="DELETE FROM {table} WHERE name = %s AND owner_uid = %s",
    every="SELECT name, owner_uid, namespace, resource FROM {table}",
)
