"""Pure logic of several hosts and of the Observe policy: index values, per-host contexts, combined reports,
and the differences Observe reports."""

from __future__ import annotations

import dataclasses
from typing import Any

from dbuser_operator.api.v1alpha1 import DatabaseUser, DatabaseUserSpec, DatabaseUserStatus
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.indexes import named_account
from dbuser_operator.controllers.databaseuser.observe import (
    grant_differences,
    limit_differences,
    observed,
    summary,
)
from dbuser_operator.controllers.databaseuser.steps.hosts import (
    _PER_ACCOUNT,
    accounts_of,
    combined,
    for_host,
    ready_message,
)
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.mysql.accounts.limits import Limits
from dbuser_operator.mysql.accounts.observe import LiveAccount
from dbuser_operator.mysql.accounts.tls_identity import TLSIdentity
from dbuser_operator.mysql.grants import Grant
from dbuser_operator.mysql.session.server import ServerInfo

PASSWORD = {"password": {"name": "s", "key": "k"}}
MYSQL = ServerInfo("mysql", (9, 7, 4))


def resource(**spec: Any) -> DatabaseUser:
    return DatabaseUser.model_validate({"metadata": {"name": "app", "uid": "u1"}, "spec": PASSWORD | spec})


def context(**spec: Any) -> Context:
    user = resource(**spec)
    return Context(obj={"metadata": {"name": "app"}}, user=user, status=DatabaseUserStatus())


def test_the_index_names_every_host_in_lower_case() -> None:
    obj = {"metadata": {"name": "app"}, "spec": {"host": "LocalHost", "hosts": ["10.0.%", "::1"]}}
    assert named_account(obj) == ["app@10.0.%", "app@::1", "app@localhost"]
    assert named_account({"metadata": {"name": "app"}, "spec": {}}) == ["app@%"]  # an object from before
    assert named_account({"metadata": {}, "spec": {}}) == []


def test_a_per_host_context_starts_afresh_and_shares_status_and_events() -> None:
    ctx = context(host="localhost", hosts=["127.0.0.1"])
    assert (ctx.host, ctx.account) == ("localhost", "'app'@'localhost'")
    ctx.account_exists, ctx.claimed, ctx.created = True, True, True
    other = for_host(ctx, "127.0.0.1")
    assert (other.host, other.account) == ("127.0.0.1", "'app'@'127.0.0.1'")
    assert (other.account_exists, other.claimed, other.created) == (None, False, False)
    assert other.status is ctx.status
    other.event("Normal", "AccountCreated", "x")
    assert ctx.events == [("Normal", "AccountCreated", "x")]


def test_a_per_host_context_is_what_replace_would_make_with_the_fields_defaults() -> None:
    """The per-host reset (no constructor run: once per host of every pass) is every per-account field's
    default, and leaves the other fields as ``dataclasses.replace`` would."""
    defaults = {f.name: f.default for f in dataclasses.fields(Context)}
    assert {name: defaults[name] for name in _PER_ACCOUNT} == _PER_ACCOUNT
    ctx = context(host="localhost", hosts=["127.0.0.1"])
    ctx.account_exists, ctx.password_intact, ctx.fingerprint_in_row, ctx.lock_policy = True, True, False, None
    expected = dataclasses.replace(ctx, host="127.0.0.1", **_PER_ACCOUNT)  # type: ignore[arg-type]
    other = for_host(ctx, "127.0.0.1")
    assert type(other) is Context
    assert vars(other) == vars(expected)


def test_messages_name_every_account() -> None:
    assert ready_message(context()) == "account 'app'@'%' matches the spec"
    two = context(hosts=["localhost"])
    assert accounts_of(two) == "'app'@'%', 'app'@'localhost'"
    assert ready_message(two) == "accounts 'app'@'%', 'app'@'localhost' match the spec"


def test_refusals_of_several_accounts_make_one_report() -> None:
    first = ConditionError("AccountClaimed", "a is managed by x", retry=False)
    second = ConditionError("AccountExists", "b already exists", retry=True)
    assert combined([first]) is first
    both = combined([first, second])
    assert (both.reason, both.message, both.retry) == (
        "AccountClaimed",
        "a is managed by x; b already exists",
        True,
    )


def test_observe_names_the_differences_of_limits_and_tls() -> None:
    spec = DatabaseUserSpec.model_validate(PASSWORD | {"maxUserConnections": 3, "requireTLS": True})
    live = Limits(max_user_connections=5, max_queries_per_hour=7)
    assert limit_differences(live, spec) == [
        "maxUserConnections is 5 (spec 3)",
        "maxQueriesPerHour is 7 (spec 0)",
        "requireTLS is False (spec True)",
    ]
    x509 = Limits(max_user_connections=3, require_tls=True, tls_identity=TLSIdentity(x509=True))
    assert limit_differences(x509, spec) == ["TLS identity is a client certificate (spec nothing)"]
    assert limit_differences(Limits(max_user_connections=3, require_tls=True), spec) == []


def test_observe_names_the_grants_manage_would_change() -> None:
    spec = DatabaseUserSpec.model_validate(
        PASSWORD | {"privileges": [{"privileges": ["SELECT"], "database": "app"}]}
    )
    live = [Grant(frozenset({"SELECT", "INSERT"}), "app"), Grant(frozenset({"SELECT"}), "other")]
    assert grant_differences(live, spec, MYSQL) == [
        "would revoke INSERT ON `app`.*",
        "would revoke SELECT ON `other`.*",
    ]
    mariadb_only = DatabaseUserSpec.model_validate(
        PASSWORD | {"privileges": [{"privileges": ["DELETE HISTORY"], "database": "app"}]}
    )
    assert "MariaDB-only" in grant_differences([], mariadb_only, MYSQL)[0]


def test_an_observed_account_and_the_summary() -> None:
    spec = DatabaseUserSpec.model_validate(PASSWORD)
    live = LiveAccount("caching_sha2_password", "SSL", Limits(require_tls=True), frozenset(), ("'r'@'%'",))
    shown = observed("%", live, spec, MYSQL)
    assert (shown.plugin, shown.tls, shown.roles) == ("caching_sha2_password", "SSL", ["'r'@'%'"])
    assert shown.differences == ["requireTLS is True (spec False)"]
    missing = observed("localhost", None, spec, MYSQL)
    assert (missing.exists, missing.differences) == (False, ["the account does not exist"])
    many = [observed(f"10.0.0.{i}", None, spec, MYSQL) for i in range(7)]
    text = summary(context(), many)
    assert text.startswith("'app'@'10.0.0.0': the account does not exist; ")
    assert text.endswith("; and 2 more (status.observed)")
