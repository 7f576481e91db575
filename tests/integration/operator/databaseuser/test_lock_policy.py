"""spec.account end to end on real servers (all three flavours): the lock and the password expiry set, read
back from the grant tables, repaired after changes by hand, and proven by real logins; a locked account's
open session ended; a server-wide default_password_lifetime that expires no account the operator manages
(and does expire one left at Default); expiresAt locking on time with no drift check running; the
failed-login lock on MySQL and its refusal by name on MariaDB; Observe showing the policy; a hostile tenant
who can neither unlock another namespace's account nor get around the policy's maxPasswordLifetime."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pymysql
import pytest

from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import LocalMySQLServer, MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from tests.integration.mysql.support import admin
from tests.integration.operator.servers import test_server_policy
from tests.integration.operator.servers.test_hostile_tenant import Victim, attempt, victim
from tests.integration.operator.servers.test_server_policy import Tenancy, snapshot
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.kube import ready, wait_for_ready, wait_until_gone
from tests.integration.operator.support.mysql import account_exists, mysql_query, write_statements
from tests.integration.operator.support.operator import RunningOperator, StartOperator
from tests.integration.operator.support.replicas import GeneralLog, first
from tests.support.kube import eventually
from tests.support.slowness import LoopLag

pytestmark = pytest.mark.integration

shared_tenancy = test_server_policy.tenancy  # the policy tests' fixtures, under these names here
__all__ = ["shared_tenancy", "victim"]

LOCKED_LOGIN = {3118, 4151}  # ER_ACCOUNT_HAS_BEEN_LOCKED: MySQL, MariaDB
EXPIRED_LOGIN = {1862, 1820}  # ER_MUST_CHANGE_PASSWORD_LOGIN (refused), ER_MUST_CHANGE_PASSWORD (sandbox)
BLOCKED_LOGIN = 3955  # MySQL: locked for PASSWORD_LOCK_TIME after FAILED_LOGIN_ATTEMPTS


def is_mariadb(mysql: MySQLServer) -> bool:
    [(version,)] = mysql_query(mysql, "SELECT VERSION()")
    return "mariadb" in str(version).lower()


def policy_of(mysql: MySQLServer, user: str, host: str = "%") -> tuple[bool, int] | None:
    """(locked, password lifetime: -1 the server's default, 0 never, n days) from the grant tables."""
    if is_mariadb(mysql):
        rows = mysql_query(
            mysql,
            "SELECT JSON_VALUE(Priv, '$.account_locked'), JSON_VALUE(Priv, '$.password_lifetime')"
            " FROM mysql.global_priv WHERE User = %s AND Host = %s",
            user,
            host,
        )
        if not rows:
            return None
        locked, lifetime = rows[0]
        return str(locked) in ("true", "1"), -1 if lifetime is None else int(lifetime)  # JSON true reads "1"
    rows = mysql_query(
        mysql,
        "SELECT account_locked, password_lifetime FROM mysql.user WHERE User = %s AND Host = %s",
        user,
        host,
    )
    if not rows:
        return None
    locked, lifetime = rows[0]
    return str(locked) == "Y", -1 if lifetime is None else int(lifetime)


def connect(mysql: MySQLServer, user: str, password: str) -> pymysql.Connection[Any]:
    return pymysql.connect(
        host=mysql.host,
        port=mysql.port,
        user=user,
        password=password.encode(),
        connect_timeout=5,
        ssl_disabled=True,
    )


def login(mysql: MySQLServer, user: str, password: str) -> str | int:
    """Log in and run a statement: "ok", or the error code that stopped it (an expired password may log
    in to a sandbox where every statement fails)."""
    try:
        with connect(mysql, user, password) as connection, connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except pymysql.err.MySQLError as error:
        return int(error.args[0])
    return "ok"


def age_password(mysql: MySQLServer, user: str, days: int) -> None:
    """Make the account's password ``days`` old, as the server judges expiry (the grant tables, flushed)."""
    if is_mariadb(mysql):
        admin(
            mysql,
            "UPDATE mysql.global_priv SET Priv = JSON_SET(Priv, '$.password_last_changed',"
            f" UNIX_TIMESTAMP() - {days * 86400}) WHERE User = '{user}' AND Host = '%'",
            "FLUSH PRIVILEGES",
        )
    else:
        admin(
            mysql,
            f"UPDATE mysql.user SET password_last_changed = NOW() - INTERVAL {days} DAY"
            f" WHERE User = '{user}' AND Host = '%'",
            "FLUSH PRIVILEGES",
        )


def alive(connection: pymysql.Connection[Any]) -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except pymysql.err.MySQLError:
        return False
    return True


async def patch_account(kube: KubeClient, namespace: str, name: str, account: dict[str, Any] | None) -> None:
    await kube.patch(
        DATABASE_USERS, name, {"spec": {"account": account}}, PatchType.MERGE, namespace=namespace
    )


async def until(condition: Any, what: str, limit: float = 30) -> None:
    await eventually(condition, timeout=limit, interval=0.1, what=what)


async def writes_nothing(mysql: MySQLServer, seconds: float = 2.5) -> None:
    """Passes and drift checks (every second) over ``seconds`` write nothing."""
    before = write_statements(mysql)
    await asyncio.sleep(seconds)
    assert write_statements(mysql) == before


@pytest.fixture
def local_server(mysql_provider: Any) -> None:
    if not isinstance(mysql_provider, LocalMySQLServer):
        pytest.skip("changes server-wide settings: only on a local server of the session's flavour")


@contextlib.contextmanager
def default_password_lifetime(mysql: MySQLServer, days: int) -> Iterator[None]:
    admin(mysql, f"SET GLOBAL default_password_lifetime = {days}")
    try:
        yield
    finally:
        admin(mysql, "SET GLOBAL default_password_lifetime = 0")


async def test_lock_and_expiry_converge_end_sessions_and_are_repaired(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer, secret: str
) -> None:
    name = unique("locking")
    body = database_user(name, "pw", account={"passwordExpire": "90d"})
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name, "True", "AccountReady")
    assert policy_of(mysql, name) == (False, 90)
    assert login(mysql, name, secret) == "ok"
    await writes_nothing(mysql)

    session = connect(mysql, name, secret)
    await patch_account(kube_client, namespace, name, {"locked": True, "passwordExpire": "90d"})
    obj = await wait_for_ready(kube_client, namespace, name, "True", "AccountLocked")
    assert "locked (spec.account.locked)" in ready(obj)["message"]  # type: ignore[index]
    assert policy_of(mysql, name) == (True, 90)
    assert login(mysql, name, secret) in LOCKED_LOGIN
    await until(lambda: not alive(session), "the open session ended")
    await writes_nothing(mysql)  # every pass looks for sessions; none writes

    # By hand: unlocked, another lifetime. The drift check (every second here) puts both back.
    admin(mysql, f"ALTER USER '{name}'@'%' ACCOUNT UNLOCK")
    await until(lambda: policy_of(mysql, name) == (True, 90), "locked again")
    admin(mysql, f"ALTER USER '{name}'@'%' PASSWORD EXPIRE INTERVAL 5 DAY")
    await until(lambda: policy_of(mysql, name) == (True, 90), "90 days again")

    await patch_account(kube_client, namespace, name, {"locked": False, "passwordExpire": "Default"})
    await wait_for_ready(kube_client, namespace, name, "True", "AccountReady")
    await until(lambda: policy_of(mysql, name) == (False, -1), "unlocked, the server's default")
    assert login(mysql, name, secret) == "ok"

    # Without spec.account on a server whose default never expires: an interval set by hand becomes NEVER.
    await patch_account(kube_client, namespace, name, None)
    admin(mysql, f"ALTER USER '{name}'@'%' PASSWORD EXPIRE INTERVAL 5 DAY")
    await until(lambda: policy_of(mysql, name) == (False, 0), "never expires")


