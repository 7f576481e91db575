"""When a pass rolls the named workloads: its password changed, or the connection Secret got a new one."""

from __future__ import annotations

from typing import Any

import pytest

from dbuser_operator.api.v1alpha1 import DatabaseUser, DatabaseUserStatus
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.steps.rollout import rotated_in_this_pass


def context(stored: dict[str, Any], current: dict[str, Any]) -> Context:
    obj = {
        "apiVersion": "mysql.dbuser-operator.dev/v1alpha1",
        "kind": "DatabaseUser",
        "metadata": {"name": "app", "namespace": "ns"},
        "spec": {"password": {"name": "s", "key": "password"}},
        "status": stored,
    }
    user = DatabaseUser.model_validate(obj)
    return Context(obj=obj, user=user, status=DatabaseUserStatus.model_validate(current))


T1, T2 = "2026-11-26T10:00:00Z", "2026-11-26T11:00:00Z"


@pytest.mark.parametrize(
    ("stored", "current", "rolled"),
    [
        ({}, {}, False),
        ({"rotation": {"lastRotationTime": T1}}, {"rotation": {"lastRotationTime": T2}}, True),
        ({"rotation": {"lastRotationTime": T1}}, {"rotation": {"lastRotationTime": T1}}, False),
        ({"credentialVersion": 2}, {"credentialVersion": 3}, True),  # a pass that died set the password
        ({"credentialVersion": 2}, {"credentialVersion": 2}, False),  # a Secret edit with the same password
        ({}, {"credentialVersion": 1}, False),  # the connection Secret's first version: nothing to roll
    ],
)
def test_a_rollout_follows_a_new_password(
    stored: dict[str, Any], current: dict[str, Any], rolled: bool
) -> None:
    assert rotated_in_this_pass(context(stored, current)) is rolled
