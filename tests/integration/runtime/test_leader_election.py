"""Leader election against the real API server: one leader, failover, release, a paused leader, metrics.

Short timings (lease 2 s, renew deadline 1.5 s, retry 0.25 s) keep the module fast; the failover and
takeover times measured here are printed (run with ``-s``). A bound on a time is checked against the
electors' own records (``renewed_at``, on the one monotonic clock of this process) and allows the
machine's measured slowness on top (:mod:`tests.support.slowness`: the event loop's lateness, the slowest
request): a busy machine never fails these tests, a late step-down or takeover does.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator.envtest import KubeCluster
from dbuser_operator.envtest.ports import free_port
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.errors import NotFound
from dbuser_operator.runtime.fence import FenceLost
from dbuser_operator.runtime.leaderelection import (
    JITTER_FACTOR,
    LeaderElectionConfig,
    LeaderElector,
    LeadershipLost,
)
from dbuser_operator.runtime.lease import EPOCH_ANNOTATION, format_micro_time
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import LEASES
from tests.integration.operator.support import wait
from tests.support.slowness import LoopLag

pytestmark = pytest.mark.integration

LEASE_DURATION = 2.0
RENEW_DEADLINE = 1.5
RETRY_PERIOD = 0.25
CANDIDATE_POLL = (1 + JITTER_FACTOR) * RETRY_PERIOD  # the longest a candidate waits between attempts
WAIT_LIMIT = 30.0  # seconds a test waits for an election at all (a poll limit, not a promise)


class TimedKubeClient(KubeClient):
    """A KubeClient that keeps the duration of its slowest request (finished or cut)."""

    def __init__(self, api: client.ApiClient) -> None:
        super().__init__(api)
        self.slowest = 0.0

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        started = now()
        try:
            return await super().request(method, path, query=query, body=body, content_type=content_type)
        finally:
            self.slowest = max(self.slowest, now() - started)


def late_allowance(lateness: LoopLag, *clients: TimedKubeClient, requests: int = 2) -> float:
    """What an election step may be late by on this machine now: the loop's lateness and ``requests`` of
    the slowest request seen."""
    return lateness.allowance() + requests * max(kube.slowest for kube in clients)


class PausableKubeClient(TimedKubeClient):
    """A KubeClient whose requests hang (until cancelled) while ``paused``, like a frozen network."""

    def __init__(self, api: client.ApiClient) -> None:
        super().__init__(api)
        self.paused = False
        self.hung_requests = 0

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        if self.paused:
            self.hung_requests += 1
            await asyncio.get_running_loop().create_future()  # never resolves
        return await super().request(method, path, query=query, body=body, content_type=content_type)


class Tasks:
    """Background tasks of one test, cancelled at its end."""

    def __init__(self) -> None:
        self.tasks: list[asyncio.Task[Any]] = []

    def start(self, awaitable: Awaitable[Any]) -> asyncio.Task[Any]:
        async def run() -> Any:
            return await awaitable

        task = asyncio.create_task(run())
        self.tasks.append(task)
        return task


@pytest.fixture
async def tasks() -> AsyncIterator[Tasks]:
    started = Tasks()
    yield started
    for task in started.tasks:
        task.cancel()
    await asyncio.gather(*started.tasks, return_exceptions=True)


@pytest.fixture
def lease_name() -> str:
    """A lease name unique to the test, so that the metric series of tests do not mix."""
    return f"leader-{uuid.uuid4().hex[:8]}"


def elector(kube: KubeClient, namespace: str, lease_name: str, identity: str) -> LeaderElector:
    config = LeaderElectionConfig(
        lease_name,
        namespace,
        identity,
        lease_duration=LEASE_DURATION,
        renew_deadline=RENEW_DEADLINE,
        retry_period=RETRY_PERIOD,
    )
    return LeaderElector(kube, config)


def leader_metric(lease_name: str) -> float | None:
    return REGISTRY.get_sample_value("leader_election_master_status", {"name": lease_name})


async def read_lease(kube: KubeClient, namespace: str, lease_name: str) -> dict[str, Any]:
    spec: dict[str, Any] = (await kube.get(LEASES, lease_name, namespace))["spec"]
    return spec


def now() -> float:
    return asyncio.get_running_loop().time()


async def test_exactly_one_of_several_candidates_wins(
    kube_api: client.ApiClient, namespace: str, lease_name: str, tasks: Tasks
) -> None:
    kube = KubeClient(kube_api)
    candidates = [elector(kube, namespace, lease_name, f"candidate-{i}") for i in range(4)]
    acquiring = {tasks.start(candidate.acquire()): candidate for candidate in candidates}

    done, waiting = await asyncio.wait(acquiring, timeout=WAIT_LIMIT, return_when=asyncio.FIRST_COMPLETED)
    assert len(done) == 1
    winner = acquiring[done.pop()]
    tasks.start(winner.hold())
    await asyncio.sleep(6 * RETRY_PERIOD)

    assert not any(task.done() for task in waiting)
    assert [candidate for candidate in candidates if candidate.is_leader] == [winner]
    spec = await read_lease(kube, namespace, lease_name)
    assert spec["holderIdentity"] == winner.config.identity
    assert spec["leaseDurationSeconds"] == 2
    assert spec.get("leaseTransitions", 0) == 0
    datetime.strptime(spec["renewTime"], "%Y-%m-%dT%H:%M:%S.%fZ")  # MicroTime
    assert leader_metric(lease_name) == 1


async def test_crashed_leader_is_replaced_after_the_lease_duration(
    kube_api: client.ApiClient, namespace: str, lease_name: str, tasks: Tasks
) -> None:
    """Not before a lease duration after the crashed leader's last renewal (its own record), and at the
    first attempt after that: within two candidate polls more, plus the machine's measured slowness."""
    kube = TimedKubeClient(kube_api)
    first = elector(kube, namespace, lease_name, "first")
    second = elector(kube, namespace, lease_name, "second")
    await first.acquire()
    holding = tasks.start(first.hold())
    acquiring = tasks.start(second.acquire())
    await asyncio.sleep(4 * RETRY_PERIOD)
    assert not acquiring.done()
    assert first.holds_valid_lease()

    async with LoopLag() as lateness:
        holding.cancel()  # stops renewing, no release: a crash
        await asyncio.gather(holding, return_exceptions=True)
        last_renewal = first.renewed_at
        await asyncio.wait_for(acquiring, timeout=WAIT_LIMIT)
        failover = now() - last_renewal
    timings = f"lease {LEASE_DURATION} s, retry {RETRY_PERIOD} s"
    print(f"\nfailover after a crashed leader: {failover:.2f} s after its last renewal ({timings})")

    assert failover >= LEASE_DURATION, "the standby took a lease that was still running"
    bound = LEASE_DURATION + 2 * CANDIDATE_POLL + late_allowance(lateness, kube)
    assert failover <= bound, f"taken over {failover:.2f} s after the last renewal (allowed {bound:.2f} s)"
    assert second.is_leader
    assert second.holds_valid_lease()
    assert first.is_leader  # it never learnt (no hold() ran), but its lease is known stale:
    assert not first.holds_valid_lease()
    spec = await read_lease(kube, namespace, lease_name)
    assert spec["holderIdentity"] == "second"
    assert spec["leaseTransitions"] == 1
    assert leader_metric(lease_name) == 1


