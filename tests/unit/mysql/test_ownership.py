"""Ownership bookkeeping without a server: the schema name, owners, fingerprint comparison."""

from __future__ import annotations

import pytest

from dbuser_operator.mysql.bookkeeping.ownership import (
    ACCOUNTS,
    DATABASES,
    DEFAULT_SCHEMA,
    ROLES,
    Owner,
    compare_fingerprints,
    entry_of,
    table,
    validate_schema,
)
from dbuser_operator.mysql.errors import InvalidAccountError, InvalidNameError
from dbuser_operator.mysql.identifiers import InvalidIdentifierError


def test_the_default_schema_and_the_table() -> None:
    assert validate_schema(DEFAULT_SCHEMA) == "dbuser_operator"
    assert table("dbuser_operator") == "`dbuser_operator`.`accounts`"
    assert table("ops-1$") == "`ops-1$`.`accounts`"


@pytest.mark.parametrize(
    "schema",
    ["*", "mysql", "MySQL", "information_schema", "performance_schema", "sys", "a.b", "a`b", "", "x" * 65],
)
def test_reserved_or_invalid_schemas_are_refused(schema: str) -> None:
    with pytest.raises(InvalidIdentifierError):
        validate_schema(schema)


def test_owners() -> None:
    owner = Owner("0b6f3c1e-0000-4000-8000-000000000001", "team-a", "app")
    assert str(owner) == "team-a/app (uid 0b6f3c1e-0000-4000-8000-000000000001)"
    assert owner == Owner("0b6f3c1e-0000-4000-8000-000000000001", "team-a", "app")


@pytest.mark.parametrize(
    ("uid", "namespace", "name"),
    [
        ("", "ns", "n"),
        ("u", "", "n"),
        ("u", "ns", ""),
        ("u" * 129, "ns", "n"),
        ("u", "ns", "n" * 254),
        ("u\n", "ns", "n"),
    ],
)
def test_invalid_owners(uid: str, namespace: str, name: str) -> None:
    with pytest.raises(ValueError, match="owner"):
        Owner(uid, namespace, name)


def test_fingerprint_comparison() -> None:
    assert compare_fingerprints("ab" * 32, "AB" * 32) is True
    assert compare_fingerprints("ab" * 32, "cd" * 32) is False
    assert compare_fingerprints(None, "ab" * 32) is None
    assert compare_fingerprints("ab" * 32, None) is None


def test_one_ledger_entry_per_kind_of_name_in_the_tables_installs_have() -> None:
    """The three books keep their tables; an entry names its row by the table's key, names validated."""
    assert (ACCOUNTS.name, ROLES.name, DATABASES.name) == ("accounts", "roles", "databases")
    account, role, database = (
        entry_of("account", "app", "10.0.%"),
        entry_of("role", "r"),
        entry_of("database", "d"),
    )
    assert (account.book, account.key, str(account)) == (ACCOUNTS, ("app", "10.0.%"), "'app'@'10.0.%'")
    assert (role.book, role.key, str(role)) == (ROLES, ("r", "%"), "role r")
    assert (database.book, database.key, str(database)) == (DATABASES, ("d",), "database d")
    assert "WHERE name = %s" in DATABASES.select  # its own layout
    assert "resource" in DATABASES.insert
    assert ACCOUNTS.select == ROLES.select  # one layout, two tables
    with pytest.raises(InvalidAccountError):
        entry_of("account", "a'b")
    with pytest.raises(InvalidNameError):
        entry_of("database", "*")
