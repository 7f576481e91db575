"""A Lease as leader election reads and writes it: the election record (the spec's fields and the fencing
epoch, an annotation), when it was last seen to change, and the ``metav1.MicroTime`` format."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

EPOCH_ANNOTATION = "dbuser-operator.dev/leader-epoch"
MICRO_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"  # metav1.MicroTime: 2006-01-02T15:04:05.000000Z


@dataclass(frozen=True)
class LeaderElectionRecord:
    """The election fields of a Lease's spec."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int = 0
    epoch: int = 0  # the highest fencing epoch of any term of this Lease (an annotation, not in the spec)

    @classmethod
    def from_lease(cls, lease: Mapping[str, Any]) -> LeaderElectionRecord:
        """The record of a Lease object as the API returns it."""
        spec = lease.get("spec") or {}
        transitions = spec.get("leaseTransitions") or 0
        annotation = ((lease.get("metadata") or {}).get("annotations") or {}).get(EPOCH_ANNOTATION, "")
        return cls(
            holder_identity=spec.get("holderIdentity") or "",
            lease_duration_seconds=spec.get("leaseDurationSeconds") or 0,
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            lease_transitions=transitions,
            # An older version's Lease has no annotation: its terms' epochs were their transitions.
            epoch=max(int(annotation) if annotation.isdigit() else 0, transitions),
        )

    def to_spec(self) -> dict[str, Any]:
        """The Lease spec that stores this record."""
        spec: dict[str, Any] = {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.lease_transitions,
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = self.acquire_time
        if self.renew_time is not None:
            spec["renewTime"] = self.renew_time
        return spec

    def annotations(self) -> dict[str, str]:
        """The Lease annotations that store the rest of this record (the epoch)."""
        return {EPOCH_ANNOTATION: str(self.epoch)}


def format_micro_time(moment: datetime) -> str:
    """A ``metav1.MicroTime`` string: UTC, microseconds, ``Z``."""
    return moment.astimezone(UTC).strftime(MICRO_TIME_FORMAT)


class LeaseObservation:
    """The last record seen and, by the local clock, when it was last seen to change."""

    def __init__(self) -> None:
        self.record: LeaderElectionRecord | None = None
        self.changed_at = 0.0

    def observe(self, record: LeaderElectionRecord, now: float) -> None:
        """A record read from the server: the clock restarts only when it differs from the last one."""
        if record != self.record:
            self.record = record
            self.changed_at = now

    def wrote(self, record: LeaderElectionRecord, now: float) -> None:
        """A record this process has just written."""
        self.record = record
        self.changed_at = now

    def valid(self, now: float) -> bool:
        """Whether the holder's lease still runs: unchanged for less than its duration, locally."""
        if self.record is None:
            return False
        return now < self.changed_at + self.record.lease_duration_seconds

    def held_by(self, identity: str) -> bool:
        """Whether the last record seen names ``identity`` as holder."""
        return self.record is not None and self.record.holder_identity == identity
