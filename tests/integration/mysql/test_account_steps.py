"""The ownership and account steps against the real server: what one pass sends, and the CREATE race."""

from __future__ import annotations

from typing import Any, cast

import pytest

from dbuser_operator.api.v1alpha1 import API_VERSION, DatabaseUser
from dbuser_operator.controllers.account import AccountStep
from dbuser_operator.controllers.ownership import OwnershipStep
from dbuser_operator.controllers.steps import ConditionError, Context
from dbuser_operator.controllers.target import Target
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import Database
from dbuser_operator.mysql.ownership import owner_of
from dbuser_operator.runtime.informer import Informer
from tests.integration.mysql.support import Accounts, admin, login, login_error

pytestmark = pytest.mark.integration

SECRET = {"name": "app-password", "uid": "s-1", "resourceVersion": "1"}


class NoUsers:
    """The steps' view of the DatabaseUser cache: empty (no other resource exists)."""

    def get(self, key: object) -> None:
        return None


def context(user: str, uid: str = "0b5c2a52-1d0e-4a53-9d7b-4b8a6f1f0c11") -> Context:
    obj: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "DatabaseUser",
        "metadata": {"name": "app", "namespace": "team-a", "uid": uid, "generation": 1},
        "spec": {"user": user, "password": {"name": SECRET["name"], "key": "password"}},
    }
    ctx = Context(obj=obj, user=DatabaseUser.model_validate(obj), status={})
    ctx.password, ctx.secret = "ours", dict(SECRET)
    return ctx


def steps(db: Database, schema: str) -> tuple[OwnershipStep, AccountStep]:
    target = Target(db, schema)
    return OwnershipStep(target, cast(Informer, NoUsers())), AccountStep(target)


async def test_a_new_account_costs_four_statements(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str
) -> None:
    """One look (owner, existence, fingerprint), the claim, CREATE USER, the fingerprint."""
    user = accounts_made.track(accounts_made.name(), "%")
    ownership_step, account_step = steps(db, owned_schema)
    ctx = context(user)
    await ownership_step.target.server()  # read once per process, not per account
    await ownership_step.target.ensure_schema()  # created once per process
    read, written = db.statements_read, db.statements_written
    await ownership_step.ensure(ctx)
    await account_step.ensure(ctx)
    assert (db.statements_read - read, db.statements_written - written) == (1, 3)
    assert ctx.created
    assert login(mysql, user, "ours") == f"{user}@%"

    again = context(user)  # the next pass: one look, nothing written
    read, written = db.statements_read, db.statements_written
    await ownership_step.ensure(again)
    again.status["appliedSecret"] = dict(SECRET)
    await account_step.ensure(again)
    assert (db.statements_read - read, db.statements_written - written) == (1, 0)
    assert again.password_intact is True


async def test_an_account_made_by_hand_after_the_look_is_not_taken_over(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    ownership_step, account_step = steps(db, owned_schema)
    ctx = context(user)
    await ownership_step.ensure(ctx)  # claims: no account yet
    assert ctx.claimed
    assert ctx.account_exists is False

    admin(mysql, f"CREATE USER '{user}'@'%' IDENTIFIED BY 'theirs'")  # somebody else, in between

    with pytest.raises(ConditionError) as refused:
        await account_step.ensure(ctx)
    assert refused.value.reason == "AccountExists"
    assert refused.value.retry  # the next pass looks again
    assert await owner_of(db, owned_schema, user, "%") is None  # the claim is forgotten
    assert login(mysql, user, "theirs") == f"{user}@%"  # their password is left alone
    assert login_error(mysql, user, "ours") == 1045

    with pytest.raises(ConditionError) as next_pass:
        await ownership_step.ensure(context(user))
    assert next_pass.value.reason == "AccountExists"
    assert not next_pass.value.retry  # now it waits for the adopt annotation
