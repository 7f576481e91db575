"""The holders of a managed role as the DatabaseRole reports them: who is unmanaged, how they are named."""

from __future__ import annotations

from dbuser_operator.controllers.databaserole import holders
from dbuser_operator.mysql.accounts import roles
from dbuser_operator.mysql.bookkeeping import name_holders


def test_only_holders_outside_the_bookkeeping_are_unmanaged() -> None:
    found = [
        name_holders.Holder("app", "%", account=True, role=False),
        name_holders.Holder("other", "", account=False, role=True),
        name_holders.Holder("dba", "localhost", account=False, role=False),
        name_holders.Holder("legacy", "", account=False, role=False),
    ]
    assert holders.unmanaged(found) == [("dba", "localhost"), ("legacy", "")]


def test_the_condition_names_the_accounts_ten_at_most() -> None:
    assert holders.condition("r", []) == (
        "False",
        "NoUnmanagedHolders",
        "no account outside the operator's bookkeeping holds role r",
    )
    status, reason, message = holders.condition("r", [("dba", "%"), ("legacy", "")])
    assert (status, reason) == ("True", "HeldByUnmanagedAccounts")
    assert message.endswith(": 'dba'@'%', role 'legacy'")
    many = [(f"u{index:02}", "%") for index in range(13)]
    named = holders.named(many)
    assert named.endswith("'u09'@'%' and 3 more")
    assert "'u10'" not in named
    assert roles.describe(("o'dd", "h")) == "'o'dd'@'h'"  # for people, never for SQL