async def test_a_server_wide_password_lifetime_expires_no_managed_account(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    secret: str,
    local_server: None,
) -> None:
    """default_password_lifetime=1 (CIS hardening) and passwords three days old: the accounts without
    spec.account still log in, one made before the setting included; one at Default is expired by the
    server, as it says (so the test can tell)."""
    before, at_default = unique("before"), unique("at-default")
    await kube_client.create(DATABASE_USERS, database_user(before, "pw"), namespace)
    body = database_user(at_default, "pw", account={"passwordExpire": "Default"})
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, before, "True", "AccountReady")
    await wait_for_ready(kube_client, namespace, at_default, "True", "AccountReady")
    assert policy_of(mysql, before) == (False, -1)  # the server's default never expires: nothing written

    with default_password_lifetime(mysql, 1):
        await until(
            lambda: policy_of(mysql, before) == (False, 0), "PASSWORD EXPIRE NEVER by the drift check"
        )
        after = unique("after")
        await kube_client.create(DATABASE_USERS, database_user(after, "pw"), namespace)
        await wait_for_ready(kube_client, namespace, after, "True", "AccountReady")
        assert policy_of(mysql, after) == (False, 0)
        assert policy_of(mysql, at_default) == (False, -1)
        for user in (before, after, at_default):
            age_password(mysql, user, 3)
        assert login(mysql, before, secret) == "ok"
        assert login(mysql, after, secret) == "ok"
        assert login(mysql, at_default, secret) in EXPIRED_LOGIN


