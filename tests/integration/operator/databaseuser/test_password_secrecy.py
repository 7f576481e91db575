"""Passwords and the server's own records: the general log gets hashes or MySQL's ``<secret>``, never a
password; a password changed by hand right after the operator set its own is seen as drift and set back."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from dbuser_operator.api.v1alpha1 import ROTATE_ANNOTATION
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql.accounts import accounts, dual_password
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.mysql.support import loaded_plugin
from tests.integration.operator.support.builders import database_user, generated_user, unique
from tests.integration.operator.support.kube import create_secret, wait_for_event, wait_for_ready
from tests.integration.operator.support.mysql import can_log_in, mysql_query
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.integration.operator.support.replicas import GeneralLog
from tests.integration.operator.support.rotation import delete_users, poll, secret_password

pytestmark = pytest.mark.integration

IMMEDIATE = {"strategy": "Immediate"}


@pytest.fixture
def flavour(mysql: MySQLServer) -> str:
    [(version,)] = mysql_query(mysql, "SELECT VERSION()")
    return "mariadb" if "mariadb" in str(version).lower() else "mysql"


@pytest.fixture(autouse=True)
async def _cleanup(kube_client: KubeClient, namespace: str) -> AsyncIterator[None]:
    yield
    await delete_users(kube_client, namespace)


async def logs_in(mysql: MySQLServer, user: str, password: str) -> bool:
    return await asyncio.to_thread(can_log_in, mysql, user, password)


async def test_the_general_log_shows_no_password(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    flavour: str,
) -> None:
    """Create (the server's default plugin, and ed25519 / caching_sha2_password named), change the
    Secret's password, rotate a generated one: no password of the ledger is in the general log. MariaDB
    is sent hashes; MySQL is sent the password and writes ``<secret>`` in its place (and a new account,
    created expired, is given back the hash it stored)."""
    plain, named, generated = unique("logged"), unique("logged-named"), unique("logged-gen")
    first, second = passwords.new(), passwords.new()
    plugin = "ed25519" if flavour == "mariadb" else "caching_sha2_password"
    loaded = loaded_plugin(mysql, flavour, plugin) if flavour == "mariadb" else contextlib.nullcontext()
    with loaded, GeneralLog(mysql) as log:
        await create_secret(kube_client, namespace, "logged-pw", {"password": first})
        for body in (
            database_user(plain, "logged-pw"),  # the default strategy: DualPassword on MySQL
            database_user(named, "logged-pw", rotation=IMMEDIATE, authentication={"plugin": plugin}),
            generated_user(generated, rotation=IMMEDIATE),
        ):
            await kube_client.create(DATABASE_USERS, body, namespace)
        for name in (plain, named, generated):
            await wait_for_ready(kube_client, namespace, name)
        initial = await secret_password(kube_client, namespace, f"{generated}-password")
        passwords.values.add(initial)
        assert await logs_in(mysql, plain, first)
        assert await logs_in(mysql, named, first)

        await kube_client.patch(
            SECRETS, "logged-pw", {"stringData": {"password": second}}, PatchType.MERGE, namespace=namespace
        )

        async def changed() -> bool:
            return await logs_in(mysql, plain, second) and await logs_in(mysql, named, second)

        await poll(changed, "the changed password logs in")

        rotate = {"metadata": {"annotations": {ROTATE_ANNOTATION: "r1"}}}
        await kube_client.patch(DATABASE_USERS, generated, rotate, PatchType.MERGE, namespace=namespace)
        await wait_for_event(kube_client, namespace, generated, "Rotated", limit=30)
        rotated = await secret_password(kube_client, namespace, f"{generated}-password")
        passwords.values.add(rotated)
        assert rotated != initial
        assert await logs_in(mysql, generated, rotated)
        statements = log.arguments()
        await delete_users(kube_client, namespace)  # before the plugin goes

    creates = [text for text in statements if text.startswith("CREATE USER") and plain in text]
    assert creates, "the general log recorded no CREATE USER of the test's account"
    leaks = sorted({where for where in passwords.values for text in statements if where in text})
    assert leaks == [], f"{len(leaks)} password(s) of the ledger in the general log"
    mine = [text for text in statements if any(name in text for name in (plain, named, generated))]
    if flavour == "mysql":
        # A new account is created expired and given back the hash it stored (mysql.accounts.new_password),
        # and a Secret's new password is sent as the hash made on the client with its fingerprint
        # (mysql.accounts.hashed_password): hashes, as MariaDB is always sent, never the password. The
        # generated password's rotation is BY <secret>.
        hashed = [text for text in mine if text.startswith("ALTER USER") and " AS '$A$" in text]
        rotations = [text for text in hashed if "dbuser-operator.dev/credential" in text]
        assert len(hashed) - len(rotations) == 3, hashed
        assert len(rotations) == 2, rotations  # the Secret's change, on both of its accounts
        assert any("RETAIN CURRENT PASSWORD" in text for text in rotations)  # DualPassword
        assert all(" PASSWORD EXPIRE" in text for text in creates)
        altered = [t for t in mine if t.startswith("ALTER USER") and " IDENTIFIED " in t and t not in hashed]
        assert altered, "no password change of the test's accounts in the general log"
        assert all(" BY <secret>" in text for text in altered), altered
    else:
        assert any("IDENTIFIED BY PASSWORD '*" in text for text in mine if text.startswith("ALTER USER"))
        assert any("IDENTIFIED VIA ed25519 USING '" in text for text in mine)


async def test_a_password_changed_by_hand_right_after_the_operator_s_own_is_set_back(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Somebody changes the password between the operator's ``ALTER USER`` and its fingerprint record (a
    fault injected there): the operator does not take that password for its own; the next look sees drift
    and sets the Secret's password back (PasswordRestored). Where the fingerprint goes in the ``ALTER USER``
    itself (:mod:`~dbuser_operator.mysql.accounts.hashed_password`: MySQL) the change comes right after it."""
    name = unique("race")
    first, second, by_hand = passwords.new(), passwords.new(), passwords.new("by-hand")
    await create_secret(kube_client, namespace, "race-pw", {"password": first})
    await kube_client.create(DATABASE_USERS, database_user(name, "race-pw", rotation=IMMEDIATE), namespace)
    await wait_for_ready(kube_client, namespace, name)

    record, set_password = ownership.record_fingerprint, dual_password.set_password
    raced: list[float] = []

    async def by_hand_once(user: str) -> None:
        if user == name and not raced:
            raced.append(time.monotonic())
            query = f"ALTER USER `{name}`@'%%' IDENTIFIED BY %s"
            await asyncio.to_thread(mysql_query, mysql, query, by_hand)

    async def racing(db: Any, schema: str, user: str, host: str, *args: Any, **kwargs: Any) -> Any:
        await by_hand_once(user)
        return await record(db, schema, user, host, *args, **kwargs)

    async def racing_set(db: Any, user: str, *args: Any, **kwargs: Any) -> None:
        await set_password(db, user, *args, **kwargs)
        if kwargs.get("hashed") is not None:  # its fingerprint recorded with it: nothing comes between
            await by_hand_once(user)

    monkeypatch.setattr(ownership, "record_fingerprint", racing)
    monkeypatch.setattr(dual_password, "set_password", racing_set)
    await kube_client.patch(
        SECRETS, "race-pw", {"stringData": {"password": second}}, PatchType.MERGE, namespace=namespace
    )

    async def hooked() -> bool:
        return bool(raced)

    await poll(hooked, "the operator set the changed password")
    event = await wait_for_event(kube_client, namespace, name, "PasswordRestored", limit=30)
    assert event["type"] == "Warning"

    async def restored() -> bool:
        return await logs_in(mysql, name, second) and not await logs_in(mysql, name, by_hand)

    await poll(restored, "the Secret's password set back")


async def test_a_new_account_s_password_changed_by_hand_right_after_create_user_is_set_back(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same between ``CREATE USER`` and the record of the new account's fingerprint (MySQL: created
    expired, a mark any password change lifts, so no hash is computed on the client; MariaDB: recorded
    with the claim, before the account exists)."""
    name = unique("race-new")
    first, by_hand = passwords.new(), passwords.new("by-hand")
    create = accounts.create
    raced: list[float] = []

    async def racing(db: Any, user: str, host: str, *args: Any, **kwargs: Any) -> None:
        await create(db, user, host, *args, **kwargs)
        if user == name and not raced:
            raced.append(time.monotonic())
            query = f"ALTER USER `{name}`@'%%' IDENTIFIED BY %s"
            await asyncio.to_thread(mysql_query, mysql, query, by_hand)

    monkeypatch.setattr(accounts, "create", racing)
    await create_secret(kube_client, namespace, "race-new-pw", {"password": first})
    await kube_client.create(DATABASE_USERS, database_user(name, "race-new-pw"), namespace)
    event = await wait_for_event(kube_client, namespace, name, "PasswordRestored", limit=30)
    assert event["type"] == "Warning"
    assert raced

    async def restored() -> bool:
        return await logs_in(mysql, name, first) and not await logs_in(mysql, name, by_hand)

    await poll(restored, "the Secret's password set back")
