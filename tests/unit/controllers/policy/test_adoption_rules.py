"""Adoption under a policy, as pure rules: the entry's flag and names, then what the account holds."""

from __future__ import annotations

from typing import Any

from dbuser_operator.api.v1alpha1.server_policy import NamespacePolicy
from dbuser_operator.controllers.policy.adoption import holding_problems, name_problems
from dbuser_operator.mysql.accounts.holdings import Holdings
from dbuser_operator.mysql.grants import Grant

NS = "team-a"


def entry(**fields: Any) -> NamespacePolicy:
    return NamespacePolicy.model_validate({"namespaceSelector": {}, **fields})


def held(*grants: Grant, **fields: Any) -> Holdings:
    return Holdings(grants=frozenset(grants), **fields)


def observed(database: str, *privileges: str, pattern: bool = False, grant_option: bool = False) -> Grant:
    return Grant.observed(frozenset(privileges), database, grant_option=grant_option, pattern=pattern)


def test_adoption_is_off_by_default_and_names_are_bounded() -> None:
    assert name_problems(entry(), NS, "legacy") == ["adopting is not allowed (allowAdoption is false)"]
    allowed = entry(allowAdoption=True, adoptableNames=["{namespace}_*"])
    assert name_problems(allowed, NS, "team-a_legacy") == []
    assert name_problems(allowed, NS, "root_like") == [
        "root_like is not among the adoptable names team-a_* (pattern {namespace}_*)"
    ]
    assert name_problems(entry(allowAdoption=True), NS, "anything") == []


def test_what_the_account_holds_is_judged_against_the_entry() -> None:
    bounds = entry(allowAdoption=True, databases=["{namespace}_*"], privileges=["SELECT", "UPDATE"])
    assert holding_problems(bounds, NS, held(observed("team-a_app", "SELECT")), "mysql") == []
    # A hand grant with an unescaped '_' is judged by its name; a '%' pattern is beyond.
    assert holding_problems(bounds, NS, held(observed("team-a_app", "SELECT", pattern=True)), "mysql") == []
    assert holding_problems(bounds, NS, held(observed("team-a%", "SELECT", pattern=True)), "mysql") == [
        "it holds privileges on the database pattern team-a%"
    ]
    problems = holding_problems(
        bounds,
        NS,
        held(
            observed("*", "SUPER"),
            observed("billing", "SELECT"),
            observed("team-a_app", "SELECT", "DELETE", grant_option=True),
            proxies=("'root'@'%'",),
            plugin="auth_socket",
        ),
        "mysql",
    )
    assert problems == [
        "it holds SUPER on *.*",
        "it holds privileges on `billing`.*, outside team-a_* (pattern {namespace}_*)",
        "it holds DELETE on `team-a_app`.*, above the privilege ceiling",
        "it holds the grant option on `team-a_app`.*",
        "it may proxy as 'root'@'%'",
        "it authenticates with auth_socket (allowPlugins is false)",
    ]


def test_roles_are_judged_recursively_with_their_grants() -> None:
    roles = {("outer", ""): frozenset(), ("inner", ""): frozenset({observed("dba_secret", "SELECT")})}
    holdings = held(roles=roles, unreadable=("odd name",), held_by=("'dba'@'%'",))
    no_roles = entry(allowAdoption=True, databases=["{namespace}_*"], allowRoles=False)
    assert holding_problems(no_roles, NS, holdings, "mariadb") == [
        "it holds roles inner, outer (allowRoles is false)",
        "role inner holds privileges on `dba_secret`.*, outside team-a_* (pattern {namespace}_*)",
        "it holds roles whose privileges cannot be read: odd name",
        "accounts the operator does not manage hold it: 'dba'@'%'",
    ]
    # The flavour's default plugin, and a MariaDB role's none, are within any entry.
    assert (
        holding_problems(entry(allowAdoption=True), NS, held(plugin="mysql_native_password"), "mariadb") == []
    )
    assert (
        holding_problems(entry(allowAdoption=True), NS, held(plugin="caching_sha2_password"), "mysql") == []
    )
