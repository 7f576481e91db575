"""Status conditions on plain dicts, with the semantics of apimachinery's ``meta.SetStatusCondition``.

A condition has the shape of ``metav1.Condition``: ``type``, ``status`` ("True", "False" or "Unknown"),
``observedGeneration`` (omitted when unknown), ``lastTransitionTime`` (RFC 3339, whole seconds, UTC),
``reason`` and ``message``. ``lastTransitionTime`` moves only when ``status`` changes; the other fields are
updated in place, and a condition keeps its position in the list.
"""

from __future__ import annotations

import functools
import re
import time
from datetime import UTC, datetime
from typing import Any, Final

TRUE: Final = "True"
FALSE: Final = "False"
UNKNOWN: Final = "Unknown"
STATUSES: Final = frozenset({TRUE, FALSE, UNKNOWN})

MAX_TYPE_LENGTH: Final = 316
MAX_REASON_LENGTH: Final = 1024
MAX_MESSAGE_LENGTH: Final = 32768

# The validation patterns of metav1.Condition (an optional DNS-subdomain prefix, then a qualified name).
_TYPE = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")


def set_condition(  # noqa: PLR0917 - the positional order of the agreed interface
    conditions: list[dict[str, Any]],
    type_: str,
    status: str,
    reason: str,
    message: str,
    observed_generation: int | None,
    now: datetime | None = None,
) -> bool:
    """Add or update the condition of ``type_`` in ``conditions``; return whether anything changed.

    ``now`` (default: the current time; a naive value is taken as UTC) becomes ``lastTransitionTime`` for a
    new condition or a change of ``status``. A message longer than 32768 characters is truncated. Raises
    ``ValueError`` for an invalid type, status, reason or generation.
    """
    validate_condition(type_, status, reason, observed_generation)
    message = message[:MAX_MESSAGE_LENGTH]
    existing = find_condition(conditions, type_)
    if existing is None:
        condition: dict[str, Any] = {"type": type_, "status": status}
        if observed_generation is not None:
            condition["observedGeneration"] = observed_generation
        condition.update(lastTransitionTime=format_time(now), reason=reason, message=message)
        conditions.append(condition)
        return True

    changed = False
    if existing.get("status") != status:
        existing["status"] = status
        existing["lastTransitionTime"] = format_time(now)
        changed = True
    for key, value in (("reason", reason), ("message", message)):
        if existing.get(key) != value:
            existing[key] = value
            changed = True
    if existing.get("observedGeneration") != observed_generation:
        if observed_generation is None:
            del existing["observedGeneration"]
        else:
            existing["observedGeneration"] = observed_generation
        changed = True
    return changed


def remove_condition(conditions: list[dict[str, Any]], type_: str) -> bool:
    """Remove the condition of ``type_``; return whether there was one."""
    kept = [condition for condition in conditions if condition.get("type") != type_]
    if len(kept) == len(conditions):
        return False
    conditions[:] = kept
    return True


def find_condition(conditions: list[dict[str, Any]] | None, type_: str) -> dict[str, Any] | None:
    """The condition of ``type_``, or None."""
    return next((c for c in conditions or () if c.get("type") == type_), None)


def is_true(conditions: list[dict[str, Any]] | None, type_: str) -> bool:
    """Whether the condition of ``type_`` is present with status "True"."""
    return _has_status(conditions, type_, TRUE)


def is_false(conditions: list[dict[str, Any]] | None, type_: str) -> bool:
    """Whether the condition of ``type_`` is present with status "False"."""
    return _has_status(conditions, type_, FALSE)


def validate_condition(type_: str, status: str, reason: str, observed_generation: int | None) -> None:
    """Raise ``ValueError`` unless the fields pass the API server's validation of ``metav1.Condition``."""
    if len(type_) > MAX_TYPE_LENGTH or not _TYPE.fullmatch(type_):
        raise ValueError(f"invalid condition type {type_!r}")
    if status not in STATUSES:
        raise ValueError(f"invalid condition status {status!r}: must be True, False or Unknown")
    if len(reason) > MAX_REASON_LENGTH or not _REASON.fullmatch(reason):
        raise ValueError(f"invalid condition reason {reason!r}: must match {_REASON.pattern}")
    if observed_generation is not None and observed_generation < 0:
        raise ValueError(f"invalid observed generation {observed_generation}: must not be negative")


def format_time(moment: datetime | None = None) -> str:
    """``moment`` (default: now) as ``metav1.Time`` serialises it: RFC 3339 in UTC, whole seconds."""
    if moment is None:
        return _now_formatted(int(time.time()))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@functools.lru_cache(maxsize=1)  # every write of a busy second stamps the same text
def _now_formatted(epoch_seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch_seconds))


def _has_status(conditions: list[dict[str, Any]] | None, type_: str, status: str) -> bool:
    condition = find_condition(conditions, type_)
    return condition is not None and condition.get("status") == status
