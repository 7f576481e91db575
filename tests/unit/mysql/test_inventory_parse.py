"""The inventory's parse shares what accounts have in common and gives the states a row-by-row parse gives."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence

import pytest

from dbuser_operator.mysql.accounts import account_metadata
from dbuser_operator.mysql.accounts.account_metadata import AccountMetadata
from dbuser_operator.mysql.accounts.limits import Limits
from dbuser_operator.mysql.accounts.lock_policy import LockPolicy
from dbuser_operator.mysql.bookkeeping.inventory import (
    _ACCOUNTS_ROW,
    AccountState,
    inventory,
    read_inventory,
    recorded,
)
from dbuser_operator.mysql.bookkeeping.ownership import Owner, compare_fingerprints
from dbuser_operator.mysql.grants import grants_from_rows, split_grantee
from dbuser_operator.mysql.session.connection import Row
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement

MYSQL = ServerInfo(flavour="mysql", version=(9, 7, 0))
MARIADB = ServerInfo(flavour="mariadb", version=(11, 8, 2))
FP = "ab" * 32


def straightforward(
    accounts: list[Row], privileges: list[Row], server: ServerInfo | None
) -> dict[tuple[str, str], AccountState]:
    """The parse as it was first written: each row a dict by column name, every value built anew."""
    by_account: defaultdict[tuple[str, str], list[Row]] = defaultdict(list)
    claimed = {(str(line[0]), str(line[1]).lower()): (str(line[0]), str(line[1])) for line in accounts}
    for grant in privileges:
        if grant[3] == 4:
            by_account[(str(grant[0]), str(grant[1]))].append(grant[3:])
            continue
        grantee = split_grantee(str(grant[2]))
        account = None if grantee is None else claimed.get((grantee[0], grantee[1].lower()))
        if account is not None:
            by_account[account].append(grant[3:])
    read_metadata = server is not None and account_metadata.supports_attributes(server)
    result = {}
    for named in (dict(zip(_ACCOUNTS_ROW, values, strict=True)) for values in accounts):
        key = (str(named["user"]), str(named["host"]))
        result[key] = state_of(named, by_account.get(key, []), server, read_metadata)
    return result


def state_of(
    row: Mapping[str, object], grant_rows: Sequence[Row], server: ServerInfo | None, read_metadata: bool
) -> AccountState:
    present = row["User"] is not None
    return AccountState(
        owner=Owner(str(row["owner_uid"]), str(row["namespace"]), str(row["name"])),
        present=present,
        limits=Limits.from_columns(row) if present else None,
        password_intact=compare_fingerprints(recorded(row), row["fingerprint"]) if present else None,
        grants=grants_from_rows(grant_rows) if present else frozenset(),
        metadata=(
            AccountMetadata.from_columns(row["owner_entry"], row["comment"])
            if present and read_metadata
            else None
        ),
        policy=LockPolicy.from_row(row) if present and server is not None else None,
        default_lifetime=int(str(row["default_lifetime"] or 0)),
    )


def owner_json(index: int) -> str:
    return json.dumps({"uid": f"uid-{index}", "name": f"app{index}", "managedBy": "dbuser-operator"})


MYSQL_NO_TLS: tuple[object, ...] = ("", b"", b"", b"")
MYSQL_DEFAULT_POLICY: tuple[object, ...] = ("N", None, None, None)


def row(
    user: str,
    host: str = "%",
    *,
    present: bool = True,
    recorded: object = FP,
    limits: tuple[object, ...] = (0, 0, 0, 0),
    tls: tuple[object, ...] = MYSQL_NO_TLS,
    fingerprint: object = FP,
    created: tuple[object, object] = (None, None),
    metadata: tuple[object, object] = (None, None),
    policy: tuple[object, ...] = MYSQL_DEFAULT_POLICY,
    default_lifetime: object = 0,
) -> Row:
    """An :data:`_ACCOUNTS` row of the account ``user@host`` owned by ``uid-<user>`` (absent: NULLs from
    ``mysql.user`` on)."""
    found: tuple[object, ...] = (user, *limits, *tls, fingerprint, *created, *metadata, *policy)
    if not present:
        found = (None,) * len(found)
    return (user, host, f"uid-{user}", "team", user, recorded, *found, default_lifetime)


def mysql_rows() -> tuple[list[Row], list[Row]]:
    """Varied MySQL rows: defaults, limits, TLS of every kind, locked, expiring, failed-login lock, absent,
    comments (shared, an object), fingerprints recorded or only in the attribute, grants of every level."""
    shared = '"shared comment"'
    rows = [row(f"app{index}", metadata=(owner_json(index), shared)) for index in range(12)]
    rows += [
        row("lim", limits=(5, 100, 10, 20), fingerprint="cd" * 32, metadata=(owner_json(20), None)),
        row(
            "ssl",
            "10.0.0.%",
            recorded=None,
            tls=("ANY", b"", b"", b""),
            created=("uid-ssl", FP.upper()),
            metadata=(None, '{"team": "x"}'),
            policy=("Y", 90, "3", "-1"),
            default_lifetime=30,
        ),
        row(
            "x509",
            "Host.Example",
            recorded=None,
            tls=("X509", b"", b"", b""),
            created=("uid-other", FP),
            metadata=(owner_json(22), '{"team": "x"}'),
            policy=("N", 0, "5", "2"),
            default_lifetime=30,
        ),
        row(
            "spec",
            tls=("SPECIFIED", b"/CN=ca", b"/CN=spec", b"TLS_AES_256_GCM_SHA384"),
            metadata=(None, '"another"'),
        ),
        row("gone", present=False, default_lifetime=30),
    ]
    privileges: list[Row] = []
    for index in range(12):
        grantee = f"'app{index}'@'%'"
        privileges += [
            (None, None, grantee, 0, "*", "*", "USAGE", "NO", None),
            (None, None, grantee, 1, "bench", "*", "SELECT", "NO", None),
        ]
    privileges += [
        (None, None, "'lim'@'%'", 0, "*", "*", "PROCESS", "YES", None),
        (None, None, "'lim'@'%'", 1, "app\\_db", "*", "INSERT", "NO", None),
        (None, None, "'lim'@'%'", 1, "pat_%", "*", "SELECT", "NO", None),
        (None, None, "'ssl'@'10.0.0.%'", 2, "bench", "orders", "UPDATE", "YES", None),
        (None, None, "'x509'@'host.example'", 3, "bench", "orders", "SELECT", "NO", "Total"),
        ("x509", "Host.Example", None, 4, "bench", "Refresh", "Execute,Grant", "NO", "PROCEDURE"),
        (None, None, "'APP0'@'%'", 1, "other", "*", "SELECT", "NO", None),  # another account
        (None, None, "not a grantee", 0, "*", "*", "SELECT", "NO", None),
        (None, None, "'gone'@'%'", 1, "bench", "*", "SELECT", "NO", None),
    ]
    return rows, privileges


def mariadb_rows() -> tuple[list[Row], list[Row]]:
    """Varied MariaDB rows: no attributes, the policy from global_priv's JSON (text), TLS as text."""
    text_tls: tuple[object, ...] = ("", "", "", "")
    unlocked: tuple[object, ...] = ("false", None, 0, 0)
    rows = [row(f"m{index}", tls=text_tls, policy=unlocked) for index in range(6)]
    rows += [
        row(
            "locked",
            limits=(1, 0, 0, 0),
            tls=("SPECIFIED", "", "/CN=a", ""),
            fingerprint="ef" * 32,
            policy=("true", "30", 0, 0),
            default_lifetime=-1,
        ),
        row("never", recorded=None, tls=("ANY", "", "", ""), policy=("false", "0", 0, 0)),
        row("absent", present=False),
    ]
    privileges: list[Row] = [
        (None, None, f"'m{index}'@'%'", 1, "bench", "*", "SELECT", "NO", None) for index in range(6)
    ]
    privileges += [
        (None, None, "'locked'@'%'", 0, "*", "*", "RELOAD", "YES", None),
        (None, None, "'locked'@'%'", 2, "bench", "t", "INSERT", "NO", None),
        ("never", "%", None, 4, "bench", "f", "Execute", "NO", "FUNCTION"),
    ]
    return rows, privileges


