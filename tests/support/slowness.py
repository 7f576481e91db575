"""The machine's slowness, measured where a test compares a promised time (DESIGN.md §7, docs/testing.md
"Time in tests").

:class:`LoopLag` ticks on the running event loop and adds up how late each tick wakes: the time the loop
could not run what was due, because the process was not scheduled (a busy machine) or a callback held the
loop (a blocking call). An operator started by ``start_operator`` runs on this loop, so its timers and
reconciles were late by as much; an operator in a process of its own shares the machine, so the lag is a
measure of its slowness too (a lower one: that process may be starved when this one is not).

A test allows a promised time the lag it measured over the window it measures: ``promised + lag.total``.
Ticks late by less than :data:`NOISE` count for nothing: an idle loop is that late every tick, and over a
two-minute wait that would add up to a second of allowance no busy machine caused.
"""

from __future__ import annotations

import asyncio
import contextlib

NOISE = 0.005  # seconds: lateness below this is the timer's granularity, not a busy machine


class LoopLag:
    """``async with LoopLag() as lag:`` … ``lag.total``: seconds the loop woke late, summed, so far."""

    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self.total = 0.0
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LoopLag:
        self._task = asyncio.create_task(self._tick())
        await asyncio.sleep(0)
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(self.interval)
            late = loop.time() - before - self.interval
            if late > NOISE:  # an idle loop wakes a millisecond late or so, every tick
                self.total += late
                self.worst = max(self.worst, late)

    def __str__(self) -> str:
        return f"loop lag {self.total:.2f} s (worst {self.worst:.2f} s)"

    def allowance(self, wake_ups: int = 2) -> float:
        """What a promise kept by ``wake_ups`` timers and task switches may be late by on this machine now."""
        return wake_ups * self.worst + 0.05
