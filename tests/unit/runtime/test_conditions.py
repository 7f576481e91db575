"""Status conditions follow apimachinery's meta.SetStatusCondition."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from dbuser_operator.runtime.conditions import (
    MAX_MESSAGE_LENGTH,
    find_condition,
    format_time,
    is_false,
    is_true,
    remove_condition,
    set_condition,
)

T0 = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)


def ready(conditions: list[dict[str, Any]], status: str = "True", **changes: Any) -> bool:
    arguments: dict[str, Any] = {
        "reason": "Reconciled",
        "message": "all good",
        "observed_generation": 1,
        "now": T0,
    }
    arguments.update(changes)
    return set_condition(conditions, "Ready", status, **arguments)


def test_a_new_condition_is_appended_with_the_transition_time() -> None:
    conditions: list[dict[str, Any]] = []

    assert ready(conditions)

    assert conditions == [
        {
            "type": "Ready",
            "status": "True",
            "observedGeneration": 1,
            "lastTransitionTime": "2026-01-02T03:04:05Z",
            "reason": "Reconciled",
            "message": "all good",
        }
    ]


def test_a_status_change_moves_the_transition_time() -> None:
    conditions: list[dict[str, Any]] = []
    ready(conditions)

    assert ready(conditions, "False", reason="Failed", message="boom", now=T1)

    assert conditions[0]["status"] == "False"
    assert conditions[0]["lastTransitionTime"] == "2026-01-02T03:09:05Z"
    assert (conditions[0]["reason"], conditions[0]["message"]) == ("Failed", "boom")


@pytest.mark.parametrize(
    "changes",
    [
        {"reason": "StillReconciled"},
        {"message": "still good"},
        {"observed_generation": 2},
        {"observed_generation": None},
    ],
)
def test_other_changes_keep_the_transition_time(changes: dict[str, Any]) -> None:
    conditions: list[dict[str, Any]] = []
    ready(conditions)

    assert ready(conditions, now=T1, **changes)

    condition = conditions[0]
    assert condition["lastTransitionTime"] == "2026-01-02T03:04:05Z"
    assert condition["reason"] == changes.get("reason", "Reconciled")
    assert condition["message"] == changes.get("message", "all good")
    assert condition.get("observedGeneration") == changes.get("observed_generation", 1)


def test_an_identical_condition_changes_nothing() -> None:
    conditions: list[dict[str, Any]] = []
    ready(conditions)
    before = [dict(condition) for condition in conditions]

    assert not ready(conditions, now=T1)

    assert conditions == before


def test_an_unknown_generation_is_omitted() -> None:
    conditions: list[dict[str, Any]] = []

    ready(conditions, observed_generation=None)

    assert "observedGeneration" not in conditions[0]
    assert not ready(conditions, observed_generation=None, now=T1)


def test_the_order_of_conditions_is_stable() -> None:
    conditions: list[dict[str, Any]] = []
    for type_ in ("Ready", "Synced", "example.com/Degraded"):
        set_condition(conditions, type_, "Unknown", "Pending", "", 1, T0)

    set_condition(conditions, "Synced", "True", "Done", "", 2, T1)
    set_condition(conditions, "Ready", "False", "Failed", "x", 2, T1)

    assert [c["type"] for c in conditions] == ["Ready", "Synced", "example.com/Degraded"]


def test_find_and_status_helpers() -> None:
    conditions: list[dict[str, Any]] = []
    set_condition(conditions, "Ready", "True", "Reconciled", "", 1, T0)
    set_condition(conditions, "Degraded", "False", "AsExpected", "", 1, T0)

    found = find_condition(conditions, "Ready")
    assert found is not None
    assert found["reason"] == "Reconciled"
    assert find_condition(conditions, "Missing") is None
    assert find_condition(None, "Ready") is None
    assert is_true(conditions, "Ready")
    assert not is_false(conditions, "Ready")
    assert is_false(conditions, "Degraded")
    assert not is_true(conditions, "Degraded")
    assert not is_true(conditions, "Missing")
    assert not is_false(conditions, "Missing")


def test_remove_condition() -> None:
    conditions: list[dict[str, Any]] = []
    set_condition(conditions, "Ready", "True", "Reconciled", "", 1, T0)
    set_condition(conditions, "Synced", "True", "Reconciled", "", 1, T0)

    assert remove_condition(conditions, "Ready")
    assert not remove_condition(conditions, "Ready")
    assert [c["type"] for c in conditions] == ["Synced"]


@pytest.mark.parametrize("reason", ["A", "Reconciled", "Secret_Missing", "a,b:c", "Retry2"])
def test_valid_reasons(reason: str) -> None:
    assert set_condition([], "Ready", "True", reason, "", None, T0)


@pytest.mark.parametrize(
    "reason",
    [
        "",
        "Failed\n",
        "1Failed",
        "_Failed",
        "Not Found",
        "Failed:",
        "Failed,",
        "Failed-Again",
        "Ünicode",
        "A" * 1025,
    ],
)
def test_invalid_reasons_raise(reason: str) -> None:
    conditions: list[dict[str, Any]] = []
    with pytest.raises(ValueError, match="reason"):
        set_condition(conditions, "Ready", "True", reason, "", None, T0)
    assert conditions == []


@pytest.mark.parametrize(
    "type_", ["", "Ready\n", "Ready!", "-Ready", "Ready ", "Example.com/Ready", "a/" * 2 + "Ready"]
)
def test_invalid_types_raise(type_: str) -> None:
    with pytest.raises(ValueError, match="type"):
        set_condition([], type_, "True", "Reconciled", "", None, T0)


@pytest.mark.parametrize("status", ["true", "Yes", ""])
def test_invalid_statuses_raise(status: str) -> None:
    with pytest.raises(ValueError, match="status"):
        set_condition([], "Ready", status, "Reconciled", "", None, T0)


def test_a_negative_generation_raises() -> None:
    with pytest.raises(ValueError, match="generation"):
        set_condition([], "Ready", "True", "Reconciled", "", -1, T0)


def test_a_long_message_is_truncated() -> None:
    conditions: list[dict[str, Any]] = []

    set_condition(conditions, "Ready", "False", "Failed", "x" * (MAX_MESSAGE_LENGTH + 10), 1, T0)

    assert conditions[0]["message"] == "x" * MAX_MESSAGE_LENGTH
    assert not set_condition(conditions, "Ready", "False", "Failed", "x" * (MAX_MESSAGE_LENGTH + 20), 1, T1)


def test_times_are_utc_whole_seconds() -> None:
    assert format_time(datetime(2026, 1, 2, 5, 4, 5, 999999, tzinfo=timezone(timedelta(hours=2)))) == (
        "2026-01-02T03:04:05Z"
    )
    assert format_time(datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05Z"  # naive is UTC
    assert format_time().endswith("Z")