class Rows:
    """The inventory's two queries' answers."""

    def __init__(self, accounts: list[Row], privileges: list[Row]) -> None:
        self.answers = [accounts, privileges]

    async def fetch(self, statement: Statement) -> list[Row]:
        return self.answers.pop(0)


@pytest.mark.parametrize(
    ("rows", "server"),
    [(mysql_rows(), MYSQL), (mariadb_rows(), MARIADB), (mysql_rows(), None)],
    ids=["mysql", "mariadb", "no-server"],
)
def test_the_parse_gives_the_straightforward_states(
    rows: tuple[list[Row], list[Row]], server: ServerInfo | None
) -> None:
    accounts, privileges = rows
    found = asyncio.run(inventory(Rows(accounts, privileges), "dbuser_operator", server))  # type: ignore[arg-type]
    expected = straightforward(accounts, privileges, server)
    assert found == expected
    assert any(not state.present for state in found.values())
    assert len({state.grants for state in found.values()}) > 3  # the rows vary


def test_alike_accounts_share_their_parts_and_keep_their_own_owner_entry() -> None:
    accounts, privileges = mysql_rows()
    found = asyncio.run(inventory(Rows(accounts, privileges), "dbuser_operator", MYSQL))  # type: ignore[arg-type]
    first, second = found[("app0", "%")], found[("app1", "%")]
    assert first.limits is second.limits
    assert first.policy is second.policy
    assert first.grants is second.grants
    assert first.grants
    assert first.metadata is not None
    assert second.metadata is not None
    assert first.metadata.comment == "shared comment"
    assert first.metadata.owner is not second.metadata.owner  # a dict: each account's own
    assert first.metadata.owner["uid"] == "uid-0"
    commented = [found[("ssl", "10.0.0.%")].metadata, found[("x509", "Host.Example")].metadata]
    assert commented[0] is not None
    assert commented[1] is not None
    assert commented[0].comment == {"team": "x"}
    assert commented[0].comment is not commented[1].comment


def test_the_access_report_keeps_every_accounts_rows_and_the_drift_check_only_the_owned() -> None:
    accounts, privileges = mysql_rows()
    full = asyncio.run(read_inventory(Rows(accounts, privileges), "dbuser_operator", MYSQL))  # type: ignore[arg-type]
    assert full.grants_of("APP0", "%")
    assert full.grants_of("app0", "%") == full.owned[("app0", "%")].grants
    lean = asyncio.run(
        read_inventory(Rows(accounts, privileges), "dbuser_operator", MYSQL, keep_everyone=False)  # type: ignore[arg-type]
    )
    assert lean.owned == full.owned
    assert not lean.rows_by_grantee
