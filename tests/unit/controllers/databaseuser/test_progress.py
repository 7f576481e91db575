"""The Progressing condition and when pending work leaves Ready alone (issue 39): the decision, pure."""

from __future__ import annotations

from typing import Any

import pytest

from dbuser_operator.api.v1alpha1 import Condition, DatabaseUser, DatabaseUserStatus, RotationStatus
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.progress import (
    PROGRESSING,
    keeps_ready,
    progressing,
    record,
)
from dbuser_operator.controllers.kit.errors import ConditionError, WorkPending

PENDING = WorkPending("TemplatesPending", "connection Secret app-db: its templates are queued to render")
FAILED = ConditionError("AccessDenied", "the server refused")
BROKEN_MEANWHILE = WorkPending("TemplatesPending", "queued", still_serves=False)


def condition(type_: str, status: str, reason: str, generation: int = 1) -> Condition:
    return Condition.model_validate(
        {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": "",
            "observedGeneration": generation,
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    )


def context(*conditions: Condition, generation: int = 1, rotation: RotationStatus | None = None) -> Context:
    obj: dict[str, Any] = {
        "apiVersion": "mysql.dbuser-operator.dev/v1alpha1",
        "kind": "DatabaseUser",
        "metadata": {"name": "app", "namespace": "ns", "generation": generation, "resourceVersion": "7"},
        "spec": {"password": {"name": "app-pw", "key": "password"}},
    }
    status = DatabaseUserStatus(conditions=list(conditions), rotation=rotation)
    return Context(obj=obj, user=DatabaseUser.model_validate(obj), status=status)


def test_pending_work_is_progressing_with_its_reason() -> None:
    assert progressing(DatabaseUserStatus(), PENDING) == ("True", "TemplatesPending", PENDING.message)


def test_a_retained_rotation_is_progressing_until_discarded() -> None:
    retained = DatabaseUserStatus(
        rotation=RotationStatus(phase="Retained", retained_since="2026-01-01T00:00:00Z")
    )
    status, reason, message = progressing(retained, None)
    assert (status, reason) == ("True", "RotationRetained")
    assert "retained since 2026-01-01T00:00:00Z" in message
    discarded = DatabaseUserStatus(rotation=RotationStatus(phase="Discarded"))
    assert progressing(discarded, None)[:2] == ("False", "Settled")


@pytest.mark.parametrize("error", [None, FAILED])
def test_nothing_pending_is_settled(error: ConditionError | None) -> None:
    assert progressing(DatabaseUserStatus(), error)[:2] == ("False", "Settled")


def test_pending_work_keeps_a_serving_account_ready() -> None:
    status = DatabaseUserStatus(conditions=[condition("Ready", "True", "AccountReady")])
    assert keeps_ready(status, None, PENDING)
    assert keeps_ready(status, True, PENDING)


@pytest.mark.parametrize(
    ("conditions", "account_exists", "error"),
    [
        ([], None, PENDING),  # never Ready: Ready=False TemplatesPending until the first render
        ([condition("Ready", "False", "TemplatesPending")], True, PENDING),
        ([condition("Ready", "True", "AccountReady")], False, PENDING),  # the account was found gone
        ([condition("Ready", "True", "AccountReady")], True, FAILED),  # a failure is a failure
        # the password changed at once (Immediate): the connection Secret's no longer logs in meanwhile
        ([condition("Ready", "True", "AccountReady")], True, BROKEN_MEANWHILE),
    ],
)
def test_otherwise_ready_follows_the_error(
    conditions: list[Condition], account_exists: bool | None, error: ConditionError
) -> None:
    status = DatabaseUserStatus(conditions=conditions)
    assert not keeps_ready(status, account_exists, error)


def test_record_leaves_ready_of_its_generation_and_sets_progressing_of_the_current_one() -> None:
    ctx = context(condition("Ready", "True", "AccountReady", generation=1), generation=2)
    assert record(ctx, PENDING)
    ready, progress = ctx.status.conditions
    assert (ready.type, ready.status, ready.observed_generation) == ("Ready", "True", 1)
    assert (progress.type, progress.status, progress.reason) == (PROGRESSING, "True", "TemplatesPending")
    assert progress.observed_generation == 2


def test_a_settled_pass_writes_nothing_new() -> None:
    """Status is written only when it changed: the second pass's Progressing is the first's."""
    ctx = context(condition("Ready", "True", "AccountReady"))
    assert not record(ctx)
    first = ctx.status.to_api(None)
    assert not record(ctx)
    assert ctx.status.to_api(None) == first
    assert [c.type for c in ctx.status.conditions] == ["Ready", PROGRESSING]


def test_a_first_failure_puts_ready_before_progressing() -> None:
    """A resource with no condition yet gets Ready first (readers that take the first condition)."""
    ctx = context()
    assert not record(ctx, FAILED)
    assert [(c.type, c.status, c.reason) for c in ctx.status.conditions] == [
        ("Ready", "False", "AccessDenied"),
        (PROGRESSING, "False", "Settled"),
    ]