async def test_a_stale_lease_is_judged_by_the_local_clock(
    kube_api: client.ApiClient, namespace: str, lease_name: str
) -> None:
    """A renewTime an hour old (a crashed holder, or clock skew) still buys the holder a full lease here."""
    kube = TimedKubeClient(kube_api)
    an_hour_ago = format_micro_time(datetime.fromtimestamp(datetime.now(UTC).timestamp() - 3600, UTC))
    spec = {
        "holderIdentity": "ghost",
        "leaseDurationSeconds": 2,
        "acquireTime": an_hour_ago,
        "renewTime": an_hour_ago,
        "leaseTransitions": 4,
    }
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": lease_name}}
    await kube.create(LEASES, {**body, "spec": spec}, namespace)

    candidate = elector(kube, namespace, lease_name, "candidate")
    async with LoopLag() as lateness:
        started = now()
        await asyncio.wait_for(candidate.acquire(), timeout=WAIT_LIMIT)
        waited = now() - started

    assert waited >= LEASE_DURATION, "a lease first seen now was taken before its duration ran out here"
    bound = LEASE_DURATION + CANDIDATE_POLL + late_allowance(lateness, kube, requests=3)
    assert waited <= bound, f"taken after {waited:.2f} s (allowed {bound:.2f} s)"
    spec = await read_lease(kube, namespace, lease_name)
    assert spec["holderIdentity"] == "candidate"
    assert spec["leaseTransitions"] == 5
    await candidate.release()


