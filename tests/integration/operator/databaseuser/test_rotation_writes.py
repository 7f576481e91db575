"""A user's Secret rotation on MySQL 8.0.21+ is one SQL write, the ``ALTER USER`` that carries its own
fingerprint (:mod:`dbuser_operator.mysql.accounts.hashed_password`), and drift detection stays what it was: a
row fingerprint an older version recorded is cleared once, a change by hand after the rotation is set back;
a server that checks passwords itself gets the password (its check holds) and the row the fingerprint."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient
from tests.integration.operator.databaseuser.test_rotation import logs_in, make_user, rotate
from tests.integration.operator.support.builders import unique
from tests.integration.operator.support.kube import wait_for_event, wait_for_ready
from tests.integration.operator.support.mysql import has_dual_passwords, is_mariadb, mysql_query
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.integration.operator.support.rotation import delete_users, poll

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
async def _cleanup(kube_client: KubeClient, namespace: str) -> AsyncIterator[None]:
    yield
    await delete_users(kube_client, namespace)


@pytest.fixture(autouse=True)
def _mysql_only(mysql: MySQLServer) -> None:
    if is_mariadb(mysql) or not has_dual_passwords(mysql):
        pytest.skip("account attributes: MySQL 8.0.21+ (MariaDB records every rotation in the row)")


def row_fingerprint(mysql: MySQLServer, operator: RunningOperator, user: str) -> object:
    schema = operator.settings.ownership_schema
    [(value,)] = mysql_query(mysql, f"SELECT auth_fingerprint FROM `{schema}`.accounts WHERE user = %s", user)
    return value


async def test_a_row_fingerprint_is_cleared_once_and_a_change_by_hand_is_still_set_back(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    name = unique("rw")
    secret, first = await make_user(kube_client, namespace, passwords, name)
    schema = operator.settings.ownership_schema
    # As an older version left it: the fingerprint in the row, which wins over the account's attribute.
    mysql_query(
        mysql,
        f"UPDATE `{schema}`.accounts o JOIN mysql.user u ON u.User = o.user AND u.Host = o.host"
        " SET o.auth_fingerprint = SHA2(u.authentication_string, 256) WHERE o.user = %s",
        name,
    )
    assert row_fingerprint(mysql, operator, name) is not None

    second = passwords.new()
    await rotate(kube_client, namespace, secret, second)

    async def rotated() -> bool:
        return await logs_in(mysql, name, second) and row_fingerprint(mysql, operator, name) is None

    await poll(rotated, "the new password, the row's fingerprint cleared")
    assert await logs_in(mysql, name, first)  # retained (DualPassword): it was the operator's own

    by_hand = passwords.new("by-hand")
    await asyncio.to_thread(mysql_query, mysql, f"ALTER USER `{name}`@'%%' IDENTIFIED BY %s", by_hand)
    # The drift check (every second here) compares the account's string with the attribute's fingerprint.
    event = await wait_for_event(kube_client, namespace, name, "PasswordRestored", limit=60)
    assert event["type"] == "Warning"

    async def restored() -> bool:
        return await logs_in(mysql, name, second) and not await logs_in(mysql, name, by_hand)

    await poll(restored, "the Secret's password set back")


@pytest.fixture
def validate_password(mysql: MySQLServer, _mysql_only: None) -> Iterator[None]:
    mysql_query(mysql, "INSTALL COMPONENT 'file://component_validate_password'")
    yield
    mysql_query(mysql, "UNINSTALL COMPONENT 'file://component_validate_password'")


async def test_a_server_that_checks_passwords_checks_the_rotated_one(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    validate_password: None,
) -> None:
    """``validate_password`` skips a hash sent ``AS``: with it loaded the operator sends the password, so a
    weak one is refused by the server (Ready False, the old password still logs in), a strong one is set,
    and its fingerprint goes to the row."""
    name = unique("rv")
    # MEDIUM wants a digit, an upper and a lower case letter and a special character: a random password
    # lacks a digit once in 15.
    medium = passwords.new("Medium-1")
    secret, first = await make_user(kube_client, namespace, passwords, name, password=medium)
    assert row_fingerprint(mysql, operator, name) is None  # a new account's: in its attributes

    weak = "weakpassword"
    passwords.values.add(weak)
    await rotate(kube_client, namespace, secret, weak)
    await wait_for_ready(kube_client, namespace, name, status="False", limit=60)
    assert await logs_in(mysql, name, first)
    assert not await logs_in(mysql, name, weak)

    strong = passwords.new("Strong-9")
    await rotate(kube_client, namespace, secret, strong)
    await wait_for_ready(kube_client, namespace, name, limit=60)
    assert await logs_in(mysql, name, strong)
    assert row_fingerprint(mysql, operator, name) is not None
