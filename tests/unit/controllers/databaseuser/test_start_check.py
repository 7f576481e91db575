"""The start check: a converged key's first turn is skipped, once; what the read cannot vouch for is not."""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from dbuser_operator.api.v1alpha1 import DatabaseUser, DatabaseUserStatus
from dbuser_operator.controllers.databaseuser import start_check
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.reconciler import DatabaseUserReconciler
from dbuser_operator.controllers.databaseuser.role_drift import RoleDriftCheck
from dbuser_operator.controllers.databaseuser.start_check import StartCheck
from dbuser_operator.controllers.databaseuser.steps.password import PasswordStep
from dbuser_operator.mysql.accounts import roles as mysql_roles
from dbuser_operator.mysql.bookkeeping.inventory import AccountState
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey
from tests.unit.controllers.databaseuser.test_connection_secret_converged import (
    PASSWORD,
    user_with_connection,
    written,
)
from tests.unit.controllers.databaseuser.test_converged import account, converged, secret

KEY = ObjectKey("team-a", "app")


class Handle:
    """The part of a ServerHandle the check uses."""

    db = None
    schema = "dbuser_operator"

    async def ensure_schema(self) -> None:
        """Nothing to create."""

    async def server(self) -> ServerInfo:
        return ServerInfo(flavour="mysql", version=(9, 7, 4))


class Servers:
    async def resolve(self, obj: dict[str, Any]) -> tuple[None, Handle]:
        return None, Handle()


class Scope:
    def holds(self, obj: dict[str, Any]) -> bool:
        return bool(obj["metadata"].get("finalizers"))


class Reconciler:
    """The part of the DatabaseUser reconciler the check uses (no check step refuses)."""

    steps: list[Any] = []  # noqa: RUF012 - none

    def __init__(self) -> None:
        self.scope, self.servers = Scope(), Servers()

    def parse(self, obj: dict[str, Any], *, read_only: bool = False) -> Context:
        status = DatabaseUserStatus.model_validate(obj.get("status") or {})
        return Context(obj=obj, user=DatabaseUser.model_validate(obj), status=status)

    async def bind(self, ctx: Context) -> tuple[None, Handle]:
        return None, Handle()

    def resolve_refs(self, ctx: Context) -> None:
        """No databaseRefs here."""


@dataclass
class Cache:
    """An informer's ``get`` and ``store``."""

    objects: dict[ObjectKey, dict[str, Any]] = field(default_factory=dict)

    def get(self, key: ObjectKey) -> dict[str, Any] | None:
        return self.objects.get(key)

    @property
    def store(self) -> list[dict[str, Any]]:
        return list(self.objects.values())


@dataclass
class Setup:
    check: StartCheck
    users: Cache
    secrets: Cache

    async def turn(self) -> bool:
        """One turn of the key; whether the reconcile runs."""
        return not await self.check.converged(KEY)


def setup(monkeypatch: pytest.MonkeyPatch, *, fails: bool = False, breaks: bool = False) -> Setup:
    obj = converged()
    user = DatabaseUser.model_validate(obj)

    async def inventory(*_: Any) -> dict[tuple[str, str], AccountState]:
        if fails:
            raise MySQLError("server down")
        if breaks:
            raise KeyError("a bug")
        return {("app", "%"): account(user)}

    async def every_grant(*_: Any) -> dict[Any, Any]:
        return {}

    monkeypatch.setattr(start_check, "inventory", inventory)
    monkeypatch.setattr(mysql_roles, "every_grant", every_grant)
    users, secrets, roles = Cache({KEY: obj}), Cache({ObjectKey("team-a", "app-password"): secret()}), Cache()
    role_drift = RoleDriftCheck(lambda: {}, cast(Informer, users), cast(Informer, roles), cast(Any, None), 0)
    check = StartCheck(
        cast(DatabaseUserReconciler, Reconciler()), cast(Informer, users), cast(Informer, secrets), role_drift
    )
    return Setup(check, users, secrets)


async def test_a_converged_key_is_skipped_on_its_first_turn_only(monkeypatch: pytest.MonkeyPatch) -> None:
    running = setup(monkeypatch)
    assert not await running.turn()  # found converged: no reconcile
    assert running.check.skipped == 1
    assert await running.turn()  # a later turn (an event, a requeue) reconciles as always
    assert running.check.skipped == 1


async def test_a_server_that_does_not_answer_leaves_its_resources_to_the_reconcile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    running = setup(monkeypatch, fails=True)
    assert await running.turn()
    assert running.check.skipped == 0


async def test_a_secret_changed_after_the_read_is_applied(monkeypatch: pytest.MonkeyPatch) -> None:
    running = setup(monkeypatch)
    await running.check.converged(ObjectKey("team-a", "other"))  # the read happens at the first turn
    running.secrets.objects[ObjectKey("team-a", "app-password")]["metadata"]["resourceVersion"] = "8"
    assert await running.turn()
    assert running.check.skipped == 0


async def test_a_spec_edited_after_the_read_is_applied(monkeypatch: pytest.MonkeyPatch) -> None:
    running = setup(monkeypatch)
    await running.check.converged(ObjectKey("team-a", "other"))
    running.users.objects[KEY]["metadata"]["generation"] = 4
    assert await running.turn()


async def test_an_unexpected_failure_of_the_read_reconciles_everything(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    running = setup(monkeypatch, breaks=True)
    assert await running.turn()
    assert running.check.skipped == 0


async def test_a_connection_secret_in_line_is_skipped_and_one_deleted_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    step, secrets, obj = await written(user_with_connection())
    running = setup(monkeypatch)
    running.users.objects[KEY] = obj
    password = running.secrets.objects[ObjectKey("team-a", "app-password")]
    password["data"] = {"password": base64.b64encode(PASSWORD.encode()).decode()}
    reconciler = cast(Reconciler, running.check.reconciler)
    reconciler.steps = [PasswordStep(cast(Informer, running.secrets)), step]
    assert not await running.turn()  # the password step read the password; the Secret holds it
    assert running.check.skipped == 1

    running = setup(monkeypatch)
    running.users.objects[KEY] = obj
    running.secrets.objects[ObjectKey("team-a", "app-password")]["data"] = password["data"]
    cast(Reconciler, running.check.reconciler).steps = [PasswordStep(cast(Informer, running.secrets)), step]
    del secrets.store["app-connection"]  # deleted while no leader watched
    assert await running.turn()
    assert running.check.skipped == 0


async def test_a_turn_decided_from_memory_lets_the_event_loop_run(monkeypatch: pytest.MonkeyPatch) -> None:
    running = setup(monkeypatch)
    await running.check.converged(ObjectKey("team-a", "other"))  # the read happens at the first turn
    ran: list[bool] = []
    asyncio.get_running_loop().call_soon(ran.append, True)  # runs only once the turn gives the loop a go
    assert not await running.turn()
    assert ran  # a worker going through thousands of converged keys never holds the loop for all of them
