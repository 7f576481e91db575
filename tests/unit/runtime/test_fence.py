"""The fence: open only while the last renewal's start plus the lease minus the margin lies ahead."""

from __future__ import annotations

import pytest

from dbuser_operator.runtime.fence import Fence, FenceLost, open_fence


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_without_leader_election_the_fence_is_always_open() -> None:
    fence = open_fence()
    fence.check()
    fence.revoke("ignored")
    assert fence.is_open()
    assert not fence.fenced
    assert fence.epoch is None


def test_closed_before_the_lease_is_acquired() -> None:
    fence = Fence(15.0, 1.5, clock=FakeClock())
    assert not fence.is_open()
    with pytest.raises(FenceLost, match="not the leader"):
        fence.check()
    assert not fence.lost.is_set()  # not acquired yet is not a loss


def test_open_from_the_start_of_the_renewal_for_the_lease_minus_the_margin() -> None:
    clock = FakeClock()
    fence = Fence(15.0, 1.5, clock=clock)
    fence.acquired(started=clock.now - 1.0, epoch=7)  # the attempt began a second ago
    assert fence.epoch == 7
    clock.now += 12.4
    fence.check()
    clock.now += 0.2  # 13.6 s after the start > 15 - 1.5
    with pytest.raises(FenceLost):
        fence.check()
    assert fence.lost.is_set()


def test_a_renewal_extends_the_proof_and_a_revocation_is_final() -> None:
    clock = FakeClock()
    fence = Fence(4.0, 0.4, clock=clock)
    fence.acquired(clock.now, epoch=1)
    clock.now += 3.0
    fence.renewed(clock.now)
    clock.now += 3.0
    fence.check()
    fence.revoke("a newer leader epoch is recorded")
    fence.renewed(clock.now)  # a renewal that lands after the revocation does not reopen it
    assert not fence.is_open()
    with pytest.raises(FenceLost, match="newer leader epoch"):
        fence.check()


def test_the_margin_must_be_shorter_than_the_lease() -> None:
    with pytest.raises(ValueError, match="margin"):
        Fence(4.0, 4.0)


def test_each_acquisition_has_its_own_term_name() -> None:
    clock = FakeClock()
    first, second = Fence(4.0, 0.4, clock=clock), Fence(4.0, 0.4, clock=clock)
    assert first.term == ""
    first.acquired(clock.now, epoch=1)
    second.acquired(clock.now, epoch=1)
    assert first.term
    assert first.term != second.term  # the same epoch from two Leases: still two terms


async def test_a_higher_epoch_comes_from_the_reserver_and_none_without_one() -> None:
    fence = Fence(4.0, 0.4, clock=FakeClock())
    with pytest.raises(FenceLost, match="no Lease"):
        await fence.reserve_epoch(3)
    asked: list[int] = []

    async def reserver(above: int) -> int:
        asked.append(above)
        return above + 1

    fence.reserve_with(reserver)
    assert await fence.reserve_epoch(3) == 4
    assert asked == [3]
