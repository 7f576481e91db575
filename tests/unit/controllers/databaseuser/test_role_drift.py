"""The role drift check's decision, from the cache and what the server reported (no server needed)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from dbuser_operator.api.v1alpha1 import DatabaseUser
from dbuser_operator.controllers.databaseuser.role_drift import RoleDriftCheck
from dbuser_operator.controllers.kit.resources import DATABASE_ROLES, DATABASE_USERS
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.mysql.accounts.roles import Role
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey
from dbuser_operator.runtime.workqueue import RateLimitingQueue

MYSQL = ServerInfo("mysql", (9, 7, 4))
MARIADB = ServerInfo("mariadb", (11, 8, 9))


def role_object(name: str, *, ready: bool = True, role: str | None = None) -> dict[str, Any]:
    condition = {
        "type": "Ready",
        "status": "True" if ready else "False",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "reason": "RoleReady" if ready else "RoleExists",
        "message": "",
    }
    spec = {"role": role} if role else {}
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": spec,
        "status": {"conditions": [condition]},
    }


def check(*roles: dict[str, Any]) -> RoleDriftCheck:
    informer = Informer(cast(KubeClient, None), DATABASE_ROLES)
    for obj in roles:
        informer.store.put(obj)
    queue = cast(RateLimitingQueue[ObjectKey], None)
    return RoleDriftCheck(dict[str, ServerHandle], informer, informer, queue, 0)


def user(roles: list[str], defaults: list[str]) -> DatabaseUser:
    return DatabaseUser.model_validate(
        {
            "metadata": {"name": "app", "namespace": "ns"},
            "spec": {"password": {"name": "s", "key": "k"}, "roles": roles, "defaultRoles": defaults},
        }
    )


def mysql_role(name: str) -> Role:
    return (name, "%")


@pytest.mark.parametrize(
    ("held", "defaults", "drifted"),
    [
        (set(), set(), True),  # the wanted role is missing
        ({mysql_role("reader")}, {mysql_role("reader")}, False),
        ({mysql_role("reader"), mysql_role("byhand")}, {mysql_role("reader")}, True),  # an extra role
        ({mysql_role("reader")}, set(), True),  # the default role was unset
    ],
)
def test_a_ready_role_is_compared_exactly(held: set[Role], defaults: set[Role], drifted: bool) -> None:
    assert (
        check(role_object("reader")).drifted(user(["reader"], ["reader"]), held, defaults, MYSQL) is drifted
    )


def test_a_role_not_ready_may_be_held_or_not() -> None:
    drift = check(role_object("reader", ready=False, role="app_reader"))
    for held in (set(), {mysql_role("app_reader")}):
        assert not drift.drifted(user(["reader"], []), held, set(), MYSQL)


def test_a_missing_database_role_is_not_repaired_but_a_hand_granted_role_is() -> None:
    drift = check()
    assert not drift.drifted(user(["gone"], []), set(), set(), MYSQL)
    assert drift.drifted(user(["gone"], []), {mysql_role("byhand")}, set(), MYSQL)


def test_mariadb_roles_have_no_host_and_two_defaults_are_left_to_the_condition() -> None:
    drift = check(role_object("a"), role_object("b"))
    held = {("a", ""), ("b", "")}
    assert not drift.drifted(user(["a", "b"], ["a", "b"]), held, set(), MARIADB)
    assert drift.drifted(user(["a", "b"], ["a"]), held, set(), MARIADB)
    assert not drift.drifted(user(["a", "b"], ["a"]), held, {("a", "")}, MARIADB)


class FakeHandle:
    """A server handle whose server is known (no connection)."""

    db = None

    async def server(self) -> ServerInfo:
        return MYSQL


async def test_the_check_parses_only_users_that_name_or_hold_a_role(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user naming no role is compared only when its name holds one (a role granted by hand is still
    found); the others are skipped before their parse."""
    users = Informer(cast(KubeClient, None), DATABASE_USERS)
    for name, spec in {
        "plain": {},  # names no role, holds none: skipped
        "byhand": {"user": "byhand_user"},  # names no role, holds one granted by hand: drifted
        "invalid": {"roles": "not-a-list"},  # names something: parsed (and skipped as invalid)
    }.items():
        users.store.put({"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": spec})
    live = {("byhand_user", "%"): ({mysql_role("dba")}, set[Role]())}

    async def every_grant(_db: object, _server: ServerInfo) -> dict[tuple[str, str], Any]:
        return live

    parsed: list[str] = []
    validate = DatabaseUser.model_validate

    def counting(obj: dict[str, Any]) -> DatabaseUser:
        parsed.append(obj["metadata"]["name"])
        return validate({**obj, "spec": {"password": {"name": "s", "key": "k"}, **obj["spec"]}})

    monkeypatch.setattr("dbuser_operator.mysql.accounts.roles.every_grant", every_grant)
    monkeypatch.setattr(DatabaseUser, "model_validate", counting)
    drift = RoleDriftCheck(dict, users, Informer(cast(KubeClient, None), DATABASE_ROLES), cast(Any, None), 0)
    drifted = await drift._check_server("", cast(ServerHandle, FakeHandle()))
    assert drifted == [ObjectKey("ns", "byhand")]
    assert sorted(parsed) == ["byhand", "invalid"]
