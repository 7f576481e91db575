"""The pure parts of leader election: configuration checks, the Lease record, local expiry."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, cast

import pytest
from kubernetes_asyncio import client

from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.errors import NotFound
from dbuser_operator.runtime.leaderelection import LeaderElectionConfig, LeaderElector
from dbuser_operator.runtime.lease import (
    EPOCH_ANNOTATION,
    LeaderElectionRecord,
    LeaseObservation,
    format_micro_time,
)


def test_defaults_are_client_go_defaults() -> None:
    config = LeaderElectionConfig("lease", "ns", "me")
    assert (config.lease_duration, config.renew_deadline, config.retry_period) == (15.0, 10.0, 2.0)
    assert config.lease_duration_seconds == 15


@pytest.mark.parametrize(
    ("lease_duration", "renew_deadline", "retry_period"),
    [
        (10.0, 10.0, 2.0),  # lease duration must exceed the renew deadline
        (15.0, 2.4, 2.0),  # renew deadline must exceed retry period * 1.2
        (15.0, 10.0, 0.0),
        (-1.0, -2.0, -3.0),
    ],
)
def test_inconsistent_timings_are_refused(
    lease_duration: float, renew_deadline: float, retry_period: float
) -> None:
    with pytest.raises(ValueError, match="must be"):
        LeaderElectionConfig("lease", "ns", "me", lease_duration, renew_deadline, retry_period)


@pytest.mark.parametrize("empty", ["lease_name", "lease_namespace", "identity"])
def test_names_must_not_be_empty(empty: str) -> None:
    names: dict[str, Any] = {"lease_name": "lease", "lease_namespace": "ns", "identity": "me", empty: ""}
    with pytest.raises(ValueError, match=empty):
        LeaderElectionConfig(**names)


def test_fractional_lease_duration_rounds_up() -> None:
    assert LeaderElectionConfig("l", "n", "i", 2.5, 2.0, 0.5).lease_duration_seconds == 3


def test_micro_time_format() -> None:
    moment = datetime(2024, 3, 5, 7, 8, 9, 123, tzinfo=timezone(timedelta(hours=2)))
    assert format_micro_time(moment) == "2024-03-05T05:08:09.000123Z"


def test_record_round_trips_through_a_lease_spec_and_annotations() -> None:
    record = LeaderElectionRecord(
        "me", 15, "2024-01-01T00:00:00.000000Z", "2024-01-01T00:00:10.000000Z", 3, 7
    )
    lease = {"metadata": {"annotations": record.annotations()}, "spec": record.to_spec()}
    assert LeaderElectionRecord.from_lease(lease) == record


def test_a_lease_of_the_older_version_counts_its_transitions_as_the_epoch() -> None:
    """Before the annotation, a term's epoch was the Lease's transitions when it acquired it."""
    record = LeaderElectionRecord("me", 15, lease_transitions=3)
    assert LeaderElectionRecord.from_lease({"spec": record.to_spec()}).epoch == 3
    unreadable = {"metadata": {"annotations": {EPOCH_ANNOTATION: "x"}}, "spec": record.to_spec()}
    assert LeaderElectionRecord.from_lease(unreadable).epoch == 3


def test_record_of_an_empty_lease() -> None:
    assert LeaderElectionRecord.from_lease({"metadata": {"name": "x"}}) == LeaderElectionRecord()
    assert "acquireTime" not in LeaderElectionRecord().to_spec()


def test_expiry_is_judged_by_the_local_clock_from_the_last_change() -> None:
    observation = LeaseObservation()
    assert not observation.valid(0.0)
    stale = format_micro_time(datetime.now(UTC) - timedelta(days=1))  # remote timestamps do not matter
    record = LeaderElectionRecord("other", 10, stale, stale, 0)
    observation.observe(record, now=100.0)
    assert observation.valid(109.9)
    observation.observe(record, now=105.0)  # the same record again: the clock keeps running
    assert not observation.valid(110.0)
    renewed = LeaderElectionRecord("other", 10, stale, format_micro_time(datetime.now(UTC)), 0)
    observation.observe(renewed, now=111.0)  # a change restarts it
    assert observation.valid(120.9)
    assert not observation.valid(121.0)
    assert observation.held_by("other")
    assert not observation.held_by("me")


def test_own_write_restarts_the_clock() -> None:
    observation = LeaseObservation()
    record = LeaderElectionRecord("me", 2)
    observation.observe(record, now=0.0)
    observation.wrote(record, now=5.0)
    assert observation.valid(6.9)


class InMemoryLeases(KubeClient):
    """Just enough of the API for one Lease: GET (404 until created) and POST."""

    def __init__(self) -> None:
        super().__init__(api=cast("client.ApiClient", None))  # never used
        self.lease: dict[str, Any] | None = None

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        if method == "POST":
            self.lease = {**body, "metadata": {**body["metadata"], "resourceVersion": "1"}}
        if self.lease is None:
            raise NotFound(404, "Not Found")
        return self.lease


async def test_the_lease_is_valid_for_the_renew_deadline_by_the_injected_clock() -> None:
    clock = [100.0]
    kube = InMemoryLeases()
    elector = LeaderElector(kube, LeaderElectionConfig("lease", "ns", "me"), clock=lambda: clock[0])
    assert not elector.holds_valid_lease()
    await elector.acquire()
    assert elector.is_leader
    assert kube.lease is not None
    assert kube.lease["spec"]["holderIdentity"] == "me"
    assert kube.lease["spec"]["leaseDurationSeconds"] == 15
    clock[0] = 109.9
    assert elector.holds_valid_lease()
    clock[0] = 110.0  # renew deadline (10 s) after the acquire attempt started
    assert not elector.holds_valid_lease()
    assert elector.is_leader  # until hold() notices
