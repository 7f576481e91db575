"""Wait for one whole periodic drift check that started after every user was Ready, so that a settled RSS
includes the high-water mark of the operator's periodic work (``--resync-period``) at the full N.

The operator observes each drift check pass that ends in ``dbuser_operator_periodic_check_seconds{check=
"drift"}`` (a histogram: ``_count`` passes, ``_sum`` seconds). Scraped every :data:`SCRAPE_PERIOD` seconds:
when the count grows by one, that pass ended after the previous scrape and took the sum's growth, so it
started no earlier than the previous scrape less that; when it grows by two or more, the later passes
started after the previous scrape (a period, at least 5 s here, separates two passes).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from bench import processes
from bench.common import parse_metrics

CHECK_SECONDS = "dbuser_operator_periodic_check_seconds"
SCRAPE_PERIOD = 5.0  # a scrape costs the operator O(N): its compliance metrics count every user


@dataclass(frozen=True)
class Passes:
    """The drift check's passes that ended by a scrape, their seconds in all, and when it was read."""

    count: float
    seconds: float
    at: float  # time.monotonic()

    @classmethod
    async def of(cls, implementation: processes.Implementation) -> Passes:
        names = {f"{CHECK_SECONDS}_count", f"{CHECK_SECONDS}_sum"}
        samples = parse_metrics(await implementation.metrics_text(), names)
        found = {name: value for name, labels, value in samples if labels.get("check") == "drift"}
        return cls(
            found.get(f"{CHECK_SECONDS}_count", 0.0), found.get(f"{CHECK_SECONDS}_sum", 0.0), time.monotonic()
        )


async def after_ready(
    implementation: processes.Implementation, ready: Passes, limit: float
) -> dict[str, Any] | None:
    """Wait until a drift check pass that started after ``ready`` (read when every user was Ready) has
    ended; what it was (seconds, when it ended), or None when none did within ``limit`` seconds."""
    previous = ready
    while previous.at - ready.at < limit:
        await asyncio.sleep(SCRAPE_PERIOD)
        implementation.check_running()
        now = await Passes.of(implementation)
        ended = now.count - previous.count
        took = now.seconds - previous.seconds
        if ended >= 2 or (ended == 1 and previous.at - took >= ready.at):
            return {
                "passes_ended_since_ready": now.count - ready.count,
                "pass_seconds": round(took / ended, 1),  # the mean, when two ended
                "ended_seconds_after_ready": round(now.at - ready.at, 1),
            }
        previous = now
    return None


async def whole_pass(
    implementation: processes.Implementation,
    ready: Passes | None,
    period: float,
    sample: Callable[[], Coroutine[Any, Any, None]],
    say: Callable[[str], None],
) -> dict[str, Any] | None:
    """:func:`after_ready` within three periods (``period``) and 10 minutes, ``sample`` running meanwhile
    (the RSS timeline); None at once when ``ready`` is (not converged, or no periodic check)."""
    if ready is None:
        return None
    sampling = asyncio.create_task(sample())
    try:
        found = await after_ready(implementation, ready, 3 * period + 600)
    finally:
        sampling.cancel()
        await asyncio.gather(sampling, return_exceptions=True)
    if found is None:
        say("  no whole periodic drift check after every user was Ready: settled RSS without one")
    else:
        say(
            f"  a whole drift check after every user was Ready: {found['pass_seconds']} s, ended "
            f"{found['ended_seconds_after_ready']} s after"
        )
    return found