async def test_released_lease_is_taken_over_within_a_retry_period(
    kube_api: client.ApiClient, namespace: str, lease_name: str, tasks: Tasks
) -> None:
    kube = TimedKubeClient(kube_api)
    first = elector(kube, namespace, lease_name, "first")
    second = elector(kube, namespace, lease_name, "second")
    await first.acquire()
    assert leader_metric(lease_name) == 1
    holding = tasks.start(first.hold())
    acquiring = tasks.start(second.acquire())
    await asyncio.sleep(4 * RETRY_PERIOD)
    assert not acquiring.done()

    async with LoopLag() as lateness:
        holding.cancel()
        released_at = now()
        await first.release()
        assert not first.is_leader
        assert leader_metric(lease_name) == 0
        await asyncio.wait_for(acquiring, timeout=WAIT_LIMIT)
        takeover = now() - released_at
    print(f"\ntakeover after a graceful release: {takeover:.2f} s (retry {RETRY_PERIOD} s)")

    bound = CANDIDATE_POLL + late_allowance(lateness, kube, requests=4)  # the release, then an attempt
    assert takeover <= bound, f"taken over {takeover:.2f} s after the release (allowed {bound:.2f} s)"
    spec = await read_lease(kube, namespace, lease_name)
    assert spec["holderIdentity"] == "second"
    assert spec["leaseTransitions"] == 1
    assert leader_metric(lease_name) == 1
    await first.release()  # no longer the holder: nothing happens
    assert (await read_lease(kube, namespace, lease_name))["holderIdentity"] == "second"


async def test_each_term_has_a_higher_epoch_and_its_fence_closes_on_release(
    kube_api: client.ApiClient, namespace: str, lease_name: str
) -> None:
    kube = KubeClient(kube_api)
    first = elector(kube, namespace, lease_name, "first")
    await first.acquire()
    assert first.fence.epoch == 0
    assert first.fence.is_open()
    await first.release()
    assert not first.fence.is_open()  # a standby may take over within a retry period: no more writes

    # A new process under the same identity (the Lease still names it) starts a new term all the same.
    again = elector(kube, namespace, lease_name, "first")
    await again.acquire()
    restarted = elector(kube, namespace, lease_name, "first")
    await restarted.acquire()
    assert (again.fence.epoch, restarted.fence.epoch) == (1, 2)
    assert (await read_lease(kube, namespace, lease_name))["leaseTransitions"] == 2
    await restarted.release()


async def test_a_term_raises_its_epoch_on_the_lease_and_a_term_the_lease_no_longer_names_cannot(
    kube_api: client.ApiClient, namespace: str, lease_name: str, tasks: Tasks
) -> None:
    kube = KubeClient(kube_api)
    first = elector(kube, namespace, lease_name, "first")
    await first.acquire()
    assert first.fence.epoch == 0
    # MySQL holds epoch 5 from a Lease that was deleted: the Lease gives this term 6, and keeps it.
    assert await first.reserve_epoch(5) == 6
    holding = tasks.start(first.hold())
    await asyncio.sleep(3 * RETRY_PERIOD)  # renewals in between
    lease = await kube.get(LEASES, lease_name, namespace)
    assert lease["metadata"]["annotations"][EPOCH_ANNOTATION] == "6"
    # Deleted under its leader: the leader creates it again, with its epoch.
    await kube.delete(LEASES, lease_name, namespace)
    lease = await recreated(kube, namespace, lease_name)
    assert lease["spec"]["holderIdentity"] == "first"
    assert lease["metadata"]["annotations"][EPOCH_ANNOTATION] == "6"

    # The leader stops renewing (paused), the Lease is deleted and another process creates it anew
    # before first's proof expires: first cannot be given an epoch any more.
    holding.cancel()
    await asyncio.gather(holding, return_exceptions=True)
    assert first.fence.is_open()
    await kube.delete(LEASES, lease_name, namespace)
    second = elector(kube, namespace, lease_name, "second")
    await second.acquire()
    assert second.fence.epoch == 0
    with pytest.raises(FenceLost):
        await first.reserve_epoch(6)
    assert not first.fence.is_open()
    assert await second.reserve_epoch(6) == 7
    assert (await kube.get(LEASES, lease_name, namespace))["metadata"]["annotations"][EPOCH_ANNOTATION] == "7"
    await second.release()
    third = elector(kube, namespace, lease_name, "third")
    await third.acquire()
    assert third.fence.epoch == 8  # every later term starts above what the earlier ones used
    await third.release()


