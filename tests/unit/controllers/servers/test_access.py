"""The access report's build: states, owners, drift, the order of attention, and its bounds."""

from __future__ import annotations

from datetime import UTC, datetime

from dbuser_operator.api.v1alpha1.access_report import MAX_ENTRIES, MAX_ITEMS
from dbuser_operator.api.v1alpha1.mysqlserver import MySQLServerStatus
from dbuser_operator.controllers.servers.access import DriftFound, build, extra_grants
from dbuser_operator.mysql import grants
from dbuser_operator.mysql.bookkeeping.access import ServerAccount, ServerAccounts
from dbuser_operator.mysql.bookkeeping.inventory import AccountState, Inventory
from dbuser_operator.mysql.bookkeeping.ownership import Owner
from dbuser_operator.mysql.session.server import ServerInfo

SERVER = ServerInfo(flavour="mysql", version=(9, 7, 4))


def owned(*users: str) -> dict[tuple[str, str], AccountState]:
    return {
        (user, "%"): AccountState(Owner(f"uid-{user}", "team", user), True, None, None, frozenset())
        for user in users
    }


def rows(*grants_: tuple[str, int, str, str]) -> dict[tuple[str, str], list[tuple[object, ...]]]:
    """Privilege rows by account from ``(user, rank, schema, privilege)``."""
    result: dict[tuple[str, str], list[tuple[object, ...]]] = {}
    for user, rank, schema, privilege in grants_:
        result.setdefault((user, "%"), []).append((rank, schema, "*", privilege, "NO", None))
    return result


def accounts(*items: ServerAccount, role_owners: dict[str, Owner] | None = None) -> ServerAccounts:
    return ServerAccounts({(a.user, a.host): a for a in items}, role_owners or {})


def test_every_account_is_reported_with_its_owner_or_as_unmanaged() -> None:
    changed = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    found = accounts(
        ServerAccount("app", "%", "caching_sha2_password", changed, tls="X509"),
        ServerAccount("dba", "%", "caching_sha2_password", changed, roles=frozenset({("audit", "%")})),
        ServerAccount("audit", "%", role=True),
        ServerAccount("reader", "%", role=True),
    )
    inventory = Inventory(
        owned("app"),
        rows(("app", 1, "shop", "SELECT"), ("dba", 0, "*", "SUPER"), ("audit", 1, "logs", "SELECT")),
    )
    report = build(found, inventory, DriftFound({}))
    by_user = {entry.user: entry for entry in report.entries}
    assert (report.accounts, report.roles, report.managed, report.unmanaged) == (4, 2, 1, 3)
    assert by_user["app"].state == "Managed"
    assert by_user["app"].owner == "team/app"
    assert by_user["app"].databases == ["shop"]
    assert by_user["app"].tls == "X509"
    assert by_user["app"].password_changed == "2026-11-01T12:00:00Z"
    assert by_user["dba"].state == "Unmanaged"
    assert by_user["dba"].owner is None
    assert by_user["dba"].global_privileges == ["SUPER"]
    assert by_user["dba"].roles == ["audit@%"]
    assert by_user["audit"].role
    assert by_user["audit"].state == "Unmanaged"
    assert [entry.user for entry in report.entries] == ["dba", "audit", "reader", "app"]  # attention first
    assert not report.truncated


def test_a_role_owned_by_a_databaserole_is_managed() -> None:
    found = accounts(
        ServerAccount("readers", "", role=True), role_owners={"readers": Owner("-", "team", "r")}
    )
    report = build(found, Inventory({}, {}), DriftFound({}))
    assert report.entries[0].state == "Managed"
    assert report.entries[0].owner == "team/r"


def test_a_privilege_no_resource_asked_for_is_drift_and_comes_first() -> None:
    held = frozenset(
        {grants.Grant.observed({"SELECT", "INSERT"}, "shop"), grants.Grant.observed({"SUPER"}, "*")}
    )
    wanted = [grants.Grant(frozenset({"SELECT"}), "shop")]
    extra = extra_grants(grants.changes(held, wanted, SERVER))
    found = accounts(ServerAccount("app", "%"), ServerAccount("other", "%"))
    report = build(found, Inventory(owned("app", "other"), {}), DriftFound({("app", "%"): extra}))
    assert report.entries[0].user == "app"
    assert report.entries[0].state == "Drifted"
    assert report.entries[0].drift == ["INSERT ON `shop`.*", "SUPER ON *.*"]
    assert report.drifted == 1
    assert report.managed == 2


def test_an_orphan_keeps_its_recorded_owner() -> None:
    found = accounts(ServerAccount("gone", "%"))
    report = build(found, Inventory(owned("gone"), {}), DriftFound({}, frozenset({("gone", "%")})))
    assert report.entries[0].state == "Orphaned"
    assert report.entries[0].owner == "team/gone"
    assert report.orphaned == 1


def test_the_report_is_bounded_and_says_so() -> None:
    many = [ServerAccount(f"u{index:04d}", "%") for index in range(MAX_ENTRIES + 50)]
    privileges = [("dba", 0, "*", f"PRIV_{chr(65 + index)}") for index in range(MAX_ITEMS + 3)]
    found = accounts(ServerAccount("dba", "%", plugin="p" * 1000), *many)
    report = build(found, Inventory({}, rows(*privileges)), DriftFound({}))
    assert report.accounts == MAX_ENTRIES + 51
    assert len(report.entries) == MAX_ENTRIES
    assert report.truncated
    dba = report.entries[0]
    assert dba.global_privileges is not None
    assert len(dba.global_privileges) == MAX_ITEMS + 1
    assert dba.global_privileges[-1] == "+3 more"
    assert dba.plugin is not None
    assert len(dba.plugin) <= 256
    # It fits the CRD's bounds: the status model (what the API server checks) takes it.
    dumped = report.model_dump(by_alias=True, exclude_none=True, mode="json")
    MySQLServerStatus.model_validate({"access": dumped})


def test_grants_that_cannot_be_read_leave_the_account_listed() -> None:
    found = accounts(ServerAccount("odd", "%"))
    report = build(found, Inventory({}, rows(("odd", 0, "*", "NOT A PRIVILEGE 9"))), DriftFound({}))
    assert report.entries[0].global_privileges == ["?"]
    assert report.truncated


def test_the_same_reads_give_the_same_report() -> None:
    """Written only when it changed: equal reads must give an equal status, whatever the dict order."""
    one = accounts(ServerAccount("b", "%"), ServerAccount("a", "%"), ServerAccount("c", "%", role=True))
    two = accounts(ServerAccount("c", "%", role=True), ServerAccount("a", "%"), ServerAccount("b", "%"))
    inventory = Inventory({}, rows(("a", 1, "x", "SELECT"), ("a", 1, "y", "SELECT")))
    assert build(one, inventory, DriftFound({})) == build(two, inventory, DriftFound({}))
