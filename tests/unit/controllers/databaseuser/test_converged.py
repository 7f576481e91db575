"""The first pass's decision: a converged DatabaseUser is skipped; each reason to reconcile one is found."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from dbuser_operator import __version__
from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION, DatabaseUser, DatabaseUserStatus
from dbuser_operator.controllers.databaseuser.converged import (
    CONVERGED,
    Found,
    why_reconcile,
    why_reconcile_roles,
    why_reconcile_secret,
    why_reconcile_spec,
)
from dbuser_operator.controllers.databaseuser.steps.limits import desired_limits
from dbuser_operator.controllers.kit.grants import desired_grants
from dbuser_operator.mysql.accounts.lock_policy import LockPolicy
from dbuser_operator.mysql.bookkeeping.inventory import AccountState
from dbuser_operator.mysql.bookkeeping.ownership import Owner
from dbuser_operator.mysql.grants import Grant
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.runtime.resources import ObjectKey

MYSQL = ServerInfo(flavour="mysql", version=(9, 7, 4))
UID = "uid-app"


def converged() -> dict[str, Any]:
    """A DatabaseUser as the last leader left it: Ready at its generation, its Secret applied."""
    ready = {"type": "Ready", "status": "True", "reason": "Ready", "observedGeneration": 3}
    progressing = {"type": "Progressing", "status": "False", "reason": "Settled", "observedGeneration": 3}
    for condition in (ready, progressing):
        condition |= {"message": "", "lastTransitionTime": "2026-11-29T00:00:00Z"}
    return {
        "apiVersion": "mysql.dbuser-operator.dev/v1alpha1",
        "kind": "DatabaseUser",
        "metadata": {
            "name": "app",
            "namespace": "team-a",
            "uid": UID,
            "generation": 3,
            "resourceVersion": "42",
            "finalizers": ["mysql.dbuser-operator.dev/finalizer"],
        },
        "spec": {
            "password": {"name": "app-password", "key": "password"},
            "privileges": [{"privileges": ["SELECT"], "database": "bench"}],
        },
        "status": {
            "conditions": [ready, progressing],
            "observedGeneration": 3,
            "operatorVersion": __version__,
            "user": "app",
            "host": "%",
            "hosts": ["%"],
            "appliedSecret": {"name": "app-password", "uid": "uid-secret", "resourceVersion": "7"},
        },
    }


def secret() -> dict[str, Any]:
    return {
        "metadata": {
            "name": "app-password",
            "namespace": "team-a",
            "uid": "uid-secret",
            "resourceVersion": "7",
        }
    }


def account(user: DatabaseUser) -> AccountState:
    """The account the last pass left: what the spec asks, the fingerprint intact."""
    grants = frozenset(desired_grants(user.spec.privileges))
    return AccountState(
        Owner(UID, "team-a", "app"), True, desired_limits(user.spec, None), True, grants, policy=LockPolicy()
    )


def decide(
    obj: dict[str, Any], state: AccountState | None = None, *, roles_differ: bool = False
) -> str | None:
    """The whole decision, as the start check makes it for ``obj``."""
    user = DatabaseUser.model_validate(obj)
    status = DatabaseUserStatus.model_validate(obj["status"])
    reason = why_reconcile_spec(obj, user, status, holds_finalizer=bool(obj["metadata"].get("finalizers")))
    reason = reason or why_reconcile_secret(status, secret())
    found = Found(MYSQL, {"%": account(user) if state is None else state}, roles_differ)
    return reason or why_reconcile(obj, user, found)


def test_a_converged_resource_is_skipped() -> None:
    assert decide(converged()) is CONVERGED


def changed(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    obj = copy.deepcopy(converged())
    change(obj)
    return obj


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = obj
        for part in parents:
            target = target.setdefault(part, {})
        target[last] = value

    return change


def _ready(status: str = "True", generation: int = 3) -> Callable[[dict[str, Any]], None]:
    def change(obj: dict[str, Any]) -> None:
        obj["status"]["conditions"][0] |= {"status": status, "observedGeneration": generation}

    return change


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_set("metadata.deletionTimestamp", "2026-11-29T00:00:00Z"), "deleting"),
        (_set("metadata.finalizers", []), "no finalizer"),
        (_set("spec.managementPolicy", "Observe"), "managementPolicy Observe"),
        (_set("spec.managementPolicy", "Paused"), "managementPolicy Paused"),
        (_set("metadata.annotations", {ADOPT_ANNOTATION: "true"}), "adopting"),
        (_ready("False"), "not Ready"),
        (_ready(generation=2), "not Ready at its generation"),
        (_set("metadata.generation", 4), "not Ready at its generation"),  # a spec edited while down
        (_set("status.observedGeneration", 2), "not Ready at its generation"),
        (_set("status.operatorVersion", "0.0.1"), "written by another operator version"),  # upgraded
        (_set("status.operatorVersion", None), "written by another operator version"),
        (lambda obj: obj["status"]["conditions"][1].update(status="True"), "progressing"),
        (
            lambda obj: obj["spec"].update(
                password=None, generatedPassword={"secretName": "generated", "length": 32}
            ),
            "no password Secret (generated, or none)",
        ),
        (_set("spec.authentication", {"plugin": "caching_sha2_password"}), "authentication"),
        (_set("spec.rotation", {"period": "720h"}), "scheduled rotation"),
        (_set("status.rotation", {"phase": "Retained"}), "rotation in flight"),
        (_set("spec.account", {"expiresAt": "2030-01-01T00:00:00Z"}), "expiresAt"),
        (_set("spec.connectionSecret", {"name": "app-connection"}), "connection Secret renamed"),  # new
        (_set("status.connectionSecret", "app-connection"), "connection Secret renamed"),  # one to delete
        (_set("spec.hosts", ["10.0.0.%"]), "hosts changed"),
        (_set("status.hosts", ["%", "old.example"]), "hosts changed"),  # a host still to drop
        (_set("status.appliedSecret.resourceVersion", "6"), "password Secret changed"),  # edited while down
        (_set("status.appliedSecret.uid", "uid-old"), "password Secret changed"),  # recreated
        (_set("status.appliedSecret", None), "password Secret changed"),
    ],
)
def test_what_the_caches_tell_is_a_reason_to_reconcile(
    change: Callable[[dict[str, Any]], None], reason: str
) -> None:
    assert decide(changed(change)) == reason


def test_a_client_certificate_is_reconciled() -> None:
    obj = changed(
        _set(
            "spec.tls", {"subject": "/CN=app", "certificate": {"issuerRef": {"name": "ca", "kind": "Issuer"}}}
        )
    )
    assert decide(obj) == "client certificate"


def test_a_missing_secret_is_a_reason_to_reconcile() -> None:
    status = DatabaseUserStatus.model_validate(converged()["status"])
    assert why_reconcile_secret(status, None) == "password Secret changed"


def state_changed(**changes: Any) -> str | None:
    user = DatabaseUser.model_validate(converged())
    return decide(converged(), replace(account(user), **changes))


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"present": False}, "account drifted"),  # dropped by hand
        ({"password_intact": False}, "account drifted"),  # its password set by hand
        ({"password_intact": None}, "account drifted"),  # no fingerprint to compare with
        ({"grants": frozenset()}, "account drifted"),  # a grant revoked by hand
        ({"limits": None}, "account drifted"),
        ({"policy": LockPolicy(locked=True)}, "account drifted"),  # locked by hand
        ({"policy": None}, "account drifted"),  # not read
        ({"owner": Owner("uid-other", "team-a", "app")}, "account not owned"),
    ],
)
def test_what_the_inventory_finds_is_a_reason_to_reconcile(changes: dict[str, Any], reason: str) -> None:
    assert state_changed(**changes) == reason


def test_an_extra_grant_is_a_reason_to_reconcile() -> None:
    user = DatabaseUser.model_validate(converged())
    state = account(user)
    state = replace(state, grants=state.grants | {Grant.observed(["INSERT"], "other")})  # granted by hand
    assert decide(converged(), state) == "account drifted"


def test_an_account_missing_from_the_inventory_or_an_unread_server_is_reconciled() -> None:
    obj = converged()
    user = DatabaseUser.model_validate(obj)
    assert why_reconcile(obj, user, Found(MYSQL, {}, False)) == "account not owned"
    assert why_reconcile(obj, user, None) == "server not read"


def test_roles_held_otherwise_are_a_reason_to_reconcile() -> None:
    assert decide(converged(), roles_differ=True) == "roles differ"


def a_role(ready: str = "True", **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "reader", "namespace": "team-a", **meta},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


@pytest.mark.parametrize(
    ("role", "reason"),
    [
        (a_role(), CONVERGED),
        (None, "role not Ready"),
        (a_role("False"), "role not Ready"),
        (a_role(deletionTimestamp="2026-11-29T00:00:00Z"), "role not Ready"),
    ],
)
def test_a_role_it_names_must_be_ready(role: dict[str, Any] | None, reason: str | None) -> None:
    obj = changed(_set("spec.roles", ["reader"]))
    user = DatabaseUser.model_validate(obj)

    def lookup(key: ObjectKey) -> dict[str, Any] | None:
        assert key == ObjectKey("team-a", "reader")
        return role

    assert why_reconcile_roles(obj, user, lookup) == reason