async def recreated(kube: KubeClient, namespace: str, lease_name: str) -> dict[str, Any]:
    """The Lease once its leader has written it again (at its next renewal)."""

    async def written() -> dict[str, Any]:
        try:
            return await kube.get(LEASES, lease_name, namespace)
        except NotFound as error:
            raise AssertionError("not yet") from error

    return await wait.eventually(
        written, limit=WAIT_LIMIT, interval=RETRY_PERIOD / 5, message=f"Lease {lease_name} written again"
    )


@pytest.mark.parametrize("failure", ["hang", "refused"])
async def test_paused_leader_steps_down_within_the_renew_deadline(
    kube: KubeCluster,
    kube_api: client.ApiClient,
    namespace: str,
    lease_name: str,
    tasks: Tasks,
    failure: str,
) -> None:
    async with kube.api_client() as own_api, kube.api_client() as dead_api:
        dead_api.configuration.host = f"https://127.0.0.1:{free_port()}"
        pausable = PausableKubeClient(own_api)
        paused = elector(pausable, namespace, lease_name, "paused")
        standby_kube = TimedKubeClient(kube_api)
        standby = elector(standby_kube, namespace, lease_name, "standby")
        await paused.acquire()
        holding = tasks.start(paused.hold())
        acquiring = tasks.start(standby.acquire())
        await asyncio.sleep(4 * RETRY_PERIOD)
        assert not acquiring.done()

        async with LoopLag() as lateness:
            if failure == "hang":
                pausable.paused = True
            else:
                paused.kube = KubeClient(dead_api)
            await asyncio.wait_for(holding, timeout=WAIT_LIMIT)
            last_renewal = paused.renewed_at
            stepped_down = now() - last_renewal
            assert not paused.is_leader
            assert not paused.holds_valid_lease()
            assert leader_metric(lease_name) == 0
            await asyncio.wait_for(acquiring, timeout=WAIT_LIMIT)
            failover = now() - last_renewal
        print(
            f"\npaused leader ({failure}): stepped down {stepped_down:.2f} s after its last renewal, "
            f"standby leading after {failover:.2f} s"
        )

        # It keeps trying until the renew deadline, and gives up then: late only by the loop's lateness
        # (the renewal that hangs is cut by a timer at the deadline).
        assert stepped_down >= RENEW_DEADLINE, "the leader gave up before its renew deadline"
        allowed = RENEW_DEADLINE + lateness.allowance()
        assert stepped_down <= allowed, f"stepped down after {stepped_down:.2f} s (allowed {allowed:.2f} s)"
        assert failover >= LEASE_DURATION, "the standby took a lease that was still running"
        bound = LEASE_DURATION + 2 * CANDIDATE_POLL + late_allowance(lateness, pausable, standby_kube)
        assert failover <= bound, f"taken over after {failover:.2f} s (allowed {bound:.2f} s)"
        if failure == "hang":
            assert pausable.hung_requests >= 1  # the renew deadline cut a hanging request
        tasks.start(standby.hold())

        # Back on the network, the old leader never believes it leads without re-acquiring.
        pausable.paused = False
        paused.kube = pausable
        for _ in range(8):
            await asyncio.sleep(RETRY_PERIOD)
            assert not paused.is_leader
            assert standby.is_leader
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(6 * RETRY_PERIOD):
                await paused.acquire()
        assert not paused.is_leader
        spec = await read_lease(KubeClient(kube_api), namespace, lease_name)
        assert spec["holderIdentity"] == "standby"
        assert spec["leaseTransitions"] == 1


