"""A sorted multiset of floats: O(log n) insertion and removal, and counts below a bound or of a leading run
in O(log n + n / LOAD) — what per-event bookkeeping needs to answer "how many before this time" at a scrape
without walking the values.

Blocks of at most ``2 * LOAD`` sorted values, each known by its largest one; the running counts of the
blocks are summed again only when a count is asked after a change (one pass over the block lengths). A block
is an ``array('d')``: 8 bytes a value, where a list holds a pointer to a float object (8 + 24 bytes).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from itertools import accumulate
from typing import Final

LOAD: Final = 512


class SortedBag:
    """Floats kept in order, duplicates included."""

    __slots__ = ("_blocks", "_counts", "_length", "_maxes")

    def __init__(self) -> None:
        self._blocks: list[array[float]] = []
        self._maxes: list[float] = []
        self._counts: list[int] | None = None  # blocks' running lengths; None: to sum again
        self._length = 0

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[float]:
        for block in self._blocks:
            yield from block

    def add(self, value: float, times: int = 1) -> None:
        """Insert ``value`` ``times`` times."""
        if times <= 0:
            return
        if not self._blocks:
            self._blocks.append(array("d", [value]) * times)
            self._maxes.append(value)
        else:
            index = min(bisect_left(self._maxes, value), len(self._blocks) - 1)
            block = self._blocks[index]
            at = bisect_right(block, value)
            block[at:at] = array("d", [value]) * times
            self._maxes[index] = block[-1]
            if len(block) > 2 * LOAD:
                self._blocks[index : index + 1] = [block[:LOAD], block[LOAD:]]
                self._maxes[index : index + 1] = [block[LOAD - 1], block[-1]]
        self._length += times
        self._counts = None

    def remove(self, value: float, times: int = 1) -> None:
        """Remove ``value`` ``times`` times; KeyError (and nothing removed) when it is not there as often."""
        if times <= 0:
            return
        index = bisect_left(self._maxes, value)
        block = self._blocks[index] if index < len(self._blocks) else array("d")
        at = bisect_left(block, value)
        if bisect_right(block, value) - at < times:  # duplicates straddling blocks are split at LOAD only
            if sum(1 for item in self if item == value) < times:
                raise KeyError(value)
            for _ in range(times):
                self.remove(value)
            return
        del block[at : at + times]
        if block:
            self._maxes[index] = block[-1]
        else:
            del self._blocks[index], self._maxes[index]
        self._length -= times
        self._counts = None

    def first(self) -> float | None:
        """The smallest value, or None when empty."""
        return self._blocks[0][0] if self._blocks else None

    def count_below(self, bound: float) -> int:
        """How many values are ``< bound``."""
        index = bisect_left(self._maxes, bound)
        return self._before(index) + (
            bisect_left(self._blocks[index], bound) if index < len(self._blocks) else 0
        )

    def count_at_most(self, bound: float) -> int:
        """How many values are ``<= bound``."""
        index = bisect_right(self._maxes, bound)
        return self._before(index) + (
            bisect_right(self._blocks[index], bound) if index < len(self._blocks) else 0
        )

    def count_leading(self, holds: Callable[[float], bool]) -> int:
        """How many of the smallest values ``holds`` in a row, for a ``holds`` true up to some value and false
        after it (a bisection: ``holds`` is asked O(log n) times)."""
        index = bisect_left(self._maxes, True, key=lambda value: not holds(value))
        if index == len(self._blocks):
            return self._length
        return self._before(index) + bisect_left(
            self._blocks[index], True, key=lambda value: not holds(value)
        )

    def _before(self, index: int) -> int:
        """How many values the blocks before ``index`` hold."""
        if self._counts is None:
            self._counts = [0, *accumulate(map(len, self._blocks))]
        return self._counts[index]
