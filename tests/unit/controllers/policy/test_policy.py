"""The evaluation of a server's spec.policy (controllers/policy.py) and the policy step, with
ctx.server_resource set by hand."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from dbuser_operator.api.v1alpha1 import DatabaseUser, DatabaseUserSpec, DatabaseUserStatus
from dbuser_operator.api.v1alpha1.databaserole import DatabaseRole
from dbuser_operator.api.v1alpha1.mysqlserver import ClusterMySQLServer, MySQLServerSpec
from dbuser_operator.api.v1alpha1.server_policy import LabelSelector, LabelSelectorRequirement, ServerPolicy
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.steps.policy import PolicyStep
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.policy.gate import PolicyGate
from dbuser_operator.controllers.policy.namespaces import (
    NAMESPACE_EVENTS,
    NamespaceLabels,
    labels_only,
    namespaces_readable,
    on_a_server,
)
from dbuser_operator.controllers.policy.rules import (
    Violation,
    describe,
    entry_for,
    matches,
    role_violations,
    selects,
    user_violations,
)
from dbuser_operator.controllers.servers.resource import ServerResource
from dbuser_operator.runtime.errors import Forbidden, Unavailable
from dbuser_operator.runtime.resources import NAMESPACES
from tests.conftest import REPO

PASSWORD = {"password": {"name": "s", "key": "k"}}
TEAM_A = {"team": "a", "tier": "tenant"}


def selector(**fields: Any) -> LabelSelector:
    return LabelSelector.model_validate(fields)


def policy(*entries: dict[str, Any]) -> ServerPolicy:
    return ServerPolicy.model_validate({"namespaces": list(entries)})


def spec(**fields: Any) -> DatabaseUserSpec:
    return DatabaseUserSpec.model_validate(PASSWORD | fields)


def grant(database: str, *privileges: str, **more: Any) -> dict[str, Any]:
    return {"database": database, "privileges": list(privileges), **more}


def problems(entry: dict[str, Any], namespace: str = "team-a", **fields: Any) -> list[str]:
    found = user_violations(policy(entry), namespace, TEAM_A, spec(**fields))
    assert all(v.rule == "policy.namespaces[0]" for v in found)
    return [v.problem for v in found]


EVERYONE: dict[str, Any] = {"namespaceSelector": {}}

# --- label selectors, as Kubernetes matches them -----------------------------------------------------------

SELECTOR_CASES = [
    ({}, {}, True),
    ({}, TEAM_A, True),
    ({"matchLabels": {"team": "a"}}, TEAM_A, True),
    ({"matchLabels": {"team": "a"}}, {"team": "b"}, False),
    ({"matchLabels": {"team": "a"}}, {}, False),
    ({"matchLabels": {"team": "a", "tier": "tenant"}}, {"team": "a"}, False),
    ({"matchLabels": {"team": "A"}}, {"team": "a"}, False),  # values are case-sensitive
    ({"matchExpressions": [{"key": "team", "operator": "In", "values": ["a", "b"]}]}, TEAM_A, True),
    ({"matchExpressions": [{"key": "team", "operator": "In", "values": ["b"]}]}, TEAM_A, False),
    ({"matchExpressions": [{"key": "team", "operator": "In", "values": ["a"]}]}, {}, False),
    ({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["b"]}]}, TEAM_A, True),
    ({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["a"]}]}, TEAM_A, False),
    ({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["a"]}]}, {}, True),  # absent
    ({"matchExpressions": [{"key": "team", "operator": "Exists"}]}, TEAM_A, True),
    ({"matchExpressions": [{"key": "team", "operator": "Exists"}]}, {"other": "a"}, False),
    ({"matchExpressions": [{"key": "team", "operator": "Exists"}]}, {"team": ""}, True),
    ({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}, TEAM_A, False),
    ({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}, {}, True),
    # matchLabels AND every expression
    (
        {
            "matchLabels": {"tier": "tenant"},
            "matchExpressions": [
                {"key": "team", "operator": "In", "values": ["a"]},
                {"key": "frozen", "operator": "DoesNotExist"},
            ],
        },
        TEAM_A,
        True,
    ),
    (
        {
            "matchLabels": {"tier": "tenant"},
            "matchExpressions": [
                {"key": "team", "operator": "In", "values": ["a"]},
                {"key": "frozen", "operator": "DoesNotExist"},
            ],
        },
        TEAM_A | {"frozen": "yes"},
        False,
    ),
]


@pytest.mark.parametrize(("fields", "labels", "expected"), SELECTOR_CASES)
def test_label_selectors_match_as_in_kubernetes(
    fields: dict[str, Any], labels: dict[str, str], expected: bool
) -> None:
    assert selects(selector(**fields), labels) is expected


INVALID_REQUIREMENTS = [
    {"key": "team", "operator": "In", "values": []},
    {"key": "team", "operator": "In"},
    {"key": "team", "operator": "NotIn"},
    {"key": "team", "operator": "Exists", "values": ["a"]},
    {"key": "x", "operator": "DoesNotExist", "values": ["a"]},
]


@pytest.mark.parametrize("fields", INVALID_REQUIREMENTS)
def test_selectors_kubernetes_refuses_are_refused_and_select_nothing(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="values must be"):
        LabelSelectorRequirement.model_validate(fields)
    stored = LabelSelector.model_construct(  # one stored before the rule existed
        match_expressions=[LabelSelectorRequirement.model_construct(**fields)]
    )
    assert not selects(stored, TEAM_A | {"x": "a"})
    assert not selects(stored, {})


def test_the_first_entry_that_selects_the_namespace_applies() -> None:
    rules = policy(
        {"namespaceSelector": {"matchLabels": {"team": "b"}}},
        {"namespaceSelector": {"matchLabels": {"tier": "tenant"}}, "databases": ["x"]},
        {"namespaceSelector": {}, "databases": ["y"]},
    )
    found = entry_for(rules, TEAM_A)
    assert found is not None
    assert found[0] == 1
    assert found[1].databases == ["x"]
    assert entry_for(rules, {})[0] == 2  # type: ignore[index]
    assert entry_for(policy({"namespaceSelector": {"matchLabels": {"team": "b"}}}), TEAM_A) is None


# --- database patterns -------------------------------------------------------------------------------------

PATTERN_CASES = [
    ("{namespace}_*", "team-a_app", True),
    ("{namespace}_*", "team-a_", True),  # '*' matches an empty run
    ("{namespace}_*", "team-a", False),
    ("{namespace}_*", "team-b_app", False),
    ("{namespace}_*", "Team-a_app", False),  # case-sensitive, as MySQL's database names on Linux
    ("{namespace}_*", "xteam-a_app", False),  # anchored at both ends
    ("{namespace}", "team-a", True),
    ("{namespace}", "team-a2", False),
    ("*", "anything", True),
    ("*_{namespace}_*", "x_team-a_y", True),
    ("shared", "shared", True),
    ("shared", "Shared", False),
    ("a$b*", "a$bc", True),  # '$' is a character, not an anchor
    ("a$b*", "ab", False),
    ("a-*-z", "a--z", True),
    ("a-*-z", "a-mid-z", True),
    ("a-*-z", "a-z", False),
    ("{namespace}{namespace}", "team-ateam-a", True),
]


@pytest.mark.parametrize(("pattern", "database", "expected"), PATTERN_CASES)
def test_database_patterns(pattern: str, database: str, expected: bool) -> None:
    assert matches(pattern, database, "team-a") is expected


def test_a_database_outside_the_patterns_is_named_with_the_pattern() -> None:
    entry = EVERYONE | {"databases": ["{namespace}_*"]}
    assert problems(entry, privileges=[grant("team-a_app", "SELECT")]) == []
    assert problems(entry, privileges=[grant("billing", "SELECT")]) == [
        'database "billing" is outside team-a_* (pattern {namespace}_*)'
    ]
    two = EVERYONE | {"databases": ["{namespace}_*", "shared"]}
    assert problems(
        two, privileges=[grant("billing", "SELECT"), grant("hr", "SELECT"), grant("shared", "SELECT")]
    ) == ['databases "billing", "hr" are outside team-a_*, shared (patterns {namespace}_*, shared)']
    plain = EVERYONE | {"databases": ["shared"]}
    assert problems(plain, privileges=[grant("billing", "SELECT")]) == [
        'database "billing" is outside shared'
    ]


def test_table_column_and_routine_grants_check_their_database() -> None:
    entry = EVERYONE | {"databases": ["{namespace}_*"]}
    outside = [
        grant("billing", "SELECT", table="invoices"),
        grant("billing", "SELECT", table="invoices", columns=["id"]),
        grant("billing", "EXECUTE", routine={"type": "PROCEDURE", "name": "p"}),
    ]
    for item in outside:
        assert problems(entry, privileges=[item]) == [
            'database "billing" is outside team-a_* (pattern {namespace}_*)'
        ]
    inside = [{**item, "database": "team-a_app"} for item in outside]
    assert problems(entry, privileges=inside) == []


def test_no_database_patterns_allow_any_database() -> None:
    assert problems(EVERYONE, privileges=[grant("billing", "SELECT")]) == []


# --- global grants and the ceiling -------------------------------------------------------------------------


def test_global_grants_are_governed_by_allow_global_privileges_only() -> None:
    entry = EVERYONE | {"databases": ["{namespace}_*"]}
    refused = ["grants on *.* are not allowed (allowGlobalPrivileges is false)"]
    assert problems(entry, privileges=[grant("*", "PROCESS")]) == refused
    allowed = entry | {"allowGlobalPrivileges": True}
    assert problems(allowed, privileges=[grant("*", "PROCESS")]) == []  # not a database: no pattern


def test_every_privilege_of_every_grant_must_be_within_the_ceiling() -> None:
    entry = EVERYONE | {"privileges": ["SELECT", "UPDATE"], "allowGlobalPrivileges": True}
    assert problems(entry, privileges=[grant("app", "SELECT", "UPDATE")]) == []
    assert problems(entry, privileges=[grant("app", "SELECT", "INSERT")]) == [
        "INSERT is above the privilege ceiling SELECT, UPDATE"
    ]
    assert problems(
        entry,
        privileges=[
            grant("app", "INSERT", "DELETE"),
            grant("other", "INSERT", table="t"),
            grant("*", "PROCESS"),
        ],
    ) == ["INSERT, DELETE, PROCESS are above the privilege ceiling SELECT, UPDATE"]
    # ALL is above any ceiling that does not list ALL
    assert problems(entry, privileges=[grant("app", "ALL")]) == [
        "ALL is above the privilege ceiling SELECT, UPDATE"
    ]


def test_the_grant_option_needs_allow_grant_option_whatever_the_ceiling() -> None:
    refused = "grantOption is not allowed (allowGrantOption is false): on `team-a_app`.*, `team-a_app`.`t`"
    delegating = [
        grant("team-a_app", "SELECT", grantOption=True),
        grant("team-a_app", "SELECT", table="t", grantOption=True),
        grant("team-a_other", "INSERT", grantOption=False),
    ]
    # Not even a ceiling of ALL admits it: MySQL's ALL does not include GRANT OPTION.
    for entry in (
        EVERYONE,
        EVERYONE | {"privileges": ["ALL"]},
        EVERYONE | {"privileges": ["SELECT", "INSERT"]},
    ):
        assert problems(entry, privileges=delegating) == [refused]
        assert problems(entry | {"allowGrantOption": True}, privileges=delegating) == []
    # Each level is named once, as GRANT writes it; routines with their type, global grants as *.*.
    assert problems(
        EVERYONE | {"allowGlobalPrivileges": True},
        privileges=[
            grant("*", "PROCESS", grantOption=True),
            grant("team-a_app", "EXECUTE", routine={"type": "PROCEDURE", "name": "p"}, grantOption=True),
        ],
    ) == ["grantOption is not allowed (allowGrantOption is false): on *.*, PROCEDURE `team-a_app`.`p`"]
    # Without grantOption nothing changes, and without a policy anything goes.
    assert problems(EVERYONE, privileges=[grant("team-a_app", "SELECT")]) == []
    assert user_violations(None, "team-a", TEAM_A, spec(privileges=delegating)) == []


def test_a_ceiling_with_all_allows_every_privilege_and_none_allows_any() -> None:
    everything = EVERYONE | {"privileges": ["ALL"]}
    assert problems(everything, privileges=[grant("app", "ALL"), grant("x", "INSERT", "DROP")]) == []
    assert problems(EVERYONE, privileges=[grant("app", "ALL")]) == []
    nothing = EVERYONE | {"privileges": []}
    assert problems(nothing, privileges=[grant("app", "SELECT")]) == [
        "SELECT is above the privilege ceiling (none)"
    ]


def test_every_problem_of_an_entry_is_reported() -> None:
    entry = EVERYONE | {"databases": ["{namespace}_*"], "privileges": ["SELECT"], "allowRoles": False}
    assert problems(
        entry,
        privileges=[grant("*", "SELECT"), grant("billing", "INSERT", grantOption=True)],
        roles=["reader", "writer"],
        defaultRoles=["reader"],
        authentication={"plugin": "caching_sha2_password"},
    ) == [
        "grants on *.* are not allowed (allowGlobalPrivileges is false)",
        'database "billing" is outside team-a_* (pattern {namespace}_*)',
        "INSERT is above the privilege ceiling SELECT",
        "grantOption is not allowed (allowGrantOption is false): on `billing`.*",
        "roles are not allowed (allowRoles is false): spec.roles names reader, writer",
        "choosing the authentication plugin is not allowed (allowPlugins is false): "
        "spec.authentication.plugin is caching_sha2_password",
    ]


# --- roles and plugins -------------------------------------------------------------------------------------


def test_roles_need_allow_roles_which_is_the_default() -> None:
    assert problems(EVERYONE, roles=["reader"], defaultRoles=["reader"]) == []
    assert problems(EVERYONE | {"allowRoles": False}) == []
    assert problems(EVERYONE | {"allowRoles": False}, roles=["reader"]) == [
        "roles are not allowed (allowRoles is false): spec.roles names reader"
    ]


def test_a_plugin_needs_allow_plugins() -> None:
    chosen = {"plugin": "ed25519"}
    refused = (
        "choosing the authentication plugin is not allowed (allowPlugins is false): "
        "spec.authentication.plugin is ed25519"
    )
    assert problems(EVERYONE, authentication=chosen) == [refused]
    assert problems(EVERYONE | {"allowPlugins": True}, authentication=chosen) == []
    assert problems(EVERYONE) == []


def test_a_workload_identity_needs_allow_workload_identity_not_allow_plugins() -> None:
    bound = {"workload": {"serviceAccountName": "app"}}
    refused = (
        "workload identity is not allowed (allowWorkloadIdentity is false): "
        "spec.authentication.workload names ServiceAccount app"
    )
    workload = DatabaseUserSpec.model_validate({"authentication": bound})  # no password: none is taken

    def refusals(entry: dict[str, Any]) -> list[str]:
        return [v.problem for v in user_violations(policy(entry), "team-a", TEAM_A, workload)]

    assert refusals(EVERYONE | {"allowPlugins": True}) == [refused]
    assert refusals(EVERYONE | {"allowWorkloadIdentity": True}) == []


def role(**fields: Any) -> DatabaseRole:
    return DatabaseRole.model_validate(
        {"metadata": {"name": "reader", "namespace": "team-a"}, "spec": fields}
    )


def test_database_roles_need_allow_roles_and_obey_the_same_grant_rules() -> None:
    entry = EVERYONE | {"databases": ["{namespace}_*"], "privileges": ["SELECT"]}
    ok = role(privileges=[grant("team-a_app", "SELECT")])
    assert role_violations(policy(entry), "team-a", TEAM_A, ok.spec) == []
    assert role_violations(policy(entry | {"allowRoles": False}), "team-a", TEAM_A, ok.spec) == [
        Violation("policy.namespaces[0]", "DatabaseRoles are not allowed (allowRoles is false)")
    ]
    bad = role(privileges=[grant("billing", "INSERT"), grant("*", "SELECT", grantOption=True)])
    assert [v.problem for v in role_violations(policy(entry), "team-a", TEAM_A, bad.spec)] == [
        "grants on *.* are not allowed (allowGlobalPrivileges is false)",
        'database "billing" is outside team-a_* (pattern {namespace}_*)',
        "INSERT is above the privilege ceiling SELECT",
        "grantOption is not allowed (allowGrantOption is false): on *.*",
    ]
    assert role_violations(None, "team-a", TEAM_A, bad.spec) == []
    nobody = policy({"namespaceSelector": {"matchLabels": {"team": "b"}}})
    assert role_violations(nobody, "team-a", TEAM_A, ok.spec)[0].rule == ""


# --- admission and messages --------------------------------------------------------------------------------


def test_no_policy_admits_everything_and_no_entry_admits_nothing() -> None:
    anything = spec(privileges=[grant("*", "ALL")], roles=["r"], authentication={"plugin": "ed25519"})
    assert user_violations(None, "team-a", TEAM_A, anything) == []
    only_b = policy({"namespaceSelector": {"matchLabels": {"team": "b"}}})
    assert user_violations(only_b, "team-a", TEAM_A, spec()) == [
        Violation("", "namespace team-a may not use it (no entry of spec.policy.namespaces selects it)")
    ]


def test_messages_name_the_server_and_the_rule() -> None:
    refused = Violation("", "namespace team-a may not use it (no entry of spec.policy.namespaces selects it)")
    assert describe("ClusterMySQLServer shared", [refused]) == (
        "ClusterMySQLServer shared: namespace team-a may not use it "
        "(no entry of spec.policy.namespaces selects it)"
    )
    two = [Violation("policy.namespaces[0]", "a"), Violation("policy.namespaces[0]", "b")]
    assert describe("MySQLServer team-a/main", two) == "MySQLServer team-a/main policy.namespaces[0]: a; b"
    assert describe("S", [Violation("", "x"), Violation("policy.namespaces[1]", "y")]) == (
        "S: x; S policy.namespaces[1]: y"
    )
    assert describe("S", []) == ""


# --- the step, with ctx.server_resource set by hand ------------------------------------------------------


class FakeNamespaces:
    """The labels source of the step: a dict instead of the namespace cache."""

    available = True

    def __init__(self, labels: dict[str, dict[str, str]]) -> None:
        self._labels = labels

    def labels(self, namespace: str) -> dict[str, str] | None:
        return self._labels.get(namespace)


def server_resource(rules: dict[str, Any] | None, kind: str = "ClusterMySQLServer") -> ServerResource:
    server = {
        "host": "db",
        "credentials": {"user": {"name": "a", "key": "u"}, "password": {"name": "a", "key": "p"}},
    }
    if rules is not None:
        server["policy"] = rules
    return ServerResource(kind, "", "shared", MySQLServerSpec.model_validate(server))


def context(server: ServerResource | None, namespace: str = "team-a", **fields: Any) -> Context:
    user = DatabaseUser.model_validate(
        {"metadata": {"name": "app", "namespace": namespace}, "spec": PASSWORD | fields}
    )
    return Context(obj={"metadata": {"name": "app"}}, user=user, status=DatabaseUserStatus())


def gate(**labels: dict[str, str]) -> PolicyGate:
    return PolicyGate(FakeNamespaces(labels))  # type: ignore[arg-type]


async def test_the_step_refuses_with_policy_violation_and_no_retry() -> None:
    step = PolicyStep(gate(**{"team-a": TEAM_A}))
    rules = {
        "namespaces": [{"namespaceSelector": {"matchLabels": {"team": "a"}}, "databases": ["{namespace}_*"]}]
    }
    ctx = context(None, privileges=[grant("billing", "SELECT")])
    ctx.server_resource = server_resource(rules)
    with pytest.raises(ConditionError) as refused:
        await step.ensure(ctx)
    assert (refused.value.reason, refused.value.retry) == ("PolicyViolation", False)
    assert refused.value.message == (
        'ClusterMySQLServer shared policy.namespaces[0]: database "billing" is outside team-a_* '
        "(pattern {namespace}_*)"
    )
    ctx.server_resource = server_resource(
        {"namespaces": [{"namespaceSelector": {"matchLabels": {"team": "b"}}}]}
    )
    with pytest.raises(ConditionError, match="namespace team-a may not use it"):
        await step.ensure(ctx)
    await step.delete(ctx)  # does nothing, raises nothing


async def test_the_step_admits_what_the_policy_allows_and_everything_without_one() -> None:
    step = PolicyStep(gate(**{"team-a": TEAM_A}))
    ctx = context(None, privileges=[grant("*", "ALL")])
    await step.ensure(ctx)  # the settings' server: no policy
    ctx.server_resource = server_resource(None)
    await step.ensure(ctx)  # a server without policy
    ctx = context(None, privileges=[grant("team-a_x", "SELECT")])
    ctx.server_resource = server_resource(
        {"namespaces": [{"namespaceSelector": {}, "databases": ["{namespace}_*"]}]}
    )
    await step.ensure(ctx)


async def test_an_unknown_namespace_waits_with_a_retry() -> None:
    step = PolicyStep(gate())
    ctx = context(None)
    ctx.server_resource = server_resource({"namespaces": [{"namespaceSelector": {}}]})
    with pytest.raises(ConditionError) as waiting:
        await step.ensure(ctx)
    assert (waiting.value.reason, waiting.value.retry) == ("NamespaceUnknown", True)
    assert "ClusterMySQLServer shared" in waiting.value.message


def test_the_role_check() -> None:
    checks = gate(**{"team-a": TEAM_A})
    reader = role(privileges=[grant("billing", "SELECT")])
    checks.check_role(None, reader)
    checks.check_role(server_resource(None), reader)
    with pytest.raises(ConditionError) as refused:
        checks.check_role(
            server_resource({"namespaces": [{"namespaceSelector": {}, "allowRoles": False}]}), reader
        )
    assert refused.value.reason == "PolicyViolation"
    assert refused.value.message == (
        "ClusterMySQLServer shared policy.namespaces[0]: DatabaseRoles are not allowed (allowRoles is false)"
    )


# --- the namespace cache's helpers -------------------------------------------------------------------------


def test_the_namespace_cache_keeps_names_and_labels_only() -> None:
    obj = {
        "metadata": {
            "name": "team-a",
            "resourceVersion": "7",
            "labels": TEAM_A,
            "annotations": {"big": "x" * 1000},
            "managedFields": [{}],
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }
    assert labels_only(obj) == {"metadata": {"name": "team-a", "resourceVersion": "7", "labels": TEAM_A}}


def test_only_resources_on_a_server_resource_are_indexed_by_namespace() -> None:
    on_server = {"metadata": {"name": "u", "namespace": "team-a"}, "spec": {"serverRef": {"name": "s"}}}
    assert on_a_server(on_server) == ["team-a"]
    assert on_a_server({"metadata": {"name": "u", "namespace": "team-a"}, "spec": {}}) == []


def test_namespace_events_are_new_namespaces_and_label_changes() -> None:
    old = {"metadata": {"name": "a", "labels": {"x": "1"}}}
    assert NAMESPACE_EVENTS.create(old)
    assert NAMESPACE_EVENTS.update(old, {"metadata": {"name": "a", "labels": {"x": "2"}}})
    assert not NAMESPACE_EVENTS.update(old, {"metadata": {"name": "a", "labels": {"x": "1"}, "x": 1}})
    assert not NAMESPACE_EVENTS.delete(old)


def test_the_policy_sample_is_valid_and_does_what_its_comments_say() -> None:
    path = REPO / "config" / "samples" / "mysql_v1alpha1_clustermysqlserver_policy.yaml"
    server = ClusterMySQLServer.model_validate(yaml.safe_load(path.read_text()))
    rules = server.spec.policy
    tenant = {"tenancy": "tenant", "kubernetes.io/metadata.name": "team-a"}
    ok = spec(privileges=[grant("team-a_orders", "SELECT", "INSERT")], roles=["reader"])
    assert user_violations(rules, "team-a", tenant, ok) == []
    refused = user_violations(rules, "team-a", tenant, spec(privileges=[grant("*", "PROCESS")]))
    assert [v.problem for v in refused] == [
        "grants on *.* are not allowed (allowGlobalPrivileges is false)",
        "PROCESS is above the privilege ceiling SELECT, INSERT, UPDATE, DELETE, EXECUTE, "
        "CREATE TEMPORARY TABLES",
    ]
    assert user_violations(rules, "team-a", tenant | {"frozen": "yes"}, ok)[0].rule == ""
    delegating = spec(privileges=[grant("team-a_orders", "SELECT", grantOption=True)])
    assert [v.problem for v in user_violations(rules, "team-a", tenant, delegating)] == [
        "grantOption is not allowed (allowGrantOption is false): on `team-a_orders`.*"
    ]
    platform = {"kubernetes.io/metadata.name": "platform"}
    anything = spec(privileges=[grant("*", "PROCESS", grantOption=True)])
    assert user_violations(rules, "platform", platform, anything) == []


class ListingKube:
    """A KubeClient stand-in whose namespace LIST answers with ``error`` (or a list)."""

    def __init__(self, error: Exception | None) -> None:
        self.error = error

    async def list(self, resource: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        assert resource == NAMESPACES
        if self.error is not None:
            raise self.error
        return {"items": []}


@pytest.mark.parametrize(
    ("error", "readable"),
    [(None, True), (Forbidden(403, "Forbidden"), False), (Unavailable(503, "down"), True)],
)
async def test_whether_namespaces_may_be_read(error: Exception | None, readable: bool) -> None:
    assert await namespaces_readable(ListingKube(error)) is readable  # type: ignore[arg-type]


async def test_without_namespace_labels_a_policy_admits_nothing_and_no_policy_everything() -> None:
    unreadable = PolicyGate(NamespaceLabels(None))
    assert unreadable.namespaces.labels("team-a") is None
    step = PolicyStep(unreadable)
    ctx = context(None)
    await step.ensure(ctx)  # the settings' server
    ctx.server_resource = server_resource(None)
    await step.ensure(ctx)  # a server without a policy
    ctx.server_resource = server_resource({"namespaces": [{"namespaceSelector": {}}]})
    with pytest.raises(ConditionError) as refused:
        await step.ensure(ctx)
    assert (refused.value.reason, refused.value.retry) == ("NamespacesUnreadable", False)
    assert refused.value.message.startswith("ClusterMySQLServer shared: its spec.policy cannot be checked")
    with pytest.raises(ConditionError, match="cannot be checked"):
        unreadable.check_role(ctx.server_resource, role())
