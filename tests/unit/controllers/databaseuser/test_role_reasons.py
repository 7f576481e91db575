"""Which reason a DatabaseUser gets for the roles of spec.roles it could not be granted: RoleNotReady for a
DatabaseRole of ours that is only not Ready (or being deleted), RoleNotFound for one missing, on another
server or not owning its role; RoleNotFound wins when both kinds are named. Neither is retried."""

from __future__ import annotations

from typing import Any, cast

import pytest

from dbuser_operator.controllers.databaseuser.steps.roles import RolesStep, unavailable_roles
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey

ACCOUNT = "'app'@'%'"
UID = "0b5d6f3e-0000-4000-8000-000000000001"


class Cache:
    """The informer's ``get``, over a dict."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = {ObjectKey.of(obj): obj for obj in objects}

    def get(self, key: ObjectKey) -> dict[str, Any] | None:
        return self.objects.get(key)


def role(
    ready: str | None = "True", reason: str = "RoleReady", server: str | None = None, **metadata: Any
) -> dict[str, Any]:
    conditions = (
        []
        if ready is None
        else [
            {
                "type": "Ready",
                "status": ready,
                "reason": reason,
                "message": "m",
                "lastTransitionTime": "2026-11-30T00:00:00Z",
            }
        ]
    )
    spec: dict[str, Any] = {"privileges": []} | ({"serverRef": {"name": server}} if server else {})
    return {
        "metadata": {"name": "reader", "namespace": "team-a", "uid": UID, **metadata},
        "spec": spec,
        "status": {"conditions": conditions},
    }


@pytest.fixture
def owner(monkeypatch: pytest.MonkeyPatch) -> dict[str, ownership.Owner | None]:
    """The bookkeeping row of the role, as ``owner["reader"]`` says (the resource's UID by default)."""
    rows: dict[str, ownership.Owner | None] = {"reader": ownership.Owner(UID, "team-a", "reader")}

    async def owner_of(db: object, schema: str, entry: ownership.Entry) -> ownership.Owner | None:
        return rows.get(entry.key[0])

    monkeypatch.setattr(ownership, "owner_of", owner_of)  # as the step calls it
    return rows


async def resolve(*objects: dict[str, Any]) -> tuple[str | None, str]:
    step = RolesStep(cast("Informer", Cache(*objects)))
    return await step._resolve(ServerHandle(cast("Any", None), "bookkeeping"), "team-a", "reader")


@pytest.mark.usefixtures("owner")
async def test_a_ready_role_of_ours_is_granted() -> None:
    assert await resolve(role()) == ("reader", "")


@pytest.mark.usefixtures("owner")
@pytest.mark.parametrize(
    ("obj", "why"),
    [
        (
            role(ready="False", reason="PrivilegeNotAllowed"),
            "DatabaseRole reader is not Ready: PrivilegeNotAllowed",
        ),
        (role(ready=None), "DatabaseRole reader is not Ready: not reconciled yet"),
        (role(deletionTimestamp="2026-11-30T00:00:00Z"), "DatabaseRole reader is being deleted"),
    ],
)
async def test_a_role_of_ours_not_ready_is_kept_and_says_why(obj: dict[str, Any], why: str) -> None:
    """It still owns its MySQL role: the account keeps it (neither granted nor revoked), the reason waits."""
    assert await resolve(obj) == ("reader", why)


async def test_a_role_missing_foreign_or_not_owned_is_not_found(
    owner: dict[str, ownership.Owner | None],
) -> None:
    role_name, why = await resolve()
    assert (role_name, "no DatabaseRole reader in namespace team-a" in why) == (None, True)
    role_name, why = await resolve(role(server="main"))
    assert (role_name, "must be on the same server" in why) == (None, True)
    owner["reader"] = ownership.Owner("another-uid", "team-a", "reader")
    assert await resolve(role()) == (None, "DatabaseRole reader does not own a role reader")
    owner["reader"] = None
    # not owning wins over not Ready: the role made by hand (RoleExists) is not one the user may wait for
    assert await resolve(role(ready="False", reason="RoleExists")) == (
        None,
        "DatabaseRole reader does not own a role reader",
    )


def test_every_role_granted_is_no_condition() -> None:
    assert unavailable_roles(ACCOUNT, [], []) is None


def test_roles_of_ours_only_waiting_are_role_not_ready() -> None:
    error = unavailable_roles(
        ACCOUNT, [], ["a (DatabaseRole a is not Ready: X)", "b (DatabaseRole b is being deleted)"]
    )
    assert error is not None
    assert (error.reason, error.retry) == ("RoleNotReady", False)
    assert error.message == (
        "'app'@'%': waiting for role a (DatabaseRole a is not Ready: X); b (DatabaseRole b is being deleted)"
    )


def test_a_missing_role_is_role_not_found_and_wins_naming_the_others_too() -> None:
    error = unavailable_roles(ACCOUNT, ["gone (no DatabaseRole gone)"], [])
    assert error is not None
    assert (error.reason, error.retry, error.message) == (
        "RoleNotFound",
        False,
        "'app'@'%': missing role gone (no DatabaseRole gone)",
    )
    error = unavailable_roles(
        ACCOUNT, ["gone (no DatabaseRole gone)"], ["a (DatabaseRole a is not Ready: X)"]
    )
    assert error is not None
    assert (error.reason, error.retry) == ("RoleNotFound", False)
    assert error.message == (
        "'app'@'%': missing role gone (no DatabaseRole gone); "
        "waiting for role a (DatabaseRole a is not Ready: X)"
    )
