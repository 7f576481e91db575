"""A new account survives its operator SIGKILLed between its ``CREATE USER`` and the write that follows.

On MySQL a new account is created ``PASSWORD EXPIRE`` and settled by the next write (its own hash set
again, with its fingerprint: :mod:`dbuser_operator.mysql.accounts.new_password`); on MariaDB, whose new
account is complete at once, the next write is its ``GRANT``. A loopback proxy lets the ``CREATE USER``
through, holds the write after it, and the process is killed with that write unsent. The next process
must leave the account logging in with the resource's password (not expired) and holding its grant before
it reports Ready. Real operator processes, real API server, MySQL 9.7 and MariaDB 11.8.
"""

from __future__ import annotations

import pytest

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient
from tests.integration.operator.support.builders import database_user, generated_user
from tests.integration.operator.support.kube import create_secret, wait_for_ready
from tests.integration.operator.support.mysql import (
    account_exists,
    can_log_in,
    is_mariadb,
    mysql_query,
    privileges_of,
)
from tests.integration.operator.support.operator import PasswordLedger
from tests.integration.operator.support.replicas import Failover, killed_before
from tests.integration.operator.support.rotation import secret_password
from tests.support.fault_proxy import FaultProxy

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.parametrize("source", ["secret", "generated"])
async def test_a_pass_killed_after_its_create_user_leaves_an_account_that_logs_in_once_ready(
    failover: Failover, kube_client: KubeClient, mysql: MySQLServer, passwords: PasswordLedger, source: str
) -> None:
    name, namespace = f"cu-{failover.suffix}", failover.namespace
    grant = {"privileges": ["SELECT"], "database": f"app{failover.suffix}"}
    if source == "secret":
        await create_secret(kube_client, namespace, name, {"password": passwords.new()})
        body = database_user(name, name, target=failover.target, privileges=[grant])
    else:
        body = generated_user(name, target=failover.target, privileges=[grant])
    async with FaultProxy(mysql.host, mysql.port) as to_mysql:
        a = failover.start("a", mysql_port=to_mysql.port)
        await failover.wait_for_holder(kube_client, a)

        async def create() -> None:
            await kube_client.create(DATABASE_USERS, body, namespace)

        print("killed with unsent:", await killed_before(a, to_mysql, create, after=b"CREATE USER"))
    assert account_exists(mysql, name), "the killed pass made no account: the test proves nothing"

    failover.start("b")
    await wait_for_ready(kube_client, namespace, name, limit=90)
    secret = name if source == "secret" else f"{name}-password"
    password = await secret_password(kube_client, namespace, secret)
    passwords.values.add(password)  # checked for leaks with the others
    assert can_log_in(mysql, name, password), "Ready, but the account does not log in with its password"
    assert privileges_of(mysql, name) == {(grant["database"], "*", "SELECT", False)}
    if not is_mariadb(mysql):
        [(expired,)] = mysql_query(
            mysql, "SELECT password_expired FROM mysql.user WHERE User = %s AND Host = '%%'", name
        )
        assert expired == "N"
