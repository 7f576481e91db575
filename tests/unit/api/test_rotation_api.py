"""spec.rotation and status.rotation: defaults, durations, and what the schema refuses."""

from __future__ import annotations

import pydantic
import pytest

from dbuser_operator.api.duration import parse_duration
from dbuser_operator.api.v1alpha1 import DatabaseUser, DatabaseUserStatus


def _user(**spec: object) -> DatabaseUser:
    return DatabaseUser.model_validate(
        {"metadata": {"name": "app"}, "spec": {"password": {"name": "s", "key": "password"}, **spec}}
    )


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("720h", 2592000.0), ("5m", 300.0), ("1h30m", 5400.0), ("90s", 90.0), ("250ms", 0.25), ("1.5h", 5400.0)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "-5m", "5d", "1h 30m", "m5"])
def test_not_durations(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


def test_rotation_defaults() -> None:
    assert _user().spec.rotation is None
    rotation = _user(rotation={}).spec.rotation
    assert rotation is not None
    assert (rotation.strategy, rotation.grace_period, rotation.max_wait, rotation.wait_for_consumers) == (
        None,
        "5m",
        "1h",
        True,
    )


def test_rotation_refuses_bad_values() -> None:
    with pytest.raises(pydantic.ValidationError):
        _user(rotation={"strategy": "Later"})
    with pytest.raises(pydantic.ValidationError):
        _user(rotation={"gracePeriod": "five minutes"})
    with pytest.raises(pydantic.ValidationError):
        _user(rotation={"waitForConsumers": "false"})


def test_rotation_status_round_trip() -> None:
    status = DatabaseUserStatus.model_validate(
        {
            "rotation": {
                "phase": "Retained",
                "strategy": "DualPassword",
                "retainedSince": "2026-01-01T00:00:00Z",
            }
        }
    )
    assert status.to_api()["rotation"] == {
        "phase": "Retained",
        "strategy": "DualPassword",
        "retainedSince": "2026-01-01T00:00:00Z",
    }
