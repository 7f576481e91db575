"""The sorted bag answers as a sorted list would, across block splits and runs of equal values."""

from __future__ import annotations

import operator
import random
from bisect import bisect_left, bisect_right
from functools import partial

import pytest

from dbuser_operator.runtime.sorted_bag import LOAD, SortedBag


@pytest.mark.parametrize("seed", range(5))
def test_the_bag_answers_as_a_sorted_list(seed: int) -> None:
    rng = random.Random(seed)
    bag, reference = SortedBag(), list[float]()
    for step in range(12 * LOAD):
        if reference and rng.random() < 0.35:
            value = rng.choice(reference)
            times = min(rng.randrange(1, 4), reference.count(value))
            bag.remove(value, times)
            for _ in range(times):
                reference.remove(value)
        else:
            value, times = float(rng.randrange(50 if step % 2 else 10**6)), rng.randrange(1, 4)
            bag.add(value, times)
            reference.extend([value] * times)
        reference.sort()
        if step % 97 == 0 or step > 12 * LOAD - 5:
            bound = float(rng.randrange(-5, 10**6))
            assert list(bag) == reference
            assert len(bag) == len(reference)
            assert bag.first() == (reference[0] if reference else None)
            assert bag.count_below(bound) == bisect_left(reference, bound)
            assert bag.count_at_most(bound) == bisect_right(reference, bound)
            assert bag.count_leading(partial(operator.gt, bound)) == bisect_left(reference, bound)
    assert len(bag._blocks) > 2  # the blocks were split


def test_removing_what_is_not_there_changes_nothing() -> None:
    bag = SortedBag()
    bag.add(1.0, 2)
    with pytest.raises(KeyError):
        bag.remove(1.0, 3)
    with pytest.raises(KeyError):
        bag.remove(2.0)
    assert list(bag) == [1.0, 1.0]
