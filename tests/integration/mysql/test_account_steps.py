"""The ownership and account steps against the real server: what one pass sends, and the CREATE race."""

from __future__ import annotations

from typing import Any

import pytest

from dbuser_operator.api.v1alpha1 import API_VERSION, AppliedSecret, DatabaseUser, DatabaseUserStatus
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.steps.account import AccountStep
from dbuser_operator.controllers.databaseuser.steps.credentials import CredentialsStep
from dbuser_operator.controllers.databaseuser.steps.ownership import OwnershipStep
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.policy.gate import PolicyGate
from dbuser_operator.controllers.policy.namespaces import NamespaceLabels
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import Database
from dbuser_operator.mysql.bookkeeping.ownership import Owner, account, claim, owner_of
from tests.integration.mysql.support import Accounts, admin, login, login_error

pytestmark = pytest.mark.integration

SECRET = AppliedSecret(name="app-password", uid="s-1", resource_version="1")


class NoOwners:
    """The steps' view of the API server: no other resource exists (a recorded owner is gone)."""

    async def exists(self, owner: Owner) -> bool:
        return False


def context(user: str, handle: ServerHandle, uid: str = "0b5c2a52-1d0e-4a53-9d7b-4b8a6f1f0c11") -> Context:
    obj: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "DatabaseUser",
        "metadata": {"name": "app", "namespace": "team-a", "uid": uid, "generation": 1},
        "spec": {"user": user, "password": {"name": SECRET.name, "key": "password"}},
    }
    ctx = Context(obj=obj, user=DatabaseUser.model_validate(obj), status=DatabaseUserStatus())
    ctx.password, ctx.secret = "ours", SECRET
    ctx.server = handle
    return ctx


class AccountSteps:
    """The account step and, with no grants or roles to converge between them, the credentials step."""

    async def ensure(self, ctx: Context) -> None:
        await AccountStep().ensure(ctx)
        await CredentialsStep().ensure(ctx)


def steps(db: Database, schema: str) -> tuple[OwnershipStep, AccountSteps, ServerHandle]:
    no_policy = PolicyGate(NamespaceLabels(None))  # the settings' server: no policy to check
    return OwnershipStep(NoOwners(), no_policy), AccountSteps(), ServerHandle(db, schema)


@pytest.mark.parametrize("password", ["ours", "pässwörd ✓"])
async def test_a_new_account_costs_four_statements_and_two_on_mariadb(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str, password: str
) -> None:
    """A first pass: the claim (no look: it lands only while the account is absent), CREATE USER, the
    fingerprint (on MariaDB the claim records it: the default hash is unsalted, so known beforehand; on
    MySQL the account is created expired, then one read of its string and expiry, and the ALTER USER … AS
    that lifts the expiry and records the fingerprint in the account's attributes: no hash on the client).
    A later pass: one look, which finds the password intact."""
    user = accounts_made.track(accounts_made.name(), "%")
    ownership_step, account_step, handle = steps(db, owned_schema)
    ctx = context(user, handle)
    ctx.password = password
    server = await handle.server()  # read once per process, not per account
    await handle.ensure_schema()  # created once per process
    read, written = db.statements_read, db.statements_written
    await ownership_step.ensure(ctx)
    await account_step.ensure(ctx)
    expected = (0, 2) if server.flavour == "mariadb" else (1, 3)
    assert (db.statements_read - read, db.statements_written - written) == expected
    assert ctx.fingerprint_claimed is (server.flavour == "mariadb")
    assert ctx.created
    assert ctx.claimed
    assert login(mysql, user, password) == f"{user}@%"

    again = context(user, handle)  # the next pass (status written): one look, nothing written
    again.password = password
    again.status.observed_generation = 1
    read, written = db.statements_read, db.statements_written
    await ownership_step.ensure(again)
    again.status.applied_secret = SECRET
    await account_step.ensure(again)
    assert (db.statements_read - read, db.statements_written - written) == (1, 0)
    assert again.password_intact is True


async def test_an_account_made_by_hand_after_the_look_is_not_taken_over(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    ownership_step, account_step, handle = steps(db, owned_schema)
    ctx = context(user, handle)
    await ownership_step.ensure(ctx)  # claims: no account yet
    assert ctx.claimed
    assert ctx.account_exists is False

    admin(mysql, f"CREATE USER '{user}'@'%' IDENTIFIED BY 'theirs'")  # somebody else, in between

    with pytest.raises(ConditionError) as refused:
        await account_step.ensure(ctx)
    assert refused.value.reason == "AccountExists"
    assert refused.value.retry  # the next pass looks again
    assert await owner_of(db, owned_schema, account(user, "%")) is None  # the claim is forgotten
    assert login(mysql, user, "theirs") == f"{user}@%"  # their password is left alone
    assert login_error(mysql, user, "ours") == 1045

    with pytest.raises(ConditionError) as next_pass:
        await ownership_step.ensure(context(user, handle))
    assert next_pass.value.reason == "AccountExists"
    assert not next_pass.value.retry  # now it waits for the adopt annotation


def me(ctx: Context) -> Owner:
    metadata = ctx.user.metadata
    return Owner(metadata.uid or "", metadata.namespace or "", metadata.name or "")


async def test_a_row_of_an_earlier_pass_without_its_account_creates_the_account_once(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str
) -> None:
    """An earlier pass claimed, then crashed before CREATE USER: this pass did not claim, but creates."""
    user = accounts_made.track(accounts_made.name(), "%")
    ownership_step, account_step, handle = steps(db, owned_schema)
    ctx = context(user, handle)
    assert (await claim(db, owned_schema, account(user, "%"), me(ctx))).inserted  # the crashed pass's row
    await ownership_step.ensure(ctx)
    assert not ctx.claimed  # the row was there: not this pass's claim
    assert ctx.account_exists is False
    await account_step.ensure(ctx)
    assert ctx.created
    assert [(reason, message) for _, reason, message in ctx.events] == [
        ("AccountCreated", f"created account '{user}'@'%', claimed by an earlier pass")
    ]
    assert login(mysql, user, "ours") == f"{user}@%"

    again = context(user, handle)  # the next pass sees the account: no second CREATE USER
    again.status.applied_secret, again.status.observed_generation = SECRET, 1
    written = db.statements_written
    await ownership_step.ensure(again)
    await account_step.ensure(again)
    assert db.statements_written == written
    assert not again.created
    assert again.events == []


async def test_an_account_appearing_under_a_row_already_ours_is_observed_not_forgotten(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str
) -> None:
    """Another replica (or a late earlier pass) creates the account between this pass's look and its
    CREATE USER: the row was ours before this pass, so it is kept, and the live account gets the password."""
    user = accounts_made.track(accounts_made.name(), "%")
    ownership_step, account_step, handle = steps(db, owned_schema)
    ctx = context(user, handle)
    await claim(db, owned_schema, account(user, "%"), me(ctx))  # the other writer's claim, before this pass
    await ownership_step.ensure(ctx)
    assert not ctx.claimed
    assert ctx.account_exists is False

    admin(mysql, f"CREATE USER '{user}'@'%' IDENTIFIED BY 'stale'")  # the other writer's CREATE lands

    await account_step.ensure(ctx)
    assert await owner_of(db, owned_schema, account(user, "%")) == me(ctx)  # never forgotten
    assert not ctx.created  # not made by this pass: its grants and limits are read, not assumed
    assert [reason for _, reason, _ in ctx.events] == ["PasswordSet"]
    assert login(mysql, user, "ours") == f"{user}@%"  # observed, then set from the Secret
    assert login_error(mysql, user, "stale") == 1045