async def test_run_cancels_the_work_on_loss_and_releases_on_cancellation(
    kube_api: client.ApiClient, namespace: str, lease_name: str, tasks: Tasks
) -> None:
    kube = TimedKubeClient(kube_api)
    started = {"first": asyncio.Event(), "second": asyncio.Event()}
    cancelled = {"first": asyncio.Event(), "second": asyncio.Event()}

    def work(identity: str) -> Any:
        async def lead() -> None:
            started[identity].set()
            try:
                await asyncio.get_running_loop().create_future()
            except asyncio.CancelledError:
                cancelled[identity].set()
                raise

        return lead

    first = elector(kube, namespace, lease_name, "first")
    second = elector(kube, namespace, lease_name, "second")
    first_run = tasks.start(first.run(work("first")))
    await asyncio.wait_for(started["first"].wait(), timeout=WAIT_LIMIT)
    second_run = tasks.start(second.run(work("second")))
    await asyncio.sleep(4 * RETRY_PERIOD)
    assert not started["second"].is_set()

    # Graceful shutdown: the work is cancelled, the lease released, the standby leads at once.
    first_run.cancel()
    await asyncio.gather(first_run, return_exceptions=True)
    assert cancelled["first"].is_set()
    assert not first.is_leader
    await asyncio.wait_for(started["second"].wait(), timeout=WAIT_LIMIT)
    assert leader_metric(lease_name) == 1

    # Someone else takes the lease: the work stops at once and run() raises LeadershipLost, at the next
    # renewal (within a retry period of its last one, by its own record).
    lease = await kube.get(LEASES, lease_name, namespace)
    stamp = format_micro_time(datetime.now(UTC))
    lease["spec"].update(holderIdentity="intruder", leaseDurationSeconds=60, renewTime=stamp)
    async with LoopLag() as lateness:
        await kube.replace(LEASES, lease_name, lease, namespace)
        with pytest.raises(LeadershipLost):
            await asyncio.wait_for(second_run, timeout=WAIT_LIMIT)
        noticed = now() - second.renewed_at
    bound = RETRY_PERIOD + late_allowance(lateness, kube, requests=3)
    assert noticed <= bound, f"noticed {noticed:.2f} s after its last renewal (allowed {bound:.2f} s)"
    assert cancelled["second"].is_set()
    assert not second.is_leader
    assert leader_metric(lease_name) == 0
    assert (await read_lease(kube, namespace, lease_name))["holderIdentity"] == "intruder"


async def test_run_returns_when_the_work_ends_and_releases(
    kube_api: client.ApiClient, namespace: str, lease_name: str
) -> None:
    kube = KubeClient(kube_api)
    leader = elector(kube, namespace, lease_name, "leader")
    ran = asyncio.Event()

    async def brief_work() -> None:
        assert leader.is_leader
        ran.set()

    await asyncio.wait_for(leader.run(brief_work), timeout=WAIT_LIMIT)
    assert ran.is_set()
    assert not leader.is_leader
    spec = await read_lease(kube, namespace, lease_name)
    assert not spec.get("holderIdentity")
    assert spec["leaseDurationSeconds"] == 1


async def test_run_propagates_a_failure_of_the_work_and_releases(
    kube_api: client.ApiClient, namespace: str, lease_name: str
) -> None:
    kube = KubeClient(kube_api)
    leader = elector(kube, namespace, lease_name, "leader")

    async def failing_work() -> None:
        raise RuntimeError("reconciler crashed")

    with pytest.raises(RuntimeError, match="reconciler crashed"):
        await asyncio.wait_for(leader.run(failing_work), timeout=WAIT_LIMIT)
    assert not leader.is_leader
    assert leader_metric(lease_name) == 0
    assert not (await read_lease(kube, namespace, lease_name)).get("holderIdentity")
