"""spec.account: the model's validation, what the spec asks of the server at a moment, the ALTER USER that
converges it, the rows it is read from, the namespace policy's maxPasswordLifetime and Observe's
differences. Pure logic; the servers are tested in
tests/integration/operator/databaseuser/test_lock_policy.py."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from dbuser_operator.api.duration import parse_days
from dbuser_operator.api.v1alpha1 import DatabaseUserSpec
from dbuser_operator.api.v1alpha1.account import (
    EXPIRES_AT_MESSAGE,
    FAILED_LOGIN_PAIR_MESSAGE,
    PASSWORD_EXPIRE_MESSAGE,
    PASSWORD_LOCK_TIME_MESSAGE,
    AccountSpec,
)
from dbuser_operator.api.v1alpha1.server_policy import MAX_PASSWORD_LIFETIME_MESSAGE, ServerPolicy
from dbuser_operator.controllers.databaseuser.observe import policy_differences
from dbuser_operator.controllers.databaseuser.steps.lock_policy import (
    describe,
    expired,
    unsupported,
    wanted_policy,
)
from dbuser_operator.controllers.policy.rules import user_violations
from dbuser_operator.mysql import InvalidOptionsError
from dbuser_operator.mysql.accounts.limits import Limits
from dbuser_operator.mysql.accounts.lock_policy import (
    DEFAULT_LIFETIME,
    NEVER,
    UNBOUNDED,
    LockPolicy,
    WantedPolicy,
    alter_statement,
    column_list,
)
from dbuser_operator.mysql.accounts.observe import LiveAccount
from dbuser_operator.mysql.grants import Grant
from dbuser_operator.mysql.session.server import ServerInfo

MYSQL = ServerInfo("mysql", (9, 7, 0))
MYSQL_8_0_18 = ServerInfo("mysql", (8, 0, 18))
MARIADB = ServerInfo("mariadb", (11, 8, 3))
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def spec(**account: Any) -> DatabaseUserSpec:
    return DatabaseUserSpec.model_validate(
        {"password": {"name": "s", "key": "k"}, **({"account": account} if account else {})}
    )


# --- the model ---


@pytest.mark.parametrize(
    ("text", "days"),
    [("1d", 1), ("90d", 90), ("00090d", 90), ("24h", 1), ("2160h", 90), ("1440m", 1), ("86400s", 1)],
)
def test_days_are_whole_days(text: str, days: int) -> None:
    assert parse_days(text) == days


@pytest.mark.parametrize("text", ["0d", "25h", "23h", "1.5d", "1h30m", "65536d", "90", "d", "-1d", "1w", ""])
def test_what_is_no_number_of_days(text: str) -> None:
    with pytest.raises(ValueError, match="days"):
        parse_days(text)


@pytest.mark.parametrize("value", ["Never", "Default", "1d", "90d", "2160h", "65535d"])
def test_password_expire_values(value: str) -> None:
    assert AccountSpec(password_expire=value).password_expire == value


@pytest.mark.parametrize("value", ["never", "0d", "25h", "65536d", "1.5h", "90 days", "Unbounded"])
def test_malformed_password_expire_is_refused(value: str) -> None:
    with pytest.raises(ValidationError) as refused:
        AccountSpec(password_expire=value)
    text = str(refused.value)
    assert PASSWORD_EXPIRE_MESSAGE in text or "should match pattern" in text


def test_the_failed_login_lock_takes_both_numbers() -> None:
    assert AccountSpec(failed_login_attempts=3, password_lock_time="Unbounded").failed_login_attempts == 3
    for fields in ({"failed_login_attempts": 3}, {"password_lock_time": "2d"}):
        with pytest.raises(ValidationError, match=re.escape(FAILED_LOGIN_PAIR_MESSAGE)):
            AccountSpec(**fields)
    with pytest.raises(ValidationError, match=re.escape(PASSWORD_LOCK_TIME_MESSAGE)):
        AccountSpec(failed_login_attempts=3, password_lock_time="32768d")
    with pytest.raises(ValidationError):
        AccountSpec(failed_login_attempts=0, password_lock_time="1d")
    with pytest.raises(ValidationError):
        AccountSpec(failed_login_attempts=32768, password_lock_time="1d")


def test_locked_is_a_strict_boolean() -> None:
    with pytest.raises(ValidationError):
        AccountSpec.model_validate({"locked": "true"})


@pytest.mark.parametrize("value", ["2026-12-31T18:00:00", "2026-12-31", "tomorrow", "2026-13-01T00:00:00Z"])
def test_expires_at_needs_a_time_with_a_zone(value: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(EXPIRES_AT_MESSAGE)):
        AccountSpec(expires_at=value)


def test_expires_at_accepts_rfc3339() -> None:
    for value in ("2026-12-31T18:00:00Z", "2026-12-31t18:00:00z", "2026-12-31T18:00:00.5+01:00"):
        assert AccountSpec(expires_at=value).expires_at == value


def test_no_account_asks_for_what_accounts_have_always_been() -> None:
    assert wanted_policy(spec(), NOW) == WantedPolicy()
    assert WantedPolicy() == WantedPolicy(locked=False, password_lifetime=None)


# --- what the spec asks of the server ---


def test_wanted_policy_from_the_spec() -> None:
    assert wanted_policy(spec(locked=True, passwordExpire="Never"), NOW) == WantedPolicy(True, NEVER)
    assert wanted_policy(spec(passwordExpire="Default"), NOW).password_lifetime == DEFAULT_LIFETIME
    assert wanted_policy(spec(passwordExpire="2160h"), NOW).password_lifetime == 90
    wanted = wanted_policy(spec(failedLoginAttempts=3, passwordLockTime="Unbounded"), NOW)
    assert (wanted.failed_login_attempts, wanted.password_lock_time) == (3, UNBOUNDED)
    wanted = wanted_policy(spec(failedLoginAttempts=5, passwordLockTime="48h"), NOW)
    assert (wanted.failed_login_attempts, wanted.password_lock_time) == (5, 2)


def test_expires_at_locks_from_that_moment() -> None:
    at = "2026-11-26T12:00:00Z"
    assert not wanted_policy(spec(expiresAt=at), NOW - timedelta(seconds=1)).locked
    assert wanted_policy(spec(expiresAt=at), NOW).locked
    assert expired(spec(expiresAt=at), NOW) == NOW
    assert expired(spec(expiresAt="2026-11-26T13:00:00+01:00"), NOW) == NOW  # the same moment
    assert expired(spec(expiresAt=at), NOW - timedelta(seconds=1)) is None


@pytest.mark.parametrize(
    ("live", "default", "desired"),
    [
        (DEFAULT_LIFETIME, 0, DEFAULT_LIFETIME),  # the server's default never expires: nothing to write
        (NEVER, 0, NEVER),
        (NEVER, 90, NEVER),
        (DEFAULT_LIFETIME, 1, NEVER),  # default_password_lifetime would expire it: NEVER
        (30, 0, NEVER),  # an interval set by hand expires it
    ],
)
def test_an_unset_password_expire_never_expires_in_effect(live: int, default: int, desired: int) -> None:
    found = WantedPolicy().for_account(LockPolicy(password_lifetime=live), default)
    assert found.password_lifetime == desired


def test_a_set_password_expire_is_written_as_it_is() -> None:
    for lifetime in (NEVER, DEFAULT_LIFETIME, 90):
        wanted = WantedPolicy(password_lifetime=lifetime)
        assert wanted.for_account(LockPolicy(password_lifetime=7), 0).password_lifetime == lifetime


def test_the_target_is_the_live_policy_when_nothing_differs() -> None:
    live = LockPolicy(
        locked=True, password_lifetime=90, failed_login_attempts=3, password_lock_time=UNBOUNDED
    )
    assert WantedPolicy(True, 90, 3, UNBOUNDED).for_account(live, 0) == live
    assert WantedPolicy(False, 90, 3, UNBOUNDED).for_account(live, 0) != live


# --- the SQL ---


def alter(live: LockPolicy, desired: LockPolicy, server: ServerInfo = MYSQL) -> str:
    statement = alter_statement("app", "10.0.%", live, desired, server)
    assert statement.params == ()
    return statement.text


def test_the_alter_user_names_only_what_differs() -> None:
    base = LockPolicy()
    assert alter(base, LockPolicy(locked=True)) == "ALTER USER 'app'@'10.0.%' ACCOUNT LOCK"
    assert alter(LockPolicy(locked=True), base) == "ALTER USER 'app'@'10.0.%' ACCOUNT UNLOCK"
    assert (
        alter(base, LockPolicy(password_lifetime=NEVER)) == "ALTER USER 'app'@'10.0.%' PASSWORD EXPIRE NEVER"
    )
    assert alter(LockPolicy(password_lifetime=0), base).endswith("PASSWORD EXPIRE DEFAULT")
    assert alter(base, LockPolicy(password_lifetime=90)).endswith("PASSWORD EXPIRE INTERVAL 90 DAY")
    both = alter(base, LockPolicy(locked=True, password_lifetime=90), MARIADB)
    assert both == "ALTER USER 'app'@'10.0.%' ACCOUNT LOCK PASSWORD EXPIRE INTERVAL 90 DAY"  # MariaDB's order
    locking = alter(base, LockPolicy(failed_login_attempts=3, password_lock_time=UNBOUNDED))
    assert locking.endswith("FAILED_LOGIN_ATTEMPTS 3 PASSWORD_LOCK_TIME UNBOUNDED")
    assert alter(base, LockPolicy(failed_login_attempts=5, password_lock_time=2)).endswith(
        "PASSWORD_LOCK_TIME 2"
    )
    with pytest.raises(ValueError, match="nothing differs"):
        alter(base, base)


def test_no_failed_login_lock_is_written_where_the_server_has_none() -> None:
    desired = LockPolicy(failed_login_attempts=3, password_lock_time=1)
    for server in (MARIADB, MYSQL_8_0_18):
        with pytest.raises(InvalidOptionsError, match="FAILED_LOGIN_ATTEMPTS"):
            alter(LockPolicy(), desired, server)


def test_out_of_range_values_are_refused_before_any_sql() -> None:
    bad: list[dict[str, Any]] = [
        {"password_lifetime": 65536},
        {"failed_login_attempts": -1},
        {"password_lock_time": -2},
    ]
    for fields in bad:
        with pytest.raises(InvalidOptionsError):
            LockPolicy(**fields)
    with pytest.raises(InvalidOptionsError):
        LockPolicy(locked=1)  # type: ignore[arg-type]


def test_the_columns_each_flavour_reads() -> None:
    assert "JSON_VALUE(g.Priv, '$.account_locked')" in column_list(MARIADB, "g")
    assert "u.User_attributes" in column_list(MYSQL, "u")
    assert "User_attributes" not in column_list(MYSQL_8_0_18, "u")
    for server in (MYSQL, MARIADB):
        assert column_list(server, "a").endswith("@@global.default_password_lifetime")
    with pytest.raises(ValueError, match="alias"):
        column_list(MYSQL, "a; DROP")


@pytest.mark.parametrize(
    ("row", "policy"),
    [
        ({"account_locked": "N", "password_lifetime": None}, LockPolicy()),  # MySQL
        ({"account_locked": "Y", "password_lifetime": 0}, LockPolicy(locked=True, password_lifetime=0)),
        ({"account_locked": None, "password_lifetime": None}, LockPolicy()),  # MariaDB, nothing set
        ({"account_locked": "true", "password_lifetime": "-1"}, LockPolicy(locked=True)),  # MariaDB
        ({"account_locked": "false", "password_lifetime": "90"}, LockPolicy(password_lifetime=90)),
    ],
)
def test_policies_read_from_rows(row: dict[str, Any], policy: LockPolicy) -> None:
    full = {"failed_login_attempts": None, "password_lock_time": None} | row
    assert LockPolicy.from_row(full) == policy


def test_mysql_s_failed_login_json_is_read() -> None:
    row = {"account_locked": "N", "password_lifetime": None, "failed_login_attempts": b"3"}
    policy = LockPolicy.from_row(row | {"password_lock_time": b"-1"})
    assert (policy.failed_login_attempts, policy.password_lock_time) == (3, UNBOUNDED)
    assert describe(policy) == "unlocked, password expires Default, failed-login lock after 3 for Unbounded"


# --- flavours, the policy, Observe ---


def test_the_failed_login_lock_is_refused_by_name_where_the_server_lacks_it() -> None:
    asked = spec(failedLoginAttempts=3, passwordLockTime="1d")
    assert unsupported(asked, MYSQL) is None
    assert unsupported(spec(locked=True, passwordExpire="90d"), MARIADB) is None
    message = unsupported(asked, MARIADB)
    assert message is not None
    assert "failedLoginAttempts" in message
    assert "MariaDB 11.8.3" in message
    assert "max_password_errors" in message
    assert "8.0.19" in (unsupported(asked, MYSQL_8_0_18) or "")


def lifetime_problems(cap: str | None, **account: Any) -> list[str]:
    entry: dict[str, Any] = {"namespaceSelector": {}}
    if cap is not None:
        entry["maxPasswordLifetime"] = cap
    policy = ServerPolicy.model_validate({"namespaces": [entry]})
    return [v.problem for v in user_violations(policy, "team-a", {}, spec(**account))]


def test_max_password_lifetime_requires_an_interval_within_it() -> None:
    assert lifetime_problems(None) == []
    assert lifetime_problems("90d", passwordExpire="90d") == []
    assert lifetime_problems("90d", passwordExpire="2160h") == []  # the same 90 days
    assert lifetime_problems("2160h", passwordExpire="30d") == []
    for account, shown in (
        ({}, "is unset (the password never expires)"),
        ({"passwordExpire": "Never"}, "is Never"),
        ({"passwordExpire": "Default"}, "is Default"),
        ({"passwordExpire": "91d"}, "is 91d"),
        ({"passwordExpire": "2184h"}, "is 2184h"),
        ({"locked": True}, "is unset"),
    ):
        (problem,) = lifetime_problems("90d", **account)
        assert problem.startswith("passwords must expire within 90 days (maxPasswordLifetime 90d)")
        assert shown in problem


@pytest.mark.parametrize("cap", ["0d", "25h", "65536d", "Never"])
def test_a_malformed_max_password_lifetime_is_refused(cap: str) -> None:
    with pytest.raises(ValidationError, match=r"maxPasswordLifetime|pattern"):
        ServerPolicy.model_validate({"namespaces": [{"namespaceSelector": {}, "maxPasswordLifetime": cap}]})
    assert MAX_PASSWORD_LIFETIME_MESSAGE.startswith("maxPasswordLifetime")


def live(policy: LockPolicy, default_lifetime: int = 0) -> LiveAccount:
    return LiveAccount(
        plugin="caching_sha2_password",
        tls="NONE",
        limits=Limits(),
        grants=frozenset[Grant](),
        roles=(),
        policy=policy,
        default_lifetime=default_lifetime,
    )


def test_observe_names_each_policy_difference() -> None:
    assert policy_differences(live(LockPolicy()), spec(), MYSQL) == []
    assert policy_differences(live(LockPolicy(locked=True)), spec(), MYSQL) == ["locked is true (spec false)"]
    (found,) = policy_differences(live(LockPolicy(), default_lifetime=1), spec(), MYSQL)
    assert found == (
        "passwordExpire is Default, the server's default_password_lifetime is 1 days (spec Never)"
    )
    (found,) = policy_differences(live(LockPolicy(password_lifetime=90)), spec(passwordExpire="30d"), MYSQL)
    assert found == "passwordExpire is 90d (spec 30d)"
    asked = spec(failedLoginAttempts=3, passwordLockTime="1d")
    assert policy_differences(live(LockPolicy()), asked, MYSQL) == ["failedLoginAttempts is 0 (spec 3)"]
    (refused,) = policy_differences(live(LockPolicy()), asked, MARIADB)
    assert "max_password_errors" in refused