async def test_expires_at_locks_on_time_without_a_drift_check(
    start_operator: StartOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer, secret: str
) -> None:
    target = unique("expiry")
    await start_operator(target=target, resync_period=0.0)  # no drift check: only the requeue can lock it
    name = unique("temporary")
    # Ready with an expiry an hour away first: one a few seconds away could pass before a busy machine's
    # first pass, which then says AccountExpired, never the AccountReady waited for.
    far = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    body = database_user(name, "pw", target=target, account={"expiresAt": far})
    await kube_client.create(DATABASE_USERS, body, namespace)
    await wait_for_ready(kube_client, namespace, name, "True", "AccountReady")
    assert policy_of(mysql, name) == (False, -1)
    session = connect(mysql, name, secret)
    assert alive(session)

    # When the lock reached the server is its general log's record; the operator, on this event loop, may
    # be late by the loop's lag (a busy machine), not by more than 3 s besides.
    with GeneralLog(mysql) as log:
        async with LoopLag() as lag:
            expires = (datetime.now(UTC) + timedelta(seconds=6)).replace(microsecond=0)
            await patch_account(kube_client, namespace, name, {"expiresAt": expires.isoformat()})
            await until(lambda: policy_of(mysql, name) == (True, -1), "locked at expiresAt", limit=120)
        locked = first(log.times(f"ALTER USER %{name}%ACCOUNT LOCK%"))
    late = (locked - expires).total_seconds()
    assert -0.5 < late < 3.0 + lag.total, f"locked {late:.2f} s after expiresAt ({lag})"
    obj = await wait_for_ready(kube_client, namespace, name, "True", "AccountExpired")
    assert f"expired at {expires.strftime('%Y-%m-%dT%H:%M:%SZ')}" in ready(obj)["message"]  # type: ignore[index]
    assert login(mysql, name, secret) in LOCKED_LOGIN
    await until(lambda: not alive(session), "the open session ended")

    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    await patch_account(kube_client, namespace, name, {"expiresAt": later})
    await wait_for_ready(kube_client, namespace, name, "True", "AccountReady")
    assert policy_of(mysql, name) == (False, -1)
    assert login(mysql, name, secret) == "ok"
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)


async def test_the_failed_login_lock_on_mysql_or_its_refusal_by_name(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer, secret: str
) -> None:
    name = unique("guarded")
    account = {"failedLoginAttempts": 2, "passwordLockTime": "1d"}
    await kube_client.create(DATABASE_USERS, database_user(name, "pw", account=account), namespace)
    if is_mariadb(mysql):
        obj = await wait_for_ready(kube_client, namespace, name, "False", "AccountOptionUnsupported")
        message = ready(obj)["message"]  # type: ignore[index]
        assert "spec.account.failedLoginAttempts" in message
        assert "MariaDB" in message
        assert "max_password_errors" in message
        assert not account_exists(mysql, name)  # refused before anything is written
        return

    def locking() -> tuple[int, int] | None:
        rows = mysql_query(
            mysql,
            "SELECT JSON_EXTRACT(User_attributes, '$.Password_locking.failed_login_attempts'),"
            " JSON_EXTRACT(User_attributes, '$.Password_locking.password_lock_time_days')"
            " FROM mysql.user WHERE User = %s AND Host = '%%'",
            name,
        )
        return (int(rows[0][0]), int(rows[0][1])) if rows and rows[0][0] is not None else None

    await wait_for_ready(kube_client, namespace, name, "True", "AccountReady")
    assert locking() == (2, 1)
    admin(mysql, f"ALTER USER '{name}'@'%' FAILED_LOGIN_ATTEMPTS 0 PASSWORD_LOCK_TIME 0")
    await until(lambda: locking() == (2, 1), "the failed-login lock restored")
    await writes_nothing(mysql)
    assert login(mysql, name, "wrong") == 1045
    assert login(mysql, name, "wrong") == BLOCKED_LOGIN  # the second failure locks it
    assert login(mysql, name, secret) == BLOCKED_LOGIN
    await patch_account(
        kube_client, namespace, name, {"failedLoginAttempts": 3, "passwordLockTime": "Unbounded"}
    )
    await until(lambda: locking() == (3, -1), "3 attempts, unbounded")


async def test_observe_shows_the_policy_and_writes_nothing(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer, secret: str
) -> None:
    name = unique("observed")
    admin(
        mysql,
        f"CREATE USER '{name}'@'%' IDENTIFIED BY 'handmade' ACCOUNT LOCK PASSWORD EXPIRE INTERVAL 30 DAY",
    )
    try:
        before = write_statements(mysql)
        body = database_user(name, "pw", managementPolicy="Observe", account={"passwordExpire": "30d"})
        await kube_client.create(DATABASE_USERS, body, namespace)
        obj = await wait_for_ready(kube_client, namespace, name, "False", "Diverged")
        (observed,) = obj["status"]["observed"]
        assert (observed["locked"], observed["passwordExpire"]) == (True, "30d")
        assert observed["differences"] == ["locked is true (spec false)"]
        await patch_account(kube_client, namespace, name, {"passwordExpire": "30d", "locked": True})
        await wait_for_ready(kube_client, namespace, name, "True", "Observed")
        assert write_statements(mysql) == before
        assert policy_of(mysql, name) == (True, 30)
        await kube_client.delete(DATABASE_USERS, name, namespace)
        await wait_until_gone(kube_client, namespace, name)
    finally:
        admin(mysql, f"DROP USER IF EXISTS '{name}'@'%'")


async def test_a_tenant_cannot_unlock_another_s_account_nor_pass_the_lifetime_cap(
    shared_tenancy: Tenancy, victim: Victim
) -> None:
    env, b = shared_tenancy, victim
    await env.kube.patch(
        DATABASE_USERS,
        b.user,
        {"spec": {"account": {"locked": True}}},
        PatchType.MERGE,
        namespace=b.namespace,
    )
    await wait_for_ready(env.kube, b.namespace, b.user, "True", "AccountLocked", limit=60)
    before = snapshot(env, {b.user})
    mine = [{"database": f"{env.tenant}_app", "privileges": ["SELECT"]}]
    unlock = {"locked": False}
    await attempt(
        env, env.user(unique("a-unlock"), user=b.user, account=unlock), "AccountClaimed", "is managed by"
    )
    adopt = env.user(unique("a-adopt"), user=b.user, privileges=mine, account=unlock)
    adopt["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
    await attempt(env, adopt, "AccountClaimed", "is managed by")
    assert snapshot(env, {b.user}) == before
    assert policy_of(env.mysql, b.user) == (True, -1)
    assert login(env.mysql, b.user, b.password) in LOCKED_LOGIN

    # The policy requires passwords to expire within 90 days: Never, Default, unset and longer are refused.
    await env.set_policy(databases=["{namespace}_*"], privileges=["SELECT"], maxPasswordLifetime="90d")
    cap = "passwords must expire within 90 days (maxPasswordLifetime 90d): spec.account.passwordExpire"
    for account, shown in (
        (None, "is unset"),
        ({"passwordExpire": "Never"}, "is Never"),
        ({"passwordExpire": "Default"}, "is Default"),
        ({"passwordExpire": "2184h"}, "is 2184h"),
    ):
        obj = env.user(unique("a-cap"), privileges=mine, **({"account": account} if account else {}))
        await attempt(env, obj, "PolicyViolation", f"{cap} {shown}")
    name = unique("a-capped")
    await env.kube.create(
        DATABASE_USERS, env.user(name, privileges=mine, account={"passwordExpire": "2160h"}), env.tenant
    )
    await wait_for_ready(env.kube, env.tenant, name, "True", "AccountReady", limit=60)
    assert policy_of(env.mysql, name) == (False, 90)
    await env.kube.patch(
        DATABASE_USERS,
        name,
        {"spec": {"account": {"passwordExpire": "Never"}}},
        PatchType.MERGE,
        namespace=env.tenant,
    )
    await wait_for_ready(env.kube, env.tenant, name, "False", "PolicyViolation", limit=60)
    await asyncio.sleep(1.5)  # a drift check period and more: nothing changed
    assert policy_of(env.mysql, name) == (False, 90)
